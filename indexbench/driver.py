"""The upsert driver: validate → tag → plan → write → update index → commit → metrics.

One code path for every index and both timing modes: the steps are the same, and a plan
(:class:`PhasedPlan`, :class:`ThroughputPlan`) decides what is materialized between
them; one :class:`Clock` times every step, so no index adapter times itself. The driver
never brings rows of the table or of the batch to the driver process: only one write
stat per file group, one footer range per base file, and the batch's partition names.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexbench.failed_write import safely, undone_on_failure
from indexbench.log_writer import LogTarget, append_file_group
from indexbench.preflight import check_table_identity
from indexbench.spark import shuffle_partitions_for
from indexbench.writer import WRITE_STATS_ARROW, MergeSpec, merge_file_group
from indexes import get as get_index
from indexes import roles
from indexes.base import (
    ARRIVAL_COL,
    BUCKET_COL,
    FILE_ID_COL,
    CommitContext,
    PendingGroup,
    RecordIndex,
    TagContext,
)
from indexes.counters import new_counters
from metrics.rows import WriteTotals, upsert_row
from tableformat import partition_path
from tableformat.avro_schema import avro_schema_json
from tableformat.basefile import IS_DELETED, task_write_token
from tableformat.commit_metadata import COMMIT, DELTA_COMMIT, SPARK_SCHEMA_KEY
from tableformat.errors import (
    InvalidBatchError,
)
from tableformat.hudi_log.constants import BASE_LOG_VERSION
from tableformat.hudi_log.names import LogFileName
from tableformat.table import UPSERT_STATS_SCHEMA, Snapshot, Table, TableConfig, stats_by_partition
from tableformat.table_type import MERGE_ON_READ, writes_log_file
from tableformat.write_config import WriteConfig
from writeclient import sizing
from writeclient.faults import CRASH_ENV, crash_if, fail_task_if_asked, hang_if  # noqa: F401

KEY_TYPES = (T.StringType,)
ORDERING_TYPES = (T.IntegerType, T.LongType, T.ShortType, T.ByteType, T.DoubleType,
                  T.FloatType, T.TimestampType, T.DateType, T.StringType, T.DecimalType)

HANG_BEFORE_COMMIT = "before_commit_hang"  # fault injection: the writer waits, inflight

# ``upsert``'s timing modes: a timer per phase, or throughput mode (``total_s`` only)
TIMING_PHASES = "phases"
TIMING_TOTAL = "total"
TIMINGS = (TIMING_PHASES, TIMING_TOTAL)


@dataclass
class BatchResult:
    """What one upsert did: its metrics row and the commit's write stats."""

    instant: str
    metrics: dict[str, Any]
    write_stats: list[dict] = field(default_factory=list)


def open_table(uri: str, index_name: str, explicit_params: dict[str, Any] | None = None,
               record_key_field: str = "key", partition_field: str = "dt",
               ordering_field: str = "ts") -> tuple[Table, RecordIndex]:
    """Create or open a table for ``index_name``; the table's stored parameters win
    unless a parameter is given explicitly with another value (then it is an error).
    ``explicit_params`` may hold the table's write configs too
    (:mod:`tableformat.write_config`: the table type, merge-on-read's knobs); the
    opened table carries them as ``table.write_config``."""
    explicit = dict(explicit_params or {})
    write_config = WriteConfig.pop_from(explicit)
    table = Table(uri)
    stored_type = None
    if table.exists():
        stored_type = table.config.table_type
        index = check_table_identity(table, index_name, explicit, write_config.table_type)
    else:
        index = get_index(index_name, **explicit)
    config = TableConfig(
        name=os.path.basename(os.path.normpath(uri)) or "indexbench",
        record_key_field=record_key_field, partition_field=partition_field,
        ordering_field=ordering_field, index_name=index.name, index_type=index.index_type,
        index_params=index.table_params(),
        table_type=write_config.resolved_type(stored_type))
    table = Table.create_or_open(uri, config)
    table.write_config = replace(write_config, table_type=config.table_type)
    return table, index


def data_schema(schema: T.StructType) -> T.StructType:
    """The columns a table stores: the batch's, without the delete marker."""
    return T.StructType([f for f in schema.fields if f.name != IS_DELETED])


def data_schema_json(schema: T.StructType) -> str:
    return data_schema(schema).json()


