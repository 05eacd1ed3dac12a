"""Hudi's per-file bloom filters (SIMPLE and DYNAMIC_V0), on pybloom-live or Hudi's own hashing.

Hudi writes one bloom filter of the record keys into every base file's Parquet footer and the
bloom index probes it to decide which files must be read. :class:`HoodieBloomFilter` keeps
Hudi's structure exactly, one job per module:

* :mod:`.formulas`: Hudi's sizing (``BloomFilterUtils``) and the theoretical fpp;
* :mod:`.policy`: SIMPLE (one row) vs DYNAMIC_V0 (a bounded matrix of rows), add by add;
* :mod:`.pybloom_hash`: pybloom-live's bit positions (``hashing="pybloom"``, the default);
* :mod:`.hudi_hash`: Hadoop's chained murmur, Hudi's own bits (``hashing="hudi"``);
* :mod:`.keys`: key batches as each hashing reads them (nulls, empty keys refused);
* :mod:`.bits`: setting and testing many bit positions at once in numpy;
* :mod:`.serialization`: Hudi's footer bytes and keys, plus indexbench's trailer;
* :mod:`.hoodie_filter`: the filter that ties them together.

This package only re-exports the public names.
"""

from __future__ import annotations

from indexes.bloom_filter.formulas import (
    hudi_bit_size,
    hudi_num_hashes,
    theoretical_fpp,
    theoretical_fpp_unpartitioned,
)
from indexes.bloom_filter.hoodie_filter import (
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    HASHINGS,
    HoodieBloomFilter,
)
from indexes.bloom_filter.hudi_hash import HUDI, HUDI_MURMUR_HASH_TYPE
from indexes.bloom_filter.policy import DYNAMIC_V0, SIMPLE
from indexes.bloom_filter.pybloom_hash import PYBLOOM, PYBLOOM_HASH_TYPE
from indexes.bloom_filter.serialization import (
    DYNAMIC_PREFIX,
    FOOTER_KEY,
    MAX_KEY,
    MIN_KEY,
    TYPE_CODE_KEY,
)

__all__ = [
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "DYNAMIC_PREFIX",
    "DYNAMIC_V0",
    "FOOTER_KEY",
    "HASHINGS",
    "HUDI",
    "HUDI_MURMUR_HASH_TYPE",
    "MAX_KEY",
    "MIN_KEY",
    "PYBLOOM",
    "PYBLOOM_HASH_TYPE",
    "SIMPLE",
    "TYPE_CODE_KEY",
    "HoodieBloomFilter",
    "hudi_bit_size",
    "hudi_num_hashes",
    "theoretical_fpp",
    "theoretical_fpp_unpartitioned",
]
