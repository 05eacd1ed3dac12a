"""Hudi's per-file bloom filters (SIMPLE and DYNAMIC_V0), on pybloom-live or Hudi's own hashing.

Hudi writes one bloom filter of the record keys into every base file's Parquet footer and the
bloom index probes it to decide which files must be read. To reproduce the work that index does
(and its false positives), this module keeps Hudi's *structure* exactly:

* sizing from ``BloomFilterUtils``: ``m = ceil(n * -ln(fpp) / ln(2)^2)`` bits and
  ``k = ceil(ln(2) * m / n)`` hash functions per row (defaults n=60000, fpp=1e-9 -> m=2587966,
  k=30);
* SIMPLE = one such row; DYNAMIC_V0 (``HoodieDynamicBoundedBloomFilter`` on
  ``InternalDynamicBloomFilter``) = a matrix of rows: a new row every ``num_entries`` adds until
  ``rows * num_entries >= max_entries``, then round-robin over the existing rows, with Hudi's
  quirk that the add which hits the bound and the one after it both go to row 0;
* membership = any row says yes; adds beyond ``num_entries`` are accepted (fpp rises);
* serialization in Hudi's ``DataOutput`` layout (big-endian ints, bit vectors as
  ``(m + 7) / 8`` little-bit-order bytes), base64 text, so footer sizes match Hudi's.

Two hashings (``hashing=``; the bloom index's ``indexbench.bloom.hash``):

* ``pybloom`` (the default, as the project's design names it): bit positions come from
  pybloom-live's hashing (salted sha512/xxh128, one slice of ``m/k`` bits per hash) instead of
  Hadoop's murmur over all ``m`` bits, and ``m`` is rounded up to ``k`` equal slices. The
  footer records a hash-type byte Hudi does not know (``PYBLOOM_HASH_TYPE``), so a Hudi
  reader refuses it rather than misreading it. Bulk operations hash each key with pybloom's
  own salts and hash function, then set or test all bits with numpy; tests check these
  positions equal ``pybloom_live.BloomFilter.make_hashes``.
* ``hudi``: Hudi's own bits. ``m`` is exactly Hudi's, and a key's UTF-8 bytes go through
  Hadoop's ``HashFunction`` with ``Hash.MURMUR_HASH`` (hash type 1): k chained MurmurHash
  rounds (``initval = hash(bytes, initval)`` from 0), bit ``abs(initval % m)``, vectorized
  over Arrow string arrays (:func:`indexes.hashing.hadoop_murmur_chain`). The serialized
  bytes start with exactly what Hudi's ``SimpleBloomFilter`` / ``HoodieDynamicBoundedBloomFilter``
  write for the same keys (tests compare them with Hadoop's classes in Spark's JVM), so a
  Hudi reader probes them. Hadoop refuses empty keys ("key length must be > 0"); so does this.

Either way a short trailer follows Hudi's bytes with what Hudi does not persist (fpp, max
entries, per-row add counts, the round-robin cursor), so a reloaded filter behaves exactly like
the original, including further adds. Hudi's readers (``DataInputStream`` over the decoded
bytes) read only the fields they need and never look at it. A reloaded filter hashes as the
hash-type byte of its header says.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import bitarray
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pybloom_live

from indexes.hashing import hadoop_murmur_chain

__all__ = [
    "DEFAULT_FPP",
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_NUM_ENTRIES",
    "DYNAMIC_PREFIX",
    "DYNAMIC_V0",
    "FOOTER_KEY",
    "HASHINGS",
    "HUDI",
    "MAX_KEY",
    "MIN_KEY",
    "PYBLOOM",
    "SIMPLE",
    "TYPE_CODE_KEY",
    "HoodieBloomFilter",
    "hudi_bit_size",
    "hudi_num_hashes",
    "theoretical_fpp",
    "theoretical_fpp_unpartitioned",
]

# Parquet footer key-value metadata names, as Hudi writes them (HoodieBloomFilterWriteSupport).
FOOTER_KEY = "org.apache.hudi.bloomfilter"
OLD_FOOTER_KEY = "com.uber.hoodie.bloomfilter"  # read, never written (Hudi reads both)
TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_KEY = "hoodie_min_record_key"
MAX_KEY = "hoodie_max_record_key"

# BloomFilterTypeCode names (enum order matters to Hudi: SIMPLE=0, DYNAMIC_V0=1).
SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"
TYPE_CODES = (SIMPLE, DYNAMIC_V0)
# HoodieDynamicBoundedBloomFilter.TYPE_CODE_PREFIX: HoodieBloomFilterWriteSupport writes the
# type-code footer key only for a type code whose name contains it; a reader that finds no key
# reads the filter as SIMPLE.
DYNAMIC_PREFIX = "DYNAMIC"

# Bit positions: pybloom-live's (the default) or Hudi's own (Hadoop's murmur).
PYBLOOM = "pybloom"
HUDI = "hudi"
HASHINGS = (PYBLOOM, HUDI)

# Hudi defaults: hoodie.index.bloom.num_entries, .fpp, hoodie.bloom.index.filter.type,
# hoodie.bloom.index.filter.dynamic.max.entries.
DEFAULT_NUM_ENTRIES = 60000
DEFAULT_FPP = 1e-9
DEFAULT_MAX_ENTRIES = 100000

_FILTER_VERSION = -1  # InternalFilter.VERSION
HUDI_MURMUR_HASH_TYPE = 1  # org.apache.hudi.common.util.hash.Hash.MURMUR_HASH
PYBLOOM_HASH_TYPE = 0x70  # 'p': not a Hudi hash type, marks pybloom-live bit positions
_HASHING_OF_TYPE = {PYBLOOM_HASH_TYPE: PYBLOOM, HUDI_MURMUR_HASH_TYPE: HUDI}
_HUDI_STAGES = (2, 8)  # hudi hashing: rounds after which a probe drops the keys ruled out
_TRAILER_MAGIC = b"IXBP"
_TRAILER_VERSION = 1
_INT32_MAX = 2**31 - 1


def hudi_bit_size(num_entries: int, fpp: float) -> int:
    """``BloomFilterUtils.getBitSize``: bits for ``num_entries`` keys at ``fpp``."""
    bits = math.ceil(num_entries * (-math.log(fpp) / (math.log(2) * math.log(2))))
    return min(bits, _INT32_MAX)  # Java's (int) cast of a double saturates


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


class _Row(pybloom_live.BloomFilter):
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

    def empty_like(self) -> _Row:
        """A new empty row of the same shape (a DYNAMIC_V0 filter's next row)."""
        return _Row(self.num_slices, self.bits_per_slice, self.capacity, self.error_rate)

    def copy(self) -> _Row:
        new = self.empty_like()
        new.bitarray = self.bitarray.copy()
        new.count = self.count
        return new


class _BitRow:
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

    def empty_like(self) -> _BitRow:
        return _BitRow(self.num_bits, self.num_hashes, self.capacity, self.error_rate)

    def copy(self) -> _BitRow:
        new = self.empty_like()
        new.bitarray = self.bitarray.copy()
        new.count = self.count
        return new


class _BulkHasher:
    """pybloom-live's bit positions for many keys at once (same salts, hash and format).

    Reads the salts and struct format from the ``make_hashes`` closure that pybloom built, so
    positions are pybloom's by construction; falls back to calling ``make_hashes`` per key if a
    future pybloom changes that closure.
    """

    hash_type = PYBLOOM_HASH_TYPE

    def __init__(self, row: _Row):
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
        return _as_key_array(keys)

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


def _java_utf8(key: Any) -> bytes:
    """``key.getBytes(StandardCharsets.UTF_8)`` of a key (non-strings as ``str(key)``, as
    pybloom hashes them). A ``str`` holding surrogates is read as Java's UTF-16 would hold
    it: a pair is one character, a lone surrogate becomes ``?`` (Java's replacement)."""
    if key is None:
        raise TypeError(_NULL_KEY)
    text = key if isinstance(key, str) else str(key)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        utf16 = text.encode("utf-16-le", "surrogatepass")
        return utf16.decode("utf-16-le", "surrogatepass").encode("utf-8", "replace")


def _as_utf8_column(keys: Iterable[Any]) -> pa.Array:
    """Keys as one Arrow array of the bytes Hudi hashes: strings stay Arrow strings (no
    Python object per key), binary stays bytes; nulls and empty keys refused as Hudi does."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, pa.Array):
        if keys.null_count:
            raise TypeError(_NULL_KEY)
        if pa.types.is_dictionary(keys.type):
            keys = keys.dictionary_decode()
        t = keys.type
        if pa.types.is_binary(t) or pa.types.is_large_binary(t):
            col = keys.cast(pa.large_binary())
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            col = keys.cast(pa.large_string())
        else:
            col = pc.cast(keys, pa.large_string())  # integers: their decimal text
    else:
        if hasattr(keys, "to_numpy") and not isinstance(keys, np.ndarray):
            keys = keys.to_numpy(dtype=object)  # pandas
        seq = keys.reshape(-1) if isinstance(keys, np.ndarray) else list(keys)
        try:
            col = pa.array(seq, type=pa.large_string())
        except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeEncodeError):
            # non-strings or surrogates: encoded key by key (rare)
            col = pa.array([_java_utf8(k) for k in seq], type=pa.large_binary())
        if col.null_count:
            raise TypeError(_NULL_KEY)
    if len(col) and pc.min(pc.binary_length(col)).as_py() == 0:
        raise ValueError("Hudi's bloom filter refuses empty keys (Hadoop's HashFunction: "
                         "key length must be > 0)")
    return col


class _HudiHasher:
    """Hudi's bit positions: Hadoop's ``HashFunction`` with ``Hash.MURMUR_HASH``.

    ``k`` chained MurmurHash rounds over a key's UTF-8 bytes (``initval = hash(bytes,
    initval)`` from 0), position ``abs(initval % m)`` over the whole row of ``m`` bits. A
    probe goes stage by stage (``_HUDI_STAGES`` rounds, then the rest), so a key that
    fails the first bits of every row never pays for all ``k`` rounds; a later stage
    recomputes the chain from round 0 for the few keys still alive.
    """

    hash_type = HUDI_MURMUR_HASH_TYPE

    def __init__(self, k: int, m: int):
        self.k, self.m = int(k), int(m)
        self.bounds = (0, *sorted({min(self.k, s) for s in _HUDI_STAGES} | {self.k}))

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

    column = staticmethod(_as_utf8_column)

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


def _set_bits(row: _Row, positions: np.ndarray) -> None:
    """Set bits at ``positions`` (any shape) in the row's bitarray, in place."""
    if positions.size == 0:
        return
    buf = np.frombuffer(row.bitarray, dtype=np.uint8)  # writable view, little bit order
    flat = positions.ravel()
    if flat.size * 16 < row.num_bits:
        # Few keys: scatter-or straight into the bytes.
        np.bitwise_or.at(buf, flat >> 3, (1 << (flat & 7)).astype(np.uint8))
        return
    # Many keys: unpack to one byte per bit, assign, pack back (linear in m, no ufunc.at).
    bits = np.unpackbits(buf, bitorder="little")
    bits[flat] = 1
    buf[:] = np.packbits(bits, bitorder="little")


