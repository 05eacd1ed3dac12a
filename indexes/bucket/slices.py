"""Bucket file slices on Spark: writing one, and the rescale jobs that write them.

A bucket's new base file is written by :func:`write_bucket_slice` (sorted records, the
key range in the footer, its write stat); multiple-rehash's rescale and
consistent-hashing's resize both write their children with it, in tasks named by
:func:`task_write_token`. A rescale (:func:`rescale_work`, shared by multiple-rehash
and partition-bucket through :class:`BucketRescaleSpark`) is one replacecommit — timed,
committed and undone by the service runner, :mod:`indexbench.services` — of one of two
Spark jobs. **rehash**
(:func:`build_rehash_job`) grows a partition N → k·N: bucket ``b`` holds exactly the
records that go to ``b, b+N, …, b+(k−1)·N`` under ``% kN``, so one task per old bucket
reads that bucket's base file once and writes its children (:func:`split_bucket`); no
table row crosses an Exchange. **overwrite** (:func:`build_overwrite_job`) reads every
file of the partitions, repartitions the rows by new bucket (a real shuffle) and
rewrites them; it accepts any new count ≥ 1.

Either way the old file groups leave the snapshot only when the replacecommit
completes, and a crash leaves files of an inflight instant that the next writer rolls
back. The new per-partition counts go into its extraMetadata
(:func:`indexes.bucket.rescale.rescale_metadata`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexes import roles
from indexes.base import BUCKET_COL, ServiceWork
from indexes.bucket.files import new_bucket_file_id, partition_bucket_fill
from indexes.bucket.rescale import RescalePlan, rescale_metadata, split_rows
from indexes.bucket.rescale_rows import rescale_figures
from indexes.bucket.spark_routing import BucketRoutingSpark
from indexes.hashing import bucket_ids
from indexes.roles import ServiceExecutor
from tableformat import basefile as bf
from tableformat.fs import IOStats
from tableformat.slice_reader import read_file_group
from tableformat.table import WRITE_STATS_SCHEMA, FileSlice, Table
from writeclient.faults import fail_task_if_asked, hang_if

if TYPE_CHECKING:
    from indexes.bucket.index import BucketIndex

RESCALE_STATS_SCHEMA = WRITE_STATS_SCHEMA + ", replacedFileId string"
TASK_SCHEMA = "partition string, path string, fileId string, bucket int, fromBuckets int, " \
              "toBuckets int"
HANG_IN_TASK = "rescale_in_task"  # fault injection: a split task hangs after its first child


# ---------------------------------------------------------------- task bodies
def file_schema(snapshot_schema: str) -> pa.Schema:
    """The Arrow schema of a base file: Hudi meta columns, then the table's data columns."""
    data = to_arrow_schema(T.StructType.fromJson(json.loads(snapshot_schema)))
    return pa.schema([pa.field(c, pa.string()) for c in bf.META_COLUMNS] + list(data))


def write_bucket_slice(table: Table, partition: str, bucket: int, records: pa.Table,
                       instant: str, write_token: str,
                       footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]] | None,
                       replaced: str | None = None, file_id: str | None = None) -> dict:
    """Write one new bucket file group from records sorted by key; returns its write stat.

    Records keep their ``_hoodie_commit_time``/``seqno`` (as Hudi's clustering preserves
    commit metadata); only ``_hoodie_file_name`` changes. The file id is a pure function
    of (instant, partition, bucket), so a retried task names it alike — or ``file_id``
    (a consistent-hashing child, whose ``bucket`` is its ring node's value).
    ``footer_fn``: the index's footer entries (None: it keeps none,
    :func:`indexes.roles.footer_writer`).
    """
    file_id = file_id or new_bucket_file_id(instant, partition, bucket)
    name = bf.BaseFileName(file_id, write_token, instant).name
    rel = f"{partition}/{name}" if partition else name
    col = records.schema.get_field_index(bf.FILE_NAME)
    records = records.set_column(col, bf.FILE_NAME, pa.repeat(pa.scalar(name), records.num_rows))
    keys = records.column(bf.RECORD_KEY).combine_chunks()
    footer, index_bytes = footer_fn(keys) if footer_fn is not None else ({}, 0)
    mm = pc.min_max(keys)
    lo, hi = mm["min"].as_py(), mm["max"].as_py()
    footer = {bf.MIN_KEY_FOOTER: lo, bf.MAX_KEY_FOOTER: hi, **footer}
    table.fs.create_dir(table.abs_path(partition), recursive=True)
    size = bf.write_base_file(table.fs, table.abs_path(rel), records, footer)
    return {
        "partitionPath": partition, "fileId": file_id, "path": rel, "prevCommit": "null",
        "numWrites": records.num_rows, "numInserts": 0, "numUpdateWrites": 0, "numDeletes": 0,
        "totalWriteBytes": size, "indexBytes": index_bytes, "mergeFilesRead": 0,
        "mergeBytesRead": 0, "minRecordKey": lo, "maxRecordKey": hi, "bucketId": bucket,
        "replacedFileId": replaced,
    }


