"""extendible-hash on Spark: tagging through the directories, and the split service.

Tagging hashes every record in ``mapInArrow`` and looks its partition's committed
directory up (only the directories and the snapshot's file names go to the tasks; no
data file is read). A split — run by the service runner (:mod:`indexbench.services`)
after a commit, once per bucket over capacity, or by ``indexbench rescale`` — is one
replacecommit: one Spark task reads the bucket's file slice once (merged with its logs
on a merge-on-read table), sends each record to the bucket bit ``l`` of its hash names
(the old id or ``id + 2^l``) and writes the non-empty children as new file groups
named after the split's instant; the new directory goes into a ``.hashing_meta`` file
and into the replacecommit's extraMetadata. Nothing of it is visible until the
replacecommit completes; a crash leaves files of an inflight instant that the next
writer rolls back (the ``.hashing_meta`` file with them).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexes import roles
from indexes.base import ServiceWork, TagContext
from indexes.bucket.files import partition_bucket_fill
from indexes.bucket.rescale import split_rows
from indexes.bucket.slices import RESCALE_STATS_SCHEMA, task_write_token, write_bucket_slice
from indexes.bucket.spark_routing import BucketRoutingSpark
from indexes.extendible_hash import ExtendibleHashIndex
from indexes.extendible_hash.core import SplitPlan, split_figures, split_metadata
from indexes.extendible_hash.storage import stored_directory, write_directory
from indexes.hashing import bucket_ids
from indexes.roles import ServiceExecutor
from tableformat import basefile as bf
from tableformat.fs import IOStats
from tableformat.slice_reader import read_file_group
from tableformat.table import FileSlice, Table
from writeclient.faults import fail_task_if_asked, hang_if

HANG_IN_SPLIT = "split_in_task"  # fault injection: the split task hangs after a child


def split_slice(table: Table, file_slice: FileSlice, bucket: int, depth: int,
                hash_fields: list[str], instant: str, write_token: str, footer_fn,
                io: IOStats) -> list[dict]:
    """Read bucket ``bucket``'s file slice once (merged with its logs), sorted by key,
    and write its two children under ``% 2^(depth+1)`` (an empty one is not written,
    as simple-bucket never makes an empty file group)."""
    data = read_file_group(table, file_slice, io)
    data = data.take(pc.sort_indices(data.column(bf.RECORD_KEY)))
    new = bucket_ids([data.column(f) for f in hash_fields], 2 << depth)
    stats = []
    for child, rows in split_rows(new, bucket, 1 << depth, 2 << depth,
                                  where=file_slice.path or file_slice.file_id):
        stats.append(write_bucket_slice(table, file_slice.partition, child, data.take(rows),
                                        instant, write_token, footer_fn,
                                        replaced=file_slice.file_id))
        hang_if(HANG_IN_SPLIT)
    return stats


def run_split(spark, table: Table, index: ExtendibleHashIndex, plan: SplitPlan,
              instant: str, counters) -> list[dict]:
    """One Spark task splits the bucket (a narrow plan: no Exchange carries table
    rows); what it reads goes to ``counters``. Returns the children's write stats."""
    file_slice, bucket, depth = plan.slices[0], plan.bucket, plan.local_depth
    uri, fields = table.uri, index.hash_fields(table.config.record_key_field)
    footer_fn = roles.footer_writer(index)
    schema = T._parse_datatype_string(RESCALE_STATS_SCHEMA)
    stats_arrow = to_arrow_schema(schema)
    frame = spark.createDataFrame(spark.sparkContext.parallelize([(bucket,)], 1), "bucket int")

    def split(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        fail_task_if_asked(TaskContext.get())
        t = Table(uri)
        for rb in batches:
            for _ in range(rb.num_rows):
                io = IOStats()
                stats = split_slice(t, file_slice, bucket, depth, fields, instant,
                                    task_write_token(), footer_fn, io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                if stats:
                    yield pa.RecordBatch.from_pylist(stats, schema=stats_arrow)

    return [r.asDict() for r in frame.mapInArrow(split, schema)
            .collect()]  # ok: one write stat per child file (two at most)


class ExtendibleHashSpark(ServiceExecutor, BucketRoutingSpark):
    """Tag through the directories in the tasks (simple-bucket's tagging with the
    directory as router); split buckets after commits."""

    index: ExtendibleHashIndex

    def bucket_router(self, ctx: TagContext):
        return self.index.router(ctx.snapshot, ctx.partitions).route

    # ---- table service: split (run by indexbench.services) -----------------------
    def service_request(self, service, plan: SplitPlan) -> dict:
        """The requested replacecommit: a clustering plan of the one input file group,
        with the split it makes (Hudi's ``HoodieRequestedReplaceMetadata`` shape)."""
        return {"operationType": "CLUSTER", "clusteringPlan": {"inputGroups": [{
            "slices": [{"partitionPath": plan.partition, "fileId": plan.slices[0].file_id}],
            "numOutputFileGroups": 2,
            "extraMetadata": {"indexbench.split.bucket": str(plan.bucket),
                              "indexbench.split.local.depth": str(plan.local_depth),
                              "indexbench.split.new.bucket": str(plan.new_bucket)}}]}}

    def execute_service(self, service, plan: SplitPlan, spark, table, instant,
                        counters) -> ServiceWork:
        """The children's base files and the new directory's ``.hashing_meta``, all
        named after ``instant`` (nothing visible until it completes)."""
        snapshot = table.snapshot()
        fill_before = partition_bucket_fill(snapshot, [plan.partition])
        stats = run_split(spark, table, self.index, plan, instant, counters)
        after = plan.after.at(instant)
        write_directory(table, after)
        moved = sum(int(s["numWrites"]) for s in stats if int(s["bucketId"]) == plan.new_bucket)
        return ServiceWork(
            stats=stats, replaced={plan.partition: [plan.slices[0].file_id]},
            extra_metadata=split_metadata(plan, after, moved, snapshot.schema),
            operation_type="CLUSTER", figures=split_figures(plan, moved, fill_before))

    def service_figures(self, pending, before, after) -> dict:
        fill = partition_bucket_fill(after, [pending.plan.partition])
        return {f"rescaled_{k}_after": v for k, v in fill.items()}

    # ---- verify --------------------------------------------------------------------
    def verify(self, spark, table, snapshot) -> list[str]:
        """Directories well formed and coherent with the timeline, one file group per
        bucket, and the ``.hashing_meta`` files agreeing with the replacecommits'."""
        problems = self.index.directory_problems(snapshot)
        done = set(snapshot.completed)
        for p, d in self.index.directories(snapshot, snapshot.partitions()).items():
            if not d.seq_no:
                continue
            stored = stored_directory(table, p, done)
            if stored is None or stored.stored != d.stored:
                problems.append(f"partition {p!r}: .hashing_meta of instant {d.instant} is "
                                "missing or differs from the replacecommit's directory")
        return problems


__all__ = ["HANG_IN_SPLIT", "ExtendibleHashSpark", "run_split", "split_slice"]