def validate_batch(batch: DataFrame, config: TableConfig, table_schema: str | None,
                   existing_partitions: Iterable[str] = (), distinct_keys: bool = False
                   ) -> tuple[int, list[str], int | None]:
    """Refuse a bad batch before anything is written, naming the problem.

    One Spark job checks every row; it also returns the batch's size, the partition
    values it touches (a short list, the only batch data the driver sees) and, with
    ``distinct_keys``, its number of distinct (partition, key) pairs: the records left
    after pre-combining, so a batch without duplicates can skip the pre-combine."""
    fields = {f.name: f for f in batch.schema.fields}
    _check_schema(fields, data_schema(batch.schema), config, table_schema)
    checks = _row_checks(fields, config)
    part, key = F.col(config.partition_field), F.col(config.record_key_field)
    aggs = [F.count(F.lit(1)).alias("rows"), F.collect_set(part).alias("partitions")]
    aggs += [F.sum(F.when(cond, 1).otherwise(0)).alias(name)
             for name, (cond, _) in checks.items()]
    if distinct_keys:
        aggs.append(F.count_distinct(part, key).alias("distinct_keys"))
    row = batch.agg(*aggs).first()
    found = [f"{row[name]} record(s) with {msg}" for name, (_, msg) in checks.items()
             if row[name]]
    # the rules of tableformat.partition_path, once per distinct value (not per record)
    partitions = sorted(p for p in row["partitions"] if p)
    found += partition_path.refusals(partitions)
    if not found:
        found += partition_path.nesting_conflicts(partitions, existing_partitions)
    if found:
        raise InvalidBatchError("batch refused, nothing was written: " + "; ".join(found))
    return int(row["rows"]), partitions, int(row["distinct_keys"]) if distinct_keys else None


def _check_schema(fields: dict[str, T.StructField], stored: T.StructType,
                  config: TableConfig, table_schema: str | None) -> None:
    """The batch's columns and types against the table's roles and stored schema."""
    for role, name in (("record key", config.record_key_field),
                       ("partition", config.partition_field),
                       ("ordering", config.ordering_field)):
        if name not in fields:
            raise InvalidBatchError(f"the batch has no {role} column {name!r}")
    if not isinstance(fields[config.record_key_field].dataType, KEY_TYPES):
        raise InvalidBatchError(f"record key column {config.record_key_field!r} must be a string, "
                                f"not {fields[config.record_key_field].dataType.simpleString()}")
    if not isinstance(fields[config.partition_field].dataType, T.StringType):
        raise InvalidBatchError(f"partition column {config.partition_field!r} must be a string")
    if not isinstance(fields[config.ordering_field].dataType, ORDERING_TYPES):
        raise InvalidBatchError(
            f"ordering column {config.ordering_field!r} has an unorderable type")
    if IS_DELETED in fields and not isinstance(fields[IS_DELETED].dataType, T.BooleanType):
        raise InvalidBatchError(f"the delete marker column {IS_DELETED} must be a boolean, "
                                f"not {fields[IS_DELETED].dataType.simpleString()}")
    try:  # the commit records the data's Avro schema, as Hudi does: refuse it here, not then
        avro_schema_json(stored.json(), config.name)
    except ValueError as exc:
        raise InvalidBatchError(f"the batch has a column Hudi cannot store: {exc}") from None
    bad = [c for c in fields if c.startswith("_hoodie") and c != IS_DELETED]
    if bad:
        raise InvalidBatchError(f"column names starting with _hoodie are reserved: {bad}")
    if table_schema is not None:
        want = T.StructType.fromJson(json.loads(table_schema))
        have = {f.name: f.dataType for f in stored.fields}
        wanted = {f.name: f.dataType for f in want.fields}
        problems = [f"{n}: table has {t.simpleString()}, batch has "
                    f"{have[n].simpleString() if n in have else 'no such column'}"
                    for n, t in wanted.items() if have.get(n) != t]
        problems += [f"{n}: not a column of the table" for n in have if n not in wanted]
        if problems:
            raise InvalidBatchError("the batch's schema conflicts with the table's: "
                                    + "; ".join(problems))


def _row_checks(fields: dict[str, T.StructField], config: TableConfig
                ) -> dict[str, tuple[Any, str]]:
    """Per-row refusals, counted by the validation job: name → (condition, message)."""
    key, part, order = (F.col(config.record_key_field), F.col(config.partition_field),
                        F.col(config.ordering_field))
    deleted = F.coalesce(F.col(IS_DELETED), F.lit(False)) if IS_DELETED in fields \
        else F.lit(False)
    checks = {
        "null_keys": (key.isNull(), f"null record key ({config.record_key_field})"),
        "empty_keys": (key == "", f"empty record key ({config.record_key_field})"),
        # a delete may come without an ordering value: it deletes whatever is stored
        "null_ordering": (order.isNull() & ~deleted,
                          f"null ordering value ({config.ordering_field})"),
    }
    if isinstance(fields[config.ordering_field].dataType, (T.DoubleType, T.FloatType)):
        checks["nan_ordering"] = (F.isnan(order), f"NaN ordering value ({config.ordering_field}); "
                                  "NaN has no place in an order, so it is refused")
    checks["bad_partitions"] = (part.isNull() | (part == ""),
                                f"null or empty partition value ({config.partition_field})")
    return checks


