"""Opt-in roles of an index: what only some indexes do, declared by playing a role.

Every index fills the required core (:class:`indexes.base.RecordIndex`); anything more —
a reference curve for a report, options of the simulator, … — is a role: a small mixin
class the index's definition inherits, with the role's members. Generic code asks
:func:`plays` and calls the role's members only then, instead of calling hooks most
indexes leave empty (Paimon's ``BucketAssigner`` is two methods; Hudi's ``HoodieIndex``
about nine). No pyspark here.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from indexes.base import (
    IndexFigure,
    PendingService,
    ServiceWork,
    TableService,
)
from tableformat.basefile import bucket_of_file_id
from tableformat.fs import IOStats
from writeclient.sizing import SizingConfig


class Role:
    """Base of every role: an index plays a role by inheriting it."""


def required(fn: Callable) -> Callable:
    """Marks a role member an index playing the role must define itself."""
    fn.__role_required__ = True
    return fn


def plays(index: Any, role: type[Role]) -> bool:
    """Whether ``index`` (an index, its class, or None) plays ``role``."""
    if index is None:
        return False
    cls = index if isinstance(index, type) else type(index)
    return issubclass(cls, role)


# ---- the simulator's options ------------------------------------------------------------
@dataclass(frozen=True)
class SimOption:
    """A setting of the simulator that an index declares (``indexbench sim --<flag>``,
    ``simulate(<name>=…)``, kept in the sim run's ``run.json`` under ``name``). Indexes
    that share an option declare the same one (same name, default and type)."""

    name: str  # "exact_bloom_keys"
    flag: str  # "--exact-bloom-keys"
    type: type
    default: Any
    help: str


class SimulatorOptions(Role):
    """An index whose simulator adapter takes settings of its own (``SIM_OPTIONS``; the
    adapter reads them with ``self.options.option(name)``) or needs a process lane of
    its own in ``indexbench sim --jobs`` (``SIM_MEMORY_HEAVY``)."""

    SIM_OPTIONS: ClassVar[tuple[SimOption, ...]] = ()
    # simulator scheduling: a memory-heavy index gets a process lane of its own
    SIM_MEMORY_HEAVY: ClassVar[bool] = False


# ---- a reference curve for the false-positive figure ----------------------------------
class FilterTheory(Role):
    """An index whose probes go through a filter with a theoretical false-positive rate
    (a bloom filter): the false-positive figure draws that rate as the reference line of
    the index's measured points. Class methods over a run's index parameters (as kept in
    ``run.json``), so a report needs no index object."""

    @required
    @classmethod
    def theoretical_fp_rate(cls, params: Mapping[str, Any], n: Sequence[float] | np.ndarray
                            ) -> np.ndarray:
        """Expected false-positive rate of one file's filter holding ``n`` keys, per ``n``."""
        raise NotImplementedError

    @required
    @classmethod
    def theory_key(cls, params: Mapping[str, Any]) -> tuple:
        """Equal for runs whose filters share one theory curve (one curve is drawn for
        them all), and never equal to the key of another theory."""
        raise NotImplementedError

    @required
    @classmethod
    def theory_label(cls, params: Mapping[str, Any]) -> str:
        """The curve's legend detail, after "theory of <series>" ("m=… bits/row, k=…,
        type; dotted: …"; the dotted line is drawn at ``sized_keys(params)[0]``)."""
        raise NotImplementedError

    @required
    @classmethod
    def sized_keys(cls, params: Mapping[str, Any]) -> tuple[int, int]:
        """(keys a filter row is sized for, most keys a filter holds), as the run built them."""
        raise NotImplementedError

    @required
    @classmethod
    def design_fp_rate(cls, params: Mapping[str, Any]) -> float:
        """The false-positive rate the filter is sized for: the figure's rate axis reaches
        a thousandth below it."""
        raise NotImplementedError


# ---- the simulator's cost profile, fitted from what an index measures -----------------
class FitsCostProfile(Role):
    """An index whose real runs measure constants of the simulator's cost profile
    directly (an external index server's request latencies and memory): ``indexbench
    calibrate`` takes those from the index's own columns, not from a fit of seconds."""

    @required
    @classmethod
    def fit_cost_constants(cls, columns: Mapping[str, np.ndarray], base: Any
                           ) -> tuple[dict[str, float], dict[str, str]]:
        """(constants fitted, why each constant left to ``base`` was kept) from a real
        run's rows: ``columns`` maps a column to its values as floats (NaN: empty); a
        run without the index's columns gives neither. ``base``: the profile fitted from."""
        raise NotImplementedError


# ---- panels of generic report figures an index adds its columns to ---------------------
class StreamPanels(Role):
    """An index with stream-run columns of its own: the stream timeline draws its cache
    bytes beside ``index_mem_bytes`` and marks its events (evictions, bootstraps)."""

    # (column, label, line style) of cache bytes drawn when present
    STREAM_CACHE: ClassVar[tuple[tuple[str, str, str], ...]] = ()
    # (column, label, marker) of events marked where present and > 0
    STREAM_EVENTS: ClassVar[tuple[tuple[str, str, str], ...]] = ()


class RescalePanels(Role):
    """An index whose rescale rows have a cost column of their own: the rescale figure
    draws it as one more panel (column, label with unit, divisor: 1 or bytes per MiB)."""

    RESCALE_PANELS: ClassVar[tuple[tuple[str, str, float], ...]] = ()


def fit_cost_constants(columns: Mapping[str, np.ndarray], base: Any, index_classes: Sequence
                       ) -> tuple[dict[str, float], dict[str, str]]:
    """What every index of ``index_classes`` playing :class:`FitsCostProfile` fits."""
    fitted: dict[str, float] = {}
    why: dict[str, str] = {}
    for cls in index_classes:
        if plays(cls, FitsCostProfile):
            got, kept = cls.fit_cost_constants(columns, base)
            fitted.update(got)
            why.update(kept)
    return fitted, why


# ---- the definition's roles (what :class:`indexes.base.RecordIndex` leaves out) --------
class ExternalResources(Role):
    """An index that needs something running while a command works on its table (an
    external key-value server its tasks talk to)."""

    @required
    def resources(self, table) -> contextlib.AbstractContextManager[None]:
        """What the index needs running while a command works on ``table``, as a context
        manager: the driver enters it around a run, every upsert, ``verify`` and
        ``query``, so the resource is started before the index is used and stopped when
        the command ends, on error and on Ctrl-C too. Scopes nest (a run's upserts enter
        it again): an index makes the inner entries cheap, the outermost one owns it."""
        raise NotImplementedError

    @required
    def check_resources(self, table_uri: str) -> None:
        """Refuse, before Spark starts, what :meth:`resources` could not provide for the
        table at ``table_uri`` (an IndexBenchError naming the fix: a program to install,
        a server that does not answer)."""
        raise NotImplementedError


def resources(index: Any, table) -> contextlib.AbstractContextManager[None]:
    """The index's :meth:`ExternalResources.resources`, or nothing to run."""
    return index.resources(table) if plays(index, ExternalResources) \
        else contextlib.nullcontext()


def check_resources(index: Any, table_uri: str) -> None:
    """The index's :meth:`ExternalResources.check_resources`, if it plays the role."""
    if plays(index, ExternalResources):
        index.check_resources(table_uri)


class SizeNotes(Role):
    """An index whose parameters can make a table unlike Hudi's at some size."""

    @required
    def size_notes(self, records: int, record_bytes: float) -> list[str]:
        """Lines to tell the user before a run whose table will hold about ``records``
        records of about ``record_bytes`` bytes each (bloom: a scale that makes hundreds
        of thousands of tiny files). Printed by the commands, kept in run.json's
        ``notes``."""
        raise NotImplementedError


def size_notes(index: Any, records: int, record_bytes: float) -> list[str]:
    return index.size_notes(records, record_bytes) if plays(index, SizeNotes) else []


class FileSizing(Role):
    """An index with Hudi's file-sizing configs among its parameters, for the inserts it
    leaves to the driver's planner (others get Hudi's defaults)."""

    @required
    def sizing(self) -> SizingConfig:
        raise NotImplementedError


def sizing_of(index: Any) -> SizingConfig:
    """The sizing configs the insert planner uses for ``index``."""
    return index.sizing() if plays(index, FileSizing) else SizingConfig()


class FooterData(Role):
    """An index that keeps data in each base file's footer (bloom filters, key ranges)."""

    @required
    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        """Footer entries this index keeps in each base file, and their size in bytes."""
        raise NotImplementedError

    def verify_base_file(self, path: str, footer: dict[str, str], keys: np.ndarray
                         ) -> list[str]:
        """Problems of one base file's index data (``verify``; its footer and record
        keys): e.g. a bloom filter that misses a key of its file."""
        return []


def verify_base_file(index: Any, path: str, footer: dict[str, str], keys: np.ndarray
                     ) -> list[str]:
    return index.verify_base_file(path, footer, keys) if plays(index, FooterData) else []


def footer_writer(index: Any) -> Callable[[pa.Array], tuple[dict[str, str], int]] | None:
    """What a base-file write calls for the index's footer (None: nothing to keep)."""
    return index.base_file_footer if plays(index, FooterData) else None


class TableFigures(Role):
    """An index with figures of its own measured on the committed snapshot."""

    @required
    def table_metrics(self, snapshot) -> dict[str, float]:
        """Index figures measured on the committed snapshot (bucket sizes, index bytes)."""
        raise NotImplementedError


def table_metrics(index: Any, snapshot) -> dict[str, float]:
    return index.table_metrics(snapshot) if plays(index, TableFigures) else {}


class Bucketed(Role):
    """An index that places each record by a hash of its index key: ``verify`` checks
    the placement and the read side may run bucket by bucket."""

    def row_buckets(self, data, partition: str, config, snapshot) -> np.ndarray | None:
        """The bucket each row of a base file must be in (None: not checkable so)."""
        return None

    def misplaced(self, data, partition: str, file_id: str, config, snapshot) -> str | None:
        """Why rows of a base file are not where the index would put them (``verify``;
        None: all in place). Default: the bucket of :meth:`row_buckets` against the
        bucket id in the file id (RFC-29)."""
        buckets = self.row_buckets(data, partition, config, snapshot)
        if buckets is None:
            return None
        file_bucket = bucket_of_file_id(file_id)
        wrong = int((buckets != file_bucket).sum())
        return f"{wrong} records do not hash to bucket {file_bucket}" if wrong else None

    def query_key_fields(self, record_key_field: str) -> list[str]:
        """The index key a group-by or join of this table is on (a bucket index: its
        hash fields)."""
        return [record_key_field]

    def hash_layout(self, snapshot) -> dict[str, int] | None:
        """Per-partition bucket counts when every record sits in bucket
        ``Hudi hash(query_key_fields) % N`` of its partition, the bucket id in its file
        id (RFC-29): what lets a scan run bucket by bucket without a shuffle. ``None``
        when records are not placed by that hash."""
        return None


def misplaced(index: Any, data, partition: str, file_id: str, config, snapshot) -> str | None:
    """Why rows of a file group are not where the index would put them (None: in
    place, or the index places records by no rule ``verify`` can check)."""
    if not plays(index, Bucketed):
        return None
    return index.misplaced(data, partition, file_id, config, snapshot)


def query_key_fields(index: Any, record_key_field: str) -> list[str]:
    """The fields a group-by or join of the table is on: the index key, or the record key."""
    return index.query_key_fields(record_key_field) if plays(index, Bucketed) \
        else [record_key_field]


def hash_layout(index: Any, snapshot) -> dict[str, int] | None:
    return index.hash_layout(snapshot) if plays(index, Bucketed) else None


class TableServices(Role):
    """An index that runs table services (Hudi's clustering, compaction, index
    maintenance), declared in ``SERVICES`` and run by :mod:`indexbench.services`; its
    Spark adapter plays :class:`ServiceExecutor`."""

    SERVICES: ClassVar[tuple[TableService, ...]] = ()

    @required
    def plan_service(self, service: TableService, table, snapshot,
                     options: dict[str, Any]) -> Any | None:
        """What ``service`` would do now, checked against ``snapshot``; nothing is
        written, no engine runs (None: nothing to do). ``options``: its command's
        options, or {} for an inline run; bad ones raise before anything is written."""
        raise NotImplementedError

    @classmethod
    def service(cls, name: str) -> TableService | None:
        """The declared table service of that name (None: this index has none)."""
        return next((s for s in cls.SERVICES if s.name == name), None)


def services(index: Any) -> tuple[TableService, ...]:
    """The table services ``index`` (or its class) declares."""
    return index.SERVICES if plays(index, TableServices) else ()


class PointLookups(Role):
    """An index that answers point lookups (``indexbench query``) from its own
    structures; others are read by scanning every file of the partition."""

    @required
    def lookup_candidates(self, table, view, partition: str, keys: pa.Table,
                          stats: IOStats, counts: Counter) -> Any:
        """The file groups of ``partition`` that may hold each row of ``keys`` (the
        record key and the index's key fields), as :class:`indexes.lookup.Candidates`;
        reads of the index's own structures (footers, RLI files) go into ``stats``, its
        counters into ``counts``. An index that does not play this role is read by
        :func:`indexes.lookup.scan_candidates` (every file of the partition)."""
        raise NotImplementedError

    def read_view_extra(self, snapshot) -> dict[str, Any]:
        """What this index's readers need beyond file groups (``ReadView`` fields)."""
        return {}


def read_view_extra(index: Any, snapshot) -> dict[str, Any]:
    return index.read_view_extra(snapshot) if plays(index, PointLookups) else {}


class DeclaredFigures(Role):
    """An index with report figures of its own columns (``FIGURES``, drawn by
    :mod:`reports` for any index that declares one)."""

    FIGURES: ClassVar[tuple[IndexFigure, ...]] = ()


class HudiCounterpartRole(Role):
    """An index Hudi's own writer has (:mod:`indexes.hudi_counterpart`): ``compare
    --peers hudi`` runs Hudi's Spark writer with ``HUDI``'s configuration."""

    HUDI: ClassVar[Any] = None


def hudi_counterpart(index: Any) -> Any:
    """The index's Hudi counterpart (None: Hudi has no such index)."""
    return index.HUDI if plays(index, HudiCounterpartRole) else None


# ---- which settings to try for a described table (``indexbench advise``) ---------------
@dataclass(frozen=True)
class TableShape:
    """The table ``indexbench advise`` is asked about: records now and at the end of the
    horizon, bytes per stored record (the simulator's model of the workload's base
    files), partitions, and the file size Hudi targets (``hoodie.parquet.max.file.size``).
    ``scale``: the simulated table is this fraction of the described one (a billion keys
    simulated as a similar table of a million): every capacity that holds data — a
    file's or a bucket's size, a filter's entries — shrinks by it, while counts that
    shape the table (buckets, files per partition) stay the described table's."""

    records_now: int
    records_at_horizon: int
    record_bytes: float
    partitions: int
    target_file_bytes: int
    scale: float = 1.0
    # the size being simulated (described records): an index that grows its buckets
    # starts a table loaded at this size with the layout it would have grown to, not
    # with the count it starts from now (a table loaded at once would split for batches)
    records_at: int = 0

    @property
    def grown_to(self) -> int:
        """The records the simulated table stands for (``records_at``, else now)."""
        return self.records_at or self.records_now

    @property
    def file_bytes(self) -> int:
        """The target file size in the simulated table (the target times ``scale``)."""
        return max(1, round(self.target_file_bytes * self.scale))

    def buckets_for(self, records: int) -> int:
        """Buckets per partition that keep a bucket's file near the target size."""
        per_partition = records / max(self.partitions, 1) * self.record_bytes
        return max(1, -(-int(per_partition) // max(self.target_file_bytes, 1)))


@dataclass(frozen=True)
class Candidate:
    """One setting of an index worth trying: a label that says why, and its parameters."""

    label: str
    params: Mapping[str, Any]


class AdvisedSettings(Role):
    """An index whose settings decide its cost as a table grows (a bucket count, a
    capacity, the files' sizing): ``indexbench advise`` simulates each candidate it
    proposes for the described table, and says what choosing the index gives up."""

    # one line: what a user gives up with this index (shown with a recommendation)
    ADVICE_TRADEOFF: ClassVar[str] = ""

    @required
    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """The settings to try for ``shape`` (parameters by name), at least one."""
        raise NotImplementedError


def advice_candidates(index: Any, shape: TableShape) -> tuple[Candidate, ...]:
    """What an index proposes for ``shape``; its defaults when it proposes nothing."""
    if plays(index, AdvisedSettings):
        return tuple(index.advice_candidates(shape)) or (Candidate("defaults", {}),)
    return (Candidate("defaults", {}),)


def advice_tradeoff(index: Any) -> str:
    return index.ADVICE_TRADEOFF if plays(index, AdvisedSettings) else ""


# ---- the Spark adapter's roles (what :class:`indexes.base.SparkAdapter` leaves out) -----
class CombinesInWriter(Role):
    """A Spark adapter whose tagging places every record by its own partition and
    record key alone, so throughput mode may skip the batch's pre-combine."""

    @required
    def writer_combine(self, table, columns: list[str]) -> tuple[str, ...] | None:
        """Whether throughput mode may skip the batch's pre-combine: yes when tagging
        places every record by its own partition and record key alone (so all records of
        a key reach one file group, whose write combines them, as Hudi's Flink bucket
        writer combines in each bucket's buffer), and neither reads the tagged records
        twice nor ``CommitContext.tagged``. Then the counters tagging adds once per record
        (``TagContext.combined_in_writer``: it adds none) are returned, and the writes
        add them once per combined record. None: tag the combined batch."""
        raise NotImplementedError


def writer_combine(adapter: Any, table, columns: list[str]) -> tuple[str, ...] | None:
    return adapter.writer_combine(table, columns) if plays(adapter, CombinesInWriter) \
        else None


class VerifiesIndex(Role):
    """A Spark adapter with invariants of its own index state to check (``verify``)."""

    @required
    def verify(self, spark, table, snapshot) -> list[str]:
        """Problems with this index's own invariants (``indexbench verify``)."""
        raise NotImplementedError


def verify_state(adapter: Any, spark, table, snapshot) -> list[str]:
    """Problems of the index's own state (``verify``), if it keeps any to check."""
    return adapter.verify(spark, table, snapshot) if plays(adapter, VerifiesIndex) else []


class DualWrites(Role):
    """A Spark adapter whose tagging sends records to file groups not visible yet (a
    pending resize's children): the driver counts those writes apart."""

    @required
    def pending_write_counts(self, stats: list[dict]) -> dict[str, float]:
        """Counters of the writes an upsert made to file groups not visible yet
        (:attr:`TagContext.pending_groups`)."""
        raise NotImplementedError


def pending_write_counts(adapter: Any, stats: list[dict]) -> dict[str, float]:
    return adapter.pending_write_counts(stats) if plays(adapter, DualWrites) else {}


class ServiceExecutor(Role):
    """The Spark side of :class:`TableServices`: plans are executed here, and the
    runner (:mod:`indexbench.services`) times, commits and undoes them."""

    def service_request(self, service: TableService, plan: Any) -> dict | None:
        """The body of the service instant's ``.requested`` file (Hudi: the plan)."""
        return None

    @required
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


# ---- the simulator adapter's roles (what :class:`indexes.simulation.SimAdapter` leaves out)
class SimFooterBytes(Role):
    """A simulator adapter whose index keeps data in base-file footers (the
    :class:`FooterData` role's bytes, modelled)."""

    @required
    def file_index_bytes(self, partition: str, file_id: str, num_records: int) -> int:
        """Bytes of index data the index keeps in a base file's footer (modelled)."""
        raise NotImplementedError


def file_index_bytes(adapter: Any, partition: str, file_id: str, num_records: int) -> int:
    if plays(adapter, SimFooterBytes):
        return adapter.file_index_bytes(partition, file_id, num_records)
    return 0


class SimCommitMetadata(Role):
    """A simulator adapter whose index records extraMetadata with each commit (as its
    Spark adapter's ``update_location`` returns it)."""

    @required
    def commit_extra(self) -> dict[str, str]:
        raise NotImplementedError


def commit_extra(adapter: Any) -> dict[str, str]:
    return adapter.commit_extra() if plays(adapter, SimCommitMetadata) else {}


class SimDualWrites(Role):
    """A simulator adapter whose batches append to file groups not visible yet (a pending
    resize's children, :class:`DualWrites` on Spark)."""

    @required
    def pending_logs(self) -> list[Any]:
        """Log files this batch appends to file groups not visible yet (on merge-on-read,
        :class:`indexes.model_table.LogAppend` with the pending ``base_instant``),
        committed with the batch but counted apart from its writes."""
        raise NotImplementedError


def pending_logs(adapter: Any) -> list[Any]:
    return adapter.pending_logs() if plays(adapter, SimDualWrites) else []


class SimTableServices(Role):
    """A simulator adapter that runs its index's table services (:class:`TableServices`)
    inline, as the service runner does after each commit."""

    @required
    def table_services(self, batch_no: int) -> list[dict[str, Any]]:
        """Inline table services after a commit (the rescale policy); one row each."""
        raise NotImplementedError

    def finish_table_services(self) -> list[dict[str, Any]]:
        """At the end of a run: finish what a table service left pending; one row each."""
        return []


def sim_table_services(adapter: Any, batch_no: int) -> list[dict[str, Any]]:
    return adapter.table_services(batch_no) if plays(adapter, SimTableServices) else []


def finish_sim_table_services(adapter: Any) -> list[dict[str, Any]]:
    return adapter.finish_table_services() if plays(adapter, SimTableServices) else []


DEFINITION_ROLES = (ExternalResources, SizeNotes, FileSizing, FooterData, TableFigures,
                    Bucketed, TableServices, PointLookups, DeclaredFigures,
                    HudiCounterpartRole, SimulatorOptions, FilterTheory, FitsCostProfile,
                    StreamPanels, RescalePanels, AdvisedSettings)
SPARK_ROLES = (CombinesInWriter, VerifiesIndex, DualWrites, ServiceExecutor)
SIM_ROLES = (SimFooterBytes, SimCommitMetadata, SimDualWrites, SimTableServices)


def _role_members(role: type[Role]) -> dict[str, Any]:
    return {n: v for n, v in vars(role).items() if not n.startswith("_")}


def _is_role(k: type) -> bool:
    """A role class (of this module or an index's own, e.g. a shared implementation of
    one: every base a role), as opposed to an index or adapter class that plays roles."""
    return issubclass(k, Role) and all(b is Role or _is_role(b) for b in k.__bases__)


def _raw(cls: type, name: str) -> Any:
    """``name`` as the class that wins the lookup defines it (no descriptor binding)."""
    return next(vars(k)[name] for k in cls.__mro__ if name in vars(k))


def adapter_problems(index: Any, adapter: type, engine: str) -> list[str]:
    """:func:`role_problems` of an index's ``"spark"`` or ``"sim"`` adapter class, and an
    index with table services whose Spark adapter cannot execute them."""
    out = role_problems(adapter, SPARK_ROLES if engine == "spark" else SIM_ROLES)
    if engine == "spark" and services(index) and not plays(adapter, ServiceExecutor):
        out.append(f"{adapter.__name__} does not play ServiceExecutor, but its index "
                   "declares table services (TableServices)")
    return out


def role_problems(cls: type, roles: Sequence[type[Role]]) -> list[str]:
    """What is wrong with how ``cls`` plays ``roles``: a member of a role it defines
    without playing the role (generic code would never call it), or a required member of
    a role it plays that it does not define."""
    own = {n for k in cls.__mro__ if not _is_role(k) for n in vars(k)
           if not n.startswith("_")}
    out = []
    for role in roles:
        members = _role_members(role)
        if plays(cls, role):
            out += [f"{cls.__name__} plays {role.__name__} but does not define {n}"
                    for n, v in members.items()
                    if getattr(v, "__role_required__", False)
                    and getattr(_raw(cls, n), "__role_required__", False)]
        else:
            out += [f"{cls.__name__} defines {n} but does not play {role.__name__} "
                    "(generic code calls it only for an index that does)"
                    for n in sorted(own & set(members))]
    return out
