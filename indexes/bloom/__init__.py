"""bloom: Hudi's default index (``HoodieBloomIndex``), engine-neutral definition.

Tagging is (1) read the min/max key from the footers of the partitions' base files,
(2) prune: a key is compared only with files whose [min, max] holds it, (3) per
candidate file probe its bloom filter and read its record-key column once if a probe
was positive. The core (:mod:`indexes.bloom.core`) does (2) and (3) over arrays; the
Spark adapter (:mod:`indexes.bloom.spark`) distributes it; the simulator
(:mod:`indexes.bloom.sim`) runs it over a model table.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from indexes.base import Param, RecordIndex
from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from tableformat.errors import IndexBenchError
from tableformat.rows import measured_fp_rate

__all__ = ["BloomIndex", "measured_fp_rate"]


class BloomIndex(RecordIndex):
    """Hudi's BLOOM index with Hudi's defaults."""

    name = "bloom"
    index_type = "BLOOM"
    SPARK_ADAPTER = "indexes.bloom.spark:BloomSpark"
    SIM_ADAPTER = "indexes.bloom.sim:BloomSim"
    PARAMS = (
        Param("num_entries", "hoodie.index.bloom.num_entries", int, 60000,
              "entries each filter (row) is sized for"),
        Param("fpp", "hoodie.index.bloom.fpp", float, 1e-9, "target false-positive probability"),
        Param("filter_type", "hoodie.bloom.index.filter.type", str, "DYNAMIC_V0",
              "SIMPLE or DYNAMIC_V0", choices=("SIMPLE", "DYNAMIC_V0")),
        Param("max_entries", "hoodie.bloom.index.filter.dynamic.max.entries", int, 100000,
              "bound of a DYNAMIC_V0 filter before adds go round-robin"),
        Param("max_records_per_file", "hoodie.copyonwrite.insert.split.size", int, 2000,
              "inserts per new file group (Hudi's default is 500000; small-file packing is "
              "not done)"),
        Param("prune_by_ranges", "hoodie.bloom.index.prune.by.ranges", bool, True,
              "compare keys only with files whose min/max range holds them"),
    )

    def validate(self) -> None:
        p = self.params
        if p["num_entries"] < 1 or p["max_entries"] < 1:
            raise IndexBenchError("bloom num_entries and max_entries must be >= 1")
        if p["max_records_per_file"] < 1:
            raise IndexBenchError("hoodie.copyonwrite.insert.split.size must be >= 1")
        if not 0 < p["fpp"] < 1:
            raise IndexBenchError("hoodie.index.bloom.fpp must be in (0, 1)")

    def new_filter(self) -> HoodieBloomFilter:
        return self.filter_factory()()

    def filter_factory(self) -> Callable[[], HoodieBloomFilter]:
        """A picklable maker of this table's empty filters, for Spark task closures (a
        filter itself holds hashlib objects, which do not pickle)."""
        p = self.params
        return partial(HoodieBloomFilter.create, p["filter_type"], p["num_entries"], p["fpp"],
                       p["max_entries"])

    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        bloom = self.new_filter()
        bloom.add_keys(record_keys.to_pylist())
        text = bloom.serialize()
        return {FOOTER_KEY: text, TYPE_CODE_KEY: bloom.type_code}, len(text)

    def table_metrics(self, snapshot) -> dict[str, float]:
        disk = sum(s.index_bytes for s in snapshot.slices.values())
        return {"index_disk_bytes": disk, "index_mem_bytes": 0}
