"""Closed forms of a bloom filter: Hudi's sizing and the theoretical false-positive rates.

Pure arithmetic with no filter state, so the filter, the reports' theory curves and the tests
share one copy. Sizing is Hudi's ``BloomFilterUtils``: ``m = ceil(n * -ln(fpp) / ln(2)^2)``
bits and ``k = ceil(ln(2) * m / n)`` hash functions per row (defaults n=60000, fpp=1e-9 ->
m=2587966, k=30). The rates differ by hashing: pybloom-live partitions a row into ``k``
slices, Hadoop's filter (Hudi's hashing) spreads all ``k`` positions over all ``m`` bits.
"""

from __future__ import annotations

import math

__all__ = [
    "JAVA_INT_MAX",
    "hudi_bit_size",
    "hudi_num_hashes",
    "theoretical_fpp",
    "theoretical_fpp_unpartitioned",
]

JAVA_INT_MAX = 2**31 - 1


def hudi_bit_size(num_entries: int, fpp: float) -> int:
    """``BloomFilterUtils.getBitSize``: bits for ``num_entries`` keys at ``fpp``."""
    bits = math.ceil(num_entries * (-math.log(fpp) / (math.log(2) * math.log(2))))
    return min(bits, JAVA_INT_MAX)  # Java's (int) cast of a double saturates


def hudi_num_hashes(bit_size: int, num_entries: int) -> int:
    """``BloomFilterUtils.getNumHashes``: hash functions for ``bit_size`` bits and n keys."""
    return math.ceil(math.log(2) * bit_size / num_entries)


def theoretical_fpp(m: int, k: int, n: int | float) -> float:
    """False-positive probability of pybloom's partitioned filter after ``n`` adds.

    ``k`` slices of ``m/k`` bits, one bit set per slice per add: a probe's bit in a slice is set
    with probability ``1 - (1 - k/m)^n``, and all ``k`` must be set.
    """
    if n <= 0:
        return 0.0
    if m <= 0 or k <= 0:
        raise ValueError("m and k must be positive")
    # log1p/expm1 keep precision for the tiny probabilities of the default sizing.
    p_set = -math.expm1(n * math.log1p(-k / m))
    return p_set**k


def theoretical_fpp_unpartitioned(m: int, k: int, n: int | float) -> float:
    """False-positive probability of Hadoop's filter (Hudi's hashing) after ``n`` adds.

    ``k`` positions over all ``m`` bits per add: a bit is set with probability
    ``1 - (1 - 1/m)^(k n)``, and all ``k`` probed bits must be set.
    """
    if n <= 0:
        return 0.0
    if m <= 0 or k <= 0:
        raise ValueError("m and k must be positive")
    p_set = -math.expm1(k * n * math.log1p(-1 / m))
    return p_set**k
