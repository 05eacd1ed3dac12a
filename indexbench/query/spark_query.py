"""The read side on Spark: point lookups per key batch, and the group-by and join of
RFC-29 run bucket-aware (one task per aligned bucket group) or by Spark's default plan.

Lookups run :func:`indexbench.query.lookup.lookup_partition` in ``mapInArrow`` tasks;
one key batch is one Spark job, timed from the driver (the latency a reader waits).
Scans are measured by :class:`indexes.counters.ShuffleMeter` (Spark's status store):
shuffle bytes written and read, input bytes, tasks. Whether the executed plan has an
Exchange is read from it. Only lookups' found rows and one count per aligned group come
back to the driver.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexbench.query import bucketed
from indexbench.query.keys import PRESENT_COL
from indexbench.query.lookup import latency_figures, log_counts, lookup_partition
from indexes import roles
from indexes.counters import ShuffleMeter, new_counters
from indexes.lookup import ReadView
from tableformat import basefile as bf
from tableformat.fs import IOStats
from tableformat.slice_reader import LogReadStats

BUCKET_AWARE, DEFAULT = "bucket-aware", "default"
# what lookup_partition and the index cores count, summed over the tasks (0: not done);
# an index's own counters its lookups count follow (consistent-hashing's ring lookups)
LOOKUP_COUNTERS = ("keys_found", "files_read", "bytes_read", "footers_read",
                   "index_files_read", "candidate_files", "bloom_checks", "bloom_positives",
                   "false_positives", "fp_file_reads", "log_files_read", "log_bytes_read")


@dataclass
class ScanTable:
    """One table as a scan sees it: its view, index, key fields and bucket layout."""

    table: Any
    index: Any
    view: ReadView
    fields: list[str]
    layout: dict[str, int] | None
    records: int

    @classmethod
    def of(cls, table, index, read_optimized: bool = False) -> ScanTable:
        """The table as a snapshot query reads it, or a read-optimized one (base files
        only, :mod:`tableformat.query_type`)."""
        snap = table.snapshot()
        return cls(table, index, ReadView.of(table, snap, index, read_optimized),
                   roles.query_key_fields(index, table.config.record_key_field),
                   roles.hash_layout(index, snap), sum(s.num_records for s in snap.slices.values()))

    def paths(self) -> list[str]:
        """URIs of the snapshot's base files without log files, for Spark's own reader."""
        return [f"{self.table.uri.rstrip('/')}/{p}" for part, files in self.view.files.items()
                for fid, p in files if (part, fid) not in self.view.merged]

    def spark_frame(self, spark: SparkSession, acc: Any = None) -> DataFrame:
        """The snapshot's records: Spark's own reader over exactly the base files that
        have no log files, and on a merge-on-read table one task per slice with logs
        that merges it (:func:`tableformat.slice_reader.read_slice`, Hudi's snapshot
        query). The commits name the files, so Spark only checks them on the driver, as
        Hudi's file index lists a table from its metadata: above
        ``parallelPartitionDiscovery.threshold`` (32 paths) Spark would start a listing
        job, 5–8 s for a bloom table's 821 files. ``acc``: counters of the merging
        tasks' reads (files, log files and bytes, merge seconds)."""
        key = "spark.sql.sources.parallelPartitionDiscovery.threshold"
        before = spark.conf.get(key)
        paths = self.paths()
        frames = []
        spark.conf.set(key, str(len(paths) + 1))
        try:
            if paths:
                frames.append(spark.read.parquet(*paths))
        finally:
            spark.conf.set(key, before)
        if self.view.merged:
            frames.append(merged_frame(spark, self.table, self.view, acc))
        if not frames:
            return spark.createDataFrame([], file_struct(self.table.snapshot().schema))
        out = frames[0]
        for f in frames[1:]:
            out = out.unionByName(f)
        return out


def merged_frame(spark: SparkSession, table, view: ReadView, acc: Any = None) -> DataFrame:
    """The slices with log files, one task each, read merged (their files, log files
    and bytes and the merge's seconds added to ``acc``)."""
    struct = file_struct(table.snapshot().schema)
    arrow = to_arrow_schema(struct)
    keys = sorted(view.merged)
    uri = table.uri

    def read(batches):
        from tableformat.table import Table

        t = Table(uri)
        for rb in batches:
            for i in rb.column(0).to_pylist():
                p, fid = keys[i]
                stats, logs = IOStats(), LogReadStats()
                data = view.read_group(t, p, fid, stats, logs)
                if acc is not None:
                    acc.add({"merged_files_read": stats.files_read, **log_counts(logs)})
                yield from data.select(arrow.names).cast(arrow).to_batches()

    tasks = max(1, min(len(keys), spark.sparkContext.defaultParallelism * 2))
    return spark.range(len(keys), numPartitions=tasks).mapInArrow(read, struct)


