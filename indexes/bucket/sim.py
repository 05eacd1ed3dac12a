"""Slot counting for the simulator adapters of bucket indexes (no Spark).

A batch's buckets are laid out as *slots*: partition ``p`` (an index into the batch's
partitions) owns slots ``offset[p] .. offset[p+1]-1``, one per bucket (or ring node).
:class:`SlotCounts` counts the new and existing records each slot receives and hands
back the touched ones in slot order; :class:`BucketSim` is the hash-bucket adapter
(``hash(index key) % N``, the simple-bucket family) built on it.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from indexes.bucket.files import existing_bucket_files, new_bucket_file_id
from indexes.hashing import bucket_ids
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk


class SlotCounts:
    """New and existing records per (partition, bucket) slot of one batch."""

    def __init__(self, sizes) -> None:
        """``sizes``: the slots (buckets, ring nodes) of each of the batch's partitions."""
        self.offset = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))])
        self.new = np.zeros(int(self.offset[-1]), np.int64)
        self.old = np.zeros(int(self.offset[-1]), np.int64)

    def add(self, slot: np.ndarray, is_new: np.ndarray) -> None:
        """Count records by slot (``is_new``: the key did not exist before the batch)."""
        size = len(self.new)
        self.new += np.bincount(slot[is_new], minlength=size)
        self.old += np.bincount(slot[~is_new], minlength=size)

    def touched(self) -> Iterator[tuple[int, int, int, int]]:
        """(partition index, bucket within it, new, existing) of every slot that got
        records, in slot order."""
        for slot in np.flatnonzero(self.new + self.old):
            p = int(np.searchsorted(self.offset, slot, side="right") - 1)
            yield p, int(slot - self.offset[p]), int(self.new[slot]), int(self.old[slot])


class BucketSim(SimAdapter):
    """Counts records per (partition, bucket) as the Spark tasks route them."""

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        parts = batch.partitions
        counts = self.index.bucket_counts(self.model.snapshot, parts)
        self.num = np.array([counts[p] for p in parts], dtype=np.int64)
        self.slots = SlotCounts(self.num)
        self.fields = self.index.hash_fields(batch.key_field)

    def buckets(self, chunk: SimChunk) -> np.ndarray:
        """Bucket of every record of the chunk under its partition's current count."""
        cols = [self.batch.keys.column(f, chunk.ordinals) for f in self.fields]
        return bucket_ids(cols, self.num[chunk.part])

    def add(self, chunk: SimChunk) -> None:
        slot = self.slots.offset[chunk.part] + self.buckets(chunk)
        self.counts["keys_hashed"] += len(slot)
        self.slots.add(slot, chunk.is_new)

    def finish(self) -> GroupWrites:
        parts = self.batch.partitions
        existing = existing_bucket_files(self.model.snapshot.in_partitions(parts))
        out = GroupWrites()
        for p, b, new, old in self.slots.touched():
            fid = existing.get((parts[p], b)) or new_bucket_file_id(self.batch.instant,
                                                                    parts[p], b)
            out.add(parts[p], fid, b, new, old)
        return out


__all__ = ["BucketSim", "SlotCounts"]