def precombine_batch(batch: DataFrame, config: TableConfig) -> DataFrame:
    """Hudi's combine-before-upsert: one record per (partition, key), larger ordering wins,
    the later arrival on ties (as :mod:`tableformat.precombine`; Hudi leaves ties to the
    order its reduce meets them). A delete without an ordering value ranks lowest.

    ``batch`` must be persisted: the arrival order is its rows' order, read once."""
    w = Window.partitionBy(config.partition_field, config.record_key_field).orderBy(
        F.col(config.ordering_field).desc_nulls_last(), F.col("__arrival").desc())
    return (batch.withColumn("__arrival", F.monotonically_increasing_id())
            .withColumn("__rn", F.row_number().over(w)).where("__rn = 1")
            .drop("__rn", "__arrival"))


def plan_inserts(tagged: DataFrame, table: Table, snapshot: Snapshot, index: RecordIndex,
                 spark: SparkSession, instant: str, release: list | None = None
                 ) -> tuple[DataFrame, dict[str, float], set[tuple[str, str]],
                            DataFrame | None]:
    """Records with no location go where Hudi's ``UpsertPartitioner`` sends them.

    Per partition, :func:`writeclient.sizing.plan_partition` tops up the small files and
    plans new file groups (the driver sees one insert count per partition and the
    snapshot's file sizes); then one task per partition draws each insert into a
    bucket by its key's MD5 against the buckets' weights, as Hudi does
    (:func:`writeclient.sizing.draw_buckets`), so a batch's new files overlap in key
    range and hold about, not exactly, their planned counts; a new file group's records
    roll over into ``<prefix>-1``, ... where Hudi's create handle would
    (:func:`writeclient.create_handle.rolled_file_ids`). Returns
    the planned records, the plan's counters, the file groups inserts go to and the
    planned inserts alone (None: no insert), which read the plan's broadcast: it is
    ``release``d only once they have been read for the last time.

    On a merge-on-read table, an index that cannot index log files tops up only small
    base files without log files (Hudi's ``SparkUpsertDeltaCommitPartitioner``): its
    inserts must land in base files, where its lookups see them.
    """
    part = table.config.partition_field
    inserts = tagged.where(F.col(FILE_ID_COL).isNull())
    updates = tagged.where(F.col(FILE_ID_COL).isNotNull())
    counts = {r[0]: int(r[1]) for r in inserts.groupBy(part).count().collect()}  # ok: one
    plans, stats = _partition_plans(counts, table, snapshot, index)  # row per partition
    groups = {(p, fid) for p, pl in plans.items() for fid in pl.file_ids}
    if not counts:
        return tagged, stats, groups, None
    bc = spark.sparkContext.broadcast({p: (pl.weights, pl.file_ids, pl.topped_up)
                                       for p, pl in plans.items()})
    if release is not None:  # the caller drops it once the planned records are written
        release.append(bc.destroy)
    assign = _assign_task(bc, inserts, table, index, instant)
    planned = inserts.groupBy(part).applyInArrow(assign, inserts.schema)
    return updates.unionByName(planned), stats, groups, planned


def _partition_plans(counts: dict[str, int], table: Table, snapshot: Snapshot,
                     index: RecordIndex) -> tuple[dict[str, Any], dict[str, float]]:
    """Hudi's per-partition insert plans on the driver, and the plan's counters."""
    cfg, sizing_cfg = table.config, roles.sizing_of(index)
    avg = sizing.average_record_size(snapshot.commits, sizing_cfg)
    smalls = sizing.small_file_candidates(snapshot.in_partitions(counts), cfg.table_type,
                                          index.CAN_INDEX_LOG_FILES, sizing_cfg)
    seq = len(snapshot.completed)  # this commit's place on the timeline
    plans = {p: sizing.plan_partition(n, smalls.get(p, []), avg, sizing_cfg,
                                      lambda b, p=p: sizing.new_file_id(seq, p, b))
             for p, n in sorted(counts.items())}
    stats = {"small_files_topped_up": sum(pl.topped_up for pl in plans.values()),
             "small_file_inserts": sum(pl.small_file_inserts for pl in plans.values()),
             "avg_record_size": avg}
    return plans, stats


