"""dynamic-rli cores: bucket assignment of new keys, cache lookups, bootstrap from the RLI.

``DynamicRliCache`` is one partition's cache at ``INDEXBENCH_ASV_CACHE_KEYS`` resident
keys (default 10,000,000, the size the index's page, ../README.md, measures the cache at;
``.ci/asv-check`` runs 500,000): lookups and new-key assignment of a tenth of that,
and bytes per key.

Skipped (``NotImplementedError`` in setup) when ``indexes.dynamic_rli`` is not there, so
the suite runs on commits before that index landed.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import numpy as np

from benchmarks._data import SAMPLING, int32_hashes

ASSIGNERS = 4
RESIDENT = int(os.environ.get("INDEXBENCH_ASV_CACHE_KEYS", "10000000"))


def _cores():
    try:
        from indexes.dynamic_rli import Capacity, PartitionIndex
    except ImportError as exc:  # the index has not landed at this commit
        raise NotImplementedError(f"indexes.dynamic_rli not available: {exc}") from None
    return Capacity, PartitionIndex


class DynamicRliAssign:
    """A batch of keys routed by one partition's assigners (new keys, then existing)."""

    rounds, repeat = SAMPLING

    params = [[10_000, 100_000, 1_000_000]]
    param_names = ["keys"]

    def setup(self, keys: int) -> None:
        Capacity, PartitionIndex = _cores()
        self.PartitionIndex = PartitionIndex
        self.cap = Capacity(max_records=max(1000, keys // 64))
        self.hashes = int32_hashes(keys)
        self.loaded = PartitionIndex(ASSIGNERS)
        self.loaded.assign(self.hashes, self.cap)

    def time_assign_new_keys(self, keys: int) -> None:
        self.PartitionIndex(ASSIGNERS).assign(self.hashes, self.cap)

    def peakmem_assign_new_keys(self, keys: int) -> None:
        self.PartitionIndex(ASSIGNERS).assign(self.hashes, self.cap)

    def time_assign_existing_keys(self, keys: int) -> None:
        self.loaded.assign(self.hashes, self.cap)


class DynamicRliBootstrap:
    """Lazy bootstrap: a partition's cache rebuilt from its RLI entries (hash, bucket)."""

    rounds, repeat = SAMPLING

    params = [[100_000, 1_000_000]]
    param_names = ["keys"]

    def setup(self, keys: int) -> None:
        _, self.PartitionIndex = _cores()
        self.hashes = int32_hashes(keys)
        self.buckets = (np.arange(keys) % 256).astype(np.int16)

    def time_bootstrap(self, keys: int) -> None:
        self.PartitionIndex.bootstrap(ASSIGNERS, self.hashes, self.buckets)

    def peakmem_bootstrap(self, keys: int) -> None:
        self.PartitionIndex.bootstrap(ASSIGNERS, self.hashes, self.buckets)

    def track_cache_bytes_per_key(self, keys: int) -> float:
        return self.PartitionIndex.bootstrap(ASSIGNERS, self.hashes, self.buckets).nbytes / keys

    track_cache_bytes_per_key.unit = "bytes/key"


def _distinct_hashes(n: int, seed: int = 0) -> np.ndarray:
    """``n`` distinct random int32 hashes, shuffled (sort + diff: np.unique is ~20x
    slower on numpy 2.4, minutes at this size)."""
    rng = np.random.default_rng(seed)
    h = np.sort(rng.integers(-(2**31), 2**31, size=int(n * 1.01) + 16, dtype=np.int64))
    h = h[np.r_[True, h[1:] != h[:-1]]]
    rng.shuffle(h)
    return h[:n].astype(np.int32)


class _ResidentCache:
    """One partition's cache holding ``RESIDENT`` keys (bootstrapped from RLI entries, 100
    buckets of equal size), built once in ``setup_cache`` and shared by the classes below."""

    def setup_cache(self) -> dict[str, Any]:
        Capacity, PartitionIndex = _cores()
        batch = max(1, RESIDENT // 10)
        h = _distinct_hashes(RESIDENT + 2 * batch)  # shuffled: any slice is a random sample
        resident = h[:RESIDENT]
        buckets = (np.arange(RESIDENT) % 100).astype(np.int16)
        return {"index": PartitionIndex.bootstrap(ASSIGNERS, resident, buckets),
                "cap": Capacity(max_records=2 * RESIDENT // 100),  # room for the new keys
                "present": resident[:batch], "absent": h[RESIDENT:RESIDENT + batch],
                "new": h[RESIDENT + batch:]}


class DynamicRliCache(_ResidentCache):
    """Lookups of ``RESIDENT / 10`` present or absent hashes, and as many new (or present)
    hashes assigned through ``PartitionIndex.assign``, on a fresh copy of the index per
    call. ``order``: of the hashes in a call; engines pass them sorted, ``random`` is the
    worst case (assign sorts new hashes)."""

    rounds, repeat = SAMPLING
    number = 1  # setup gives each sample a fresh copy: a second call would find the keys
    timeout = 600

    params = [["sorted", "random"]]
    param_names = ["order"]

    def setup(self, data: dict[str, Any], order: str) -> None:
        arrange = np.sort if order == "sorted" else np.asarray
        self.present, self.absent, self.new = (arrange(data[k])
                                               for k in ("present", "absent", "new"))
        self.map, self.cap = data["index"].map, data["cap"]
        self.fresh = copy.deepcopy(data["index"])  # assign adds keys: a copy per call

    def time_lookup_present(self, data: dict[str, Any], order: str) -> None:
        self.map.lookup(self.present)

    def time_lookup_absent(self, data: dict[str, Any], order: str) -> None:
        self.map.lookup(self.absent)

    def time_assign_new_keys(self, data: dict[str, Any], order: str) -> None:
        self.fresh.assign(self.new, self.cap)

    def time_assign_present_keys(self, data: dict[str, Any], order: str) -> None:
        self.fresh.assign(self.present, self.cap)


class DynamicRliCacheSize(_ResidentCache):
    """Bytes the resident cache's arrays hold per key (``index_mem_bytes`` / keys): as
    bootstrapped, and after ``RESIDENT / 10`` new keys (rows filled, some spilled)."""

    def setup(self, data: dict[str, Any]) -> None:
        self.index = data["index"]

    def track_cache_bytes_per_key(self, data: dict[str, Any]) -> float:
        return self.index.map.nbytes / len(self.index.map)

    track_cache_bytes_per_key.unit = "bytes/key"

    def track_cache_bytes_per_key_after_assign(self, data: dict[str, Any]) -> float:
        self.index.assign(np.sort(data["new"]), data["cap"])
        return self.index.map.nbytes / len(self.index.map)

    track_cache_bytes_per_key_after_assign.unit = "bytes/key"
