"""The per-partition ``key hash (int32) -> bucket (int16)`` cache, in compact numpy arrays.

Why sorted arrays and not a hash table: a sorted ``int32`` key array plus an ``int16``
value array costs exactly 6 bytes per key with no load-factor slack, lookups are one
vectorized ``searchsorted`` over a whole batch, and a bootstrap from the RLI is one sort.
New keys go to a small sorted *delta*; the delta is merged into the base (one linear
``np.insert``) when it exceeds 1/16 of the base, so steady state stays under ~6.4 B/key.
"""

from __future__ import annotations

import numpy as np

MISS = np.int16(-1)
MIN_DELTA = 4096  # keys the delta may hold before it is merged, whatever the base size
DELTA_SHIFT = 4  # merge when len(delta) > len(base) >> DELTA_SHIFT (1/16)


def _find(keys: np.ndarray, vals: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out[i]`` with the value of ``q[i]`` where ``q[i]`` is in sorted ``keys``."""
    if len(keys) == 0 or len(q) == 0:
        return
    pos = np.searchsorted(keys, q)
    np.minimum(pos, len(keys) - 1, out=pos)
    hit = keys[pos] == q
    out[hit] = vals[pos[hit]]


class HashBucketMap:
    """Sorted-array map from 32-bit key hash to 16-bit bucket id (no Python objects per key)."""

    __slots__ = ("_keys", "_vals", "_dkeys", "_dvals")

    def __init__(self) -> None:
        self._keys = np.empty(0, np.int32)
        self._vals = np.empty(0, np.int16)
        self._dkeys = np.empty(0, np.int32)
        self._dvals = np.empty(0, np.int16)

    @classmethod
    def from_entries(cls, hashes: np.ndarray, buckets: np.ndarray) -> tuple[HashBucketMap, int]:
        """Build from RLI entries; returns the map and how many entries repeated a hash
        (two keys sharing a 32-bit hash share the first one's bucket: the design's choice)."""
        h = np.asarray(hashes, dtype=np.int32)
        b = np.asarray(buckets, dtype=np.int16)
        order = np.argsort(h, kind="stable")
        hs, bs = h[order], b[order]
        keep = np.ones(len(hs), dtype=bool)
        if len(hs) > 1:
            keep[1:] = hs[1:] != hs[:-1]
        m = cls()
        m._keys = np.ascontiguousarray(hs[keep])
        m._vals = np.ascontiguousarray(bs[keep])
        return m, int(len(hs) - keep.sum())

    def __len__(self) -> int:
        return len(self._keys) + len(self._dkeys)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (what ``index_mem_bytes`` reports)."""
        return int(self._keys.nbytes + self._vals.nbytes + self._dkeys.nbytes
                   + self._dvals.nbytes)

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of every hash, ``-1`` where the hash is not in the map."""
        q = np.asarray(hashes, dtype=np.int32)
        out = np.full(len(q), MISS, dtype=np.int16)
        _find(self._keys, self._vals, q, out)
        if len(self._dkeys):
            miss = out < 0
            if miss.any():
                sub = out[miss]
                _find(self._dkeys, self._dvals, q[miss], sub)
                out[miss] = sub
        return out

    def insert(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Add new hashes (unique, absent from the map); existing entries never change."""
        h = np.asarray(hashes, dtype=np.int32)
        if len(h) == 0:
            return
        b = np.asarray(buckets, dtype=np.int16)
        if len(h) > 1 and not (h[1:] > h[:-1]).all():
            order = np.argsort(h, kind="stable")
            h, b = h[order], b[order]
        if not len(self._keys) and not len(self._dkeys):  # empty (a bulk load): h is the map
            self._keys, self._vals = np.ascontiguousarray(h), np.ascontiguousarray(b)
            return
        pos = np.searchsorted(self._dkeys, h)
        self._dkeys = np.insert(self._dkeys, pos, h)
        self._dvals = np.insert(self._dvals, pos, b)
        if len(self._dkeys) > max(MIN_DELTA, len(self._keys) >> DELTA_SHIFT):
            self.compact()

    def compact(self) -> None:
        """Merge the delta into the base (linear; transiently base + delta extra)."""
        if not len(self._dkeys):
            return
        pos = np.searchsorted(self._keys, self._dkeys)
        self._keys = np.insert(self._keys, pos, self._dkeys)
        self._vals = np.insert(self._vals, pos, self._dvals)
        self._dkeys = np.empty(0, np.int32)
        self._dvals = np.empty(0, np.int16)

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """All (hash, bucket) pairs sorted by hash (tests, restart comparisons)."""
        if not len(self._dkeys):
            return self._keys.copy(), self._vals.copy()
        pos = np.searchsorted(self._keys, self._dkeys)
        return (np.insert(self._keys, pos, self._dkeys), np.insert(self._vals, pos, self._dvals))