def file_struct(snapshot_schema: str) -> T.StructType:
    """A base file's Spark schema: Hudi meta columns, then the table's data columns."""
    data = T.StructType.fromJson(json.loads(snapshot_schema))
    return T.StructType([T.StructField(c, T.StringType(), True) for c in bf.META_COLUMNS]
                        + list(data.fields))


# ---------------------------------------------------------------- point lookups
def run_lookups(spark: SparkSession, table, index, keys: pa.Table, batch_keys: int,
                read_optimized: bool = False) -> tuple[dict[str, float], pa.Table]:
    """Look ``keys`` up through ``index``, ``batch_keys`` keys per Spark job; returns the
    counted figures (latencies per key batch included) and the rows found.
    ``read_optimized``: base files only (Hudi's read-optimized query)."""
    snapshot = table.snapshot()
    view = ReadView.of(table, snapshot, index, read_optimized)
    part_field = table.config.partition_field
    struct = file_struct(snapshot.schema)
    arrow_out = to_arrow_schema(struct)
    acc = new_counters(spark)

    def task(data: pa.Table) -> pa.Table:
        """One partition's keys of one batch: the index locates, the files are read."""
        from tableformat.table import Table

        part = data.column(part_field)[0].as_py()
        rows, counts = lookup_partition(index, Table(view.table_uri), view, part, data)
        acc.add(dict(counts))
        return arrow_out.empty_table() if rows is None else \
            rows.select(arrow_out.names).cast(arrow_out)

    warm_up(spark, index)
    key_cols = [c for c in keys.column_names if c != PRESENT_COL]
    key_schema = T.StructType([T.StructField(c, T.StringType(), False) for c in key_cols])
    seconds, found = [], []
    for lo in range(0, keys.num_rows, batch_keys):
        part = keys.slice(lo, batch_keys).select(key_cols).to_pandas()
        t0 = time.perf_counter()
        # one task per partition of the batch's keys (a shuffle of the keys only): each
        # partition's footers or RLI are read once per batch, however Spark slices it
        got = spark.createDataFrame(part, key_schema).groupBy(part_field) \
            .applyInArrow(task, struct).toArrow()
        seconds.append(time.perf_counter() - t0)
        found.append(got)
    c = dict(acc.value)
    n = keys.num_rows
    figures = {
        "keys": n, "keys_present": int(pc.sum(keys.column(PRESENT_COL)).as_py() or 0),
        "lookup_batches": len(seconds), **{k: int(c.get(k, 0)) for k in LOOKUP_COUNTERS},
        **{k: int(c[k]) for k in index.counter_columns() if k in c and k not in LOOKUP_COUNTERS},
        "files_read_per_key": c.get("files_read", 0) / n if n else 0.0,
        "merge_s": float(c.get("merge_s", 0.0)),
        "total_s": float(sum(seconds)), **latency_figures(seconds),
    }
    rows = pa.concat_tables(found) if found else arrow_out.empty_table()
    return figures, rows


_WARM: set[tuple[str, str]] = set()  # (Spark application, what) already warmed up


def _first_time(spark: SparkSession, what: str) -> bool:
    """Whether ``what`` is warmed up for the first time in this Spark application."""
    key = (spark.sparkContext.applicationId, what)
    if key in _WARM:
        return False
    _WARM.add(key)
    return True


def warm_up(spark: SparkSession, index) -> None:
    """One untimed job per application that starts the Python workers and imports the
    lookup's modules (the index cores, pyarrow, the bloom filter): the first key batch
    is then timed like every other, not with the workers' start-up. It reads nothing
    of the table."""
    if not _first_time(spark, "lookup"):
        return

    # the packages of the index's class and its bases (its folder and the shared
    # packages it builds on)
    # with every module of them loaded here, its core and lookup path: naming no index
    packages = {".".join(c.__module__.split(".")[:2]) for c in type(index).__mro__
                if c.__module__.startswith("indexes.")}
    own = sorted(m for m in sys.modules
                 if any(m == p or m.startswith(p + ".") for p in packages))

    def task(batches):
        import importlib

        import indexbench.query.lookup  # noqa: F401

        for name in own:
            importlib.import_module(name)
        index.describe()
        yield from batches

    parallelism = spark.sparkContext.defaultParallelism
    warm = spark.range(0, parallelism, 1, parallelism).mapInArrow(task, "id long")
    warm.collect()  # ok: one row per task


