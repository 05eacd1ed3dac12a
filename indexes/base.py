"""The index protocol, in Hudi's shape: a required core, as ``HoodieIndex``'s.

An index is an engine-neutral definition (its :data:`CORE`: name, parameters, metric
columns, how it places inserts, its adapters) plus one adapter per engine, loaded only
when that engine runs it — as Hudi's ``HoodieIndex`` takes a
``SparkHoodieBloomIndexHelper`` and ``JavaWriteHelper`` runs the same index in-process.
``index.spark`` is the Spark adapter (``tag_location`` …), and ``index.simulator(model)``
the simulator's; both call the index's Spark-free core. Everything else an index does is
an opt-in role (:mod:`indexes.roles`). The driver times and counts around every call; an
index reports only the work it alone can see. Nothing in this module (or any core)
imports pyspark.
"""

from __future__ import annotations

import importlib
from abc import ABC
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from indexes.suggest import did_you_mean
from tableformat.errors import IndexBenchError

# Columns the tagging adds to a batch (dropped before the data is written).
FILE_ID_COL = "_hoodie_file_id"
BUCKET_COL = "_hoodie_bucket_id"
# a record's place in its batch (Spark's monotonically_increasing_id): the later arrival
# wins a tie when each file group's write pre-combines (indexes.roles.CombinesInWriter)
ARRIVAL_COL = "_indexbench_arrival"


# Hudi settings that would make an index global (a record key unique across partitions,
# moved when its partition changes). Every index here is non-global: a record is its
# (partition path, record key), as Hudi's BLOOM, SIMPLE and BUCKET indexes and a
# partitioned record index. Asked for, they are refused by name, not as "unknown".
GLOBAL_INDEX_KEYS = {
    "hoodie.index.type": ("GLOBAL_BLOOM", "GLOBAL_SIMPLE", "RECORD_INDEX"),
    "hoodie.bloom.index.update.partition.path": ("true",),
    "hoodie.simple.index.update.partition.path": ("true",),
    "hoodie.record.index.update.partition.path": ("true",),
    "hoodie.hbase.index.update.partition.path": ("true",),
}


def refuse_global(key: str, value: Any) -> None:
    """A clear refusal of a setting that asks for a global index (see
    :data:`GLOBAL_INDEX_KEYS`); other values fall through to "unknown parameter"."""
    if str(value).strip().upper() in {v.upper() for v in GLOBAL_INDEX_KEYS.get(key, ())}:
        raise IndexBenchError(
            f"{key}={value}: global indexes are not supported; every index here is "
            "non-global (a record is its (partition, record key)); pick one with --index")


def fraction(value: object) -> float:
    """A number or a fraction as a float (``indexbench.scale``): "1/1000" == "0.001"."""
    if isinstance(value, str) and "/" in value:
        num, _, den = value.partition("/")
        try:
            return float(Fraction(int(num.strip()), int(den.strip())))
        except ZeroDivisionError as exc:
            raise ValueError(value) from exc
    return float(value)


class RescaleError(IndexBenchError):
    """A rescale (a table service run as a command) is refused before anything is
    written: a bad factor, mode or partition, or an option of another index."""


@dataclass(frozen=True)
class Param:
    """One index parameter: its Python name, its Hudi-like property key and its type."""

    name: str
    key: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None  # the only values allowed, if any

    def parse(self, value: Any) -> Any:
        """The value as this parameter's type; a clear error names the property key."""
        if isinstance(value, str) and self.type is bool:
            if value.lower() not in ("true", "false", "1", "0"):
                raise IndexBenchError(f"{self.key} must be true or false, not {value!r}")
            return value.lower() in ("true", "1")
        try:
            parsed = self.type(value)
        except (TypeError, ValueError) as exc:
            raise IndexBenchError(
                f"{self.key} must be a {self.type.__name__}, not {value!r}") from exc
        if self.choices is not None and parsed not in self.choices:
            raise IndexBenchError(
                f"{self.key} must be one of {', '.join(map(str, self.choices))}, not {value!r}")
        return parsed


# How a priced counter's quantity is spread (``Price.spread``): requests are round trips
# over the cores (each waits one at least); ``per_core`` work divides over the cores;
# ``bytes`` go at the profile's bandwidth (``model_<name>`` in a simulated row); the
# driver's requests follow one another; ``job``: the counter's work runs as one Spark
# job of the index's own in the commit phase, paid once when the counter is not 0.
PRICE_SPREADS = ("requests", "per_core", "bytes", "driver", "job")