def split_bucket(table: Table, file_slice: FileSlice, bucket: int,
                 from_buckets: int, to_buckets: int, hash_fields: list[str], instant: str,
                 write_token: str,
                 footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]] | None,
                 io: IOStats) -> list[dict]:
    """Read old bucket ``bucket``'s file slice once (merged with its logs on a
    merge-on-read table) and write its children under ``% kN``."""
    partition, file_id = file_slice.partition, file_slice.file_id
    path = file_slice.path or file_id
    data = read_file_group(table, file_slice, io)
    new = bucket_ids([data.column(f) for f in hash_fields], to_buckets)
    stats = []
    for child, rows in split_rows(new, bucket, from_buckets, to_buckets, where=path):
        stats.append(write_bucket_slice(table, partition, child, data.take(rows), instant,
                                        write_token, footer_fn, replaced=file_id))
        hang_if(HANG_IN_TASK)
    return stats


def task_write_token() -> str:
    """This write task's token (:func:`tableformat.basefile.task_write_token`)."""
    from pyspark import TaskContext

    return bf.task_write_token(TaskContext.get())


# ---------------------------------------------------------------- Spark jobs
def _task_rows(plan: RescalePlan) -> list[tuple]:
    return [(s.partition, s.path, s.file_id, bf.bucket_of_file_id(s.file_id),
             plan.counts[s.partition][0], plan.counts[s.partition][1]) for s in plan.slices]


