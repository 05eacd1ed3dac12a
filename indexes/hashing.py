"""Hudi's bucket hash, vectorized over numpy/pyarrow arrays.

Hudi's simple bucket index (``BucketIdentifier.getBucketId``) places a record with

    bucket = (hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets

where ``hashKeys`` is a ``java.util.List<String>`` of the index-key field values.
``List.hashCode`` is ``h = 1; for e in list: h = 31*h + (e == null ? 0 : e.hashCode())`` and
``String.hashCode`` is ``h = 0; for c in UTF-16 code units: h = 31*h + c``, both in wrapping
int32 arithmetic. To put records into exactly the bucket Hudi would, we reproduce both bit for
bit, including supplementary characters (an emoji is two UTF-16 surrogates, so it contributes
``h*31*31 + hi*31 + lo``) and NUL characters anywhere in the key.

Vectorization: keys are converted to fixed-width numpy ``U`` arrays (UTF-32 code points) and the
recurrence is run over character *positions*, each step one numpy operation over all rows. Rows
are sorted by true length (``pyarrow.compute.utf8_length``, which counts trailing NULs that
numpy's ``U`` dtype would hide as padding) and processed in chunks of bounded width x rows, so
one very long key never inflates the width of every other row.

Also here: Spark SQL's own ``hash(col)`` (Murmur3 over UTF-8 bytes, Spark's legacy tail), so the
simulator can place rows exactly where a Spark shuffle or Spark bucketing would; and Hadoop's
``MurmurHash`` (MurmurHash2 with Hadoop's tail) chained as Hadoop's bloom ``HashFunction`` chains
it, for bloom filters with Hudi's own bits (``indexbench.bloom.hash=hudi``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "SPARK_HASH_SEED",
    "bucket_ids",
    "hadoop_murmur_chain",
    "hadoop_murmur_chain_fixed",
    "hadoop_murmur_scalar",
    "java_list_hash",
    "java_list_hash_scalar",
    "java_string_hash",
    "java_string_hash_scalar",
    "spark_murmur3_fixed",
    "spark_murmur3_hash",
    "string_width_groups",
]

INT32_MAX = 0x7FFFFFFF
_MASK32 = 0xFFFFFFFF

# Code points (4 bytes each) materialised per chunk: bounds memory to ~16 MiB per chunk.
_CHUNK_CODE_POINTS = 1 << 22
_HORNER_ROWS = 1 << 16  # rows per block of the ASCII String.hashCode


def _to_int32(h: int) -> int:
    """Reinterpret an unsigned 32-bit value as Java's signed int."""
    h &= _MASK32
    return h - (1 << 32) if h & 0x80000000 else h


def java_string_hash_scalar(s: str | None) -> int:
    """Reference ``String.hashCode`` (plain Python loop over UTF-16 code units); tests only.

    ``None`` gives 0, as ``List.hashCode`` does for a null element. Lone surrogates are kept as
    single code units, as Java would hold them.
    """
    if s is None:
        return 0
    data = s.encode("utf-16-le", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | (data[i + 1] << 8))) & _MASK32
    return _to_int32(h)


def java_list_hash_scalar(values: Sequence[str | None]) -> int:
    """Reference ``java.util.List<String>.hashCode`` for one row; tests only."""
    h = 1
    for v in values:
        h = (31 * h + java_string_hash_scalar(v)) & _MASK32
    return _to_int32(h)