@dataclass(frozen=True)
class Price:
    """How the simulator's time model (``indexbench.sim.time_model``) prices a counter an
    index declares: the counter adds to the quantity that one constant of the cost
    profile multiplies in one phase — a lookup request of an external index to the
    tagging phase's ``kv_round_trip_s``, an index file written to the commit's
    ``write_latency_s``. ``less``: counters the declared one includes that are priced
    elsewhere (a ``driver`` total of every request, less the lookups and puts)."""

    phase: str  # "tag", "write" or "commit"
    constant: str  # a CostProfile constant: "read_latency_s", "kv_key_s", ...
    spread: str = "requests"  # one of PRICE_SPREADS
    less: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.phase not in ("tag", "write", "commit") or self.spread not in PRICE_SPREADS:
            raise ValueError(f"a price's phase is tag, write or commit and its spread one "
                             f"of {PRICE_SPREADS}, not {self.phase!r}, {self.spread!r}")
        if self.spread == "job" and self.phase != "commit":  # the others' jobs: overheads
            raise ValueError("a price spread as a job is the commit phase's: the tag and "
                             "write phases' own jobs are their overheads")


@dataclass(frozen=True)
class Metric:
    """A metrics column an index adds to the contract's (docs/metrics.md).

    ``counter``: counted while the index works (its Spark accumulator or simulator
    counts) and copied into the upsert row by the driver; ``measured``: bytes or seconds
    a real run measures and the simulator only models (written there as
    ``model_<name>``). Neither: a figure the index computes itself (table figures,
    service rows, cache figures). ``placement``: depends on where Spark ran the tasks
    (which executor or Python worker a task landed in), so the same run twice may
    differ; every other column is a pure function of workload, parameters and code
    (tests/test_repeatable.py). ``priced``: how the simulator's time model prices it
    (:class:`Price`); unpriced counters cost no modelled seconds. ``part_of``: a contract
    counter this one is a part of (the row's contract column is the sum of its parts:
    bloom's range and filter footers make ``footers_read``)."""

    name: str
    help: str
    counter: bool = False
    measured: bool = False
    placement: bool = False
    priced: tuple[Price, ...] = ()
    part_of: str | None = None
    # work of this project's own Spark plan for the index: Hudi's writer plans its own,
    # so a profile of Hudi's writer does not price it (HudiCounterpart.hudi_prices does)
    our_plan: bool = False


# What an index's own Spark plan does while tagging beyond the one pass over the batch
# every index makes (priced per batch by tag_overhead_s and per record by
# cpu_record_tag_s): the indexes whose tagging does more declare these, count them where
# they run the work (the Spark adapter) and where they simulate it, and the time model
# prices them with the same two constants. Measured 2026-12-02 on 2 cores at 1,000,000
# records: multi-fg-bucket's tagging, which persists the batch twice and counts its
# inserts in a job of its own, took 1.8 times bloom's for the same files and probes.
TAG_JOBS = Metric(
    "tag_jobs", "Spark jobs the index's tagging runs before the tagged batch's own (a read "
    "of footer key ranges, a count of inserts to plan)", counter=True,
    priced=(Price("tag", "tag_overhead_s", "driver"),), our_plan=True)
TAG_ROWS_PERSISTED = Metric(
    "tag_rows_persisted", "rows the index's tagging persists on the executors (serialised, "
    "stored, read back) besides the tagged batch the driver persists", counter=True,
    priced=(Price("tag", "cpu_record_tag_s", "per_core"),), our_plan=True)


@dataclass(frozen=True)
class IndexFigure:
    """A report figure an index declares (drawn by :mod:`reports` for any index that
    declares one, when some rows have its columns): ``y`` against ``x`` over the upsert
    rows of the index, one colour per index, real runs filled and simulated ones hollow
    (their ``model_<y>``); the points of several runs (``indexbench report DIR...``, one
    setting per run) make one curve, drawn through the median at each ``x``. ``x`` is a
    column or a ratio of two (``"a/b"``)."""

    file: str  # "kv_latency.png"
    title: str
    caption: str
    x: str
    y: tuple[str, ...]
    x_label: str
    y_label: str
    y_names: tuple[str, ...] = ()  # legend name of each y column (default: the column)
    log_x: bool = False
    log_y: bool = False