def _test_bits(row: _Row, positions: np.ndarray) -> np.ndarray:
    """Per key (row of ``positions``): are all its bits set?"""
    buf = np.frombuffer(row.bitarray, dtype=np.uint8)
    bits = (buf[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
    return bits.all(axis=1)


def _test_positions(row: _Row, pos_t: np.ndarray) -> np.ndarray:
    """Per key (column of ``pos_t``: absolute bit positions, one row per slice): are all
    its bits set? Slice by slice over the keys still alive: a non-member usually fails
    within a few of its bits, so a probe is a few gathers per key, not k. Many keys: the
    bit vector is unpacked to one byte per bit first, so each test is one gather."""
    buf = np.frombuffer(row.bitarray, dtype=np.uint8)
    n = pos_t.shape[1]
    if n * 8 >= row.num_bits // 8:  # unpacking costs about what n shift-and-mask tests do
        bits = np.unpackbits(buf, bitorder="little").view(bool)
        alive = np.flatnonzero(bits[pos_t[0]])
        for j in range(1, pos_t.shape[0]):
            if alive.size == 0:
                break
            alive = alive[bits[pos_t[j, alive]]]
    else:
        p = pos_t[0]
        alive = np.flatnonzero(buf[p >> 3] & (np.uint8(1) << (p & 7).astype(np.uint8)))
        for j in range(1, pos_t.shape[0]):
            if alive.size == 0:
                break
            p = pos_t[j, alive]
            alive = alive[(buf[p >> 3] & (np.uint8(1) << (p & 7).astype(np.uint8))) != 0]
    out = np.zeros(n, dtype=bool)
    out[alive] = True
    return out


@dataclass
class _DynamicPolicy:
    """Which row each add goes to: ``InternalDynamicBloomFilter.add/getActiveStandardBF``.

    Java, per add: if ``reachedMax`` -> ``matrix[curMatrixIndex++ % rows]``; else if
    ``currentNbRecord >= nr`` and ``rows * nr < maxNr`` -> new row, ``currentNbRecord = 0``;
    else if ``currentNbRecord >= nr`` -> ``reachedMax = true`` and ``matrix[0]`` (cursor not
    advanced, so row 0 also takes the next add); else the last row. Then
    ``currentNbRecord++``. Computed here segment by segment, not per key.
    """

    nr: int
    max_nr: int
    rows: int = 1
    current: int = 0  # currentNbRecord (keeps counting after reachedMax, as in Java)
    reached: bool = False  # reachedMax
    cursor: int = 0  # curMatrixIndex

    def assign(self, n: int) -> np.ndarray:
        """Row index of each of the next ``n`` adds, advancing the state."""
        out = np.empty(n, dtype=np.int64)
        pos = 0
        while pos < n:
            if self.reached:
                rest = n - pos
                out[pos:] = (self.cursor + np.arange(rest, dtype=np.int64)) % self.rows
                self.cursor += rest
                self.current += rest
                break
            if self.current >= self.nr:
                if self.rows * self.nr < self.max_nr:
                    self.rows += 1
                    self.current = 0
                else:
                    self.reached = True
                    out[pos] = 0
                    self.current += 1
                    pos += 1
                    continue
            take = min(n - pos, self.nr - self.current)
            out[pos : pos + take] = self.rows - 1
            self.current += take
            pos += take
        return out

    def counts(self, n: int) -> list[int]:
        """Adds per row after the next ``n`` adds, as ``bincount(assign(n))`` on a fresh
        policy, without a per-add array (a theory curve asks for n up to billions)."""
        rows = [0] * self.rows
        pos = 0
        while pos < n:
            if self.reached:
                q, r = divmod(n - pos, self.rows)
                rows = [c + q for c in rows]
                for i in range(r):
                    rows[(self.cursor + i) % self.rows] += 1
                self.cursor += n - pos
                self.current += n - pos
                break
            if self.current >= self.nr:
                if self.rows * self.nr < self.max_nr:
                    self.rows += 1
                    rows.append(0)
                    self.current = 0
                else:
                    self.reached = True
                    rows[0] += 1
                    self.current += 1
                    pos += 1
                    continue
            take = min(n - pos, self.nr - self.current)
            rows[self.rows - 1] += take
            self.current += take
            pos += take
        return rows


def _as_key_array(keys: Iterable[Any]) -> np.ndarray:
    """Keys (list, numpy, pandas, pyarrow) as a numpy object array, refusing nulls."""
    if isinstance(keys, pa.Array | pa.ChunkedArray):
        if keys.null_count:
            raise TypeError(_NULL_KEY)
        return keys.to_numpy(zero_copy_only=False)
    if hasattr(keys, "to_numpy"):
        keys = keys.to_numpy()  # pandas
    arr = keys if isinstance(keys, np.ndarray) and keys.dtype == object else \
        np.asarray(list(keys) if not isinstance(keys, np.ndarray) else keys, dtype=object)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if len(arr) and (arr == None).any():  # noqa: E711 - elementwise, in C
        raise TypeError(_NULL_KEY)
    return arr


_NULL_KEY = "bloom filter keys cannot be null (Hudi throws NullPointerException)"


class HoodieBloomFilter:
    """Hudi's SIMPLE / DYNAMIC_V0 bloom filter over record keys: pybloom-live rows (the
    default ``hashing``) or Hadoop's bits and murmur hashing (``hashing="hudi"``)."""

    def __init__(
        self,
        type_code: str,
        num_entries: int,
        fpp: float,
        max_entries: int,
        *,
        hashing: str = PYBLOOM,
        _rows: list[_Row] | list[_BitRow] | None = None,
        _policy: _DynamicPolicy | None = None,
    ):
        code = type_code.upper()  # Hudi compares with equalsIgnoreCase
        if code not in TYPE_CODES:
            raise ValueError(f"Bloom Filter type code not recognizable {type_code!r}")
        if hashing not in HASHINGS:
            raise ValueError(f"bloom hashing must be one of {', '.join(HASHINGS)}, "
                             f"not {hashing!r}")
        if num_entries <= 0:
            raise ValueError("num_entries must be positive")
        if not 0.0 < fpp < 1.0:
            raise ValueError("fpp must be in (0, 1)")
        self._type_code = code
        self._num_entries = int(num_entries)
        self._fpp = float(fpp)
        self._max_entries = int(max_entries)
        self._hashing = hashing
        if _rows is None:
            m = hudi_bit_size(self._num_entries, self._fpp)
            k = hudi_num_hashes(m, self._num_entries)
            if hashing == PYBLOOM:
                _rows = [_Row(k, -(-m // k), self._num_entries, self._fpp)]
            else:
                _rows = [_BitRow(m, k, self._num_entries, self._fpp)]
        self._rows = _rows
        if code == SIMPLE:
            # A single row forever: model as a policy that never grows past row 0.
            self._policy = _policy or _DynamicPolicy(nr=_INT32_MAX, max_nr=0, rows=1)
        else:
            self._policy = _policy or _DynamicPolicy(nr=self._num_entries, max_nr=max_entries)
        r0 = self._rows[0]
        self._hasher: _BulkHasher | _HudiHasher = (
            _BulkHasher(r0) if hashing == PYBLOOM else _HudiHasher(r0.num_hashes, r0.num_bits))

    @classmethod
    def create(
        cls,
        type_code: str = DYNAMIC_V0,
        num_entries: int = DEFAULT_NUM_ENTRIES,
        fpp: float = DEFAULT_FPP,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        hashing: str = PYBLOOM,
    ) -> HoodieBloomFilter:
        """``BloomFilterFactory.createBloomFilter`` with Hudi's defaults; ``hashing``:
        ``pybloom`` (default) or ``hudi`` (Hudi's own bits, hash type 1)."""
        return cls(type_code, num_entries, fpp, max_entries, hashing=hashing)

    # -- properties -----------------------------------------------------------------------
    @property
    def type_code(self) -> str:
        """``SIMPLE`` or ``DYNAMIC_V0``. Only a DYNAMIC code is written under
        ``TYPE_CODE_KEY`` (:meth:`footer_entries`); a footer without it is SIMPLE."""
        return self._type_code

    @property
    def hashing(self) -> str:
        """``pybloom`` or ``hudi``: whose bit positions the rows hold."""
        return self._hashing

    @property
    def num_entries(self) -> int:
        return self._num_entries

    @property
    def fpp(self) -> float:
        return self._fpp

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def rows(self) -> int:
        """Rows in the matrix (always 1 for SIMPLE)."""
        return len(self._rows)

    @property
    def bits_per_row(self) -> int:
        """m actually allocated: ``k * ceil(m_hudi / k)`` with pybloom (its slices are
        equal), exactly Hudi's m with Hudi's hashing."""
        return self._rows[0].num_bits

    @property
    def hashes_per_row(self) -> int:
        """k (pybloom slices, or Hadoop's chained murmur rounds)."""
        return self._rows[0].num_hashes

    @property
    def count(self) -> int:
        """Keys added in total (duplicates included, as Hudi counts)."""
        return int(sum(r.count for r in self._rows))

    @property
    def row_counts(self) -> list[int]:
        """Adds that went to each row, in row order."""
        return [int(r.count) for r in self._rows]

    @property
    def size_bytes(self) -> int:
        """Bytes of the serialized filter before base64: Hudi's layout plus our trailer.

        The footer value (base64 text) is ``4 * ceil(size_bytes / 3)`` characters.
        """
        return len(self._to_bytes())

    # -- adding and probing ---------------------------------------------------------------
    def add(self, key: str) -> None:
        """Add one key (Hudi: ``BloomFilter.add(String)``)."""
        self.add_keys([key])

    def add_keys(self, keys: Iterable[str]) -> None:
        """Add keys in order; each goes to the row Hudi's add policy picks."""
        col = self._hasher.column(keys)  # refuses bad keys before the policy moves
        n = len(col)
        if not n:
            return
        targets = self._policy.assign(n)
        while len(self._rows) < self._policy.rows:
            self._rows.append(self._rows[0].empty_like())
        pos = self._hasher.positions(col)
        if len(self._rows) == 1:
            _set_bits(self._rows[0], pos)
            self._rows[0].count += n
            return
        counts = np.bincount(targets, minlength=len(self._rows))
        for r, row in enumerate(self._rows):
            if counts[r]:
                _set_bits(row, pos[targets == r])
                row.count += int(counts[r])

    def might_contain(self, key: str) -> bool:
        """Membership: False means certainly absent; True may be a false positive."""
        return bool(self.might_contain_many([key])[0])

    @property
    def hash_family(self) -> tuple[Any, ...]:
        """Filters with equal families give a key the same bit positions
        (:meth:`prehash`), so one prehash serves every file of a table."""
        return self._hasher.family

    def prehash(self, keys: Iterable[str], all_slices: bool = False) -> np.ndarray:
        """The keys' bit positions, to pass to :meth:`might_contain_many` for every filter
        of the same :attr:`hash_family`: a batch's keys are hashed once, however many
        files they are probed against. Shape (slices, len(keys)), uint32, one row per
        slice (a probe reads a slice's positions for all keys contiguously): the first
        salt's slices (one digest per key; keys that pass them are hashed again at probe
        time), or all ``k`` with ``all_slices`` (every digest now, none later). The
        positions of keys ``lo:hi`` are ``prehashed[:, lo:hi]``. With Hudi's hashing the
        first stage is the first few chained murmur rounds."""
        h = self._hasher
        return h.prehash(h.column(keys), all_slices, self.position_dtype)

    @property
    def position_dtype(self) -> type:
        """The dtype of :meth:`prehash` positions (uint32 unless a row has 2**32 bits)."""
        return np.uint32 if self.bits_per_row < 2**32 else np.uint64

    @property
    def first_salt_slices(self) -> int:
        """Rows of ``prehash(keys)``: the slices the first salt's digest covers (pybloom)
        or the first stage's murmur rounds (Hudi's hashing)."""
        return self._hasher.first_stage_slices

    def might_contain_many(self, keys: Iterable[str], prehashed: np.ndarray | None = None
                           ) -> np.ndarray:
        """Vectorized ``might_contain``: bool array aligned with ``keys``.

        Hashes salt by salt, as pybloom's lazy ``make_hashes`` does, so a key already ruled out
        by every row after the first salt's slices never pays for the second hash (Hudi's
        hashing: stage by stage of murmur rounds, likewise). ``prehashed``: the keys'
        :meth:`prehash` positions from a filter of the same :attr:`hash_family`; then the
        first salt (stage) costs no hashing at all.
        """
        if prehashed is not None and prehashed.shape[0] == self.hashes_per_row:
            return self._probe_positions(np.ascontiguousarray(prehashed), len(keys))
        h = self._hasher
        col = h.column(keys)
        n = len(col)
        alive = np.ones((len(self._rows), n), dtype=bool)
        cand = np.arange(n)
        for stage in range(h.stages):
            if cand.size == 0:
                break
            if stage == 0 and prehashed is not None:
                if prehashed.shape[1] != n:
                    raise ValueError("prehashed positions do not match the keys")
                pos_t = np.ascontiguousarray(prehashed)
                for r, row in enumerate(self._rows):
                    alive[r] = _test_positions(row, pos_t)
                cand = cand[alive.any(axis=0)]
                continue
            # hash only the keys still alive
            sub = col if cand.size == n else h.subset(col, cand)
            pos = h.stage_positions(h.encode(sub), stage)
            for r, row in enumerate(self._rows):
                live = alive[r, cand]
                if live.any():
                    alive[r, cand[live]] = _test_bits(row, pos[live])
            cand = cand[alive[:, cand].any(axis=0)]
        return alive.any(axis=0)

    def _probe_positions(self, pos_t: np.ndarray, n: int) -> np.ndarray:
        """Membership from all k positions of every key (no hashing): any row says yes."""
        if pos_t.shape[1] != n:
            raise ValueError("prehashed positions do not match the keys")
        out = np.zeros(n, dtype=bool)
        for row in self._rows:
            out |= _test_positions(row, pos_t)
        return out

    def __contains__(self, key: str) -> bool:
        return self.might_contain(key)

    def __len__(self) -> int:
        return self.count

    # -- false-positive model -------------------------------------------------------------
    def theoretical_fpp(self, n: int | None = None) -> float:
        """Expected fpp of a non-member probe: ``1 - prod(1 - fp_row(n_row))``.

        With ``n=None`` the rows' actual add counts are used; otherwise the counts Hudi's add
        policy would give an empty filter of this configuration after ``n`` adds.
        """
        counts = self.row_counts if n is None else self.row_counts_after(int(n))
        m, k = self.bits_per_row, self.hashes_per_row
        rate = theoretical_fpp if self._hashing == PYBLOOM else theoretical_fpp_unpartitioned
        rows = [rate(m, k, c) for c in counts]
        if any(p >= 1.0 for p in rows):
            return 1.0
        # log1p/expm1: the default sizing's rates (~1e-20) must not round to 0
        return -math.expm1(sum(math.log1p(-p) for p in rows))

    def row_counts_after(self, n: int) -> list[int]:
        """Keys each row would hold after ``n`` adds to an empty filter of this shape."""
        if self._type_code == SIMPLE:
            return [int(n)]
        if n <= 0:
            return [0]
        return _DynamicPolicy(nr=self._num_entries, max_nr=self._max_entries).counts(int(n))

    # -- serialization --------------------------------------------------------------------
    def _to_bytes(self) -> bytes:
        k, m = self.hashes_per_row, self.bits_per_row
        header = struct.pack(">iibi", _FILTER_VERSION, k, self._hasher.hash_type, m)
        chunks: list[bytes] = []
        if self._type_code == SIMPLE:
            chunks += [header, self._rows[0].bitarray.tobytes()]
        else:
            # InternalDynamicBloomFilter.write: header, nr, currentNbRecord, rows, each row.
            p = self._policy
            cur32 = (p.current + 2**31) % 2**32 - 2**31  # Java int wraps
            chunks += [header, struct.pack(">iii", p.nr, cur32, len(self._rows))]
            for row in self._rows:
                chunks += [header, row.bitarray.tobytes()]
        p = self._policy
        chunks.append(
            _TRAILER_MAGIC
            + struct.pack(
                ">idiqq?qi",
                _TRAILER_VERSION,
                self._fpp,
                self._num_entries,
                self._max_entries,
                p.current,
                p.reached,
                p.cursor,
                len(self._rows),
            )
            + struct.pack(f">{len(self._rows)}q", *self.row_counts)
        )
        return b"".join(chunks)

    def serialize(self) -> str:
        """Base64 text for the Parquet footer under ``FOOTER_KEY`` (Hudi's serializeToString)."""
        return base64.b64encode(self._to_bytes()).decode("ascii")

    @classmethod
    def deserialize(cls, text: str, type_code: str | None = None) -> HoodieBloomFilter:
        """Inverse of :meth:`serialize` (Hudi's ``BloomFilterFactory.fromString``).

        ``type_code``: the footer's ``TYPE_CODE_KEY`` value; ``None`` (no such key, as
        Hudi writes SIMPLE filters) reads a SIMPLE filter, as Hudi's
        ``readBloomFilterFromMetadata`` does. The hashing is the one the header's hash-type
        byte names (pybloom-live's or Hudi's murmur)."""
        code = SIMPLE if type_code is None else type_code.upper()
        if code not in TYPE_CODES:
            raise ValueError(f"Bloom Filter type code not recognizable {type_code!r}")
        data = base64.b64decode(text)
        off = 0

        def read(fmt: str) -> tuple[Any, ...]:
            nonlocal off
            size = struct.calcsize(fmt)
            if off + size > len(data):
                raise ValueError("truncated bloom filter")
            vals = struct.unpack_from(fmt, data, off)
            off += size
            return vals

        def read_header() -> tuple[int, int, int]:
            """InternalFilter.readFields: version, k, hash type, m."""
            version, k, hash_type, m = read(">iibi")
            if version != _FILTER_VERSION:
                raise ValueError(f"unsupported bloom filter version {version}")
            if hash_type not in _HASHING_OF_TYPE:
                raise ValueError(
                    f"hash type {hash_type} is neither pybloom-live's ({PYBLOOM_HASH_TYPE}) "
                    f"nor Hudi's murmur ({HUDI_MURMUR_HASH_TYPE}); cannot be probed here"
                )
            return k, hash_type, m

        def read_row() -> tuple[int, int, int, bytes]:
            nonlocal off
            k, hash_type, m = read_header()
            nbytes = (m + 7) // 8
            if off + nbytes > len(data):
                raise ValueError("truncated bloom filter")
            bits = data[off : off + nbytes]
            off += nbytes
            return k, hash_type, m, bits

        raw_rows: list[tuple[int, int, int, bytes]] = []
        if code == SIMPLE:
            raw_rows.append(read_row())
        else:
            outer = read_header()  # the outer InternalFilter header (same k, m as the rows)
            nr, _current, n_rows = read(">iii")
            raw_rows.extend(read_row() for _ in range(n_rows))
            if any((k, t, m) != outer for k, t, m, _ in raw_rows):
                raise ValueError("bloom filter rows disagree with the filter's header")
        if not raw_rows or len({(k, t, m) for k, t, m, _ in raw_rows}) != 1:
            raise ValueError("bloom filter rows of different shapes or hashings")
        hashing = _HASHING_OF_TYPE[raw_rows[0][1]]
        if data[off : off + 4] != _TRAILER_MAGIC:
            raise ValueError("bloom filter lacks indexbench's trailer")
        off += 4
        (ver, fpp, num_entries, max_entries, current, reached, cursor, n_rows) = read(">idiqq?qi")
        if ver != _TRAILER_VERSION or n_rows != len(raw_rows):
            raise ValueError("inconsistent bloom filter trailer")
        counts = read(f">{n_rows}q")
        rows: list[Any] = []
        for (k, _t, m, bits), c in zip(raw_rows, counts, strict=True):
            if hashing == PYBLOOM:
                if m % k:
                    raise ValueError("bit vector is not k equal slices")
                row: _Row | _BitRow = _Row(k, m // k, num_entries, fpp)
            else:
                row = _BitRow(m, k, num_entries, fpp)
            ba = bitarray.bitarray(endian="little")
            ba.frombytes(bits)
            del ba[m:]
            row.bitarray = ba
            row.count = int(c)
            rows.append(row)
        if code == SIMPLE:
            policy = _DynamicPolicy(nr=_INT32_MAX, max_nr=0, rows=1, current=current)
        else:
            policy = _DynamicPolicy(
                nr=nr,
                max_nr=max_entries,
                rows=len(rows),
                current=current,
                reached=bool(reached),
                cursor=cursor,
            )
        return cls(code, num_entries, fpp, max_entries, hashing=hashing, _rows=rows,
                   _policy=policy)

    def footer_entries(self) -> dict[str, str]:
        """The footer key-values Hudi's ``HoodieBloomFilterWriteSupport`` writes for this
        filter: the filter text, plus the type code only for a DYNAMIC type (a reader that
        finds no type code reads SIMPLE)."""
        out = {FOOTER_KEY: self.serialize()}
        if DYNAMIC_PREFIX in self._type_code:
            out[TYPE_CODE_KEY] = self._type_code
        return out

    @classmethod
    def from_footer(cls, footer: Any) -> HoodieBloomFilter | None:
        """The filter of a footer's key-values (Hudi's ``readBloomFilterFromMetadata``):
        ``FOOTER_KEY`` (or Hudi's old key), read as the ``TYPE_CODE_KEY`` says or as
        SIMPLE without one; ``None`` if the footer holds no filter."""
        text = footer.get(FOOTER_KEY)
        if text is None:
            text = footer.get(OLD_FOOTER_KEY)
        if text is None:
            return None
        return cls.deserialize(text, footer.get(TYPE_CODE_KEY))

    def __repr__(self) -> str:
        return (
            f"HoodieBloomFilter({self._type_code}, num_entries={self._num_entries}, "
            f"fpp={self._fpp:g}, max_entries={self._max_entries}, rows={self.rows}, "
            f"count={self.count}, m={self.bits_per_row}, k={self.hashes_per_row}, "
            f"hashing={self._hashing})"
        )