def _as_string_array(values: Any) -> pa.Array:
    """Bring any supported column into one pyarrow large_string array (nulls preserved)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if not isinstance(values, pa.Array):
        if isinstance(values, str | bytes):
            raise TypeError("expected a column of strings, got a single string")
        if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
            values = values.to_numpy(dtype=object, na_value=None)  # pandas Series / Index
        arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
        if arr.ndim != 1:
            raise ValueError(f"expected a 1-D column, got shape {arr.shape}")
        if arr.dtype.kind == "U":
            arr = arr.astype(object)
        values = pa.array(arr, type=pa.large_string(), from_pandas=True)
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    if pa.types.is_integer(t):
        # Java's Long.toString agrees with Arrow's integer->string cast.
        values = pc.cast(values, pa.large_string())
    elif pa.types.is_string(t) or pa.types.is_string_view(t):
        values = values.cast(pa.large_string())
    elif not pa.types.is_large_string(t):
        raise TypeError(f"cannot hash a column of type {t}; expected strings")
    return values


def _hash_sorted_chunk(strings: np.ndarray, lens: np.ndarray, width: int) -> np.ndarray:
    """String.hashCode of rows already sorted by ascending length (all lengths <= width)."""
    n = len(strings)
    h = np.zeros(n, dtype=np.uint32)
    if width == 0 or n == 0:
        return h
    cps = strings.astype(f"U{width}").view(np.uint32).reshape(n, width)
    cps = np.ascontiguousarray(cps.T)  # one contiguous row per character position
    # Rows with len > p form a suffix because rows are sorted by length.
    starts = np.searchsorted(lens, np.arange(width), side="right")
    supplementary = bool(cps.max() > 0xFFFF)
    m31 = np.uint32(31)
    for p in range(width):
        s = int(starts[p])
        if s >= n:
            break
        cp = cps[p, s:]
        hs = h[s:]
        if not supplementary:
            h[s:] = hs * m31 + cp
            continue
        sup = cp > 0xFFFF
        if not sup.any():
            h[s:] = hs * m31 + cp
            continue
        # Code point above the BMP -> surrogate pair: h*31^2 + hi*31 + lo (all mod 2^32).
        off = cp - np.uint32(0x10000)
        hi = np.uint32(0xD800) + (off >> np.uint32(10))
        lo = np.uint32(0xDC00) + (off & np.uint32(0x3FF))
        mult = np.where(sup, np.uint32(961), m31)
        add = np.where(sup, hi * m31 + lo, cp)
        h[s:] = hs * mult + add
    return h


def _string_hash_u32(values: Any) -> np.ndarray:
    """String.hashCode of every row as uint32 (null -> 0)."""
    try:
        arr = _as_string_array(values)
    except (pa.ArrowInvalid, UnicodeEncodeError):
        # Lone surrogates cannot be UTF-8 encoded; rare, so the scalar path is acceptable.
        seq = values.tolist() if hasattr(values, "tolist") else list(values)
        seq = [None if (isinstance(v, float) and v != v) else v for v in seq]  # NaN -> null
        return np.array([java_string_hash_scalar(v) for v in seq], dtype=np.int64).astype(np.uint32)
    n = len(arr)
    out = np.zeros(n, dtype=np.uint32)
    if n == 0:
        return out
    offsets, data = _utf8_buffers(arr)
    used = data[int(offsets[0]):int(offsets[-1])]
    if not used.size or int(used.max()) < 0x80:
        # ASCII: one byte = one UTF-16 code unit, so Horner over the byte matrix.
        rows = np.arange(n) if not arr.null_count else np.flatnonzero(
            ~arr.is_null().to_numpy(zero_copy_only=False))
        m31 = np.uint32(31)
        for idx, mat in _width_groups(offsets, data, rows):
            for a in range(0, len(idx), _HORNER_ROWS):  # column-major blocks: cache-friendly
                cols = np.ascontiguousarray(mat[a:a + _HORNER_ROWS].T)
                h = np.zeros(cols.shape[1], np.uint32)
                for col in cols:
                    h *= m31
                    h += col
                out[idx[a:a + _HORNER_ROWS]] = h
        return out
    lens = pc.utf8_length(arr).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    order = np.argsort(lens, kind="stable")
    sorted_lens = lens[order]
    nonempty = int(np.searchsorted(sorted_lens, 0, side="right"))
    if nonempty == n:
        return out  # all empty or null
    strings = arr.to_numpy(zero_copy_only=False)
    i = nonempty
    while i < n:
        # Width class: next power of two of the shortest remaining length, so padding inside a
        # chunk is < 2x; rows per chunk bounded by the code-point budget.
        w_cls = 1 << int(sorted_lens[i] - 1).bit_length()
        end_cls = int(np.searchsorted(sorted_lens, w_cls, side="right"))
        rows = max(1, _CHUNK_CODE_POINTS // w_cls)
        j = min(end_cls, i + rows)
        idx = order[i:j]
        chunk_lens = sorted_lens[i:j]
        out[idx] = _hash_sorted_chunk(strings[idx], chunk_lens, int(chunk_lens[-1]))
        i = j
    return out


def java_string_hash(values: Any) -> np.ndarray:
    """Java ``String.hashCode`` of every row, as int32; ``None``/null rows give 0.

    ``values``: pandas Series, 1-D numpy array (object or ``U``), pyarrow (chunked) string
    array, or any sequence of ``str``/``None``. Integer Arrow columns are hashed as their
    decimal text, as Hudi's key generators stringify them.
    """
    return _string_hash_u32(values).view(np.int32)


def _column_list(columns: Any) -> list[Any]:
    """Normalise ``columns`` to a list of 1-D columns (a single column is accepted too)."""
    if isinstance(columns, str | bytes):
        raise TypeError("columns must be a sequence of columns, not a string")
    if hasattr(columns, "columns") and hasattr(columns, "iloc"):  # pandas DataFrame
        return [columns[c] for c in columns.columns]
    if isinstance(columns, pa.Table | pa.RecordBatch):
        return list(columns.columns)
    if isinstance(columns, pa.Array | pa.ChunkedArray) or (
        hasattr(columns, "to_numpy") and not isinstance(columns, np.ndarray)
    ):
        return [columns]  # one pandas Series / pyarrow array
    if isinstance(columns, np.ndarray):
        if columns.ndim == 1:
            return [columns]
        if columns.ndim == 2:
            return [columns[:, j] for j in range(columns.shape[1])]
        raise ValueError(f"expected 1-D or 2-D array, got shape {columns.shape}")
    cols = list(columns)
    for c in cols:
        if c is None or isinstance(c, str | bytes):
            raise TypeError(
                "columns must be a sequence of array-likes (one per index-key field); "
                "wrap a single column of strings as [column]"
            )
    return cols


def java_list_hash(columns: Any) -> np.ndarray:
    """``java.util.List<String>.hashCode`` of one list per row over several key fields, int32.

    ``columns`` holds one column per index-key field, in the order of
    ``hoodie.bucket.index.hash.field``; row ``i`` hashes ``[col0[i], col1[i], ...]``.
    """
    cols = _column_list(columns)
    if not cols:
        raise ValueError("at least one column is required")
    h: np.ndarray | None = None
    for col in cols:
        sh = _string_hash_u32(col)
        if h is None:
            h = np.full(len(sh), 1, dtype=np.uint32)
        elif len(sh) != len(h):
            raise ValueError("all key columns must have the same length")
        h = h * np.uint32(31) + sh
    assert h is not None
    return h.view(np.int32)


def bucket_ids(columns: Any, num_buckets: int | np.ndarray) -> np.ndarray:
    """Hudi's bucket id ``(hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets``, int32.

    ``num_buckets`` is one count for all rows or one per row (e.g. each row's partition
    bucket count, for tables whose partitions were rescaled separately).
    """
    h = java_list_hash(columns).view(np.uint32) & np.uint32(INT32_MAX)
    if np.isscalar(num_buckets):
        nb_scalar = int(num_buckets)  # type: ignore[arg-type]
        if nb_scalar <= 0 or nb_scalar > INT32_MAX:
            raise ValueError(f"num_buckets must be in 1..{INT32_MAX}, got {nb_scalar}")
        return (h % np.uint32(nb_scalar)).astype(np.int32)
    nb = np.asarray(num_buckets)
    if nb.shape != h.shape:
        raise ValueError(f"per-row num_buckets has shape {nb.shape}, expected {h.shape}")
    if nb.dtype.kind not in "iu":
        raise TypeError("num_buckets must be integers")
    if nb.size and (nb.min() <= 0 or nb.max() > INT32_MAX):
        raise ValueError(f"num_buckets must be in 1..{INT32_MAX}")
    return (h.astype(np.int64) % nb.astype(np.int64)).astype(np.int32)


# --------------------------------------------------------------------------- Spark's hash()
#
# Spark SQL's ``hash(col)`` (``Murmur3Hash``, seed 42) of a string column hashes the UTF-8 bytes
# with ``Murmur3_x86_32.hashUnsafeBytes``: whole little-endian 4-byte words go through the usual
# mixK1/mixH1, but the 0..3 trailing bytes are *each* mixed on their own as a sign-extended byte
# (Spark's pre-2.3 variant, kept for compatibility; standard Murmur3 packs them into one word),
# then fmix with the byte length. A null row leaves the running hash untouched: it is the seed.
# Reproducing it lets the simulator place rows exactly where a Spark shuffle/bucketing would.

_M3_C1 = np.uint32(0xCC9E2D51)
_M3_C2 = np.uint32(0x1B873593)
_M3_N = np.uint32(0xE6546B64)
_M3_F1 = np.uint32(0x85EBCA6B)
_M3_F2 = np.uint32(0xC2B2AE35)
_M3_FIVE = np.uint32(5)
SPARK_HASH_SEED = 42

# Rows per block in spark_murmur3_fixed: keeps the working set (the block's words plus a few
# uint32 row vectors) inside L2 so the ~10 ufunc passes per word do not stream from DRAM.
_M3_BLOCK_BYTES = 1 << 20
# Bytes gathered per group block in spark_murmur3_hash (bounds the temporary byte matrix).
_M3_GATHER_BYTES = 1 << 24


def _m3_mix_k1(k: np.ndarray, tmp: np.ndarray) -> None:
    """In place: k = rotl(k * C1, 15) * C2 (``tmp``: same-shape scratch)."""
    k *= _M3_C1
    np.right_shift(k, 17, out=tmp)
    k <<= 15
    k |= tmp
    k *= _M3_C2


def _m3_mix_h1(h: np.ndarray, k: np.ndarray, tmp: np.ndarray) -> None:
    """In place: h = rotl(h ^ k, 13) * 5 + 0xe6546b64."""
    h ^= k
    np.right_shift(h, 19, out=tmp)
    h <<= 13
    h |= tmp
    h *= _M3_FIVE
    h += _M3_N


def _m3_fmix(h: np.ndarray, length: int, tmp: np.ndarray) -> None:
    """In place: Murmur3's finalisation mix after xor-ing in the byte length."""
    h ^= np.uint32(length)
    for shift, mult in ((16, _M3_F1), (13, _M3_F2)):
        np.right_shift(h, shift, out=tmp)
        h ^= tmp
        h *= mult
    np.right_shift(h, 16, out=tmp)
    h ^= tmp