@dataclass(frozen=True)
class ServiceOption:
    """A command-line option of a table service run on demand (``indexbench rescale``)."""

    flag: str  # "--factor"
    dest: str  # keyword the service's planner takes
    help: str
    type: type = str
    choices: tuple[str, ...] | None = None
    repeatable: bool = False  # action="append"
    metavar: str | None = None


@dataclass(frozen=True)
class TableService:
    """A table service an index runs (Hudi's clustering, compaction, index maintenance).

    The driver's service runner (:mod:`indexbench.services`) times it, starts and
    completes its instant (``action``), assembles its commit, owns its crash points
    (``<name>_after_write``, ``<name>_before_commit``) and undoes it on failure; the
    index's Spark adapter only plans and executes it (``plan_service`` /
    ``execute_service``). ``inline``: planned after every commit of a run (``repeat``:
    again after each instant it completes, until it plans nothing); ``command``: the
    CLI command that runs it on demand, with its ``options``."""

    name: str
    help: str
    operation: str  # the ``operation`` of its metrics rows ("rescale", "rli_compaction")
    action: str = "replacecommit"
    inline: bool = False
    may_stay_pending: bool = False  # its inflight file keeps its execution until done
    # inline: run again after each instant it completes, while it plans something (one
    # instant per step: extendible-hash splits one bucket per replacecommit)
    repeat: bool = False
    command: str | None = None
    options: tuple[ServiceOption, ...] = ()
    usage: str = ""  # how its command is called, quoted when an option is refused
    # the action its instant completes as, when not ``action`` (a compaction's
    # ``.compaction.requested``/``.inflight`` complete as a ``.commit``)
    completed_action: str | None = None

    @property
    def crash_prefix(self) -> str:
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class PendingGroup:
    """A file group the tagging sent records to that is not visible yet: a pending
    resize's child (consistent-hashing's dual write). ``path``: its latest pending base
    file (None: none); ``base_instant``: the pending instant its slice starts at;
    ``log_files``: names of the log files earlier writes appended to it (merge-on-read),
    oldest first, so the next one takes the next version."""

    path: str | None
    base_instant: str
    log_files: tuple[str, ...] = ()


@dataclass
class TagContext:
    """What tagging may look at: the committed snapshot, never uncommitted files."""

    spark: Any
    table: Any
    snapshot: Any
    instant: str
    partitions: list[str]
    counters: Any  # Spark accumulator of {name: number}
    # file groups the tagging sent records to that are not visible yet — a pending
    # resize's children (consistent-hashing's dual write): (partition, file id) -> them
    pending_groups: dict[tuple[str, str], PendingGroup] = field(default_factory=dict)
    # file groups the tagging sent inserts to, named by an index that places its own
    # inserts (``assigns_inserts``): on merge-on-read, an index that cannot index log
    # files gets them written as base files, as the insert planner's groups
    # (:func:`tableformat.table_type.writes_log_file`)
    insert_groups: set[tuple[str, str]] = field(default_factory=set)
    # the batch is not pre-combined: each file group's write combines its records
    # (indexes.roles.CombinesInWriter), which then counts what tagging would have per record
    combined_in_writer: bool = False


@dataclass
class CommitContext:
    """What ``update_location`` sees: the instant being committed and its write stats."""

    spark: Any
    table: Any
    instant: str
    write_stats: list[dict]
    tagged: Any = None  # the tagged batch (Spark DataFrame), still persisted
    extra_metadata: dict = field(default_factory=dict)
    # the records tagging left without a location (inserts), each with the file group
    # the insert planner wrote it to (FILE_ID_COL): what an index that persists the new
    # locations itself puts (Hudi's updateLocation over the write statuses). A lazy
    # DataFrame, read only by an index that needs it; None when the index assigns its
    # own inserts (``assigns_inserts``).
    inserts: Any = None


