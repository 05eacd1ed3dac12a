"""Hudi's own bit positions (``hashing="hudi"``): Hadoop's murmur hashing, byte for byte.

So that a filter's bytes are what Hudi writes for the same keys (and a Hudi reader probes
them), a row is exactly Hudi's ``m`` bits and a key's UTF-8 bytes go through Hadoop's
``HashFunction`` with ``Hash.MURMUR_HASH`` (hash type 1): k chained MurmurHash rounds
(``initval = hash(bytes, initval)`` from 0), bit ``abs(initval % m)``, vectorized over Arrow
string arrays (:func:`indexes.hashing.hadoop_murmur_chain`). Tests compare the serialized
bytes with Hadoop's classes in Spark's JVM.
"""

from __future__ import annotations

from typing import Any

import bitarray
import numpy as np
import pyarrow as pa

from indexes.bloom_filter.keys import as_utf8_column
from indexes.hashing import hadoop_murmur_chain

__all__ = ["HUDI", "HUDI_MURMUR_HASH_TYPE", "HUDI_STAGES", "HadoopRow", "HudiHasher"]

HUDI = "hudi"  # the hashing's name (``hashing=``, ``indexbench.bloom.hash``)
HUDI_MURMUR_HASH_TYPE = 1  # org.apache.hudi.common.util.hash.Hash.MURMUR_HASH
HUDI_STAGES = (2, 8)  # rounds after which a probe drops the keys ruled out


class HadoopRow:
    """One row as Hadoop's ``BloomFilter`` holds it: exactly Hudi's ``m`` bits (little bit
    order within a byte, as ``BloomFilter.write`` packs them), ``k`` positions over all of
    them. ``count`` counts every add, as the pybloom rows do."""

    def __init__(self, num_bits: int, num_hashes: int, capacity: int, error_rate: float):
        self.num_bits = int(num_bits)
        self.num_hashes = int(num_hashes)
        self.capacity = capacity
        self.error_rate = error_rate
        self.bitarray = bitarray.bitarray(self.num_bits, endian="little")
        self.bitarray.setall(False)
        self.count = 0

    def empty_like(self) -> HadoopRow:
        return HadoopRow(self.num_bits, self.num_hashes, self.capacity, self.error_rate)

    def copy(self) -> HadoopRow:
        new = self.empty_like()
        new.bitarray = self.bitarray.copy()
        new.count = self.count
        return new


class HudiHasher:
    """Hudi's bit positions: Hadoop's ``HashFunction`` with ``Hash.MURMUR_HASH``.

    ``k`` chained MurmurHash rounds over a key's UTF-8 bytes (``initval = hash(bytes,
    initval)`` from 0), position ``abs(initval % m)`` over the whole row of ``m`` bits. A
    probe goes stage by stage (``HUDI_STAGES`` rounds, then the rest), so a key that
    fails the first bits of every row never pays for all ``k`` rounds; a later stage
    recomputes the chain from round 0 for the few keys still alive.
    """

    hash_type = HUDI_MURMUR_HASH_TYPE

    def __init__(self, k: int, m: int):
        self.k, self.m = int(k), int(m)
        self.bounds = (0, *sorted({min(self.k, s) for s in HUDI_STAGES} | {self.k}))

    @property
    def stages(self) -> int:
        return len(self.bounds) - 1

    @property
    def family(self) -> tuple[Any, ...]:
        """Same ``k`` and ``m``: same positions for every key."""
        return ("hadoop-murmur", self.k, self.m)

    @property
    def first_stage_slices(self) -> int:
        return self.bounds[1]

    column = staticmethod(as_utf8_column)

    @staticmethod
    def subset(col: pa.Array, idx: np.ndarray) -> pa.Array:
        return col.take(pa.array(idx))

    @staticmethod
    def encode(col: pa.Array) -> pa.Array:
        return col  # already the bytes Hudi hashes

    def positions_t(self, col: pa.Array, lo: int, hi: int) -> np.ndarray:
        """Positions of rounds ``lo..hi-1``: (hi - lo, n) uint32, one row per round."""
        h = hadoop_murmur_chain(col, hi)[lo:hi]
        # Java's Math.abs(initval % maxValue): % truncates (fmod), |result| < m < 2**31
        return np.abs(np.fmod(h, np.int32(self.m))).view(np.uint32)

    def stage_positions(self, col: pa.Array, stage: int) -> np.ndarray:
        """Positions of stage ``stage``'s rounds: (n, rounds of the stage)."""
        return self.positions_t(col, self.bounds[stage], self.bounds[stage + 1]).T

    def positions(self, col: pa.Array) -> np.ndarray:
        """Positions of all k rounds, shape (n, k)."""
        return self.positions_t(col, 0, self.k).T

    def prehash(self, col: pa.Array, all_slices: bool, kind: type) -> np.ndarray:
        """(rounds, n) positions as ``kind``: the first stage's rounds, or all k."""
        hi = self.k if all_slices else self.bounds[1]
        return np.ascontiguousarray(self.positions_t(col, 0, hi).astype(kind, copy=False))
