"""consistent-hashing on Spark: ring tagging, dual writes, and resize by clustering.

Tagging hashes every record in ``mapInArrow`` and looks its partition's committed ring
up (no data file is read). A resize (the after-commit table service) is Hudi's
consistent-bucket clustering, in three steps on the timeline:

1. **schedule + execute**: ``<T>.replacecommit.requested`` holds the plan (groups to
   split or merge and their child nodes); one Spark task per group reads the group's
   base files and writes the children's base files, named after ``T``; the tasks' write
   stats go into ``<T>.replacecommit.inflight`` and the new rings into Hudi's
   ``.hashing_meta`` files. Nothing of it is visible: ``T`` has not completed.
2. **pending** (``indexbench.resize.pending.commits`` commits): every upsert routes by
   the committed ring and also writes each record of a resized bucket to the child the
   new ring gives it (**dual write**), listed in the upsert's write stats: on
   copy-on-write a merge into the child's latest base file, named after ``T``; on
   merge-on-read a new log file of the child whose base instant is ``T`` (RFC-42). Both
   stay hidden: their slice starts at ``T``, which has not completed.
3. **complete**: the replacecommit lists each child's latest base file (on
   merge-on-read the execution's: the dual writes' logs join its slice), replaces the
   old file groups and records the new rings (``RINGS_KEY``) — one atomic rename.

A writer that dies in between leaves ``T`` pending; the next writer rolls it back (its
base files, dual writes and ``.hashing_meta`` files go), and the old snapshot stays as
it was throughout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexes.base import (
    BUCKET_COL,
    FILE_ID_COL,
    PendingGroup,
    PendingService,
    ServiceWork,
    SparkAdapter,
    TagContext,
    batch_hash_fields,
)
from indexes.bucket.files import partition_bucket_fill
from indexes.bucket.slices import task_write_token, write_bucket_slice
from indexes.bucket.spark_routing import tagged_schema
from indexes.consistent_hashing import ConsistentHashingIndex
from indexes.consistent_hashing.plan import ResizePlan, is_resize_plan, with_rings
from indexes.consistent_hashing.ring import RINGS_KEY, Ring, rings_metadata
from indexes.consistent_hashing.storage import stored_ring, write_ring
from indexes.roles import DualWrites, ServiceExecutor, VerifiesIndex
from indexes.xxhash32 import consistent_hash
from tableformat import basefile as bf
from tableformat.commit_metadata import REPLACE, SPARK_SCHEMA_KEY
from tableformat.errors import IndexBenchError
from tableformat.fs import IOStats
from tableformat.hudi_log.names import is_log_file
from tableformat.slice_reader import read_file_group
from tableformat.table import WRITE_STATS_SCHEMA, FileSlice, Table, stats_by_partition
from writeclient.faults import fail_task_if_asked

RESIZE_KEY = "indexbench.consistent.hashing.resize"  # extraMetadata: {splits, merges, …}


# ---------------------------------------------------------------- the pending resize
class PendingResize:
    """A scheduled, executed, not yet completed resize read back from the timeline."""

    def __init__(self, table: Table, instant: str, plan: ResizePlan, inflight: dict):
        self.table, self.instant, self.plan, self.inflight = table, instant, plan, inflight

    @classmethod
    def find(cls, table: Table) -> PendingResize | None:
        for instant, action in reversed(table.pending_actions()):
            if action != REPLACE:
                continue
            requested, inflight = table.read_pending(instant, REPLACE)
            if is_resize_plan(requested) and "partitionToWriteStats" in inflight:
                return cls(table, instant, ResizePlan.from_json(instant, requested), inflight)
        return None

    def child_ids(self) -> dict[str, set[str]]:
        """Per partition, the file groups the new rings add (the children)."""
        return {p: set(r.file_ids) - set(self.plan.rings_before[p].file_ids)
                for p, r in self.plan.rings_after.items()}

    def _later_stats(self, snapshot) -> Iterator[dict]:
        """Write stats of the commits completed since the resize was planned, in order."""
        done = set(snapshot.completed)
        for instant, action in self.table.completed_instants():
            if instant > self.instant and instant in done:
                meta = self.table.read_commit(instant, action)
                for stats in meta.get("partitionToWriteStats", {}).values():
                    yield from stats

    def _children(self) -> set[tuple[str, str]]:
        return {(p, f) for p, ids in self.child_ids().items() for f in ids}

    def latest_children(self, snapshot) -> dict[tuple[str, str], dict]:
        """Each child's latest base file: the execution's, then the dual writes of the
        commits completed since (in timeline order)."""
        latest = {(s["partitionPath"], s["fileId"]): s
                  for stats in self.inflight["partitionToWriteStats"].values() for s in stats}
        children = self._children()
        for s in self._later_stats(snapshot):
            key = (s["partitionPath"], s["fileId"])
            if key in children and s["path"].endswith(f"_{self.instant}.parquet"):
                latest[key] = s
        return latest

    def child_logs(self, snapshot) -> dict[tuple[str, str], list[str]]:
        """Each child's log files the dual writes of completed commits appended
        (merge-on-read), oldest first."""
        out: dict[tuple[str, str], list[str]] = {}
        for s in self.dual_writes(snapshot):
            if is_log_file(s["path"]):
                out.setdefault((s["partitionPath"], s["fileId"]), []).append(
                    s["path"].rsplit("/", 1)[-1])
        return out

    def dual_writes(self, snapshot) -> list[dict]:
        """The write stats of every dual write of completed commits since it was planned."""
        children = self._children()
        return [s for s in self._later_stats(snapshot)
                if (s["partitionPath"], s["fileId"]) in children]


# ---------------------------------------------------------------- execution (tasks)
def no_footer(keys: pa.Array) -> tuple[dict[str, str], int]:
    """consistent-hashing keeps no index data in base files (the min/max key only)."""
    return {}, 0


def execute_group(table: Table, partition: str, slices: list[FileSlice], ring: Ring,
                  children: set[str], hash_fields: list[str], instant: str,
                  write_token: str, io: IOStats) -> list[dict]:
    """Read a group's file slices once (merged with their logs on a merge-on-read
    table), send each record to its node in the new ring (always one of the group's
    children), write the non-empty children."""
    paths = [s.path or s.file_id for s in slices]
    data = pa.concat_tables([read_file_group(table, s, io) for s in slices])
    data = data.take(pc.sort_indices(data.column(bf.RECORD_KEY)))
    nodes = ring.locate(consistent_hash([data.column(f) for f in hash_fields]))
    stats = []
    for i in np.unique(nodes).tolist():
        node = ring.nodes[i]
        if node.file_id not in children:
            raise IndexBenchError(f"{paths}: records of this group map to {node.file_id}, "
                                  "no child of the group; run indexbench verify")
        stats.append(write_bucket_slice(table, partition, node.value,
                                        data.filter(pa.array(nodes == i)), instant,
                                        write_token, no_footer, file_id=node.file_id))
    return stats


def run_execution(spark, table: Table, index: ConsistentHashingIndex, plan: ResizePlan,
                  snapshot, counters) -> list[dict]:
    """One Spark task per clustering group writes its children (a narrow plan: no
    Exchange carries table rows); what the tasks read goes to ``counters``. Returns the
    children's write stats."""
    rows = [(i, g.partition) for i, g in enumerate(plan.groups)]
    groups = [(g.partition, [snapshot.slices[(g.partition, f)] for f in g.file_ids],
               {c.file_id for c in g.children if c.file_id_prefix}) for g in plan.groups]
    rings = plan.rings_after
    uri, instant = table.uri, plan.instant
    fields = index.hash_fields(table.config.record_key_field)
    stats_schema = T._parse_datatype_string(WRITE_STATS_SCHEMA)
    stats_arrow = to_arrow_schema(stats_schema)
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, max(1, len(rows))),
                                  "group int, partition string")

    def execute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        t = Table(uri)
        fail_task_if_asked(TaskContext.get())
        for rb in batches:
            for g in rb.column(0).to_pylist():
                part, files, children = groups[g]
                io = IOStats()
                stats = execute_group(t, part, files, rings[part], children, fields, instant,
                                      task_write_token(), io)
                counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read})
                if stats:
                    yield pa.RecordBatch.from_pylist(stats, schema=stats_arrow)

    return [r.asDict() for r in frame.mapInArrow(execute, stats_schema)
            .collect()]  # ok: one write stat per child file