def _seed_vector(seed: int | np.ndarray, n: int) -> np.ndarray:
    """Per-row uint32 starting hash from a scalar seed or a per-row int32/uint32 array."""
    if np.isscalar(seed):
        return np.full(n, int(seed) & _MASK32, dtype=np.uint32)  # type: ignore[arg-type]
    s = np.asarray(seed)
    if s.shape != (n,):
        raise ValueError(f"per-row seed has shape {s.shape}, expected ({n},)")
    if s.dtype.kind not in "iu":
        raise TypeError("seed must be integers")
    return (s.astype(np.int64) & _MASK32).astype(np.uint32)  # wrap like Java's int


def spark_murmur3_fixed(mat: np.ndarray, seed: int | np.ndarray = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``hash()`` of rows that are all exactly ``width`` bytes, as int32.

    ``mat`` is an (n, width) uint8 byte matrix (e.g. the simulator's fixed-width key matrix),
    each row one string's UTF-8 bytes. ``seed`` is Spark's 42 by default; a per-row array
    chains columns as ``hash(a, b)`` does (pass ``hash(a)`` as the seed of ``b``).
    """
    mat = np.asarray(mat)
    if mat.ndim != 2:
        raise ValueError(f"expected an (n, width) byte matrix, got shape {mat.shape}")
    if mat.dtype != np.uint8:
        if mat.dtype.kind not in "iu" or (mat.size and (mat.min() < 0 or mat.max() > 255)):
            raise TypeError(f"expected uint8 bytes, got {mat.dtype}")
        mat = mat.astype(np.uint8)
    n, width = mat.shape
    out = _seed_vector(seed, n)
    if n == 0:
        return out.view(np.int32)
    nwords, ntail = divmod(width, 4)
    block = max(1, _M3_BLOCK_BYTES // max(width, 1))
    for a in range(0, n, block):
        b = min(n, a + block)
        h = out[a:b]
        tmp = np.empty(b - a, dtype=np.uint32)
        if nwords:
            # Platform.getInt reads little-endian words on every platform Spark runs on.
            words = np.ascontiguousarray(mat[a:b, : 4 * nwords]).view("<u4")
            k = words.astype(np.uint32)  # native-order copy we may overwrite
            _m3_mix_k1(k, np.empty_like(k))
            for j in range(nwords):
                _m3_mix_h1(h, k[:, j], tmp)
        for j in range(4 * nwords, width):
            # Legacy tail: each byte alone, sign-extended (Java's byte -> int).
            kt = mat[a:b, j].view(np.int8).astype(np.int32).view(np.uint32)
            _m3_mix_k1(kt, np.empty_like(kt))
            _m3_mix_h1(h, kt, tmp)
        _m3_fmix(h, width, tmp)
    return out.view(np.int32)


def _utf8_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(int64 offsets of length n+1, uint8 data) of a large_string array, zero-copy."""
    bufs = arr.buffers()
    n = len(arr)
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=arr.offset + n + 1)[arr.offset:]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offsets, data


def _width_groups(offsets: np.ndarray, data: np.ndarray, rows: np.ndarray
                  ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(row indices, (k, width) uint8 byte matrix) of ``rows`` grouped by byte length.

    A (len(data)-width+1, width) strided view, fancy-indexed by row start, gathers each
    row's bytes without building a per-byte index matrix; groups are cut to about
    ``_M3_GATHER_BYTES`` so memory stays bounded. Both string hashes use it.
    """
    lens = np.diff(offsets)
    if not len(rows):
        return
    if len(rows) == len(lens) and (lens == lens[0]).all():
        width, first = int(lens[0]), int(offsets[0])  # one width: the buffer as is
        yield rows, data[first:first + len(rows) * width].reshape(len(rows), width)
        return
    order = rows[np.argsort(lens[rows], kind="stable")]
    sorted_lens = lens[order]
    bounds = np.flatnonzero(np.diff(sorted_lens)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [len(order)]))
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        width = int(sorted_lens[s])
        idx_all = order[s:e]
        if width == 0:
            yield idx_all, np.empty((e - s, 0), np.uint8)
            continue
        windows = np.lib.stride_tricks.sliding_window_view(data, width)
        step = max(1, _M3_GATHER_BYTES // width)
        for a in range(0, e - s, step):
            idx = idx_all[a:a + step]
            yield idx, windows[offsets[idx]]


def string_width_groups(values: Any) -> tuple[int, Iterator[tuple[np.ndarray, np.ndarray]]]:
    """(rows, groups) of a string column: its length and, for its non-null rows, (row
    indices, (k, width) UTF-8 byte matrix) per byte length (other hashes' input)."""
    arr = _as_string_array(values)
    n = len(arr)
    if n == 0:
        return 0, iter(())
    offsets, data = _utf8_buffers(arr)
    rows = np.flatnonzero(~arr.is_null().to_numpy(zero_copy_only=False)) if arr.null_count \
        else np.arange(n)
    return n, _width_groups(offsets, data, rows)


def spark_murmur3_hash(values: Any, seed: int | np.ndarray = SPARK_HASH_SEED) -> np.ndarray:
    """Spark SQL ``hash(col)`` of one string column, bit for bit, as int32; null -> the seed.

    ``values``: pyarrow (chunked) string array, pandas Series, numpy object/``U`` array or a
    sequence of ``str``/``None``. Rows are grouped by UTF-8 byte length and each group is hashed
    by :func:`spark_murmur3_fixed`, so there is one implementation of the algorithm. Integer
    columns are refused: Spark hashes those as ints, not as their text.
    """
    if isinstance(values, pa.Array | pa.ChunkedArray) and pa.types.is_integer(
        values.type.value_type if pa.types.is_dictionary(values.type) else values.type
    ):
        raise TypeError("spark_murmur3_hash hashes strings; Spark hashes integer columns as ints")
    arr = _as_string_array(values)
    n = len(arr)
    out = _seed_vector(seed, n)
    if n == 0:
        return out.view(np.int32)
    per_row_seed = not np.isscalar(seed)
    offsets, data = _utf8_buffers(arr)
    valid = ~arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None

    rows = np.arange(n) if valid is None else np.flatnonzero(valid)
    if len(rows) == 0:
        return out.view(np.int32)  # all null: every row is its seed
    for idx, mat in _width_groups(offsets, data, rows):
        out[idx] = spark_murmur3_fixed(mat, out[idx] if per_row_seed else seed).view(np.uint32)
    return out.view(np.int32)


# ------------------------------------------------------------- Hadoop's MurmurHash (blooms)
#
# Hudi's bloom filters (Hadoop's ``BloomFilter`` and Hudi's port of it) hash a record key's
# UTF-8 bytes with ``org.apache.hadoop.util.hash.MurmurHash``: MurmurHash2 (32-bit, m =
# 0x5bd1e995, r = 24, ``h = seed ^ length``) over little-endian 4-byte words, with Hadoop's own
# tail: the 1..3 trailing bytes are sign-extended (Java's byte -> int) and the *first* of them
# goes highest (``data[len-3] << 16``, ``data[len-2] << 8``, ``data[len-1]``), where the C
# reference puts the last one highest and reads bytes unsigned. Its ``HashFunction`` chains
# the seeds: hash i is ``hash(bytes, hash i-1)``, starting from 0. A word's mix and the tail's
# xor do not depend on the seed, so they are computed once per key for all chained rounds.

_MM2_M = np.uint32(0x5BD1E995)


def hadoop_murmur_scalar(data: bytes, seed: int = 0) -> int:
    """Reference ``MurmurHash.hash(data, data.length, seed)`` as Java's int (plain loop;
    tests only)."""
    m = 0x5BD1E995
    length = len(data)
    h = (seed ^ length) & _MASK32
    nwords = length >> 2
    for i in range(nwords):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = (h * m) & _MASK32
        h ^= k
    left = length - 4 * nwords
    if left:
        for j in range(left):  # first trailing byte highest, each sign-extended
            b = data[4 * nwords + j]
            h ^= ((b - 256 if b > 127 else b) << (8 * (left - 1 - j))) & _MASK32
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return _to_int32(h)


def _murmur_chain_sorted(mat: np.ndarray, lens: np.ndarray, rounds: int,
                         seeds: np.ndarray) -> np.ndarray:
    """Chained Hadoop murmur of rows sorted by ascending byte length: (rounds, rows) uint32.

    ``mat``: (rows, W) uint8, ``W`` a multiple of 4, each row's bytes then zeros. Rows with
    more than ``j`` whole words form a suffix, so word ``j`` is one in-place operation on
    that suffix; a row's words are done once the suffix has passed it, so the tail and the
    final mix run on all rows together. Keys of many lengths cost one pass, not one per
    length.
    """
    rows, width = mat.shape
    out = np.empty((rounds, rows), dtype=np.uint32)
    nwords = lens >> 2
    ntail = lens & 3
    max_words = int(nwords[-1]) if rows else 0
    mixed = None
    if max_words:
        k = np.ascontiguousarray(mat[:, :4 * max_words]).view("<u4").astype(np.uint32)
        k *= _MM2_M
        k ^= k >> np.uint32(24)
        k *= _MM2_M
        mixed = np.ascontiguousarray(k.T)  # one contiguous row per word position
    starts = np.searchsorted(nwords, np.arange(max_words), side="right").tolist()
    has_tail = ntail > 0
    tail = None
    if has_tail.any():
        # Hadoop's tail: first trailing byte highest, each sign-extended (Java byte -> int)
        tail = np.zeros(rows, dtype=np.uint32)
        at = (nwords << 2)[:, None] + np.arange(3)
        sext = np.take_along_axis(mat, np.minimum(at, width - 1), axis=1)
        sext = sext.view(np.int8).astype(np.int32).view(np.uint32)
        for j in range(3):
            live = ntail > j
            shift = (8 * np.maximum(ntail - 1 - j, 0)).astype(np.uint32)
            tail ^= np.where(live, sext[:, j] << shift, np.uint32(0))
        if has_tail.all():
            has_tail = None  # no masking needed
    lens32 = lens.astype(np.uint32)
    tmp = np.empty(rows, dtype=np.uint32)
    prev = seeds
    for r in range(rounds):
        h = out[r]
        np.bitwise_xor(prev, lens32, out=h)
        for j, s in enumerate(starts):
            hs = h[s:]
            hs *= _MM2_M
            hs ^= mixed[j, s:]
        if tail is not None:
            if has_tail is None:
                h ^= tail
                h *= _MM2_M
            else:
                np.bitwise_xor(h, tail, out=tmp)
                tmp *= _MM2_M
                np.copyto(h, tmp, where=has_tail)
        np.right_shift(h, 13, out=tmp)
        h ^= tmp
        h *= _MM2_M
        np.right_shift(h, 15, out=tmp)
        h ^= tmp
        prev = h
    return out


def hadoop_murmur_chain_fixed(mat: np.ndarray, rounds: int = 1,
                              seed: int | np.ndarray = 0) -> np.ndarray:
    """Hadoop's chained MurmurHash of rows that are all ``width`` bytes: (rounds, n) int32.

    ``mat``: (n, width) uint8, one key's bytes a row. Round 0 hashes with ``seed`` (a scalar
    or one per row), round i with round i-1's hash: ``HashFunction.hash``'s ``initval``. The
    output is one contiguous row per round (a bloom filter tests round by round).
    """
    mat = np.asarray(mat)
    if mat.ndim != 2:
        raise ValueError(f"expected an (n, width) byte matrix, got shape {mat.shape}")
    if mat.dtype != np.uint8:
        raise TypeError(f"expected uint8 bytes, got {mat.dtype}")
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    n, width = mat.shape
    out = np.empty((rounds, n), dtype=np.uint32)
    if n == 0 or rounds == 0:
        return out.view(np.int32)
    seeds = _seed_vector(seed, n)
    padded = -(-width // 4) * 4
    lens = np.full(n, width, dtype=np.int64)
    block = max(1, _M3_BLOCK_BYTES // max(padded, 1))
    for a in range(0, n, block):
        b = min(n, a + block)
        chunk = mat[a:b]
        if padded != width:
            chunk = np.pad(chunk, ((0, 0), (0, padded - width)))
        out[:, a:b] = _murmur_chain_sorted(chunk, lens[a:b], rounds, seeds[a:b])
    return out.view(np.int32)


def _as_bytes_array(values: Any) -> pa.Array:
    """A column as one large_string or large_binary array (binary columns hash as is)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array) and (pa.types.is_binary(values.type)
                                         or pa.types.is_large_binary(values.type)):
        return values.cast(pa.large_binary())
    return _as_string_array(values)


def hadoop_murmur_chain(values: Any, rounds: int = 1, seed: int | np.ndarray = 0
                        ) -> np.ndarray:
    """Hadoop's chained MurmurHash of a column of keys' UTF-8 bytes: (rounds, n) int32.

    ``values``: pyarrow string or binary array (binary: the bytes as they are), pandas
    Series, numpy array or sequence of ``str``. Rows are sorted by byte length and hashed in
    chunks of one width class (lengths within 2x of each other, about ``_M3_BLOCK_BYTES``
    of padded bytes), all lengths of a chunk in one pass. Nulls are refused (Hadoop's
    ``Key`` of a null array throws).
    """
    if rounds < 0:
        raise ValueError("rounds must be >= 0")
    arr = _as_bytes_array(values)
    if arr.null_count:
        raise TypeError("cannot hash null keys")
    n = len(arr)
    out = np.empty((rounds, n), dtype=np.uint32)
    if n == 0 or rounds == 0:
        return out.view(np.int32)
    seeds = _seed_vector(seed, n)
    offsets, data = _utf8_buffers(arr)
    lens = np.diff(offsets)
    same = bool((lens == lens[0]).all())
    order = np.arange(n) if same else np.argsort(lens, kind="stable")
    sorted_lens = lens if same else lens[order]
    top = int(sorted_lens[-1])
    # one zero-padded copy of the bytes so every row's window of a chunk's width exists
    first = int(offsets[0])
    buf = np.zeros(int(offsets[-1]) - first + top + 4, dtype=np.uint8)
    buf[: int(offsets[-1]) - first] = data[first:int(offsets[-1])]
    i = 0
    while i < n:
        w_cls = max(4, 1 << max(0, int(sorted_lens[i]) - 1).bit_length())
        end_cls = int(np.searchsorted(sorted_lens, w_cls, side="right"))
        width = -(-int(sorted_lens[end_cls - 1]) // 4) * 4 or 4
        j = min(end_cls, i + max(1, _M3_BLOCK_BYTES // width))
        idx = order[i:j]
        chunk_lens = sorted_lens[i:j]
        windows = np.lib.stride_tricks.sliding_window_view(buf, width)
        mat = windows[offsets[idx] - first]  # (rows, width) copy
        mat[np.arange(width) >= chunk_lens[:, None]] = 0  # bytes of the next keys
        h = _murmur_chain_sorted(mat, chunk_lens, rounds, seeds[idx])
        if same:
            out[:, i:j] = h
        else:
            out[:, idx] = h
        i = j
    return out.view(np.int32)
