"""The index protocol, in Hudi's shape: ``tag_location``, ``update_location``, ``describe``.

An index is an engine-neutral definition (parameters, footer, table figures, its core)
plus one adapter per engine, loaded only when that engine runs it — as Hudi's
``HoodieIndex`` takes a ``SparkHoodieBloomIndexHelper`` and ``JavaWriteHelper`` runs the
same index in-process. ``index.spark`` is the Spark adapter (``tag_location`` …), and
``index.simulator(model)`` the simulator's; both call the index's Spark-free core.
The driver times and counts around every call; an index reports only the work it alone
can see. Nothing in this module (or any core) imports pyspark.
"""

from __future__ import annotations

import contextlib
import importlib
from abc import ABC
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from indexes.lookup import Candidates, scan_candidates
from indexes.suggest import did_you_mean
from tableformat.errors import IndexBenchError
from tableformat.fs import IOStats
from writeclient.sizing import SizingConfig

# Columns the tagging adds to a batch (dropped before the data is written).
FILE_ID_COL = "_hoodie_file_id"
BUCKET_COL = "_hoodie_bucket_id"
# a record's place in its batch (Spark's monotonically_increasing_id): the later arrival
# wins a tie when each file group's write pre-combines (SparkAdapter.writer_combine)
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
    (tests/test_repeatable.py)."""

    name: str
    help: str
    counter: bool = False
    measured: bool = False
    placement: bool = False


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
    # (SparkAdapter.writer_combine), which then counts what tagging would have per record
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


class RecordIndex(ABC):
    """Engine-neutral definition of an index; adding one = one folder + one registry line."""

    name: ClassVar[str]
    index_type: ClassVar[str]  # hoodie.index.type
    PARAMS: ClassVar[tuple[Param, ...]] = ()
    # bucket indexes route inserts themselves; the others leave them to the planner
    assigns_inserts: ClassVar[bool] = False
    SPARK_ADAPTER: ClassVar[str]  # "module:Class" of the Spark adapter
    SIM_ADAPTER: ClassVar[str]  # "module:Class" of the simulator adapter
    # what generic code needs to know, declared (docs/adding-an-index.md)
    METRICS: ClassVar[tuple[Metric, ...]] = ()  # columns beyond the contract's
    FIGURES: ClassVar[tuple[IndexFigure, ...]] = ()  # report figures of its own columns
    SERVICES: ClassVar[tuple[TableService, ...]] = ()
    # simulator scheduling: a memory-heavy index gets a process lane of its own
    SIM_MEMORY_HEAVY: ClassVar[bool] = False
    # Hudi's ``HoodieIndex.canIndexLogFiles``: whether a record in a log file can be
    # found by this index. On a merge-on-read table an index that cannot (bloom: its
    # filters are in base-file footers) gets its inserts written to base files only.
    CAN_INDEX_LOG_FILES: ClassVar[bool] = False
    # the Hudi counterpart role (:mod:`indexes.hudi_counterpart`): what Hudi's own Spark
    # writer runs for this index in ``compare --peers hudi``; None: Hudi has no such index
    HUDI: ClassVar[Any] = None

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

    def resources(self, table) -> contextlib.AbstractContextManager[None]:
        """What the index needs running while a command works on ``table`` (an external
        server its tasks talk to), as a context manager: the driver enters it around a
        run, every upsert, ``verify`` and ``query``, so the resource is started before
        the index is used and stopped when the command ends, on error and on Ctrl-C
        too. Scopes nest (a run's upserts enter it again): an index makes the inner
        entries cheap, the outermost one owns the resource. Default: nothing to run."""
        return contextlib.nullcontext()

    def check_resources(self, table_uri: str) -> None:  # noqa: B027 (optional hook)
        """Refuse, before Spark starts, what :meth:`resources` could not provide for the
        table at ``table_uri`` (an IndexBenchError naming the fix: a program to install,
        a server that does not answer). Default: nothing to check."""

    def size_notes(self, records: int, record_bytes: float) -> list[str]:
        """Lines to tell the user before a run whose table will hold about ``records``
        records of about ``record_bytes`` bytes each: a parameter that makes the table
        unlike Hudi's at that size (bloom: a scale that makes hundreds of thousands of
        tiny files). Printed by the commands and kept in run.json's ``notes``."""
        return []

    def __getstate__(self) -> dict:
        """Tasks pickle the index (its footer hook): ship parameters, never engine state."""
        return {"params": self.params}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state["params"])

    @property
    def spark(self) -> Any:
        """The Spark adapter of this index (imports pyspark on first use)."""
        if self._spark is None:
            self._spark = load_object(self.SPARK_ADAPTER)(self)
        return self._spark

    def simulator(self, model: Any, options: Any = None) -> Any:
        """A simulator adapter of this index over a model table (no Spark)."""
        return load_object(self.SIM_ADAPTER)(self, model, options)

    def sizing(self) -> SizingConfig:
        """Hudi's file-sizing configs for the inserts this index leaves to the driver's
        planner (an index that assigns its own inserts never uses them)."""
        return SizingConfig()

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
    def placement_columns(cls) -> tuple[str, ...]:
        """Declared figures that depend on where Spark ran the tasks (not repeatable)."""
        return tuple(m.name for m in cls.METRICS if m.placement)

    @classmethod
    def service(cls, name: str) -> TableService | None:
        """The declared table service of that name (None: this index has none)."""
        return next((s for s in cls.SERVICES if s.name == name), None)

    def describe(self) -> dict[str, Any]:
        """Name and parameters, for reports and ``run.json``."""
        return {"index": self.name, "index_type": self.index_type, **self.params}

    # ---- engine-neutral hooks ---------------------------------------------
    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        """Footer entries this index keeps in each base file, and their size in bytes."""
        return {}, 0

    def table_metrics(self, snapshot) -> dict[str, float]:
        """Index figures measured on the committed snapshot (bucket sizes, index bytes)."""
        return {}

    def row_buckets(self, data, partition: str, config, snapshot) -> np.ndarray | None:
        """The bucket each row of a base file must be in, for bucket indexes (else None)."""
        return None

    def verify_base_file(self, path: str, footer: dict[str, str], keys: np.ndarray
                         ) -> list[str]:
        """Problems of one base file's index data (``verify``; its footer and record
        keys): e.g. a bloom filter that misses a key of its file. Default: none."""
        return []

    def misplaced(self, data, partition: str, file_id: str, config, snapshot) -> str | None:
        """Why rows of a base file are not where the index would put them (``verify``;
        None: all in place). Default: the bucket of :meth:`row_buckets` against the
        bucket id in the file id (RFC-29); indexes without buckets have nothing to check."""
        from tableformat.basefile import bucket_of_file_id

        buckets = self.row_buckets(data, partition, config, snapshot)
        if buckets is None:
            return None
        file_bucket = bucket_of_file_id(file_id)
        wrong = int((buckets != file_bucket).sum())
        return f"{wrong} records do not hash to bucket {file_bucket}" if wrong else None

    # ---- table services (declared in SERVICES; run by indexbench.services) ----------
    def plan_service(self, service: TableService, table, snapshot,
                     options: dict[str, Any]) -> Any | None:
        """What ``service`` would do now, checked against ``snapshot``; nothing is
        written, no engine runs (None: nothing to do). ``options``: its command's
        options, or {} for an inline run; bad ones raise before anything is written."""
        return None

    # ---- read side (``indexbench query``) -----------------------------------
    def query_key_fields(self, record_key_field: str) -> list[str]:
        """The index key a group-by or join of this table is on (bucket indexes: their
        hash fields; the others: the record key)."""
        return [record_key_field]

    def hash_layout(self, snapshot) -> dict[str, int] | None:
        """Per-partition bucket counts when every record sits in bucket
        ``Hudi hash(query_key_fields) % N`` of its partition, the bucket id in its file
        id (RFC-29): what lets a scan run bucket by bucket without a shuffle. ``None``
        when records are not placed by that hash."""
        return None

    def lookup_candidates(self, table, view, partition: str, keys: pa.Table,
                          stats: IOStats, counts: Counter) -> Candidates:
        """The file groups of ``partition`` that may hold each row of ``keys`` (the
        record key and the index's key fields); reads of the index's own structures
        (footers, RLI files) go into ``stats``, its counters into ``counts``. Default:
        every file of the partition (a scan, no index)."""
        return scan_candidates(view.files.get(partition, ()), keys)

    def read_view_extra(self, snapshot) -> dict[str, Any]:
        """What this index's readers need beyond file groups (``ReadView`` fields)."""
        return {}


