"""pybloom-live's bit positions (the default hashing), on rows sized as Hudi sizes them.

The project's design names pybloom-live: bit positions come from its salted sha512/xxh128
digests, one slice of ``m/k`` bits per hash, instead of Hadoop's murmur over all ``m`` bits,
and ``m`` is rounded up to ``k`` equal slices. A row is a pybloom-live filter that, like
Hudi's, never refuses an add past its capacity. Bulk adds and probes hash each key with
pybloom's own salts and hash function and leave the bits to numpy (:mod:`.bits`); tests
check these positions equal ``pybloom_live.BloomFilter.make_hashes``. The footer records a
hash-type byte Hudi does not know (``PYBLOOM_HASH_TYPE``), so a Hudi reader refuses such a
filter rather than misreading it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import bitarray
import numpy as np
import pybloom_live

from indexes.bloom_filter.keys import as_key_array

__all__ = ["PYBLOOM", "PYBLOOM_HASH_TYPE", "PybloomHasher", "PybloomRow"]

PYBLOOM = "pybloom"  # the hashing's name (``hashing=``, ``indexbench.bloom.hash``)
PYBLOOM_HASH_TYPE = 0x70  # 'p': not a Hudi hash type, marks pybloom-live bit positions


class PybloomRow(pybloom_live.BloomFilter):
    """One pybloom-live filter sized by Hudi's m and k, accepting adds past its capacity.

    pybloom's ``add`` raises ``IndexError`` once ``count > capacity``; Hudi's rows never
    refuse a key, they just get a higher fpp. ``count`` counts every add, as Hudi's
    ``currentNbRecord`` does, duplicates included.
    """

    def __init__(self, num_slices: int, bits_per_slice: int, capacity: int, error_rate: float):
        # Not calling pybloom's __init__: it would derive its own k and m from fpp.
        self._setup(error_rate, num_slices, bits_per_slice, capacity, 0)
        self.bitarray = bitarray.bitarray(self.num_bits, endian="little")
        self.bitarray.setall(False)

    def add(self, key: Any, skip_check: bool = False) -> bool:
        """pybloom's add without the capacity check; returns True if all bits were set."""
        bits = self.bitarray
        offset = 0
        found_all = True
        for k in self.make_hashes(key):
            if found_all and not bits[offset + k]:
                found_all = False
            bits[offset + k] = True
            offset += self.bits_per_slice
        self.count += 1
        return found_all

    @property
    def num_hashes(self) -> int:
        """k: one position per slice."""
        return self.num_slices

    def empty_like(self) -> PybloomRow:
        """A new empty row of the same shape (a DYNAMIC_V0 filter's next row)."""
        return PybloomRow(self.num_slices, self.bits_per_slice, self.capacity, self.error_rate)

    def copy(self) -> PybloomRow:
        new = self.empty_like()
        new.bitarray = self.bitarray.copy()
        new.count = self.count
        return new


