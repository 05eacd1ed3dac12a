"""Bucket hashing: Hudi's ``(List<String>.hashCode & MAX) % N``, consistent-hashing XXH32
and Hudi's MD5 insert draw over whole key columns."""

from __future__ import annotations

from indexes.hashing import bucket_ids
from indexes.md5_hash import hudi_insert_hash
from indexes.xxhash32 import consistent_hash
from writeclient.sizing import InsertPlan

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


class InsertDraw:
    """Cost of Hudi's insert draw over a batch of new keys (the insert planner's task in
    the driver and the bloom / external-kv simulators): MD5 of each key, vectorized, then
    the binary search in the buckets' cumulative weights."""

    rounds, repeat = SAMPLING

    params = [[10_000, 100_000, 1_000_000]]
    param_names = ["keys"]

    def setup(self, keys: int) -> None:
        self.keys = uuid_keys(keys)
        self.plan = InsertPlan(file_ids=[f"g{b}" for b in range(8)],
                               counts=[keys // 8] * 7 + [keys - 7 * (keys // 8)])

    def time_md5(self, keys: int) -> None:
        hudi_insert_hash(self.keys)

    def time_draw(self, keys: int) -> None:
        self.plan.draw(hudi_insert_hash(self.keys))

    def peakmem_draw(self, keys: int) -> None:
        self.plan.draw(hudi_insert_hash(self.keys))