def build_rehash_job(spark: SparkSession, table: Table, index: BucketIndex,
                     plan: RescalePlan, instant: str, counters) -> DataFrame:
    """One Spark partition (= task) per old bucket file; each writes its k children.

    The input is a DataFrame of file paths made with ``parallelize(rows, len(rows))`` and
    the split is ``mapInPandas``: a narrow plan, so no Exchange ever carries table rows.
    """
    rows = _task_rows(plan)
    uri, fields = table.uri, index.hash_fields(table.config.record_key_field)
    footer_fn = roles.footer_writer(index)
    slices = {(s.partition, s.file_id): s for s in plan.slices}
    files = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)), TASK_SCHEMA)

    def split(frames: Iterator) -> Iterator:
        import pandas as pd
        from pyspark import TaskContext

        t = Table(uri)
        for pdf in frames:
            fail_task_if_asked(TaskContext.get())
            for r in pdf.itertuples(index=False):
                io = IOStats()
                stats = split_bucket(t, slices[(r.partition, r.fileId)], int(r.bucket),
                                     int(r.fromBuckets), int(r.toBuckets), fields, instant,
                                     task_write_token(), footer_fn, io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                if stats:
                    yield pd.DataFrame(stats)

    return files.mapInPandas(split, RESCALE_STATS_SCHEMA)


def build_overwrite_job(spark: SparkSession, table: Table, index: BucketIndex,
                        plan: RescalePlan, instant: str, counters,
                        schema_json: str) -> DataFrame:
    """Read every file of the partitions, repartition rows by new bucket, rewrite each.

    The ``groupBy(partition, bucket)`` is a hash Exchange of all the partitions' rows:
    the shuffle RFC-29's overwrite pays and rehash avoids.
    """
    rows = [(s.partition, s.file_id) for s in plan.slices]
    slices = {(s.partition, s.file_id): s for s in plan.slices}
    uri, fields = table.uri, index.hash_fields(table.config.record_key_field)
    footer_fn = roles.footer_writer(index)
    to_counts = {p: t for p, (_, t) in plan.counts.items()}
    fschema = file_schema(schema_json)
    row_struct = T.StructType(
        [T.StructField(c, T.StringType(), True) for c in bf.META_COLUMNS]
        + list(T.StructType.fromJson(json.loads(schema_json)).fields)
        + [T.StructField(BUCKET_COL, T.IntegerType(), False)])
    files = spark.createDataFrame(spark.sparkContext.parallelize(rows, len(rows)),
                                  "partition string, file_id string")

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        t = Table(uri)
        for rb in batches:
            for part, fid in zip(rb.column(0).to_pylist(), rb.column(1).to_pylist(),
                                 strict=True):
                io = IOStats()
                data = read_file_group(t, slices[(part, fid)], io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                buckets = bucket_ids([data.column(f) for f in fields], to_counts[part])
                data = data.append_column(BUCKET_COL, pa.array(buckets, pa.int32()))
                yield from data.to_batches()

    def write(records: pa.Table) -> pa.Table:
        from pyspark import TaskContext

        fail_task_if_asked(TaskContext.get())
        t = Table(uri)
        partition = records.column(bf.PARTITION_PATH)[0].as_py()
        bucket = int(records.column(BUCKET_COL)[0].as_py())
        records = records.drop_columns([BUCKET_COL]).sort_by(bf.RECORD_KEY).cast(fschema)
        stat = write_bucket_slice(t, partition, bucket, records, instant, task_write_token(),
                                  footer_fn)
        return pa.Table.from_pylist([stat], schema=stats_arrow)

    stats_arrow = to_arrow_schema(T._parse_datatype_string(RESCALE_STATS_SCHEMA))
    return (files.mapInArrow(read, row_struct)
            .groupBy(bf.PARTITION_PATH, BUCKET_COL)
            .applyInArrow(write, RESCALE_STATS_SCHEMA))


# ---------------------------------------------------------------- the operation
def rescale_work(spark: SparkSession, table: Table, index: BucketIndex, plan: RescalePlan,
                 instant: str, counters, schema: str | None) -> ServiceWork:
    """Run a checked plan's job under ``instant`` (rehash: one task per old bucket;
    overwrite: a shuffle by new bucket) and say what the replacecommit must hold: the
    new files, the replaced file groups and the new counts (the service runner,
    :mod:`indexbench.services`, times, commits and undoes it). Shared by multiple-rehash
    and partition-bucket (whose plans overwrite the partitions a new rule changes). A
    plan with no file group to replace commits a replacecommit that replaces nothing."""
    if not plan.slices:
        stats: list[dict] = []
    else:
        if plan.mode == "rehash":
            job = build_rehash_job(spark, table, index, plan, instant, counters)
        else:
            job = build_overwrite_job(spark, table, index, plan, instant, counters, schema)
        stats = [r.asDict() for r in job.collect()]  # ok: one write stat per new file
    replaced: dict[str, list[str]] = {}
    for s in plan.slices:
        replaced.setdefault(s.partition, []).append(s.file_id)
    return ServiceWork(
        stats=stats, replaced=replaced, extra_metadata=rescale_metadata(plan, schema),
        operation_type="CLUSTER" if plan.mode == "rehash" else "INSERT_OVERWRITE",
        figures=rescale_figures(
            mode=plan.mode, factor=plan.factor, from_buckets=plan.from_buckets,
            to_buckets=plan.to_buckets, partitions_touched=len(plan.counts),
            fill_before=partition_bucket_fill(table.snapshot(), list(plan.counts)),
            fill_after={}))


class BucketRescaleSpark(ServiceExecutor, BucketRoutingSpark):
    """Hash-bucket routing plus the rescale service's execution (a replacecommit)."""

    def execute_service(self, service, plan: RescalePlan, spark, table, instant,
                        counters) -> ServiceWork:
        return rescale_work(spark, table, self.index, plan, instant, counters,
                            table.snapshot().schema)

    def service_figures(self, pending, before, after) -> dict[str, Any]:
        fill = partition_bucket_fill(after, list(pending.plan.counts))
        return {f"rescaled_{k}_after": v for k, v in fill.items()}


__all__ = ["HANG_IN_TASK", "RESCALE_STATS_SCHEMA", "build_overwrite_job", "build_rehash_job",
           "BucketRescaleSpark", "rescale_work", "file_schema", "split_bucket", "task_write_token",
           "write_bucket_slice"]
