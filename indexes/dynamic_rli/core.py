"""dynamic-rli core: one writer's routing state and its checkpoint flow, over arrays.

Both engines drive this object the same way per batch:
``begin`` → per touched partition ``route`` (lazy bootstrap from the RLI through a
loader the engine supplies, then the assigners) → the engine writes data and the RLI
entries of new keys → ``record_rli_entries`` → ``checkpoint`` (eviction) or ``fail``.
The Spark adapter hashes keys in the JVM and writes RLI files; the simulator hashes
with the same function in numpy and keeps its RLI in memory. Counters are the work this
object did (keys bootstrapped, buckets created, evictions …), never a formula.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from indexes.dynamic_rli.assigner import Capacity, count_values
from indexes.dynamic_rli.eviction import PartitionCaches
from indexes.dynamic_rli.shares import PartitionShares
from tableformat.basefile import bucket_of_file_id
from tableformat.errors import TableConfigError

BATCH_COUNTERS = ("keys_bootstrapped", "bootstrap_s", "rli_files_read", "rli_bytes_read",
                  "partitions_bootstrapped", "evictions", "buckets_created", "hash_collisions",
                  "rli_entries_written")

# what a bootstrap loader returns: key hashes, buckets, RLI files read, RLI bytes read
RliEntries = tuple[np.ndarray, np.ndarray, int, int]


def capacity_of(params: dict[str, Any]) -> Capacity:
    """The bucket capacity the index's parameters define."""
    return Capacity(params["capacity_mode"], params["max_records"], params["max_file_bytes"],
                    float(params["record_size_estimate"]))


def member(sorted_values: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``q`` in ``sorted_values`` and whether each is present."""
    if len(sorted_values) == 0:
        return np.zeros(len(q), np.int64), np.zeros(len(q), bool)
    pos = np.minimum(np.searchsorted(sorted_values, q), len(sorted_values) - 1)
    return pos, sorted_values[pos] == q


def bucket_file_sizes(slices: Iterable[Any]) -> tuple[dict[int, int], float | None]:
    """Committed size of each bucket's latest base file, and bytes per record (bytes
    capacity mode), from the partition's file slices."""
    slices = list(slices)
    file_bytes = {bucket_of_file_id(s.file_id): s.size_bytes for s in slices}
    recs = sum(s.num_records for s in slices)
    return file_bytes, (sum(s.size_bytes for s in slices) / recs if recs else None)