class SparkAdapter:
    """The Spark side of an index: Hudi's ``tagLocation``/``updateLocation`` on DataFrames.

    Adapters distribute the index's core; defaults are the no-ops of a stateless index.
    """

    def __init__(self, index: RecordIndex):
        self.index = index

    def tag_location(self, batch, ctx: TagContext):
        """Return the batch with FILE_ID_COL (null = insert to plan) and BUCKET_COL."""
        raise NotImplementedError

    def update_location(self, ctx: CommitContext) -> dict:
        """Persist index state the write did not persist; returns extra commit metadata."""
        return {}

    def writer_combine(self, table, columns: list[str]) -> tuple[str, ...] | None:
        """Whether throughput mode may skip the batch's pre-combine: yes when tagging
        places every record by its own partition and record key alone (so all records of
        a key reach one file group, whose write combines them, as Hudi's Flink bucket
        writer combines in each bucket's buffer), and neither reads the tagged records
        twice nor ``CommitContext.tagged``. Then the counters tagging adds once per record
        (``TagContext.combined_in_writer``: it adds none) are returned, and the writes
        add them once per combined record. None (the default): tag the combined batch."""
        return None

    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """Hook at every checkpoint (= commit); returns index metrics of this batch."""
        return {}

    def verify(self, spark, table, snapshot) -> list[str]:
        """Problems with this index's own invariants (``indexbench verify``)."""
        return []

    def pending_write_counts(self, stats: list[dict]) -> dict[str, float]:
        """Counters of the writes an upsert made to file groups not visible yet
        (:attr:`TagContext.pending_groups`, e.g. a pending resize's dual writes): the
        driver counts them apart from the batch's own writes. Default: none."""
        return {}

    # ---- table services (run by indexbench.services; declared in SERVICES) --------
    def service_request(self, service: TableService, plan: Any) -> dict | None:
        """The body of the service instant's ``.requested`` file (Hudi: the plan)."""
        return None

    def execute_service(self, service: TableService, plan: Any, spark, table,
                        instant: str, counters) -> ServiceWork:
        """Write what the service writes under ``instant`` (nothing visible yet); its
        tasks add files_read / bytes_read to ``counters``."""
        raise NotImplementedError

    def stays_pending(self, pending: PendingService, snapshot) -> bool:
        """Keep an executed service inflight after this commit? (consistent-hashing's
        resize waits some commits, dual-writing.) Default: complete it now."""
        return False

    def find_pending(self, service: TableService, table) -> PendingService | None:
        """A service instant a previous commit left inflight on purpose (read back from
        the timeline); default: none."""
        return None

    def complete_service(self, pending: PendingService, table, snapshot) -> ServiceWork:
        """The work as committed (e.g. with the dual writes since it was executed), and
        what must exist once the instant completes, written now. Default: as executed."""
        return pending.work

    def service_figures(self, pending: PendingService, before, after) -> dict[str, Any]:
        """The service row's index figures beyond the runner's (bucket fill before and
        after…)."""
        return {}


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