# ---------------------------------------------------------------- group-by and join
def _groups_frame(spark: SparkSession, groups: int, body, schema: T.StructType) -> DataFrame:
    """The aligned bucket groups over Spark tasks: ``spark.range`` of the group ids, cut
    into at most two slices per core (a Spark task costs more than a small bucket),
    each task running ``body(j)`` → Arrow table for its groups; no Exchange."""
    def run(batches):  # noqa: ANN001, ANN202 (a Spark task)
        for rb in batches:
            for j in rb.column(0).to_pylist():
                out = body(int(j))
                if out.num_rows:
                    yield from out.to_batches()

    slices = max(1, min(groups, 2 * spark.sparkContext.defaultParallelism))
    return spark.range(0, groups, 1, slices).mapInArrow(run, schema)


def _key_struct(fields: list[str], extra: list[T.StructField]) -> T.StructType:
    return T.StructType([T.StructField(f, T.StringType(), True) for f in fields] + extra)


def groupby_frame(spark: SparkSession, t: ScanTable, plan: str, groups: int | None = None,
                  acc: Any = None) -> DataFrame:
    """``select key, count(*) from t group by key`` (the index key), by ``plan``."""
    fields = t.fields
    if plan == DEFAULT:
        return t.spark_frame(spark, acc).groupBy(*fields).count()
    assert groups, "a bucket-aware plan needs aligned buckets"
    files = bucketed.files_of_groups(t.view, groups)
    uri = t.table.uri

    def body(j: int) -> pa.Table:
        from tableformat.table import Table

        stats, logs = IOStats(), LogReadStats()
        data = bucketed.read_key_columns(Table(uri), t.view, files[j], fields, stats, logs)
        if acc is not None:
            acc.add({**stats.as_dict(), **log_counts(logs)})
        return bucketed.group_counts(data, fields)

    schema = _key_struct(fields, [T.StructField(bucketed.COUNT_COL, T.LongType(), False)])
    return _groups_frame(spark, groups, body, schema)


def join_frame(spark: SparkSession, left: ScanTable, right: ScanTable, plan: str,
               groups: int | None = None, acc: Any = None) -> DataFrame:
    """``select count(*) from left join right using (key)``: the default plan's joined
    rows, or one count per aligned bucket group (their sum is the count)."""
    fields = left.fields
    if plan == DEFAULT:
        a = left.spark_frame(spark, acc).select(*fields)
        b = a if right is left else right.spark_frame(spark, acc).select(*fields)
        return a.join(b, on=fields, how="inner")
    assert groups, "a bucket-aware plan needs aligned buckets"
    lfiles = bucketed.files_of_groups(left.view, groups)
    rfiles = bucketed.files_of_groups(right.view, groups)
    luri, ruri = left.table.uri, right.table.uri

    same = luri == ruri  # a self-join reads each group once, as Spark reuses its scan

    def body(j: int) -> pa.Table:
        from tableformat.table import Table

        stats, logs = IOStats(), LogReadStats()
        a = bucketed.read_key_columns(Table(luri), left.view, lfiles[j], fields, stats, logs)
        b = a if same else bucketed.read_key_columns(Table(ruri), right.view, rfiles[j],
                                                     fields, stats, logs)
        if acc is not None:
            acc.add({**stats.as_dict(), **log_counts(logs)})
        return pa.table({"group": [j], bucketed.COUNT_COL: [bucketed.join_count(a, b, fields)]})

    schema = T.StructType([T.StructField("group", T.LongType(), False),
                           T.StructField(bucketed.COUNT_COL, T.LongType(), False)])
    return _groups_frame(spark, groups, body, schema)


def warm_up_scans(spark: SparkSession, t: ScanTable) -> None:
    """Untimed: both plans' code paths once on one base file (Python workers and their
    imports, the JVM's Parquet reader and aggregation code), so the first plan measured
    does not pay the session's start-up and the second not its warm caches alone.
    Once per application and kind of table (hash-bucketed or not)."""
    warm_up(spark, t.index)
    if not _first_time(spark, f"scans-{bool(t.layout)}"):
        return
    if not t.view.files:  # a read-optimized view of a table with no base file yet
        return
    part, files = next(iter(t.view.files.items()))
    one = dataclasses.replace(t, view=dataclasses.replace(t.view, files={part: files[:1]}))
    for plan in ([BUCKET_AWARE] if t.layout else []) + [DEFAULT]:
        measure(spark, groupby_frame(spark, one, plan, 1), F.count(F.lit(1)), "warm-up")
        result = F.count(F.lit(1)) if plan == DEFAULT else F.sum(bucketed.COUNT_COL)
        measure(spark, join_frame(spark, one, one, plan, 1), result, "warm-up",
                no_broadcast=True)


def has_exchange(df: DataFrame) -> bool:
    """Whether Spark's physical plan for ``df`` moves rows between tasks (an Exchange)."""
    return "Exchange" in df._jdf.queryExecution().executedPlan().toString()