def _assign_task(bc: Any, inserts: DataFrame, table: Table, index: RecordIndex,
                 instant: str):
    """The task that places one partition's inserts by the broadcast plan ``bc``."""
    part, key = table.config.partition_field, table.config.record_key_field
    fid_at = inserts.columns.index(FILE_ID_COL)
    fid_field = to_arrow_schema(inserts.schema).field(FILE_ID_COL)
    data_cols = [c for c in inserts.columns
                 if c not in (FILE_ID_COL, BUCKET_COL, IS_DELETED, ARRIVAL_COL)]
    sizing_cfg = roles.sizing_of(index)
    max_size, ratio = sizing_cfg.max_file_size, sizing_cfg.compression_ratio

    def assign(group):
        """One partition's inserts: each drawn into a bucket by its key's MD5, as Hudi's
        ``UpsertPartitioner.getPartition`` draws it, new file groups rolled over as its
        create handle rolls them."""
        from indexes.md5_hash import hudi_insert_hash
        from writeclient.create_handle import rolled_file_ids
        from writeclient.sizing import draw_buckets

        partition = group.column(part)[0].as_py()
        weights, ids, first_new = bc.value[partition]
        keys = group.column(key)
        hashes = hudi_insert_hash(keys)
        bucket = draw_buckets(hashes, weights, len(keys))
        fids = rolled_file_ids(group, bucket, hashes, ids, first_new, key, partition,
                               instant, data_cols, max_size, ratio)
        return group.set_column(fid_at, fid_field, fids)

    return assign


@dataclass(frozen=True)
class WriterCombine:
    """Throughput mode's pre-combine in each file group's write: the counters tagging
    left to the writes (``names``, one per combined record) and the records' own count."""

    counters: Any  # the batch's counters accumulator ({name: number})
    names: tuple[str, ...]
    records: Any  # an int accumulator: records after combining

    def count(self, n: int) -> None:
        """In a write task: its file group has ``n`` records after combining."""
        if self.names:
            self.counters.add(dict.fromkeys(self.names, n))
        self.records.add(n)


def log_targets(snapshot: Snapshot, partitions: list[str]) -> dict[tuple[str, str], LogTarget]:
    """Where each existing file group of ``partitions`` appends its next log file."""
    out = {}
    for s in snapshot.in_partitions(partitions):
        names = tuple(lf.path.rsplit("/", 1)[-1] for lf in s.logs)
        version = max((LogFileName.parse(n).version for n in names), default=0) + 1
        out[(s.partition, s.file_id)] = LogTarget(
            base_instant=s.instant, version=version, exists=True,
            base_file=s.path.rsplit("/", 1)[-1] if s.path else None, log_files=names)
    return out


def pending_log_target(group: PendingGroup) -> LogTarget:
    """Where a write appends to a file group that is not visible yet (a pending resize's
    child, merge-on-read): a new log file whose base instant is the pending one, as
    Hudi's append handle names a log of a file group without a visible slice (the
    instant of the record's location), numbered after the group's earlier logs. Hudi
    starts each at version 1 (its view does not see the pending slice) and keeps them
    apart by write token; these tokens do not differ from one commit to the next
    (``p-0-attempt``), so the version counts up, as Hudi's writer rolls over when the
    name is taken. Every record counts as an update, as the append handle counts a
    record that carries a location."""
    version = max((LogFileName.parse(n).version for n in group.log_files),
                  default=BASE_LOG_VERSION - 1) + 1
    return LogTarget(base_instant=group.base_instant, version=version, exists=True)


