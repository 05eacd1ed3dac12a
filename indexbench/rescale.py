"""Bucket rescale of a multiple-rehash table: rehash (split locally) or overwrite (reshuffle).

RFC-29 names two remedies for a fixed bucket count. **rehash** grows a partition N → k·N:
bucket ``b`` holds exactly the records that go to ``b, b+N, …, b+(k−1)·N`` under ``% kN``
(since ``(h % kN) % N == h % N``), so one Spark task per old bucket reads that bucket's
base file once and writes its children; no table row crosses an Exchange. **overwrite**
(the naive baseline) reads every file of the partition, repartitions the rows by new
bucket (a real shuffle) and rewrites them; it accepts any new count ≥ 1.

Either way the result is one replacecommit, published atomically like a commit: the old
file groups leave the snapshot only when it completes, and a crash leaves files of an
inflight instant that the next writer rolls back. The new per-partition counts go into
the replacecommit's extraMetadata (see :mod:`indexes.multiple_rehash`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexbench import basefile as bf
from indexbench.counters import new_counters
from indexbench.driver import CRASH_ENV
from indexbench.errors import IndexBenchError, InvariantViolation, TableConfigError
from indexbench.fs import IOStats
from indexbench.table import REPLACE, Snapshot, Table
from indexbench.writer import WRITE_STATS_SCHEMA
from indexes.base import BUCKET_COL
from indexes.multiple_rehash import (
    BUCKET_COUNTS_KEY,
    MODES,
    RESCALE_KEY,
    MultipleRehashIndex,
    partition_bucket_fill,
)

RESCALE_STATS_SCHEMA = WRITE_STATS_SCHEMA + ", replacedFileId string"
TASK_SCHEMA = "partition string, path string, fileId string, bucket int, fromBuckets int, " \
              "toBuckets int"
HANG_IN_TASK = "rescale_in_task"  # fault injection: a split task hangs after its first child


class RescaleError(IndexBenchError):
    """A rescale is refused before anything is written (bad factor, mode or partition)."""


@dataclass
class RescalePlan:
    """What a rescale will do: per partition (from, to) bucket counts, and the mode."""

    mode: str
    factor: float
    counts: dict[str, tuple[int, int]]
    slices: list = field(default_factory=list)  # the FileSlices to replace

    @property
    def from_buckets(self) -> int:
        return sum(f for f, _ in self.counts.values())

    @property
    def to_buckets(self) -> int:
        return sum(t for _, t in self.counts.values())


# ---------------------------------------------------------------- validation (no Spark)
def rehash_factor(factor: Any) -> int:
    """The factor as an int, or a clear refusal: rehash needs an integer k ≥ 2."""
    if isinstance(factor, str):
        try:
            factor = float(factor) if any(c in factor for c in ".eE") else int(factor)
        except ValueError:
            raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}") from None
    if isinstance(factor, bool) or not isinstance(factor, Real):
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}")
    if not isinstance(factor, Integral) and not float(factor).is_integer():
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}: bucket b "
                           "can only split into b, b+N, …, b+(k−1)N (use --mode overwrite "
                           "for other counts)")
    k = int(factor)
    if k < 2:
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}")
    return k


def require_rescalable(table: Table) -> MultipleRehashIndex:
    """The table's index, or a refusal if it is not a multiple-rehash table."""
    import indexes

    if not table.exists():
        raise TableConfigError(f"no table at {table.uri} (.hoodie/hoodie.properties is missing)")
    cfg = table.config
    if cfg.index_name != MultipleRehashIndex.name:
        raise TableConfigError(
            f"table {table.uri} uses index {cfg.index_name!r}; only {MultipleRehashIndex.name} "
            "tables can be rescaled (their bucket counts are per partition and versioned)")
    index = indexes.from_table_config(cfg)
    assert isinstance(index, MultipleRehashIndex)
    return index


