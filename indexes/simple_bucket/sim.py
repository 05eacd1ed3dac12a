"""simple-bucket in the simulator: the same hash and file-group naming as on Spark.

Routing needs the index key of every record (hashed in numpy by :mod:`indexes.hashing`,
Hudi's Java hash), nothing of the table but its file names: per (partition, bucket) the
adapter counts new and existing keys; every touched bucket's file group is rewritten.
"""

from __future__ import annotations

import numpy as np

from indexes.hashing import bucket_ids
from indexes.simple_bucket.core import existing_bucket_files, new_bucket_file_id
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk


class SimpleBucketSim(SimAdapter):
    """Counts records per (partition, bucket) as the Spark tasks route them."""

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        parts = batch.partitions
        counts = self.index.bucket_counts(self.model.snapshot, parts)
        self.num = np.array([counts[p] for p in parts], dtype=np.int64)
        self.offset = np.concatenate([[0], np.cumsum(self.num)])  # (part, bucket) -> slot
        self.new = np.zeros(int(self.offset[-1]), np.int64)
        self.old = np.zeros(int(self.offset[-1]), np.int64)
        self.fields = self.index.hash_fields(batch.key_field)

    def buckets(self, chunk: SimChunk) -> np.ndarray:
        """Bucket of every record of the chunk under its partition's current count."""
        cols = [self.batch.keys.column(f, chunk.ordinals) for f in self.fields]
        return bucket_ids(cols, self.num[chunk.part])

    def add(self, chunk: SimChunk) -> None:
        slot = self.offset[chunk.part] + self.buckets(chunk)
        self.counts["keys_hashed"] += len(slot)
        size = len(self.new)
        self.new += np.bincount(slot[chunk.is_new], minlength=size)
        self.old += np.bincount(slot[~chunk.is_new], minlength=size)

    def finish(self) -> GroupWrites:
        parts = self.batch.partitions
        existing = existing_bucket_files(self.model.snapshot.in_partitions(parts))
        out = GroupWrites()
        for slot in np.flatnonzero(self.new + self.old):
            p = int(np.searchsorted(self.offset, slot, side="right") - 1)
            b = int(slot - self.offset[p])
            fid = existing.get((parts[p], b)) or new_bucket_file_id(self.batch.instant,
                                                                    parts[p], b)
            out.add(parts[p], fid, b, self.new[slot], self.old[slot])
        return out