@dataclass
class ServiceWork:
    """What a table service's execution did, for the runner to commit and count.

    ``stats``: write stats of the base files it wrote (the commit lists them);
    ``replaced``: partition → file ids the commit replaces; ``read``: files and bytes
    its tasks read; ``figures``: the service's own row fields (mode, bucket counts…);
    ``on_complete``: what runs once the instant completed (e.g. a zero-retention clean
    of files the commit replaced)."""

    stats: list[dict] = field(default_factory=list)
    replaced: dict[str, list[str]] = field(default_factory=dict)
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str = "CLUSTER"
    read: dict[str, float] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    on_complete: Any = None  # Callable[[], None] | None


@dataclass
class PendingService:
    """A table service executed and not yet completed (its instant is inflight)."""

    service: TableService
    instant: str
    plan: Any
    work: ServiceWork
    execute_s: float | None = None
    shuffle_bytes: float | None = None
    shuffle_read_bytes: float | None = None
    spark_jobs: int | None = None


def load_object(path: str) -> Any:
    """``"package.module:Name"`` → the object (adapters load only when used)."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


# The registry (indexes/__init__.py) sets this to indexes.roles.adapter_problems: an
# adapter class is checked against its roles on first use (this module cannot import
# indexes.roles, which builds on it).
ADAPTER_CHECK: Any = None
_CHECKED_ADAPTERS: set[tuple[type, type]] = set()


def _checked_adapter(index: Any, path: str, engine: str) -> Any:
    """The adapter class at ``path``, refused (``TypeError``) on first use if it defines
    a role's member without playing the role, or lacks what its roles require."""
    adapter = load_object(path)
    key = (type(index), adapter)
    if ADAPTER_CHECK is not None and key not in _CHECKED_ADAPTERS:
        problems = ADAPTER_CHECK(index, adapter, engine)
        if problems:
            raise TypeError("; ".join(problems) + " (docs/adding-an-index.md, roles)")
        _CHECKED_ADAPTERS.add(key)
    return adapter


class RecordIndex(ABC):
    """Engine-neutral definition of an index; adding one = one folder + one registry line.

    The required core, Hudi's ``HoodieIndex`` in size: what an index declares
    (:data:`CORE`: its name and ``hoodie.index.type``, parameters, metric columns,
    whether it places its own inserts and can index log files, its two adapters) and may
    override (``validate``, ``describe``). Everything else an index does — table
    services, footers, table figures, bucket placement, point lookups, resources, the
    Hudi counterpart… — is an opt-in role (:mod:`indexes.roles`) generic code asks for
    with ``plays``. The rest of this class is machinery no index fills in."""

    name: ClassVar[str]
    index_type: ClassVar[str]  # hoodie.index.type
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    # bucket indexes route inserts themselves; the others leave them to the planner
    assigns_inserts: ClassVar[bool] = False
    SPARK_ADAPTER: ClassVar[str]  # "module:Class" of the Spark adapter
    SIM_ADAPTER: ClassVar[str]  # "module:Class" of the simulator adapter
    # what generic code needs to know, declared (docs/adding-an-index.md)
    METRICS: ClassVar[tuple[Metric, ...]] = ()  # columns beyond the contract's
    # Hudi's ``HoodieIndex.canIndexLogFiles``: whether a record in a log file can be
    # found by this index. On a merge-on-read table an index that cannot (bloom: its
    # filters are in base-file footers) gets its inserts written to base files only.
    CAN_INDEX_LOG_FILES: ClassVar[bool] = False

    def __init__(self, **params: Any):
        known = {p.name: p for p in self.PARAMS}
        by_key = {p.key: p for p in self.PARAMS}
        values = {p.name: p.default for p in self.PARAMS}
        for name, value in params.items():
            p = known.get(name) or by_key.get(name)
            if p is None:
                refuse_global(name, value)
                raise IndexBenchError(
                    f"unknown parameter {name!r} for index {self.name}"
                    f"{did_you_mean(name, by_key)}; known: {', '.join(sorted(by_key))} "
                    "(`indexbench list` shows each with its default)")
            values[p.name] = p.parse(value)
        self.params = values
        self.validate()
        self._spark: Any = None

    def __getstate__(self) -> dict:
        """Tasks pickle the index (its footer hook): ship parameters, never engine state."""
        return {"params": self.params}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state["params"])

    @property
    def spark(self) -> Any:
        """The Spark adapter of this index (imports pyspark on first use)."""
        if self._spark is None:
            self._spark = _checked_adapter(self, self.SPARK_ADAPTER, "spark")(self)
        return self._spark

    def simulator(self, model: Any, options: Any = None) -> Any:
        """A simulator adapter of this index over a model table (no Spark)."""
        return _checked_adapter(self, self.SIM_ADAPTER, "sim")(self, model, options)

    def validate(self) -> None:  # noqa: B027 (optional hook)
        """Refuse impossible parameter values (override to add checks)."""

    # ---- table configuration ---------------------------------------------
    def table_params(self) -> dict[str, str]:
        """Parameters as ``hoodie.properties`` entries."""
        return {p.key: str(self.params[p.name]).lower() if p.type is bool
                else str(self.params[p.name]) for p in self.PARAMS}

    @classmethod
    def param_keys(cls) -> set[str]:
        return {p.key for p in cls.PARAMS}

    @classmethod
    def counter_columns(cls) -> tuple[str, ...]:
        """Declared counters: copied from the work counts into the upsert row."""
        return tuple(m.name for m in cls.METRICS if m.counter)

    @classmethod
    def measured_columns(cls) -> tuple[str, ...]:
        """Declared bytes and seconds: ``model_<name>`` in simulated rows."""
        return tuple(m.name for m in cls.METRICS if m.measured)

    @classmethod
    def part_columns(cls) -> dict[str, tuple[str, ...]]:
        """Declared parts of contract counters: contract column -> its parts."""
        parts: dict[str, tuple[str, ...]] = {}
        for m in cls.METRICS:
            if m.part_of:
                parts[m.part_of] = (*parts.get(m.part_of, ()), m.name)
        return parts

    @classmethod
    def placement_columns(cls) -> tuple[str, ...]:
        """Declared figures that depend on where Spark ran the tasks (not repeatable)."""
        return tuple(m.name for m in cls.METRICS if m.placement)

    def describe(self) -> dict[str, Any]:
        """Name and parameters, for reports and ``run.json``."""
        return {"index": self.name, "index_type": self.index_type, **self.params}