def write_file_groups(planned: DataFrame, table: Table, index: RecordIndex, instant: str,
                      spark: SparkSession, snapshot: Snapshot, partitions: list[str],
                      pending: dict[tuple[str, str], PendingGroup] | None = None,
                      base_writes: set[tuple[str, str]] | None = None,
                      combined: WriterCombine | None = None) -> list[dict]:
    """One task per target file group writes it; one stat row comes back each.

    Copy-on-write: the group's base file is merged with its records into a new base
    file. Merge-on-read: the records are appended to a new log file of the group
    (:func:`indexbench.log_writer.append_file_group`) or written to a base file as
    :func:`tableformat.table_type.writes_log_file` decides (the simulator's rule too):
    ``base_writes`` are the groups the insert planner (or an index that places its own
    inserts, :attr:`TagContext.insert_groups`) sent inserts to (new file groups, small
    base files without logs), which get a base file when the index cannot index log
    files, as Hudi's delta commit writes them.

    Executors get the previous slice of the file groups in the batch's ``partitions``
    only: what is broadcast grows with the partitions a batch touches, not the table.
    ``pending``: file groups not visible yet (:attr:`TagContext.pending_groups`). On
    copy-on-write their new base file is named after their base instant, its write
    token led by this one (so this instant's undo finds it, and the resize's completion
    or rollback too); on merge-on-read their records go to a new log file of the
    pending slice (:func:`pending_log_target`).

    ``combined``: the batch was not pre-combined
    (:meth:`~indexes.roles.CombinesInWriter.writer_combine`):
    each group's records are put back in arrival order (:data:`ARRIVAL_COL`), which the
    merge's and the append's own pre-combine keep for ties, and each group counts the
    records left after combining.
    """
    pending = pending or {}
    prev_paths = {(s.partition, s.file_id): s.path for s in snapshot.in_partitions(partitions)}
    prev_paths.update({k: g.path for k, g in pending.items()})
    targets = {}
    if table.config.table_type == MERGE_ON_READ:
        targets = log_targets(snapshot, partitions)
        targets.update({k: pending_log_target(g) for k, g in pending.items()})
    prev = spark.sparkContext.broadcast((prev_paths, targets))
    write_group = _write_task(planned, table, index, instant, prev, pending,
                              set(base_writes or ()), combined)
    try:
        stats = (planned.groupBy(table.config.partition_field, FILE_ID_COL)
                 .applyInArrow(write_group, UPSERT_STATS_SCHEMA)
                 .collect())  # ok: one write stat per file group
    finally:
        prev.destroy()  # executors and driver drop it now, not at the next GC
    return [r.asDict() for r in stats]


def _write_task(planned: DataFrame, table: Table, index: RecordIndex, instant: str,
                prev: Any, pending: dict[tuple[str, str], PendingGroup],
                inserted: set[tuple[str, str]], combined: WriterCombine | None):
    """The task that writes one file group: a merged base file or an appended log file.
    ``prev``: the broadcast (previous base file paths, log targets); ``inserted``: the
    groups the insert planner sent inserts to (see :func:`write_file_groups`)."""
    cfg = table.config
    table_type = cfg.table_type
    data_cols = [c for c in planned.columns
                 if c not in (FILE_ID_COL, BUCKET_COL, IS_DELETED, ARRIVAL_COL)]
    data_schema = to_arrow_schema(planned.select(data_cols).schema)
    spec = MergeSpec(table.uri, instant, cfg.record_key_field, cfg.partition_field,
                     cfg.ordering_field, data_schema)
    base_instants = {k: g.base_instant for k, g in pending.items()}
    footer_fn = roles.footer_writer(index)
    log_index = index.CAN_INDEX_LOG_FILES
    block_format = table.write_config.log_block_format
    avro_schema = avro_schema_json(data_schema_json(planned.select(data_cols).schema),
                                   cfg.name) if table_type == MERGE_ON_READ else ""

    def write_group(group):
        """One file group's records as one Arrow table in, its write stat out."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark import TaskContext

        tc = TaskContext.get()
        token = task_write_token(tc)
        fail_task_if_asked(tc)
        if combined is not None:  # the pre-combine's tie order, then its counts
            group = group.sort_by(ARRIVAL_COL).drop_columns([ARRIVAL_COL])
            combined.count(pc.count_distinct(group.column(cfg.record_key_field)).as_py())
        partition = group.column(cfg.partition_field)[0].as_py()
        fid = group.column(FILE_ID_COL)[0].as_py()
        bucket = group.column(BUCKET_COL)[0].as_py()
        key = (partition, fid)
        paths, logs = prev.value
        base = base_instants.get(key)
        if writes_log_file(table_type, log_index, key in logs, key in inserted,
                           pending=base is not None):
            target = logs.get(key) or LogTarget(base_instant=instant)
            stat = append_file_group(spec, partition, fid, group, target, token,
                                     block_format, avro_schema, bucket)
        else:
            name_as = (f"{instant}-{tc.partitionId()}-{tc.attemptNumber()}", base) \
                if base else None
            stat = merge_file_group(spec, partition, fid, group, paths.get(key),
                                    token, footer_fn, bucket, name_as)
        # None: only deletes of keys the group never had, and no base file: nothing written
        return pa.Table.from_pylist([stat] if stat else [], schema=WRITE_STATS_ARROW)

    return write_group


# ---------------------------------------------------------------- timing and the two plans
PHASE_COLUMNS = ("generate_s", "validate_s", "precombine_s", "tag_s", "write_s", "commit_s")


@dataclass
class Clock:
    """The driver's one timing wrapper, as YCSB's ``DBWrapper``: every step of an upsert
    runs inside :meth:`step`, and no index adapter times itself. ``timed`` (phases mode)
    keeps each step's seconds; in throughput mode Spark fuses the steps into a few
    jobs, so only the batch's ``total_s`` means anything and the phases stay empty."""

    timed: bool
    started: float = field(default_factory=time.perf_counter)
    seconds: dict[str, float | None] = field(
        default_factory=lambda: dict.fromkeys(PHASE_COLUMNS))

    @contextlib.contextmanager
    def step(self, column: str, since_start: bool = False) -> Iterator[None]:
        """Time the block as ``column`` (from the clock's start with ``since_start``)."""
        t0 = self.started if since_start else time.perf_counter()
        yield
        if self.timed:
            self.seconds[column] = time.perf_counter() - t0

    def timings(self) -> dict[str, float | None]:
        return {**self.seconds, "total_s": time.perf_counter() - self.started}


