"""dynamic-rli cores: bucket assignment of new keys, cache lookups, bootstrap from the RLI.

Skipped (``NotImplementedError`` in setup) when ``indexes.dynamic_rli`` is not there, so
the suite runs on commits before that index landed.
"""

from __future__ import annotations

import numpy as np

from ._data import SAMPLING, int32_hashes

ASSIGNERS = 4


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
