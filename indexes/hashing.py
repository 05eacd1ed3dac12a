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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "bucket_ids",
    "java_list_hash",
    "java_list_hash_scalar",
    "java_string_hash",
    "java_string_hash_scalar",
]

INT32_MAX = 0x7FFFFFFF
_MASK32 = 0xFFFFFFFF

# Code points (4 bytes each) materialised per chunk: bounds memory to ~16 MiB per chunk.
_CHUNK_CODE_POINTS = 1 << 22


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