def plan_rescale(snapshot: Snapshot, index: MultipleRehashIndex, mode: str,
                 factor: Any = None, partitions: list[str] | None = None,
                 num_buckets: int | None = None) -> RescalePlan:
    """Check every argument against the committed snapshot; nothing is written here."""
    if mode not in MODES:
        raise RescaleError(f"rescale mode must be one of {', '.join(MODES)}, not {mode!r}")
    present = snapshot.partitions()
    if not present:
        raise RescaleError("the table has no committed file groups: nothing to rescale")
    wanted = sorted(set(partitions)) if partitions else present
    unknown = [p for p in wanted if p not in present]
    if unknown:
        raise RescaleError(f"partition(s) {unknown} have no file groups in the table; "
                           f"known: {', '.join(present[:10])}{' …' if len(present) > 10 else ''}")
    current = index.bucket_counts(snapshot, wanted)
    counts: dict[str, tuple[int, int]] = {}
    if mode == "rehash":
        if num_buckets is not None:
            raise RescaleError("rehash mode grows by --factor k; --buckets is for overwrite")
        k = rehash_factor(factor)
        counts = {p: (current[p], current[p] * k) for p in wanted}
        fac: float = k
    else:
        if (factor is None) == (num_buckets is None):
            raise RescaleError("overwrite mode needs exactly one of --factor or --buckets")
        for p in wanted:
            if num_buckets is not None:
                new = num_buckets
            else:
                try:
                    target = float(factor) * current[p]
                except (TypeError, ValueError):
                    raise RescaleError(f"factor must be a number, not {factor!r}") from None
                if not target.is_integer():
                    raise RescaleError(f"factor {factor} × {current[p]} buckets of {p!r} "
                                       "is not a whole bucket count")
                new = int(target)
            if isinstance(new, bool) or int(new) != new or new < 1:
                raise RescaleError(f"overwrite needs a new bucket count >= 1, not {new!r}")
            counts[p] = (current[p], int(new))
        fac = counts[wanted[0]][1] / counts[wanted[0]][0]
    too_many = [p for p, (_, t) in counts.items() if t > np.iinfo(np.int32).max
                or t > 99_999_999]
    if too_many:
        raise RescaleError(f"bucket count too large for an 8-digit bucket file id: {too_many}")
    return RescalePlan(mode, fac, counts, snapshot.in_partitions(wanted))


# ---------------------------------------------------------------- Spark-free cores
def file_schema(snapshot_schema: str) -> pa.Schema:
    """The Arrow schema of a base file: Hudi meta columns, then the table's data columns."""
    data = to_arrow_schema(T.StructType.fromJson(json.loads(snapshot_schema)))
    return pa.schema([pa.field(c, pa.string()) for c in bf.META_COLUMNS] + list(data))


def write_bucket_slice(table: Table, partition: str, bucket: int, records: pa.Table,
                       instant: str, write_token: str,
                       footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]],
                       replaced: str | None = None) -> dict:
    """Write one new bucket file group from records sorted by key; returns its write stat.

    Records keep their ``_hoodie_commit_time``/``seqno`` (as Hudi's clustering preserves
    commit metadata); only ``_hoodie_file_name`` changes. The file id is a pure function
    of (instant, partition, bucket), so a retried task names it alike.
    """
    file_id = bf.bucket_file_id(bucket, f"{instant}/{partition}/{bucket}")
    name = bf.BaseFileName(file_id, write_token, instant).name
    rel = f"{partition}/{name}" if partition else name
    col = records.schema.get_field_index(bf.FILE_NAME)
    records = records.set_column(col, bf.FILE_NAME,
                                 pa.array(np.full(records.num_rows, name, dtype=object),
                                          pa.string()))
    keys = records.column(bf.RECORD_KEY).combine_chunks()
    footer, index_bytes = footer_fn(keys)
    mm = pc.min_max(keys)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    footer = {bf.MIN_KEY_FOOTER: lo, bf.MAX_KEY_FOOTER: hi, **footer}
    table.fs.create_dir(table.abs_path(partition), recursive=True)
    size = bf.write_base_file(table.fs, table.abs_path(rel), records, footer)
    return {
        "partition": partition, "fileId": file_id, "path": rel, "prevCommit": "null",
        "numWrites": records.num_rows, "numInserts": 0, "numUpdateWrites": 0, "numDeletes": 0,
        "totalWriteBytes": size, "indexBytes": index_bytes, "mergeFilesRead": 0,
        "mergeBytesRead": 0, "minRecordKey": lo, "maxRecordKey": hi, "bucketId": bucket,
        "replacedFileId": replaced,
    }


