"""Bucket hashing: Hudi's ``(List<String>.hashCode & MAX) % N`` and consistent-hashing XXH32
over whole key columns."""

from __future__ import annotations

from indexes.hashing import bucket_ids
from indexes.xxhash32 import consistent_hash

from ._data import SAMPLING, uuid_keys


class BucketHashing:
    """Cost of routing a batch to buckets (simple-bucket / multiple-rehash tagging core)."""

    rounds, repeat = SAMPLING

    params = [[10_000, 100_000, 1_000_000], [1, 2]]
    param_names = ["keys", "key_fields"]

    def setup(self, keys: int, key_fields: int) -> None:
        self.columns = [uuid_keys(keys, seed=f) for f in range(key_fields)]

    def time_bucket_ids(self, keys: int, key_fields: int) -> None:
        bucket_ids(self.columns, 256)

    def peakmem_bucket_ids(self, keys: int, key_fields: int) -> None:
        bucket_ids(self.columns, 256)


class ConsistentHashing:
    """Cost of hashing a batch for the consistent-hashing ring lookup (XXH32 & MAX)."""

    rounds, repeat = SAMPLING

    params = [[10_000, 100_000, 1_000_000]]
    param_names = ["keys"]

    def setup(self, keys: int) -> None:
        self.columns = [uuid_keys(keys)]

    def time_consistent_hash(self, keys: int) -> None:
        consistent_hash(self.columns)

    def peakmem_consistent_hash(self, keys: int) -> None:
        consistent_hash(self.columns)
