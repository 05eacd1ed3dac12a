"""One data partition's cache as P independent shares, one per bucket assigner.

A key belongs to assigner ``assigner_of(hash, P)`` and assigner ``a`` owns bucket ids
``a, a+P, ...`` (:mod:`~indexes.dynamic_rli.assigner`), so share ``a`` — a
:class:`~indexes.dynamic_rli.assigner.PartitionIndex` holding only assigner ``a``'s keys
and buckets — assigns exactly what the whole partition's index would assign to them.
Both engines keep this layout: the Spark adapter holds each share in the executor task
of its assigner (:mod:`~indexes.dynamic_rli.executor`), the simulator holds all P here,
so the logical figures (``index_mem_bytes`` = the shares' bytes, keys, collisions) are
the same numbers in both.
"""

from __future__ import annotations

import numpy as np

from indexes.dynamic_rli.assigner import Capacity, PartitionIndex, assigner_of


def owners(hashes: np.ndarray, num_assigners: int) -> np.ndarray | None:
    """The assigner of each hash (1 byte each while P <= 256), None for one assigner.
    Callers then take one boolean mask per assigner at a time: no int64 positions, so a
    billion-key bulk load in the simulator adds ~2 bytes per key, not 12."""
    return None if num_assigners == 1 else assigner_of(hashes, num_assigners)


class PartitionShares:
    """A partition's P shares plus the eviction flow's partition-level flags."""

    def __init__(self, num_assigners: int, shares: list[PartitionIndex] | None = None):
        self.num_assigners = num_assigners
        self.shares = shares or [PartitionIndex(num_assigners) for _ in range(num_assigners)]
        # eviction flags (the design's `updated` and `lastUpdatedCheckpoint`)
        self.updated = False
        self.last_updated_checkpoint: str | None = None
        self.accessed = False

    @classmethod
    def bootstrap(cls, num_assigners: int, hashes: np.ndarray, buckets: np.ndarray
                  ) -> PartitionShares:
        """Rebuild every share from the partition's RLI entries."""
        h = np.asarray(hashes, np.int32)
        b = np.asarray(buckets, np.int16)
        owner = owners(h, num_assigners)
        if owner is None:
            return cls(1, [PartitionIndex.bootstrap(1, h, b)])
        shares = []
        for a in range(num_assigners):
            mask = owner == a
            shares.append(PartitionIndex.bootstrap(num_assigners, h[mask], b[mask]))
        return cls(num_assigners, shares)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.shares)

    @property
    def num_keys(self) -> int:
        return sum(len(s.map) for s in self.shares)

    @property
    def collisions(self) -> int:
        return sum(s.collisions for s in self.shares)

    def assign(self, hashes: np.ndarray, cap: Capacity, file_bytes: dict[int, int] | None = None,
               record_bytes: float | None = None) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Each share assigns its own keys (in hash order); same result as one index."""
        self.accessed = True
        h = np.asarray(hashes, np.int32)
        owner = owners(h, self.num_assigners)
        if owner is None:
            out, new_mask, created = self.shares[0].assign(h, cap, file_bytes, record_bytes)
        else:
            out = np.empty(len(h), np.int16)
            new_mask = np.zeros(len(h), bool)
            created = []
            for a, share in enumerate(self.shares):
                mask = owner == a
                if mask.any():
                    o, n, c = share.assign(h[mask], cap, file_bytes, record_bytes)
                    out[mask], new_mask[mask] = o, n
                    created += c
                    del o, n
        self.updated |= bool(new_mask.any())
        return out, new_mask, sorted(created)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of each hash, -1 where no share holds it."""
        h = np.asarray(hashes, np.int32)
        owner = owners(h, self.num_assigners)
        if owner is None:
            return self.shares[0].map.lookup(h)
        out = np.full(len(h), -1, np.int16)
        for a, share in enumerate(self.shares):
            mask = owner == a
            if mask.any():
                out[mask] = share.map.lookup(h[mask])
        return out

    def add_entries(self, bucket: int, keys: int, collisions: int) -> None:
        """Keys of ``bucket`` the assign step did not count (several keys of one hash)."""
        self.shares[bucket % self.num_assigners].add_keys(bucket, keys, collisions)