class DynamicRliCore:
    """The per-partition ``hash -> bucket`` caches of one long-lived writer."""

    def __init__(self, params: dict[str, Any]):
        self.params = params
        self.caches = PartitionCaches(keep_accessed=params["keep_accessed"])
        self.num_assigners: int | None = None
        self.pending: str | None = None  # checkpoint routed but not yet completed
        self.new: dict[str, np.ndarray] = {}  # partition -> new key hashes (sorted)
        self.new_buckets: dict[str, np.ndarray] = {}  # partition -> their buckets
        self.batch: dict[str, float] = dict.fromkeys(BATCH_COUNTERS, 0)
        self.totals: dict[str, float] = dict.fromkeys(BATCH_COUNTERS, 0)

    def capacity(self) -> Capacity:
        return capacity_of(self.params)

    def count(self, **values: float) -> None:
        for k, v in values.items():
            self.batch[k] += v
            self.totals[k] += v

    def resolve_assigners(self, recorded: int | None, default_parallelism: int) -> int:
        """P: the table's recorded value, else the parameter, else the engine's parallelism."""
        if self.num_assigners is None:
            want = self.params["num_assigners"]
            if recorded and want and want != recorded:
                raise TableConfigError(f"the table's buckets were assigned by {recorded} "
                                       f"assigners; num.assigners cannot become {want}")
            self.num_assigners = recorded or want or default_parallelism
        return self.num_assigners

    # ---- one batch --------------------------------------------------------------
    def begin(self, instant: str, latest_successful: Callable[[], str | None]) -> None:
        """Start routing a checkpoint; a previous one that never completed failed."""
        if self.pending is not None:
            self.fail(latest_successful())
        self.batch = dict.fromkeys(BATCH_COUNTERS, 0)
        self.pending = instant
        self.new, self.new_buckets = {}, {}

    def partition_index(self, partition: str, load: Callable[[], RliEntries]
                        ) -> PartitionShares:
        """The partition's cache (its P shares), bootstrapped from its RLI on first
        touch (lazy)."""
        if partition in self.caches:
            return self.caches[partition]
        t0 = time.perf_counter()
        hashes, buckets, files_read, bytes_read = load()
        pidx = PartitionShares.bootstrap(self.num_assigners, hashes, buckets)
        self.caches[partition] = pidx
        self.count(keys_bootstrapped=len(hashes), rli_files_read=files_read,
                   rli_bytes_read=bytes_read, partitions_bootstrapped=1,
                   bootstrap_s=time.perf_counter() - t0)
        return pidx

    def route(self, partition: str, hashes: np.ndarray, load: Callable[[], RliEntries],
              file_bytes: dict[int, int], per_record: float | None
              ) -> tuple[np.ndarray, np.ndarray]:
        """Bucket of each unique sorted key hash of the partition, and which were new."""
        pidx = self.partition_index(partition, load)
        buckets, new_mask, created = pidx.assign(hashes, self.capacity(), file_bytes,
                                                 per_record)
        self.new[partition] = hashes[new_mask]
        self.new_buckets[partition] = buckets[new_mask]
        self.count(buckets_created=len(created))
        return buckets, new_mask

    def locate(self, partition: str, hashes: np.ndarray, load: Callable[[], RliEntries]
               ) -> np.ndarray:
        """Bucket of each key hash the partition's index holds, -1 for one it does not;
        assigns nothing (a delete never creates a key)."""
        pidx = self.partition_index(partition, load)
        pidx.accessed = True
        return pidx.lookup(np.asarray(hashes, dtype=np.int32))

    def record_rli_entries(self, partition: str, entries: int, per_bucket: dict[int, int],
                           distinct_hashes: int | None = None) -> None:
        """RLI entries written for ``partition``'s new keys, per bucket.

        ``distinct_hashes``: how many distinct hashes the entries had (they were the new
        hashes ``route`` saw); ``None`` for entries of new keys whose hash an existing key
        already had (a collision: the cache saw a hit, so ``route`` counted nothing).
        Two keys sharing a hash are two keys of their bucket: the bucket counts follow.
        """
        if distinct_hashes is None:
            collisions, counted = entries, np.zeros(0, np.int64)
        else:
            collisions = entries - distinct_hashes
            nb = self.new_buckets.get(partition, np.empty(0, np.int16))
            counted = count_values(nb, 0)  # keys per bucket id (np.unique: ~7x slower)
        if partition in self.caches:
            pidx = self.caches[partition]
            for b, n in per_bucket.items():
                if distinct_hashes is None:  # every entry collided with an existing key
                    pidx.add_entries(int(b), n, n)
                    continue
                extra = n - (int(counted[int(b)]) if int(b) < len(counted) else 0)
                if extra > 0:
                    pidx.add_entries(int(b), extra, extra)
        self.count(hash_collisions=collisions, rli_entries_written=entries)

    def release(self, partition: str) -> None:
        """The engine wrote the partition's RLI entries: drop the batch's copy of its new
        hashes (6 bytes per new key; a billion-key load would hold them twice)."""
        self.new.pop(partition, None)
        self.new_buckets.pop(partition, None)

    def checkpoint(self, instant: str, latest_successful: str | None) -> list[str]:
        """The design's snapshot flow at a checkpoint: evict idle partitions."""
        evicted = self.caches.snapshot(instant, latest_successful)
        self.count(evictions=len(evicted))
        return evicted

    def complete(self) -> None:
        """The checkpoint's commit completed."""
        self.pending = None

    def fail(self, latest_successful: str | None) -> None:
        """The checkpoint failed: drop caches holding mappings the RLI never got, so they
        re-bootstrap from committed entries (a failover's restore)."""
        self.pending = None
        self.caches.invalidate_uncommitted(latest_successful)

    def cache_metrics(self) -> dict[str, float]:
        """What the caches hold now and what this batch did."""
        return {
            "index_mem_bytes": self.caches.nbytes,
            "resident_partitions": len(self.caches),
            "resident_keys": self.caches.keys(),
            "resident_collisions": sum(self.caches[p].collisions for p in self.caches),
            "num_assigners": self.num_assigners or 0,
            **{k: self.batch[k] for k in BATCH_COUNTERS},
            "buckets_created_total": self.totals["buckets_created"],
            "evictions_total": self.totals["evictions"],
        }
