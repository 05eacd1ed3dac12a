"""extendible-hash in the simulator: the same directories, plans and hash as on Spark.

Routing hashes every record's index key (Hudi's Java hash, :mod:`indexes.hashing`) and
looks its partition's committed directory up; slots are the directory's bucket ids
(:class:`indexes.bucket.sim.BucketSim`'s counting). After a commit the split service
plans with the same core (:func:`~indexes.extendible_hash.core.plan_split`, over the
model's file slices) and repeats, one model replacecommit per split, until nothing is
over capacity. A split's children are counted exactly: the records of the buckets over
capacity are regenerated once per round from their ordinals (keys are pure functions
of them) and only their hashes kept; a child's records are a subset of its parent's,
so a child that splits again in the same round needs no second pass. Bytes are
modelled (records × the model's record size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.bucket.files import new_bucket_file_id, partition_bucket_fill
from indexes.bucket.sim import BucketSim, SlotCounts
from indexes.extendible_hash.core import (
    SplitPlan,
    masked_hash,
    split_children,
    split_figures,
    split_metadata,
)
from indexes.simulation import SimAdapter, SimBatch, SimChunk
from tableformat.basefile import bucket_of_file_id
from tableformat.rows import WriteTotals, service_row

KEY_SHIFT = 27  # (partition, bucket) packed in one int64: bucket ids are below 2^26


class ExtendibleHashSim(BucketSim):
    """Counts records per (partition, bucket) as the Spark tasks route them, and splits
    buckets after commits."""

    def begin(self, batch: SimBatch) -> None:
        SimAdapter.begin(self, batch)
        parts = batch.partitions
        self.router = self.index.router(self.model.snapshot, parts)
        self.at = np.array([self.router.partitions.index(p) for p in parts], dtype=np.int64)
        self.num = self.router.sizes(parts)
        self.slots = SlotCounts(self.num)
        self.fields = self.index.hash_fields(batch.key_field)

    def buckets(self, chunk: SimChunk) -> np.ndarray:
        """Bucket of every record of the chunk under its partition's directory."""
        h = masked_hash([self.batch.keys.column(f, chunk.ordinals) for f in self.fields])
        return self.router.route_codes(h, self.at[chunk.part])

    # ---- the split service ---------------------------------------------------------
    def table_services(self, batch_no: int) -> list[dict[str, Any]]:
        service = self.index.SERVICES[0]
        rows: list[dict[str, Any]] = []
        held: dict[tuple[str, int], np.ndarray] | None = None
        while (plan := self.index.plan_service(service, None, self.model.snapshot, {})) \
                is not None:
            key = (plan.partition, plan.bucket)
            if held is None or key not in held:
                held = self._hashes_over_capacity(key)
            rows.append(self._split(plan, held, batch_no))
        return rows

    def _hashes_over_capacity(self, also: tuple[str, int]) -> dict[tuple[str, int], np.ndarray]:
        """Masked hashes of the records of every bucket over capacity (and ``also``),
        from one pass over their partitions' records."""
        snap, capacity = self.model.snapshot, self.index.capacity()
        wanted = {(s.partition, bucket_of_file_id(s.file_id))
                  for s in snap.slices.values() if capacity.over(s)} | {also}
        parts = sorted({p for p, _ in wanted})
        router = self.index.router(snap, parts)
        keys = np.array(sorted((router.partitions.index(p) << KEY_SHIFT) + b
                               for p, b in wanted), dtype=np.int64)
        names = self.batch.partitions
        at = np.array([router.partitions.index(p) if p in router.partitions else -1
                       for p in names], dtype=np.int64)
        found: dict[int, list[np.ndarray]] = {}
        for chunk in self.batch.existing(parts):
            h = masked_hash([self.batch.keys.column(f, chunk.ordinals) for f in self.fields])
            codes = at[chunk.part]
            packed = (codes << KEY_SHIFT) + router.route_codes(h, codes)
            keep = np.isin(packed, keys)
            packed, h = packed[keep], h[keep]
            order = np.argsort(packed, kind="stable")
            packed, h = packed[order], h[order]
            cuts = np.flatnonzero(np.diff(packed)) + 1
            for part in np.split(np.arange(len(packed)), cuts):
                if len(part):
                    found.setdefault(int(packed[part[0]]), []).append(h[part])
        return {(router.partitions[int(k) >> KEY_SHIFT], int(k) & ((1 << KEY_SHIFT) - 1)):
                np.concatenate(found.get(int(k), [np.empty(0, np.int64)])) for k in keys}

    def _split(self, plan: SplitPlan, held: dict[tuple[str, int], np.ndarray],
               batch_no: int) -> dict[str, Any]:
        """One split as a model replacecommit, and its row (the runner's columns)."""
        model, before = self.model, self.model.snapshot
        p, b, s = plan.partition, plan.bucket, plan.slices[0]
        h = held.pop((p, b))
        moves = split_children(h, b, plan.local_depth)
        moved = int(moves.sum())
        fill_before = partition_bucket_fill(before, [p])
        instant = model.new_instant()
        written = [model.slice_of(p, new_bucket_file_id(instant, p, child), instant, n)
                   for child, n in ((b, len(h) - moved), (plan.new_bucket, moved)) if n]
        model.commit(instant, written, {p: [s.file_id]},
                     split_metadata(plan, plan.after.at(instant), moved, before.schema))
        held[(p, b)], held[(p, plan.new_bucket)] = h[~moves], h[moves]
        writes = WriteTotals(files_written=len(written),
                             records_written=sum(w.num_records for w in written),
                             bytes_written=sum(w.size_bytes for w in written))
        row = service_row(
            operation=self.index.SERVICES[0].operation, batch_no=batch_no, instant=instant,
            figures=split_figures(plan, moved, fill_before), files_read=s.file_count,
            bytes_read=s.total_bytes, writes=writes, after=model.snapshot, timings={},
            shuffle_bytes=0, shuffle_read_bytes=None, spark_jobs=None)
        row.update({f"rescaled_{k}_after": v
                    for k, v in partition_bucket_fill(model.snapshot, [p]).items()})
        row.update(self.index.table_metrics(model.snapshot))
        return row


__all__ = ["ExtendibleHashSim"]