@dataclass
class Prepared:
    """The batch as tagging gets it, and what the driver learned preparing it."""

    combined: DataFrame
    input_records: int
    partitions: list[str]
    records: int | None  # after pre-combining (None: the writes combine and count them)
    # the counters the writes add per combined record, when they combine (throughput
    # mode and ``CombinesInWriter.writer_combine``); None: the batch is pre-combined
    writer_combine: tuple[str, ...] | None = None


@dataclass
class Upsert:
    """One upsert's fixed inputs, shared by the plan's steps."""

    spark: SparkSession
    table: Table
    index: RecordIndex
    snapshot: Snapshot
    base_partitions: int
    owned: bool  # the caller did not cache the batch: the driver may persist it

    def size_shuffles(self, rows: int) -> None:
        """The batch's shuffles get one partition per 128 MiB when that is more."""
        avg = sizing.average_record_size(self.snapshot.commits, roles.sizing_of(self.index))
        self.spark.conf.set("spark.sql.shuffle.partitions",
                            str(shuffle_partitions_for(self.base_partitions, rows * avg)))


def _mark_deletes(batch: DataFrame) -> DataFrame:
    """A null delete marker is "not a delete", as Hudi reads it."""
    if IS_DELETED in batch.columns:
        return batch.withColumn(IS_DELETED, F.coalesce(F.col(IS_DELETED), F.lit(False)))
    return batch


class PhasedPlan:
    """Each step is materialized before the next, so each timer covers its own work
    only (Hudi's write metrics likewise time the index lookup on its own). The batch and
    its pre-combined form go to disk: each is read once or twice, and in memory they
    would squeeze the pre-combine's sort and the tagged cache out of the heap (a
    10M-record initial load ran out of a 4 GB driver)."""

    timing = TIMING_PHASES

    def prepare(self, up: Upsert, batch: DataFrame, clock: Clock, release: list) -> Prepared:
        cfg = up.table.config
        with clock.step("generate_s", since_start=True):
            if up.owned:
                batch = batch.persist(StorageLevel.DISK_ONLY)
                release.append(batch.unpersist)
            rows = batch.count()
        up.size_shuffles(rows)
        with clock.step("validate_s"):
            input_records, partitions, _ = validate_batch(batch, cfg, up.snapshot.schema,
                                                          up.snapshot.partitions())
        with clock.step("precombine_s"):
            combined = precombine_batch(_mark_deletes(batch), cfg)
            combined = combined.persist(StorageLevel.DISK_ONLY)
            release.append(combined.unpersist)
            records = combined.count()
        for drop in release[:-1]:  # the batch: read for the last time
            drop()
        del release[:-1]
        return Prepared(combined, input_records, partitions, records)

    def tagged(self, tagged: DataFrame, counters: Any, cached: list) -> dict:
        """Tagging runs now, on its own; the caller's inputs are dropped after it."""
        try:
            tagged.count()
        finally:
            for drop in cached:  # tagged is cached by now (or the batch failed)
                safely(drop)
            cached.clear()
        return dict(counters.value)

    def written(self, counters: Any, counts: dict) -> dict:
        return counts