class SparkAdapter:
    """The Spark side of an index: Hudi's ``tagLocation``/``updateLocation`` on DataFrames.

    Adapters distribute the index's core; defaults are the no-ops of a stateless index.
    The core is :data:`SPARK_CORE`; what only some adapters do (combine in the writer,
    verify their index state, dual writes, table services) are roles
    (:data:`indexes.roles.SPARK_ROLES`).
    """

    def __init__(self, index: RecordIndex):
        self.index = index

    def tag_location(self, batch, ctx: TagContext):
        """Return the batch with FILE_ID_COL (null = insert to plan) and BUCKET_COL."""
        raise NotImplementedError

    def update_location(self, ctx: CommitContext) -> dict:
        """Persist index state the write did not persist; returns extra commit metadata."""
        return {}

    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """Hook at every checkpoint (= commit); returns index metrics of this batch."""
        return {}



# What every index fills: the definition's and its Spark adapter's required members
CORE = ("name", "index_type", "PARAMS", "METRICS", "assigns_inserts", "CAN_INDEX_LOG_FILES",
        "SPARK_ADAPTER", "SIM_ADAPTER", "validate", "describe")
SPARK_CORE = ("tag_location", "update_location", "after_commit")


def batch_hash_fields(index: Any, columns: list[str], record_key_field: str) -> list[str]:
    """A hashing index's index-key fields, refused at once unless all are batch columns."""
    fields = index.hash_fields(record_key_field)
    missing = [f for f in fields if f not in columns]
    if missing:
        raise IndexBenchError(f"index-key field(s) {missing} are not columns of the batch")
    return fields


BUCKET_COUNT_TOTAL = Metric("bucket_count_total",
                            "buckets over all partitions (a rescale or resize changes it)")


def bucket_fill(counts: np.ndarray) -> dict[str, float]:
    """Bucket size figures shared by the bucket indexes."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size == 0:
        return {"buckets": 0, "bucket_records_max": 0.0, "bucket_records_mean": 0.0,
                "bucket_records_cov": 0.0}
    mean = counts.mean()
    return {
        "buckets": int(counts.size),
        "bucket_records_max": float(counts.max()),
        "bucket_records_mean": float(mean),
        "bucket_records_cov": float(counts.std() / mean) if mean else 0.0,
    }
