"""XXH32 of record keys, vectorized over numpy/pyarrow arrays: Hudi's consistent-hashing key hash.

Hudi's consistent hashing bucket index (``ConsistentBucketIdentifier``) hashes a record's
index-key field values, joined with ``""``, with ``HashID.getXXHash32(key, 0)`` (standard XXH32
of the key's UTF-8 bytes) and looks the value masked with ``Integer.MAX_VALUE`` up on the
partition's hash ring. To place records on exactly the node Hudi would, we reproduce XXH32 bit
for bit. As for the murmur hashes in :mod:`indexes.hashing`, rows are grouped by UTF-8 byte
length; every row of a group has the same stripes, words and tail bytes, so each step is one
uint32 numpy operation over all rows of the group and tagging a batch has no per-row Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes.hashing import (
    INT32_MAX,
    _as_string_array,
    _column_list,
    _utf8_buffers,
    _width_groups,
)

__all__ = ["consistent_hash", "xxhash32"]

_MASK32 = 0xFFFFFFFF
_P1 = np.uint32(2654435761)
_P2 = np.uint32(2246822519)
_P3 = np.uint32(3266489917)
_P4 = np.uint32(668265263)
_P5 = np.uint32(374761393)

# Bytes of key matrix hashed per block: the block's words and its few uint32 row vectors stay
# in L2, so the ~8 ufunc passes per stripe do not stream from DRAM.
_BLOCK_BYTES = 1 << 20


def _rotl(x: np.ndarray, r: int, tmp: np.ndarray) -> None:
    """In place: x = rotl32(x, r) (``tmp``: same-shape uint32 scratch)."""
    np.right_shift(x, 32 - r, out=tmp)
    x <<= r
    x |= tmp


def _xxh32_fixed(mat: np.ndarray, seed: int) -> np.ndarray:
    """XXH32 of each row of an (n, width) uint8 matrix (every key ``width`` bytes), uint32."""
    n, width = mat.shape
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out
    seed &= _MASK32
    nstripes, rem = divmod(width, 16)
    nwords = rem // 4  # then width - word_end (0..3) tail bytes
    word_end = 16 * nstripes + 4 * nwords
    block = max(1, _BLOCK_BYTES // max(width, 1))
    for a in range(0, n, block):
        b = min(n, a + block)
        rows = b - a
        tmp = np.empty(rows, dtype=np.uint32)
        words = None
        if word_end:
            # xxHash reads little-endian words on every platform.
            raw = np.ascontiguousarray(mat[a:b, :word_end]).view("<u4")
            words = raw.astype(np.uint32, copy=False)  # only read: may be the Arrow buffer
        if nstripes:
            acc = np.empty((rows, 4), dtype=np.uint32)
            acc[:] = [(seed + int(_P1) + int(_P2)) & _MASK32, (seed + int(_P2)) & _MASK32,
                      seed, (seed - int(_P1)) & _MASK32]
            lane = np.empty((rows, 4), dtype=np.uint32)
            ltmp = np.empty((rows, 4), dtype=np.uint32)
            for s in range(nstripes):
                np.multiply(words[:, 4 * s:4 * s + 4], _P2, out=lane)
                acc += lane
                _rotl(acc, 13, ltmp)
                acc *= _P1
            h = np.ascontiguousarray(acc[:, 0])
            for i, r in ((0, 1), (1, 7), (2, 12), (3, 18)):
                v = np.ascontiguousarray(acc[:, i]) if i else h
                _rotl(v, r, tmp)
                if i:
                    h += v
        else:
            h = np.full(rows, (seed + int(_P5)) & _MASK32, dtype=np.uint32)
        h += np.uint32(width & _MASK32)
        for j in range(4 * nstripes, 4 * nstripes + nwords):
            np.multiply(words[:, j], _P3, out=tmp)
            h += tmp
            _rotl(h, 17, tmp)
            h *= _P4
        for j in range(word_end, width):
            tmp[:] = mat[a:b, j]
            tmp *= _P5
            h += tmp
            _rotl(h, 11, tmp)
            h *= _P1
        for shift, mult in ((15, _P2), (13, _P3)):
            np.right_shift(h, shift, out=tmp)
            h ^= tmp
            h *= mult
        np.right_shift(h, 16, out=tmp)
        h ^= tmp
        out[a:b] = h
    return out


def _java_utf8(s: str) -> bytes:
    """Java's ``String.getBytes(UTF_8)``: surrogate pairs combined, lone surrogates -> ``?``."""
    s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return s.encode("utf-8", "replace")