class ThroughputPlan:
    """Spark fuses the steps: generate, tag, plan and write run in as few jobs as the
    plan allows; nothing is materialized but what is read twice, and the pre-combine is
    skipped when the validation job finds no duplicate key, or when the index's tagging
    places each key alone (:class:`~indexes.roles.CombinesInWriter`: each file group's write
    combines its records)."""

    timing = TIMING_TOTAL

    def prepare(self, up: Upsert, batch: DataFrame, clock: Clock, release: list) -> Prepared:
        cfg = up.table.config
        combine = roles.writer_combine(up.index.spark, up.table, batch.columns)
        input_records, partitions, records = validate_batch(
            batch, cfg, up.snapshot.schema, up.snapshot.partitions(),
            distinct_keys=combine is None)
        up.size_shuffles(input_records)
        batch = _mark_deletes(batch)
        if combine is not None:  # the arrival order, for the writes' ties
            combined = batch.withColumn(ARRIVAL_COL, F.monotonically_increasing_id())
        elif records == input_records:  # no duplicate (partition, key): nothing to combine
            combined = batch
        else:  # the arrival order must be read once: the batch is kept while it is used
            if up.owned:
                batch = batch.persist(StorageLevel.DISK_ONLY)
                release.append(batch.unpersist)
            combined = precombine_batch(batch, cfg)
        return Prepared(combined, input_records, partitions, records, combine)

    def tagged(self, tagged: DataFrame, counters: Any, cached: list) -> dict:
        """Tagging runs inside the plan's and the write's jobs: nothing to count yet."""
        return {}

    def written(self, counters: Any, counts: dict) -> dict:
        """The tag tasks ran inside the plan's and the write's jobs: their counts now."""
        return {**dict(counters.value), **counts}


PLANS = {TIMING_PHASES: PhasedPlan, TIMING_TOTAL: ThroughputPlan}


def upsert(spark: SparkSession, table: Table, index: RecordIndex, batch: DataFrame,
           batch_no: int = 0, extra_metadata: dict[str, str] | None = None,
           operation: str = "UPSERT", timing: str = TIMING_PHASES) -> BatchResult:
    """Upsert one batch; the caller holds the table's writer lock (``with table:``).

    Rows whose ``_hoodie_is_deleted`` is true delete their (partition, key) when their
    ordering value is not older than the stored one (Hudi's delete marker); ``operation``
    is the commit's ``operationType`` (``DELETE`` from :func:`indexbench.api.delete`).
    A bad batch is refused before anything is written; a write that fails once started
    (a Spark task raised) is undone on the spot (:mod:`tableformat.abort`), so either
    way the table is byte-for-byte what it was. The batch's shuffles get the session's
    partitions (2 per core), or one per 128 MiB of batch when that is more; the
    session's setting is restored afterwards. What the index needs running (its
    ``resources``: an external server) runs for the batch, or for the caller's scope
    when the caller entered it first (a run).

    ``timing``: ``"phases"`` materializes each phase before the next, so each has its
    own seconds (:class:`PhasedPlan`); ``"total"`` (throughput mode,
    :class:`ThroughputPlan`) lets Spark fuse them, keeps ``total_s`` and leaves the
    phase timers empty. Every counter is the same in both.
    """
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {', '.join(TIMINGS)}, not {timing!r}")
    base_partitions = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        with roles.resources(index, table):  # what the index needs running (its server)
            return _upsert(spark, table, index, batch, batch_no, extra_metadata,
                           int(base_partitions), operation, PLANS[timing]())
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", base_partitions)


def _upsert(spark: SparkSession, table: Table, index: RecordIndex, batch: DataFrame,
            batch_no: int, extra_metadata: dict[str, str] | None,
            base_partitions: int, operation: str, plan) -> BatchResult:
    clock = Clock(timed=plan.timing == TIMING_PHASES)
    up = Upsert(spark, table, index, table.snapshot(), base_partitions, not batch.is_cached)
    release: list = []  # what stays cached until the batch is written
    try:
        prep = plan.prepare(up, batch, clock, release)
    except BaseException:
        for drop in release:
            safely(drop)
        raise

    def failed(started: list[str]) -> None:  # the index drops the instant's state
        for instant in started:
            index.spark.after_commit(instant, ok=False)

    action = DELTA_COMMIT if table.config.table_type == MERGE_ON_READ else COMMIT
    metadata = {SPARK_SCHEMA_KEY: data_schema(batch.schema).json(), **(extra_metadata or {})}
    try:
        with undone_on_failure(spark, table, f"batch {batch_no}", failed):
            instant = table.start_instant(action)
            stats, counts, combined_records = _write_instant(
                up, instant, prep, metadata, operation, action, release, plan, clock)
    finally:
        for drop in release:
            safely(drop)
    index_after = index.spark.after_commit(instant, ok=True)
    after = table.snapshot()
    metrics = upsert_row(
        batch_no=batch_no, instant=instant, input_records=prep.input_records,
        records=prep.records if combined_records is None else combined_records,
        partitions_touched=len(prep.partitions), counts=counts,
        writes=WriteTotals.from_stats(stats), after=after, timings=clock.timings(),
        index_counters=index.counter_columns(),
        index_parts=index.part_columns())
    metrics["timing"] = plan.timing
    metrics.update(roles.table_metrics(index, after))
    metrics.update(index_after)
    return BatchResult(instant, metrics, stats)


