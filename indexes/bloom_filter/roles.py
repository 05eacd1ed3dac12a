"""The roles an index keeping Hudi bloom filters plays (:mod:`indexes.roles`): the
filters' theoretical false-positive rate as the report's reference line, and the
simulator's threshold for building real filters. Shared by every index whose files
carry a bloom filter (bloom, multi-fg-bucket)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from indexes.bloom_filter.hoodie_filter import (
    DEFAULT_FPP,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    HoodieBloomFilter,
)
from indexes.bloom_filter.policy import DYNAMIC_V0
from indexes.roles import FilterTheory, SimOption, SimulatorOptions

EXACT_BLOOM_KEYS = SimOption(
    "exact_bloom_keys", "--exact-bloom-keys", int, 2_000_000,
    "bloom: build real filters while the table holds at most this many keys; above it, "
    "false positives are drawn at each filter's theoretical rate")


class BloomSimOptions(SimulatorOptions):
    """The simulator builds real filters up to ``exact_bloom_keys`` table keys."""

    SIM_OPTIONS = (EXACT_BLOOM_KEYS,)


class BloomFilterTheory(FilterTheory):
    """Hudi's bloom filter's theoretical fpp as the false-positive figure's reference."""

    @classmethod
    def theoretical_fp_rate(cls, params: Mapping[str, Any], n: Sequence[float] | np.ndarray
                            ) -> np.ndarray:
        """Uses the filter's own m (bits per row) and k (hashes) and, for DYNAMIC_V0, how
        many keys each row holds (``HoodieBloomFilter.theoretical_fpp``)."""
        f = _filter(params)
        return np.array([f.theoretical_fpp(int(round(x))) for x in np.atleast_1d(n)],
                        dtype=float)

    @classmethod
    def theory_key(cls, params: Mapping[str, Any]) -> tuple:
        """Same type, m, k and sizes: one curve."""
        f = _filter(params)
        return (HoodieBloomFilter.__name__, f.type_code, f.bits_per_row, f.hashes_per_row,
                *_sizes(params))

    @classmethod
    def theory_label(cls, params: Mapping[str, Any]) -> str:
        f = _filter(params)
        return (f"m={f.bits_per_row:,} bits/row, k={f.hashes_per_row}, {f.type_code}; "
                f"dotted: the {_sizes(params)[0]:,} keys a row is sized for")

    @classmethod
    def sized_keys(cls, params: Mapping[str, Any]) -> tuple[int, int]:
        return _sizes(params)

    @classmethod
    def design_fp_rate(cls, params: Mapping[str, Any]) -> float:
        return float(params.get("fpp", DEFAULT_FPP))


def _sizes(params: Mapping[str, Any]) -> tuple[int, int]:
    """(num_entries, max_entries) as the run built its filters: a scaled run
    (``indexbench.scale``) with the effective sizes."""
    ne = params.get("effective_num_entries", params.get("num_entries", DEFAULT_NUM_ENTRIES))
    mx = params.get("effective_max_entries", params.get("max_entries", DEFAULT_MAX_ENTRIES))
    return int(ne), int(mx)


def _filter(params: Mapping[str, Any]) -> HoodieBloomFilter:
    """An empty filter sized exactly as the run's index built them (m and k per row)."""
    ne, mx = _sizes(params)
    return HoodieBloomFilter.create(str(params.get("filter_type", DYNAMIC_V0)), ne,
                                    float(params.get("fpp", DEFAULT_FPP)), mx)
