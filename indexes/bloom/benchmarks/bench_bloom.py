"""Hudi bloom filters (pybloom-live rows sized as Hudi sizes them): build and probe."""

from __future__ import annotations

import pyarrow as pa

from benchmarks._data import SAMPLING, uuid_keys
from indexes.bloom_filter import DYNAMIC_V0, HASHINGS, SIMPLE, HoodieBloomFilter


class BloomBuild:
    """Writing a base file's footer filter: add every key of the file, serialize."""

    rounds, repeat = SAMPLING

    params = [[1_000, 10_000, 100_000], [SIMPLE, DYNAMIC_V0]]
    param_names = ["keys", "filter_type"]

    def setup(self, keys: int, filter_type: str) -> None:
        self.keys = uuid_keys(keys).tolist()

    def _build(self, filter_type: str) -> HoodieBloomFilter:
        f = HoodieBloomFilter.create(filter_type)
        f.add_keys(self.keys)
        return f

    def time_add_keys(self, keys: int, filter_type: str) -> None:
        self._build(filter_type)

    def peakmem_add_keys(self, keys: int, filter_type: str) -> None:
        self._build(filter_type)

    def time_serialize(self, keys: int, filter_type: str) -> None:
        self._build(filter_type).serialize()


class BloomProbe:
    """Tagging against one file: probe a batch of absent keys, and reload a footer."""

    rounds, repeat = SAMPLING

    params = [[1_000, 10_000, 100_000], [SIMPLE, DYNAMIC_V0]]
    param_names = ["probes", "filter_type"]

    def setup(self, probes: int, filter_type: str) -> None:
        self.filter = HoodieBloomFilter.create(filter_type)
        self.filter.add_keys(uuid_keys(20_000, seed=1).tolist())
        self.probes = uuid_keys(probes, seed=2).tolist()
        self.text = self.filter.serialize()

    def time_might_contain_many(self, probes: int, filter_type: str) -> None:
        self.filter.might_contain_many(self.probes)

    def peakmem_might_contain_many(self, probes: int, filter_type: str) -> None:
        self.filter.might_contain_many(self.probes)

    def time_deserialize(self, probes: int, filter_type: str) -> None:
        HoodieBloomFilter.deserialize(self.text, filter_type)


class BloomTagHudiSized:
    """The bloom index's probe step at Hudi's file sizes: a batch of keys, hashed once
    (``prehash``, all k positions), probed against a DYNAMIC_V0 filter holding
    ``file_keys`` keys (Hudi's defaults: 60,000 entries a row, 100,000 max entries,
    fpp 1e-9)."""

    rounds, repeat = SAMPLING

    params = [[100_000, 250_000]]
    param_names = ["file_keys"]
    timeout = 180

    def setup(self, file_keys: int) -> None:
        self.filter = HoodieBloomFilter.create(DYNAMIC_V0)
        self.filter.add_keys(uuid_keys(file_keys, seed=1))
        self.probes = uuid_keys(100_000, seed=2)
        self.words = self.filter.prehash(self.probes, all_slices=True)

    def time_prehash(self, file_keys: int) -> None:
        self.filter.prehash(self.probes, all_slices=True)

    def time_probe_prehashed(self, file_keys: int) -> None:
        self.filter.might_contain_many(self.probes, self.words)

    def track_key_file_probes_per_s(self, file_keys: int) -> float:
        """Key x file probes per second once the keys are hashed (best of 3)."""
        import time

        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            self.filter.might_contain_many(self.probes, self.words)
            best = min(best, time.perf_counter() - t0)
        return len(self.probes) / best

    track_key_file_probes_per_s.unit = "probes/s"


class BloomHashing:
    """Bulk add and probe at Hudi's default sizing (DYNAMIC_V0, 60,000 entries a row, fpp
    1e-9) with each bit hashing (``indexbench.bloom.hash``): pybloom-live's (the default)
    and Hudi's own (Hadoop's chained murmur, vectorized over the Arrow key column). Keys come
    as Arrow arrays, as the footer writer and the key check pass them."""

    rounds, repeat = SAMPLING

    params = [[10_000, 100_000], list(HASHINGS)]
    param_names = ["keys", "hashing"]

    def setup(self, keys: int, hashing: str) -> None:
        self.keys = pa.array(uuid_keys(keys, seed=1))
        self.filter = HoodieBloomFilter.create(DYNAMIC_V0, hashing=hashing)
        self.filter.add_keys(pa.array(uuid_keys(20_000, seed=3)))
        self.probes = pa.array(uuid_keys(keys, seed=2))

    def time_add_keys(self, keys: int, hashing: str) -> None:
        HoodieBloomFilter.create(DYNAMIC_V0, hashing=hashing).add_keys(self.keys)

    def time_might_contain_many(self, keys: int, hashing: str) -> None:
        self.filter.might_contain_many(self.probes)