def split_bucket(table: Table, partition: str, path: str, file_id: str, bucket: int,
                 from_buckets: int, to_buckets: int, hash_fields: list[str], instant: str,
                 write_token: str,
                 footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]],
                 io: IOStats) -> list[dict]:
    """Read old bucket ``bucket``'s base file once and write its children under ``% kN``.

    The children are ``bucket, bucket+N, …, bucket+(k−1)·N``; a record hashing elsewhere
    means the table broke the bucket invariant, and the split refuses to go on.
    """
    data = bf.read_base_file(table.fs, table.abs_path(path), io)
    new = bf_bucket_ids(data, hash_fields, to_buckets)
    stray = int((new % from_buckets != bucket).sum())
    if stray:
        raise InvariantViolation(f"{path}: {stray} records do not belong to bucket {bucket} "
                                 f"of {from_buckets}; run indexbench verify")
    stats = []
    for child in range(bucket, to_buckets, from_buckets):
        rows = np.flatnonzero(new == child)
        if rows.size == 0:
            continue  # an empty child gets no file group, as simple-bucket never makes one
        stats.append(write_bucket_slice(table, partition, child, data.take(rows), instant,
                                        write_token, footer_fn, replaced=file_id))
        if os.environ.get(CRASH_ENV) == HANG_IN_TASK:
            _hang()
    return stats


def bf_bucket_ids(data: pa.Table, hash_fields: list[str], num_buckets: int) -> np.ndarray:
    """Bucket of every row of a base file under ``num_buckets`` (simple-bucket's hash)."""
    from indexes.hashing import bucket_ids

    return bucket_ids([data.column(f) for f in hash_fields], num_buckets)


def _hang() -> None:
    """Test fault injection: stay mid-rescale until the test kills the writer."""
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.2)


def _crash_if(point: str) -> None:
    """Test fault injection in the writer process (as the upsert driver's)."""
    if os.environ.get(CRASH_ENV) == point:
        os._exit(137)


