"""Hudi bloom filters (pybloom-live rows sized as Hudi sizes them): build and probe."""

from __future__ import annotations

from indexes.bloom_filter import DYNAMIC_V0, SIMPLE, HoodieBloomFilter

from ._data import SAMPLING, uuid_keys


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