def _write_instant(up: Upsert, instant: str, prep: Prepared, extra_metadata: dict[str, str],
                   operation: str, action: str, cached: list, plan, clock: Clock
                   ) -> tuple[list[dict], dict, int | None]:
    """Tag, plan, write, update the index and complete ``instant``: everything between
    the inflight file and the commit file, which a failure undoes as a whole.

    ``cached``: the caller's cached inputs, dropped once the tagged records are (the
    plan decides when). When the writes combine the batch (``prep.writer_combine``), the
    tagged records are read once, so never cached, and the records left after combining
    are returned (else None)."""
    spark, table, index, snapshot = up.spark, up.table, up.index, up.snapshot
    counters = new_counters(spark)
    in_writer = prep.writer_combine is not None
    ctx = TagContext(spark, table, snapshot, instant, prep.partitions, counters,
                     combined_in_writer=in_writer)
    writer_combine = WriterCombine(counters, prep.writer_combine,
                                   spark.sparkContext.accumulator(0)) if in_writer else None
    with clock.step("tag_s"):
        tagged = index.spark.tag_location(prep.combined, ctx)
        if IS_DELETED in tagged.columns:  # a delete of a key the index did not find
            tagged = tagged.where(F.col(FILE_ID_COL).isNotNull() | ~F.col(IS_DELETED))
        if not in_writer:
            tagged = tagged.persist(StorageLevel.MEMORY_AND_DISK)
        counts = plan.tagged(tagged, counters, cached)
    release: list = []
    try:
        planned, inserts, base_writes = _place_inserts(up, ctx, tagged, counts, release)
        with clock.step("write_s"):
            stats = write_file_groups(planned, table, index, instant, spark, snapshot,
                                      prep.partitions, ctx.pending_groups, base_writes,
                                      writer_combine)
        counts = plan.written(counters, counts)
        crash_if("after_write")
        with clock.step("commit_s"):
            _commit(up, instant, stats, tagged, inserts, release, operation,
                    extra_metadata, action)
    finally:
        for drop in release:
            safely(drop)
        safely(tagged.unpersist)
    stats = _pending_writes_apart(index, ctx, stats, counts)
    return stats, counts, writer_combine.records.value if writer_combine else None


def _place_inserts(up: Upsert, ctx: TagContext, tagged: DataFrame, counts: dict,
                   release: list) -> tuple[DataFrame, DataFrame | None, set[tuple[str, str]]]:
    """The tagged records with every insert placed: by the insert planner, or where the
    index itself sent them (``assigns_inserts``). Returns them, the planned inserts alone
    (None: none planned) and the file groups inserts go to."""
    if up.index.assigns_inserts:
        return tagged, None, set(ctx.insert_groups)
    planned, plan_counts, base_writes, inserts = plan_inserts(
        tagged, up.table, up.snapshot, up.index, up.spark, ctx.instant, release)
    counts.update(plan_counts)
    return planned, inserts, base_writes


def _commit(up: Upsert, instant: str, stats: list[dict], tagged: DataFrame,
            inserts: DataFrame | None, release: list, operation: str,
            extra_metadata: dict[str, str], action: str) -> None:
    """Update the index after the write, then complete the instant with its write stats."""
    live = tagged.where(~F.col(IS_DELETED)) if IS_DELETED in tagged.columns else tagged
    extra = up.index.spark.update_location(CommitContext(up.spark, up.table, instant, stats,
                                                         live, inserts=inserts))
    for drop in release:  # the planned inserts were read for the last time
        drop()
    release.clear()
    metadata = {"operationType": operation,
                "partitionToWriteStats": stats_by_partition(stats),
                "extraMetadata": {**extra_metadata, **extra}}
    hang_if(HANG_BEFORE_COMMIT)  # a test's kill -9 while the instant is inflight
    crash_if("before_commit")
    up.table.complete_instant(instant, metadata, action)


def _pending_writes_apart(index: RecordIndex, ctx: TagContext, stats: list[dict],
                          counts: dict) -> list[dict]:
    """Writes to file groups not visible yet (a pending resize's dual writes) are
    counted apart, by the index: the batch's records, inserts and updates are the
    visible file groups'. Returns the visible groups' stats."""
    if not ctx.pending_groups:
        return stats
    pending = [s for s in stats if (s["partitionPath"], s["fileId"]) in ctx.pending_groups]
    counts.update(roles.pending_write_counts(index.spark, pending))
    return [s for s in stats if (s["partitionPath"], s["fileId"]) not in ctx.pending_groups]