def _by_partition(stats: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for s in sorted(stats, key=lambda s: (s["partition"], s["fileId"])):
        out.setdefault(s["partition"], []).append(s)
    return out


def _write_token() -> str:
    from pyspark import TaskContext

    tc = TaskContext.get()
    return f"{tc.partitionId()}-{tc.stageId()}-{tc.attemptNumber()}"


# ---------------------------------------------------------------- Spark jobs
def _task_rows(plan: RescalePlan) -> list[tuple]:
    return [(s.partition, s.path, s.file_id, bf.bucket_of_file_id(s.file_id),
             plan.counts[s.partition][0], plan.counts[s.partition][1]) for s in plan.slices]


def build_rehash_job(spark: SparkSession, table: Table, index: MultipleRehashIndex,
                     plan: RescalePlan, instant: str, counters) -> DataFrame:
    """One Spark partition (= task) per old bucket file; each writes its k children.

    The input is a DataFrame of file paths made with ``parallelize(rows, len(rows))`` and
    the split is ``mapInPandas``: a narrow plan, so no Exchange ever carries table rows.
    """
    rows = _task_rows(plan)
    uri, fields = table.uri, index.hash_fields(table.config.record_key_field)
    footer_fn = index.base_file_footer
    files = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), TASK_SCHEMA)

    def split(frames: Iterator) -> Iterator:
        import pandas as pd

        t = Table(uri)
        for pdf in frames:
            for r in pdf.itertuples(index=False):
                io = IOStats()
                stats = split_bucket(t, r.partition, r.path, r.fileId, int(r.bucket),
                                     int(r.fromBuckets), int(r.toBuckets), fields, instant,
                                     _write_token(), footer_fn, io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                if stats:
                    yield pd.DataFrame(stats)

    return files.mapInPandas(split, RESCALE_STATS_SCHEMA)


def build_overwrite_job(spark: SparkSession, table: Table, index: MultipleRehashIndex,
                        plan: RescalePlan, instant: str, counters,
                        schema_json: str) -> DataFrame:
    """Read every file of the partitions, repartition rows by new bucket, rewrite each.

    The ``groupBy(partition, bucket)`` is a hash Exchange of all the partitions' rows:
    the shuffle RFC-29's overwrite pays and rehash avoids.
    """
    rows = [(s.partition, s.path) for s in plan.slices]
    uri, fields = table.uri, index.hash_fields(table.config.record_key_field)
    footer_fn = index.base_file_footer
    to_counts = {p: t for p, (_, t) in plan.counts.items()}
    fschema = file_schema(schema_json)
    row_struct = T.StructType(
        [T.StructField(c, T.StringType(), True) for c in bf.META_COLUMNS]
        + list(T.StructType.fromJson(json.loads(schema_json)).fields)
        + [T.StructField(BUCKET_COL, T.IntegerType(), False)])
    files = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)),
                                  "partition string, path string")

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        t = Table(uri)
        for rb in batches:
            for part, path in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist(),
                                  strict=True):
                io = IOStats()
                data = bf.read_base_file(t.fs, t.abs_path(path), io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                buckets = bf_bucket_ids(data, fields, to_counts[part])
                data = data.append_column(BUCKET_COL, pa.array(buckets, pa.int32()))
                yield from data.to_batches()

    def write(records: pa.Table) -> pa.Table:
        t = Table(uri)
        partition = records.column(bf.PARTITION_PATH)[0].as_py()
        bucket = int(records.column(BUCKET_COL)[0].as_py())
        records = records.drop_columns([BUCKET_COL]).sort_by(bf.RECORD_KEY).cast(fschema)
        stat = write_bucket_slice(t, partition, bucket, records, instant, _write_token(),
                                  footer_fn)
        return pa.Table.from_pylist([stat], schema=stats_arrow)

    stats_arrow = to_arrow_schema(T._parse_datatype_string(RESCALE_STATS_SCHEMA))
    return (files.mapInArrow(read, row_struct)
            .groupBy(bf.PARTITION_PATH, BUCKET_COL)
            .applyInArrow(write, RESCALE_STATS_SCHEMA))


class ShuffleMeter:
    """Shuffle bytes of the Spark jobs run inside it, from Spark's own status store.

    Jobs are tagged with a job group; on exit the listener bus is drained and the
    ``shuffleWriteBytes``/``shuffleReadBytes`` of every attempt of every stage of those
    jobs are summed (``AppStatusStore.stageData``, what the UI and REST API show).
    """

    def __init__(self, spark: SparkSession, group: str):
        self.sc, self.group = spark.sparkContext, group
        self.write_bytes = self.read_bytes = 0
        self.jobs: list[int] = []

    def __enter__(self) -> ShuffleMeter:
        self._prev = self.sc.getLocalProperty("spark.jobGroup.id")
        self.sc.setJobGroup(self.group, "indexbench rescale")
        return self

    def __exit__(self, *exc) -> None:
        self.sc.setLocalProperty("spark.jobGroup.id", self._prev)
        self.sc.setLocalProperty("spark.job.description", None)
        if exc[0] is None:
            self.measure()

    def measure(self) -> None:
        jsc = self.sc._jsc.sc()
        jsc.listenerBus().waitUntilEmpty()
        store = jsc.statusStore()
        tasks_default = getattr(store, "stageData$default$3")()
        quantiles = getattr(store, "stageData$default$5")()
        self.jobs = sorted(self.sc.statusTracker().getJobIdsForGroup(self.group))
        seen: set[int] = set()
        for job in self.jobs:
            ids = store.job(job).stageIds()
            for i in range(ids.size()):
                sid = int(ids.apply(i))
                if sid in seen:
                    continue
                seen.add(sid)
                attempts = store.stageData(sid, False, tasks_default, False, quantiles)
                for a in range(attempts.size()):
                    st = attempts.apply(a)
                    self.write_bytes += int(st.shuffleWriteBytes())
                    self.read_bytes += int(st.shuffleReadBytes())


# ---------------------------------------------------------------- the operation
def rescale(spark: SparkSession, table: Table, index: MultipleRehashIndex, mode: str,
            factor: Any = None, partitions: list[str] | None = None,
            num_buckets: int | None = None, batch_no: int | None = None) -> dict[str, Any]:
    """Rescale partitions as one replacecommit; returns the metrics row.

    The caller holds the writer lock (``with table:``), which also rolled back leftovers.
    """
    t_start = time.perf_counter()
    before = table.snapshot()
    plan = plan_rescale(before, index, mode, factor, partitions, num_buckets)
    instant = table.start_instant(REPLACE)
    counters = new_counters(spark)
    t0 = time.perf_counter()
    with ShuffleMeter(spark, f"indexbench-rescale-{instant}") as meter:
        if mode == "rehash":
            job = build_rehash_job(spark, table, index, plan, instant, counters)
        else:
            job = build_overwrite_job(spark, table, index, plan, instant, counters,
                                      before.schema)
        stats = [r.asDict() for r in job.collect()]  # ok: one write stat per new file
    write_s = time.perf_counter() - t0
    _crash_if("rescale_after_write")

    t1 = time.perf_counter()
    replaced: dict[str, list[str]] = {}
    for s in plan.slices:
        replaced.setdefault(s.partition, []).append(s.file_id)
    metadata = {
        "operationType": "CLUSTER" if mode == "rehash" else "INSERT_OVERWRITE",
        "partitionToWriteStats": _by_partition(stats),
        "partitionToReplaceFileIds": {p: sorted(ids) for p, ids in sorted(replaced.items())},
        "extraMetadata": {
            "schema": before.schema,
            BUCKET_COUNTS_KEY: json.dumps({p: t for p, (_, t) in sorted(plan.counts.items())}),
            RESCALE_KEY: json.dumps({"mode": mode, "factor": plan.factor,
                                     "from": {p: f for p, (f, _) in sorted(plan.counts.items())}}),
        },
    }
    _crash_if("rescale_before_commit")
    table.complete_instant(instant, metadata, REPLACE)
    commit_s = time.perf_counter() - t1

    after = table.snapshot()
    counts = dict(counters.value)
    records = sum(s["numWrites"] for s in stats)
    before_fill = partition_bucket_fill(before, list(plan.counts))
    after_fill = partition_bucket_fill(after, list(plan.counts))
    row: dict[str, Any] = {
        "operation": "rescale", "mode": mode, "batch": batch_no, "instant": instant,
        "records": records, "inserts": 0, "updates": 0, "tag_s": None,
        "write_s": write_s, "commit_s": commit_s, "total_s": time.perf_counter() - t_start,
        "partitions_touched": len(plan.counts), "files_in_table": after.physical_files,
        "file_groups": len(after.slices), "candidate_files": 0,
        "files_read": counts.get("files_read", 0), "bytes_read": counts.get("bytes_read", 0),
        "bloom_checks": 0, "bloom_positives": 0, "false_positives": 0, "fp_rate": None,
        "files_written": len(stats), "bytes_written": sum(s["totalWriteBytes"] for s in stats),
        "records_rewritten": records, "shuffle_bytes": meter.write_bytes,
        "shuffle_read_bytes": meter.read_bytes, "spark_jobs": len(meter.jobs),
        "from_buckets": plan.from_buckets, "to_buckets": plan.to_buckets,
        "rescale_factor": plan.factor,
        "table_records": sum(s.num_records for s in after.slices.values()),
    }
    row.update(index.table_metrics(after))
    row.update({f"rescaled_{k}_before": v for k, v in before_fill.items()})
    row.update({f"rescaled_{k}_after": v for k, v in after_fill.items()})
    return row


def auto_rescale(spark: SparkSession, table: Table, index: MultipleRehashIndex,
                 batch_no: int | None = None) -> list[dict[str, Any]]:
    """The after-commit policy: rescale every partition whose largest bucket is too big.

    All such partitions go into one replacecommit; ``hoodie.bucket.index.max.num.buckets``
    stops the growth (a hot index key cannot be split by any bucket count).
    """
    over = index.oversized_partitions(table.snapshot())
    if not over:
        return []
    return [rescale(spark, table, index, index.params["rescale_mode"],
                    factor=index.params["rescale_factor"], partitions=sorted(over),
                    batch_no=batch_no)]


def rescale_table(uri: str, mode: str = "rehash", factor: Any = None,
                  partitions: list[str] | None = None, num_buckets: int | None = None,
                  out: str | None = None, spark: SparkSession | None = None,
                  master: str | None = None) -> dict[str, Any]:
    """``indexbench rescale``: refuse bad arguments before anything is written, take the
    writer lock, rescale, and append the metrics row to ``out`` (if given)."""
    table = Table(uri)
    index = require_rescalable(table)
    plan_rescale(table.snapshot(), index, mode, factor, partitions, num_buckets)  # refuse early
    if spark is None:
        from indexbench.spark import get_session

        spark = get_session(master)
    with table:
        row = rescale(spark, table, index, mode, factor, partitions, num_buckets)
    row = {"index": index.name, "workload": None, **row}
    if out:
        write_rescale_metrics(out, row, uri)
    return row


def write_rescale_metrics(out: str, row: dict[str, Any], table_uri: str) -> None:
    """Append the row to ``out``'s metrics files (run.json only if ``out`` has none)."""
    from pathlib import Path

    import pandas as pd

    from indexbench import metrics as m

    p = Path(out) / "metrics.parquet"
    rows = pd.read_parquet(p).to_dict("records") if p.exists() else []
    row = {"run_id": row.get("run_id") or m.new_run_id(), **row}
    m.write_metrics(out, rows + [row])
    if not (Path(out) / "run.json").exists():
        m.write_run_json(out, {"run_id": row["run_id"], "command": "rescale",
                               "table": table_uri})