def measure(spark: SparkSession, df: DataFrame, result: Any, what: str,
            no_broadcast: bool = False) -> dict[str, float]:
    """Run ``df`` to the end (Spark's ``noop`` sink: every row computed, none kept) and
    measure it: seconds, shuffle and input bytes, tasks, Exchange, ``result`` (a column
    aggregate observed on the way, no extra job) as ``result_rows``.

    ``no_broadcast``: a join is planned as at scale, where neither side is small enough
    to broadcast (a sort-merge join, Spark's default for two large tables)."""
    key = "spark.sql.autoBroadcastJoinThreshold"
    before = spark.conf.get(key)
    if no_broadcast:
        spark.conf.set(key, "-1")
    try:
        obs = Observation(f"q{uuid.uuid4().hex[:8]}")
        observed = df.observe(obs, result.alias("result"))
        exchange = has_exchange(observed)
        with ShuffleMeter(spark, f"indexbench-query-{uuid.uuid4().hex[:8]}",
                          f"indexbench query {what}") as meter:
            t0 = time.perf_counter()
            observed.write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - t0
    finally:
        spark.conf.set(key, before)
    return {"total_s": seconds, "shuffle_bytes": meter.write_bytes,
            "shuffle_read_bytes": meter.read_bytes, "input_bytes": meter.input_bytes,
            "spark_jobs": len(meter.jobs),
            "spark_tasks": meter.tasks, "has_exchange": int(exchange),
            "result_rows": int(obs.get["result"] or 0)}


def run_groupby(spark: SparkSession, t: ScanTable, plan: str, groups: int | None,
                repeat: int = 1) -> dict[str, float]:
    """The group-by, measured ``repeat`` times (seconds: the median; the counts are the
    same every time). Files and bytes read: the tasks' own count when bucket-aware,
    the scanned files and Spark's reader's bytes otherwise."""
    def once() -> dict[str, float]:
        acc = new_counters(spark)
        row = measure(spark, groupby_frame(spark, t, plan, groups, acc), F.count(F.lit(1)),
                      f"groupby {plan}")
        return {**row, **_read_figures(row, acc, [t], plan)}

    return _repeated(once, repeat, groups)


def run_join(spark: SparkSession, left: ScanTable, right: ScanTable, plan: str,
             groups: int | None, repeat: int = 1) -> dict[str, float]:
    """The join's ``count(*)``, measured like :func:`run_groupby`."""
    result = F.count(F.lit(1)) if plan == DEFAULT else F.sum(bucketed.COUNT_COL)

    def once() -> dict[str, float]:
        acc = new_counters(spark)
        row = measure(spark, join_frame(spark, left, right, plan, groups, acc), result,
                      f"join {plan}", no_broadcast=True)
        return {**row, **_read_figures(row, acc, [left, right], plan)}

    return _repeated(once, repeat, groups)


def _repeated(once, repeat: int, groups: int | None) -> dict[str, float]:
    """Run ``once`` ``repeat`` times: the last run's counts, the median seconds."""
    runs = [once() for _ in range(max(1, repeat))]
    last = runs[-1]
    row = {k: v for k, v in last.items() if k not in ("input_bytes", "plan_aligned")}
    row["total_s"] = float(np.median([r["total_s"] for r in runs]))
    return {**row, "repeats": len(runs),
            "bucket_groups": groups if last["plan_aligned"] else None}


def _read_figures(row: dict, acc: Any, tables: list[ScanTable], plan: str) -> dict:
    """Files and bytes read, counted by the bucket-aware tasks' own reader. For Spark's
    plan: the files it scans plus the files the tasks merging slices with logs read;
    its bytes are not counted here (empty ``bytes_read``), and Spark's own
    ``inputBytes`` goes under its own name, ``spark_input_bytes`` (it misses the reads
    its vectored Parquet reader does off the task thread). Log files, their bytes and
    the merge's seconds are counted by this project's reader in both plans."""
    c = dict(acc.value)
    logs = {"log_files_read": int(c.get("log_files_read", 0)),
            "log_bytes_read": int(c.get("log_bytes_read", 0)),
            "merge_s": float(c.get("merge_s", 0.0))}
    if plan == DEFAULT:  # a self-join's second side is Spark's reused exchange: one scan
        distinct = {t.table.uri: t for t in tables}.values()
        return {"files_read": sum(len(t.paths()) for t in distinct)
                + int(c.get("merged_files_read", 0)), "bytes_read": None,
                "spark_input_bytes": row["input_bytes"], "plan_aligned": False, **logs}
    return {"files_read": int(c.get("files_read", 0)), "bytes_read": int(c.get("bytes_read", 0)),
            "plan_aligned": True, **logs}