class PybloomHasher:
    """pybloom-live's bit positions for many keys at once (same salts, hash and format).

    Reads the salts and struct format from the ``make_hashes`` closure that pybloom built, so
    positions are pybloom's by construction; falls back to calling ``make_hashes`` per key if a
    future pybloom changes that closure.
    """

    hash_type = PYBLOOM_HASH_TYPE

    def __init__(self, row: PybloomRow):
        self.row = row
        self.k = row.num_slices
        self.bits_per_slice = row.bits_per_slice
        fn = row.make_hashes
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False))
        self.salts: tuple[Any, ...] | None = None
        try:
            salts = cells["salts"].cell_contents
            fmt = cells["fmt"].cell_contents
            if cells["num_slices"].cell_contents != self.k:
                raise ValueError
            codes = set(fmt)
            if len(codes) != 1 or codes.pop() not in "HIQ":
                raise ValueError
            self.dtype = np.dtype({"H": np.uint16, "I": np.uint32, "Q": np.uint64}[fmt[0]])
            self.salts = tuple(salts)
        except (KeyError, ValueError, TypeError):
            self.salts = None
        self.offsets = np.arange(self.k, dtype=np.int64) * self.bits_per_slice

    @property
    def stages(self) -> int:
        """Number of salts: the k positions come in this many independently hashed groups."""
        return 1 if self.salts is None else len(self.salts)

    @staticmethod
    def column(keys: Iterable[Any]) -> np.ndarray:
        """The keys as this hashing holds a batch: a numpy object array (nulls refused)."""
        return as_key_array(keys)

    @staticmethod
    def subset(col: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return col[idx]

    @property
    def first_stage_slices(self) -> int:
        """Slices the first salt's digest covers (0 if pybloom could not be vectorized)."""
        return self._stage_span(0)[2] if self.salts is not None else 0

    @staticmethod
    def encode(keys: Sequence[Any]) -> list[bytes]:
        """Key bytes exactly as pybloom hashes them (UTF-8 of str, else of ``str(key)``)."""
        return [k.encode("utf-8") if isinstance(k, str) else str(k).encode("utf-8") for k in keys]

    @property
    def family(self) -> tuple[Any, ...]:
        """What fixes a key's first-salt bit positions: same family, same positions (k,
        slice size, word format, digest, salts). Filters of one table share it."""
        if self.salts is None:
            return ("per-key", id(self))
        return (self.k, self.bits_per_slice, self.dtype.str, self.salts[0].name,
                len(self.salts))

    def _stage_span(self, stage: int) -> tuple[int, int, int]:
        per_salt = self.salts[0].digest_size // self.dtype.itemsize
        lo = stage * per_salt
        return per_salt, lo, min(self.k, lo + per_salt)

    def stage_words(self, enc: Sequence[bytes], stage: int) -> np.ndarray:
        """Raw digest words of salt ``stage`` (before the modulo): (n, slices of the stage).

        One salted digest per key, the only per-key Python work of a probe; a caller
        that probes the same keys against many files computes this once."""
        per_salt, lo, hi = self._stage_span(stage)
        n = len(enc)
        if n == 0:
            return np.empty((0, hi - lo), dtype=self.dtype)
        salt = self.salts[stage]
        parts: list[bytes] = []
        append = parts.append
        for kb in enc:
            h = salt.copy()
            h.update(kb)
            append(h.digest())
        words = np.frombuffer(b"".join(parts), dtype=self.dtype).reshape(n, per_salt)
        return words[:, : hi - lo]

    def words_to_positions(self, words: np.ndarray, stage: int,
                           kind: type = np.int64) -> np.ndarray:
        """Absolute bit positions (as ``kind``) of salt ``stage``'s slices from its raw
        words."""
        _, lo, hi = self._stage_span(stage)
        pos = (words % self.dtype.type(self.bits_per_slice)).astype(kind, copy=False)
        pos += self.offsets[lo:hi].astype(kind)
        return pos

    def stage_positions(self, enc: Sequence[bytes], stage: int) -> np.ndarray:
        """Absolute bit positions of the slices covered by salt ``stage``: (n, slices), int64."""
        n = len(enc)
        if self.salts is None:
            flat = [p for kb in enc for p in self.row.make_hashes(kb.decode("utf-8"))]
            return np.asarray(flat, dtype=np.int64).reshape(n, self.k) + self.offsets
        return self.words_to_positions(self.stage_words(enc, stage), stage)

    def positions(self, keys: Sequence[Any]) -> np.ndarray:
        """Absolute bit positions of all k slices, shape (len(keys), k), int64."""
        enc = self.encode(keys)
        if len(enc) == 0:
            return np.empty((0, self.k), dtype=np.int64)
        return np.hstack([self.stage_positions(enc, j) for j in range(self.stages)])

    def prehash(self, col: np.ndarray, all_slices: bool, kind: type) -> np.ndarray:
        """(slices, n) positions as ``kind``: the first salt's slices, or all k."""
        if self.salts is None:
            raise ValueError("pybloom's hashing could not be vectorized; probe keys directly")
        enc = self.encode(col)
        pos = [self.words_to_positions(self.stage_words(enc, j), j, kind)
               for j in range(self.stages if all_slices else 1)]
        return np.ascontiguousarray((np.hstack(pos) if len(pos) > 1 else pos[0]).T)
