"""Bucket assigners of one data partition: fill non-full buckets, create a bucket only
when every bucket of the key's assigner is full. Spark-free and deterministic, so a
restart that bootstraps the same RLI routes the same keys to the same buckets.

P assigners share a partition's bucket-id space without talking to each other: a key
belongs to assigner ``(hash & 0x7fffffff) % P`` and assigner ``a`` owns bucket ids
``a, a+P, a+2P, ...`` (Paimon's dynamic bucket mode splits ids the same way), so two
assigners can never create the same bucket id. The initial bucket count is P: the first
bucket each assigner opens is its own id ``a``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from indexes.dynamic_rli.cache import HashBucketMap, hash_order
from tableformat.errors import IndexBenchError

MAX_BUCKETS = 32768  # bucket ids are int16 in the cache (as Paimon's Int2ShortHashMap)
RECORDS, BYTES = "records", "bytes"
ROUTE_BLOCK = 1 << 16  # keys per stable sort by owner (radix for uint8; stays in cache)


@dataclass(frozen=True)
class Capacity:
    """When a bucket is full: by keys it holds, or by bytes of its latest base file."""

    mode: str = RECORDS
    max_records: int = 100_000
    max_bytes: int = 128 * 1024 * 1024
    record_bytes: float = 1024.0  # bytes-mode estimate per record before any stats exist

    def __post_init__(self) -> None:
        if self.mode not in (RECORDS, BYTES):
            raise IndexBenchError(f"capacity mode must be {RECORDS!r} or {BYTES!r}, "
                                  f"not {self.mode!r}")
        if self.max_records < 1 or self.max_bytes < 1 or self.record_bytes <= 0:
            raise IndexBenchError("bucket capacity must be positive")


def assigner_of(hashes: np.ndarray, num_assigners: int) -> np.ndarray:
    """The assigner that owns each key hash."""
    h = np.asarray(hashes, dtype=np.int32).view(np.uint32)
    small = np.uint8 if num_assigners <= 256 else np.int32  # 1 byte per key when it fits
    if num_assigners & (num_assigners - 1) == 0:  # a power of two: the low bits, no division
        return (h & np.uint32(num_assigners - 1)).astype(small)
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_assigners)).astype(small)


def count_values(values: np.ndarray, minlength: int,
                 weights: np.ndarray | None = None) -> np.ndarray:
    """``np.bincount`` of small non-negative ints (optionally weighted by integer counts),
    in blocks: bincount widens its input to intp and weights to float64, so a whole
    billion-entry array would cost 8 bytes per entry at once. Returns int64 counts."""
    out = np.zeros(minlength, np.int64)
    for lo in range(0, len(values), 1 << 24):
        w = None if weights is None else weights[lo:lo + (1 << 24)]
        c = np.bincount(values[lo:lo + (1 << 24)], weights=w, minlength=minlength)
        c = np.rint(c).astype(np.int64) if w is not None else c
        if len(c) > len(out):
            out = np.concatenate([out, np.zeros(len(c) - len(out), np.int64)])
        out[:len(c)] += c
    return out


def _ascending(values: np.ndarray) -> bool:
    """Strictly increasing (unique and sorted): the order assignment needs, no sort."""
    return bool(len(values) < 2 or (values[1:] > values[:-1]).all())


@dataclass
class PartitionIndex:
    """One partition's cache plus what its assigners and the eviction flow need."""

    num_assigners: int
    map: HashBucketMap = field(default_factory=HashBucketMap)
    keys_per_bucket: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    collisions: int = 0  # entries whose hash an earlier key of the partition already had
    # eviction flags (the design's `updated` and `lastUpdatedCheckpoint`)
    updated: bool = False
    last_updated_checkpoint: str | None = None
    accessed: bool = False

    @classmethod
    def bootstrap(cls, num_assigners: int, hashes: np.ndarray, buckets: np.ndarray
                  ) -> PartitionIndex:
        """Rebuild from RLI entries: hash map, keys per bucket, collisions."""
        m, dup = HashBucketMap.from_entries(hashes, buckets)
        b = np.asarray(buckets, dtype=np.int64)
        counts = np.bincount(b, minlength=0).astype(np.int64) if len(b) else np.zeros(0, np.int64)
        return cls(num_assigners, m, counts, dup)

    @property
    def nbytes(self) -> int:
        return self.map.nbytes + int(self.keys_per_bucket.nbytes)

    def buckets(self) -> np.ndarray:
        """Ids of buckets that hold at least one key."""
        return np.flatnonzero(self.keys_per_bucket > 0)

    def _grow(self, n: int) -> None:
        if n > len(self.keys_per_bucket):
            grown = np.zeros(n, np.int64)
            grown[:len(self.keys_per_bucket)] = self.keys_per_bucket
            self.keys_per_bucket = grown

    def add_keys(self, bucket: int, keys: int, collisions: int) -> None:
        """Keys of ``bucket`` that ``assign`` did not count: further keys of a hash it
        saw (a 32-bit collision), each also counted as a collision."""
        self.collisions += collisions
        if keys > 0:
            self._grow(bucket + 1)
            self.keys_per_bucket[bucket] += keys

    def remaining(self, buckets: np.ndarray, cap: Capacity, file_bytes: dict[int, int],
                  record_bytes: float) -> np.ndarray:
        """Keys each bucket can still take before it is full."""
        if cap.mode == RECORDS:
            return np.maximum(cap.max_records - self.keys_per_bucket[buckets], 0)
        size = np.array([file_bytes.get(int(b), 0) for b in buckets], dtype=np.float64)
        return np.maximum(np.floor((cap.max_bytes - size) / record_bytes), 0).astype(np.int64)

    def assign(self, hashes: np.ndarray, cap: Capacity, file_bytes: dict[int, int] | None = None,
               record_bytes: float | None = None) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Bucket of each (unique) hash; new hashes are added to the cache.

        Returns (bucket per hash, mask of the hashes that were new, bucket ids created).
        ``file_bytes``: committed size of each bucket's latest base file (bytes mode).
        """
        self.accessed = True
        h = np.asarray(hashes, dtype=np.int32)
        out = self.map.lookup(h)
        new_mask = out < 0
        n_new = int(np.count_nonzero(new_mask))
        if not n_new:
            return out, new_mask, []
        file_bytes = file_bytes or {}
        rb = float(record_bytes or cap.record_bytes)
        # new hashes in hash order (deterministic; engines pass them sorted), no index arrays:
        # a billion-key bulk load keeps 2-byte buckets and 1-byte owners, nothing per key wider
        hn = h if n_new == len(h) else h[new_mask]  # a bulk load: the caller's array, no copy
        order = None if _ascending(hn) else hash_order(hn)
        if order is not None:
            hn = hn.take(order)
        owner = assigner_of(hn, self.num_assigners)
        per_block = [np.bincount(owner[lo:lo + ROUTE_BLOCK], minlength=self.num_assigners)
                     for lo in range(0, len(owner), ROUTE_BLOCK)]
        per_owner = np.sum(per_block, axis=0)
        ids, counts, created = self._plan(per_owner, cap, file_bytes, rb)
        bn = _route(owner, per_block, per_owner, np.repeat(ids.astype(np.int16), counts))
        del owner
        if order is None and n_new == len(h):
            out[:] = bn  # a copy: the map may keep ``bn`` as its own array
        elif order is None:
            out[new_mask] = bn
        else:
            back = np.empty_like(bn)
            back[order] = bn
            out[new_mask] = back
        self._grow(int(ids.max()) + 1)
        self.keys_per_bucket[ids] += counts  # ids are distinct: one entry per bucket
        self.map.insert(hn, bn)
        self.updated = True
        return out, new_mask, sorted(created)

    def _plan(self, per_owner: np.ndarray, cap: Capacity, file_bytes: dict[int, int],
              rb: float) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Which buckets take how many of each assigner's new keys, assigners in order,
        each one's buckets in the order its keys (in hash order) fill them: its existing
        buckets by id, then new ids ``a, a+P, ...`` that are free. Returns (bucket ids,
        keys each takes, ids created)."""
        P = self.num_assigners
        existing = self.buckets()
        ids: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        created: list[int] = []
        for a in np.flatnonzero(per_owner):
            k = int(per_owner[a])
            own = existing[existing % P == a]  # ascending ids: existing buckets first
            rem = self.remaining(own, cap, file_bytes, rb) if len(own) else np.zeros(0, np.int64)
            cum = np.cumsum(rem)
            take = int(min(k, cum[-1])) if len(cum) else 0
            if take:  # fill the buckets in id order: bucket j takes its next rem[j] keys
                last = int(np.searchsorted(cum, take, side="left"))
                fill = rem[:last + 1].copy()
                fill[-1] -= int(cum[last]) - take
                ids.append(own[:last + 1])
                counts.append(fill)
            left = k - take
            if left:
                per_new = cap.max_records if cap.mode == RECORDS else max(
                    1, int(cap.max_bytes // rb))
                need = -(-left // per_new)
                taken = set(own.tolist())
                new_ids, j = [], 0
                while len(new_ids) < need:
                    b = int(a) + j * P
                    if b >= MAX_BUCKETS:
                        raise IndexBenchError(
                            f"assigner {a} has no free bucket id below {MAX_BUCKETS}; raise the "
                            "bucket capacity (max records / max file bytes)")
                    if b not in taken:
                        new_ids.append(b)
                    j += 1
                n = np.full(need, per_new, np.int64)
                n[-1] = left - per_new * (need - 1)
                ids.append(np.array(new_ids, np.int64))
                counts.append(n)
                created += new_ids
        return (np.concatenate(ids).astype(np.int64), np.concatenate(counts).astype(np.int64),
                created)


def _route(owner: np.ndarray, per_block: list[np.ndarray], per_owner: np.ndarray,
           planned: np.ndarray) -> np.ndarray:
    """Bucket of each new key (in hash order), from ``planned``: every assigner's buckets
    one after another, each repeated for the keys it takes. A stable sort by owner lists
    the keys in exactly that order, so ``bucket[sorted order] = planned``; done in blocks
    of ``ROUTE_BLOCK`` keys (``per_block``: each block's keys per assigner; a sort's
    indices are 8 bytes a key) carrying each assigner's position in the plan. One sort
    for any number of assigners instead of a mask per assigner."""
    if np.count_nonzero(per_owner) == 1:  # one assigner (P = 1): the plan is the answer
        return planned
    out = np.empty(len(owner), np.int16)
    at = np.cumsum(per_owner) - per_owner  # next plan position of each assigner
    for lo, n in zip(range(0, len(owner), ROUTE_BLOCK), per_block, strict=True):
        ob = owner[lo:lo + ROUTE_BLOCK]
        sorted_at = np.repeat(at - (np.cumsum(n) - n), n)  # plan position - sorted position
        sorted_at += np.arange(len(ob))
        out[lo:lo + len(ob)][np.argsort(ob, kind="stable")] = planned[sorted_at]
        at += n
    return out