# ---------------------------------------------------------------- the adapter
def dual_write_counts(stats: list[dict]) -> dict[str, float]:
    """What dual writes did, from their write stats."""
    return {
        "dual_written_records": sum(int(s["numInserts"]) + int(s["numUpdateWrites"])
                                    + int(s.get("numDeletes") or 0) for s in stats),
        "dual_written_files": len(stats),
        "dual_written_bytes": sum(int(s["totalWriteBytes"]) for s in stats),
        "dual_merge_bytes_read": sum(int(s.get("mergeBytesRead") or 0) for s in stats),
    }


class ConsistentHashingSpark(VerifiesIndex, DualWrites, ServiceExecutor, SparkAdapter):
    """Tag by ring in the tasks; resize by clustering after commits."""

    index: ConsistentHashingIndex

    def tag_location(self, batch, ctx: TagContext):
        cfg = ctx.table.config
        fields = batch_hash_fields(self.index, batch.columns, cfg.record_key_field)
        rings = self.index.rings(ctx.snapshot, ctx.partitions)
        committed = {p: (r.values, np.asarray(r.file_ids, dtype=object))
                     for p, r in rings.items()}
        dual: dict[str, tuple[set[str], np.ndarray, np.ndarray]] = {}
        pending = PendingResize.find(ctx.table)
        if pending is not None:
            latest = pending.latest_children(ctx.snapshot)
            logs = pending.child_logs(ctx.snapshot)
            for p, new in pending.plan.rings_after.items():
                if p not in committed:
                    continue
                inputs = pending.plan.input_file_ids().get(p, set())
                dual[p] = (inputs, new.values, np.asarray(new.file_ids, dtype=object))
                for fid in pending.child_ids()[p]:
                    stat = latest.get((p, fid))
                    ctx.pending_groups[(p, fid)] = PendingGroup(
                        stat["path"] if stat else None, pending.instant,
                        tuple(logs.get((p, fid), ())))
        part_field, acc = cfg.partition_field, ctx.counters
        schema = tagged_schema(batch.schema)

        def tag(batches):
            from indexes.consistent_hashing.ring import locate

            for rb in batches:
                enc = pc.dictionary_encode(rb.column(part_field))
                codes = enc.indices.to_numpy(zero_copy_only=False)
                h = consistent_hash([rb.column(f) for f in fields])
                fids = np.empty(rb.num_rows, dtype=object)
                values = np.empty(rb.num_rows, dtype=np.int64)
                extra_rows, extra_fids, extra_values = [], [], []
                order = np.argsort(codes, kind="stable")  # rows grouped by partition
                cuts = np.searchsorted(codes[order], np.arange(len(enc.dictionary) + 1))
                for c, p in enumerate(enc.dictionary.to_pylist()):
                    rows = order[cuts[c]:cuts[c + 1]]
                    vals, ids = committed[p]
                    idx = locate(vals, h[rows])
                    fids[rows], values[rows] = ids[idx], vals[idx]
                    if p in dual:
                        inputs, new_vals, new_ids = dual[p]
                        moving = rows[np.isin(ids[idx], list(inputs))]
                        if len(moving):
                            cidx = locate(new_vals, h[moving])
                            extra_rows.append(moving)
                            extra_fids.append(new_ids[cidx])
                            extra_values.append(new_vals[cidx])
                n_dual = int(sum(len(r) for r in extra_rows))
                acc.add({"ring_lookups": rb.num_rows + n_dual, "keys_hashed": rb.num_rows})
                take = np.concatenate([np.arange(rb.num_rows), *extra_rows]).astype(np.int64)
                out = rb.take(pa.array(take)) if n_dual else rb
                all_fids = np.concatenate([fids, *extra_fids]) if n_dual else fids
                all_vals = np.concatenate([values, *extra_values]) if n_dual else values
                yield pa.RecordBatch.from_arrays(
                    [*out.columns, pa.array(all_fids, pa.string()),
                     pa.array(all_vals.astype(np.int32))],
                    schema=rb.schema.append(pa.field(FILE_ID_COL, pa.string(), False))
                    .append(pa.field(BUCKET_COL, pa.int32(), False)))

        return batch.mapInArrow(tag, schema)

    def pending_write_counts(self, stats: list[dict]) -> dict[str, float]:
        """The dual writes of an upsert: records copied to a pending resize's children,
        counted apart from the batch's own writes (they are the resize's cost)."""
        return dual_write_counts(stats)

    # ---- table service: resize (run by indexbench.services) -------------------------
    def service_request(self, service, plan: ResizePlan) -> dict:
        return plan.to_json()  # Hudi's clustering plan in .replacecommit.requested

    def execute_service(self, service, plan: ResizePlan, spark, table, instant,
                        counters) -> ServiceWork:
        """Step 1: the children's base files and the new rings' ``.hashing_meta`` files,
        all named after ``instant`` (nothing visible until it completes)."""
        plan.instant = instant
        with_rings(plan)
        stats = run_execution(spark, table, self.index, plan, table.snapshot(), counters)
        for ring in plan.rings_after.values():
            write_ring(table, ring)
        return ServiceWork(stats=stats)

    def stays_pending(self, pending: PendingService, snapshot) -> bool:
        """Step 2: pending (dual-written) until ``pending.commits`` commits completed."""
        waited = sum(i > pending.instant for i in snapshot.completed)
        return waited < self.index.params["pending_commits"]

    def find_pending(self, service, table) -> PendingService | None:
        """An executed resize whose replacecommit has not completed, from the timeline."""
        found = PendingResize.find(table)
        if found is None:
            return None
        info = found.inflight
        executed = [s for stats in info["partitionToWriteStats"].values() for s in stats]
        return PendingService(
            service, found.instant, found.plan,
            ServiceWork(stats=executed, read={"files_read": info.get("files_read", 0),
                                              "bytes_read": info.get("bytes_read", 0)}),
            execute_s=info.get("execute_s"), shuffle_bytes=info.get("shuffle_bytes"),
            spark_jobs=info.get("spark_jobs"))

    def complete_service(self, pending: PendingService, table, snapshot) -> ServiceWork:
        """Step 3: the children's latest base files (their dual writes included; on
        merge-on-read the dual writes' logs join the slice the execution's base file
        starts) replace the old file groups; the replacecommit records the new rings."""
        plan: ResizePlan = pending.plan
        resize = PendingResize(table, pending.instant, plan,
                               {"partitionToWriteStats": stats_by_partition(pending.work.stats)})
        replaced: dict[str, list[str]] = {}
        for g in plan.groups:
            replaced.setdefault(g.partition, []).extend(g.file_ids)
        parts = sorted(plan.rings_after)
        return ServiceWork(
            stats=list(resize.latest_children(snapshot).values()), replaced=replaced,
            extra_metadata={
                SPARK_SCHEMA_KEY: snapshot.schema,
                RINGS_KEY: rings_metadata(plan.rings_after.values()),
                RESIZE_KEY: json.dumps({"splits": plan.splits, "merges": plan.merges}),
            },
            operation_type="CLUSTER",
            figures={
                "mode": "resize", "partitions_touched": len(parts),
                "from_buckets": sum(plan.rings_before[p].num_buckets for p in parts),
                "to_buckets": sum(plan.rings_after[p].num_buckets for p in parts),
                "rescale_factor": float("nan"), "splits": plan.splits, "merges": plan.merges,
                "resize_pending_commits": sum(i > plan.instant for i in snapshot.completed),
                "resize_execute_s": pending.execute_s,
                **{f"rescaled_{k}_before": v
                   for k, v in partition_bucket_fill(snapshot, parts).items()},
                # the clustering's own writes are the row's; the dual writes apart
                **dual_write_counts(resize.dual_writes(snapshot)),
            })

    def service_figures(self, pending: PendingService, before, after) -> dict:
        parts = sorted(pending.plan.rings_after)
        return {f"rescaled_{k}_after": v for k, v in partition_bucket_fill(after, parts).items()}

    # ---- verify --------------------------------------------------------------------
    def verify(self, spark, table, snapshot) -> list[str]:
        """Rings well formed, one file group per node, and Hudi's ``.hashing_meta``
        files agreeing with the rings the replacecommits recorded."""
        problems = self.index.ring_problems(snapshot)
        done = set(snapshot.completed)
        for p, ring in self.index.rings(snapshot, snapshot.partitions()).items():
            stored = stored_ring(table, p, done)
            if ring.seq_no and (stored is None or stored.to_json() != ring.to_json()):
                problems.append(f"partition {p!r}: .hashing_meta of instant {ring.instant} "
                                "is missing or differs from the replacecommit's ring")
        return problems


__all__ = ["ConsistentHashingSpark", "PendingResize", "execute_group"]
