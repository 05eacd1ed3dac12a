"""consistent-hashing in the simulator: the same ring, plan and hash as on Spark.

Routing hashes every record's key (XXH32, :mod:`indexes.xxhash32`) onto its partition's
committed ring. The resize service plans with the same core (:func:`plan_resize` over
the model's file sizes); its execution and completion regenerate the records of the
resized partitions from their ordinals (keys are pure functions of them), so children's
record counts are exact. While a resize is pending (``pending_commits`` commits), the
records each batch sends to a resized bucket are counted as dual writes. On
copy-on-write each child they reach is counted as one rewrite of its records (modelled
bytes = records × the model's record size); on merge-on-read each gets one log file of
its records (:class:`~indexes.model_table.LogAppend` with the resize's instant as base
instant: hidden until the resize completes, then part of the child's slice after the
execution's base file, as the real snapshot assembles it).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from indexes.bucket.files import partition_bucket_fill
from indexes.bucket.rescale_rows import rescale_row
from indexes.bucket.sim import SlotCounts
from indexes.consistent_hashing.plan import ResizePlan, plan_resize, with_rings
from indexes.consistent_hashing.ring import RINGS_KEY, Ring, rings_metadata
from indexes.model_table import LogAppend
from indexes.roles import SimDualWrites, SimTableServices
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk
from indexes.xxhash32 import consistent_hash
from metrics.rows import WriteTotals, footer_totals

RESIZE_KEY = "indexbench.consistent.hashing.resize"


class ConsistentHashingSim(SimDualWrites, SimTableServices, SimAdapter):
    """Counts records per (partition, ring node) as the Spark tasks route them."""

    pending: ResizePlan | None = None

    def __init__(self, index: Any, model: Any, options: Any = None):
        super().__init__(index, model, options)
        self.pending = None
        self.pending_children: dict[tuple[str, str], int] = {}  # records per child
        self.dual = {"records": 0, "files": 0, "bytes": 0.0}
        self.executed: list = []
        self.read = (0, 0)  # files and bytes the pending resize's execution read

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        parts = batch.partitions
        rings = self.index.rings(self.model.snapshot, parts)
        self.rings: list[Ring] = [rings[p] for p in parts]
        self.slots = SlotCounts([r.num_buckets for r in self.rings])
        self.fields = self.index.hash_fields(batch.key_field)
        self.dual_hits: dict[tuple[str, str], int] = {}
        self.dual_new: dict[tuple[str, str], int] = {}  # of them, keys new to the table
        self.dual_logs: list[LogAppend] = []

    def _hashes(self, ordinals: np.ndarray) -> np.ndarray:
        return consistent_hash([self.batch.keys.column(f, ordinals) for f in self.fields])

    def add(self, chunk: SimChunk) -> None:
        h = self._hashes(chunk.ordinals)
        slot = np.empty(len(h), np.int64)
        for p in chunk.parts().tolist():
            rows = np.flatnonzero(chunk.part == p)
            idx = self.rings[p].locate(h[rows])
            slot[rows] = self.slots.offset[p] + idx
            self._dual(p, idx, h[rows], chunk.is_new[rows])
        self.counts["keys_hashed"] += len(h)
        self.counts["ring_lookups"] += len(h)
        self.slots.add(slot, chunk.is_new)

    def _dual(self, p: int, idx: np.ndarray, h: np.ndarray, is_new: np.ndarray) -> None:
        """Records of a bucket a pending resize replaces also go to their child."""
        name = self.batch.partitions[p]
        if self.pending is None or name not in self.pending.rings_after:
            return
        inputs = self.pending.input_file_ids()[name]
        moving = np.isin(np.asarray(self.rings[p].file_ids, dtype=object)[idx], list(inputs))
        if not moving.any():
            return
        new_ring = self.pending.rings_after[name]
        child = np.asarray(new_ring.file_ids, dtype=object)[new_ring.locate(h[moving])]
        self.counts["ring_lookups"] += int(moving.sum())
        self.counts["dual_written_records"] += int(moving.sum())
        fids, counts = np.unique(child, return_counts=True)
        new = dict(zip(*np.unique(child[is_new[moving]], return_counts=True), strict=True))
        for fid, n in zip(fids, counts, strict=True):
            self.dual_hits[(name, fid)] = self.dual_hits.get((name, fid), 0) + int(n)
            self.dual_new[(name, fid)] = self.dual_new.get((name, fid), 0) + int(new.get(fid, 0))

    def finish(self) -> GroupWrites:
        out = GroupWrites()
        for p, i, new, old in self.slots.touched():
            node = self.rings[p].nodes[i]
            out.add(self.batch.partitions[p], node.file_id, node.value, new, old)
        if self.pending is not None and self.model.merge_on_read:
            # each child reached gets a log file of its records, hidden until the
            # resize completes; a record new to the table is new to the child too
            # (every key of a resized bucket was in the execution's read or dual-written)
            self.dual_logs = [LogAppend(p, fid, n, self.dual_new[(p, fid)],
                                        base_instant=self.pending.instant)
                              for (p, fid), n in sorted(self.dual_hits.items())]
            written = float(sum(self.model.log_bytes(a.records) for a in self.dual_logs))
            self._count_dual(len(self.dual_logs), written)
        elif self.pending is not None:  # each child reached is rewritten with its records
            files = 0
            written = 0.0
            now = self._children_of(sorted({p for p, _ in self.dual_hits}))
            for key in self.dual_hits:
                self.pending_children[key] = now.get(key, 0)
                files += 1
                written += self.pending_children[key] * self.model.record_bytes
            self._count_dual(files, written)
        return out

    def pending_logs(self) -> list[LogAppend]:
        return self.dual_logs

    def _count_dual(self, files: int, written: float) -> None:
        if self.dual_hits:
            self.counts["dual_written_files"] += files
            self.counts["dual_written_bytes"] += written
            self.dual["files"] += files
            self.dual["bytes"] += written
            self.dual["records"] += sum(self.dual_hits.values())

    def _children_of(self, partitions: list[str]) -> dict[tuple[str, str], int]:
        """Records per child file group of the pending resize, from every record of the
        partitions (this batch included)."""
        plan = self.pending
        out: dict[tuple[str, str], int] = {}
        names = self.batch.partitions
        for chunk in self.batch.existing(partitions):
            h = self._hashes(chunk.ordinals)
            for p in chunk.parts().tolist():
                name = names[p]
                rows = np.flatnonzero(chunk.part == p)
                before, after = plan.rings_before[name], plan.rings_after[name]
                old = np.asarray(before.file_ids, dtype=object)[before.locate(h[rows])]
                moving = np.isin(old, list(plan.input_file_ids()[name]))
                fids = np.asarray(after.file_ids, dtype=object)[after.locate(h[rows][moving])]
                for fid, n in zip(*np.unique(fids, return_counts=True), strict=True):
                    out[(name, fid)] = out.get((name, fid), 0) + int(n)
        return out

    # ---- resize service ---------------------------------------------------------
    def table_services(self, batch_no: int) -> list[dict[str, Any]]:
        if not self.index.params["resize_enabled"]:
            return []
        model = self.model
        if self.pending is not None:
            waited = sum(i > self.pending.instant for i in model.snapshot.completed)
            if waited >= self.index.params["pending_commits"]:
                return [self.complete(batch_no)]
            return []
        snap = model.snapshot
        rings = self.index.rings(snap, snap.partitions())
        plan = plan_resize(snap, rings, self.index.split_size, self.index.merge_size,
                           self.index.params["max_num_buckets"], self.index.min_buckets)
        if plan is None:
            return []
        plan.instant = model.new_instant()
        self.pending = with_rings(plan)
        self.pending_children = self._children_of(sorted(plan.rings_after))
        self.executed = [model.slice_of(p, fid, plan.instant, n)
                         for (p, fid), n in sorted(self.pending_children.items()) if n]
        # what the execution reads now: each input file slice, merged with its logs
        inputs = [s for s in snap.in_partitions(sorted(plan.rings_after))
                  if s.file_id in plan.input_file_ids().get(s.partition, set())]
        self.read = (sum(s.file_count for s in inputs), sum(s.total_bytes for s in inputs))
        self.dual = {"records": 0, "files": 0, "bytes": 0.0}
        if self.index.params["pending_commits"] == 0:
            return [self.complete(batch_no)]
        return []

    def finish_table_services(self) -> list[dict[str, Any]]:
        """End of a run: complete a pending resize now (as the Spark adapter does)."""
        return [self.complete(None)] if self.pending is not None else []

    def complete(self, batch_no: int | None) -> dict[str, Any]:
        model, plan = self.model, self.pending
        before = model.snapshot
        parts = sorted(plan.rings_after)
        fill_before = partition_bucket_fill(before, parts)
        if model.merge_on_read:  # the execution's base files; the dual writes' logs
            written = self.executed  # join them as the instant completes
        else:  # the latest base file of each child: the execution's merged with dual writes
            written = [model.slice_of(p, fid, plan.instant, n)
                       for (p, fid), n in sorted(self._children_of(parts).items()) if n]
        replaced: dict[str, list[str]] = {}
        for g in plan.groups:
            replaced.setdefault(g.partition, []).extend(g.file_ids)
        extra = {RINGS_KEY: rings_metadata(plan.rings_after.values()),
                 RESIZE_KEY: json.dumps({"splits": plan.splits, "merges": plan.merges})}
        waited = sum(i > plan.instant for i in before.completed)
        model.commit(plan.instant, written, replaced, extra)
        executed = self.executed
        writes = WriteTotals(files_written=len(executed),
                             **footer_totals(executed),
                             records_written=sum(s.num_records for s in executed),
                             bytes_written=sum(s.size_bytes for s in executed))
        row = rescale_row(
            mode="resize", batch_no=batch_no, instant=plan.instant, factor=float("nan"),
            from_buckets=sum(plan.rings_before[p].num_buckets for p in parts),
            to_buckets=sum(plan.rings_after[p].num_buckets for p in parts),
            partitions_touched=len(parts), files_read=self.read[0],
            bytes_read=self.read[1], writes=writes,
            after=model.snapshot, timings={}, shuffle_bytes=0, shuffle_read_bytes=None,
            spark_jobs=None, fill_before=fill_before,
            fill_after=partition_bucket_fill(model.snapshot, parts))
        row.update(self.index.table_metrics(model.snapshot))
        row.update({"splits": plan.splits, "merges": plan.merges,
                    "resize_pending_commits": waited,
                    "dual_written_records": self.dual["records"],
                    "dual_written_files": self.dual["files"],
                    "dual_written_bytes": self.dual["bytes"]})
        self.pending = None
        self.pending_children = {}
        return row