def _string_array(values: Any) -> pa.Array:
    """:func:`indexes.hashing._as_string_array`, plus numpy/pandas integer columns (as text)."""
    kind = getattr(getattr(values, "dtype", None), "kind", None)
    if kind in ("i", "u") and not isinstance(values, pa.Array | pa.ChunkedArray):
        values = pa.array(values)  # then Arrow's int -> string cast, = Java's Long.toString
    return _as_string_array(values)


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _python_joined(cols: list[Any]) -> pa.Array:
    """Keys with lone surrogates (not UTF-8 encodable): join and encode per row, as Java would.

    Rare, so the per-row path is acceptable; columns that Arrow can convert go through it.
    """
    lists = []
    for col in cols:
        try:
            lists.append(_string_array(col).to_pylist())
        except (pa.ArrowInvalid, UnicodeEncodeError):
            lists.append(col.tolist() if hasattr(col, "tolist") else list(col))
    if len({len(x) for x in lists}) > 1:
        raise ValueError("all key columns must have the same length")
    keys = []
    for row in zip(*lists, strict=True):
        if any(_is_null(v) for v in row):
            raise ValueError("cannot hash a null key: Hudi record keys are never null")
        keys.append(_java_utf8("".join(str(v) for v in row)))
    return pa.array(keys, type=pa.large_binary())


def _joined_keys(cols: list[Any]) -> pa.Array:
    """One large_string (or large_binary) array of the rows' field values joined with ``""``."""
    if not cols:
        raise ValueError("at least one column is required")
    try:
        arrs = [_string_array(c) for c in cols]
    except (pa.ArrowInvalid, UnicodeEncodeError):
        return _python_joined(cols)
    if len({len(a) for a in arrs}) > 1:
        raise ValueError("all key columns must have the same length")
    for i, a in enumerate(arrs):
        if a.null_count:
            row = int(pc.index(a.is_null(), True).as_py())
            raise ValueError(
                f"cannot hash a null key (column {i}, row {row}): Hudi record keys are never null"
            )
    if len(arrs) == 1:
        return arrs[0]
    return pc.binary_join_element_wise(*arrs, pa.scalar("", pa.large_string()))


def _hash_array(arr: pa.Array, seed: int) -> np.ndarray:
    n = len(arr)
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out
    offsets, data = _utf8_buffers(arr)
    for idx, mat in _width_groups(offsets, data, np.arange(n)):
        out[idx] = _xxh32_fixed(mat, seed)
    return out


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 31) <= seed <= _MASK32:
        raise ValueError(f"seed must fit in 32 bits, got {seed}")
    return seed & _MASK32  # a negative Java int seed wraps to its unsigned bits


def xxhash32(values: Any, seed: int = 0) -> np.ndarray:
    """Standard XXH32 of each string's UTF-8 bytes, as uint32.

    ``values``: pyarrow (chunked) string array, pandas Series, numpy object/``U`` array or a
    sequence of ``str``; integer Arrow columns are hashed as their decimal text (Java's
    ``Long.toString``). ``seed`` is a 32-bit seed (a negative Java ``int`` wraps). Null rows
    raise ``ValueError``.
    """
    return _hash_array(_joined_keys([values]), _check_seed(seed))


def consistent_hash(columns: Any, seed: int = 0) -> np.ndarray:
    """Hudi's consistent-hashing key hash, ``getXXHash32(String.join("", keys), 0) & MAX``, int64.

    ``columns`` holds one column per index-key field (a single column is accepted too); row
    ``i`` hashes the concatenation of ``col0[i], col1[i], ...``. The result is in
    ``0..Integer.MAX_VALUE``, the value Hudi looks up on the hash ring.
    """
    cols = _column_list(columns)
    h = _hash_array(_joined_keys(cols), _check_seed(seed))
    return (h & np.uint32(INT32_MAX)).astype(np.int64)
