"""A batch of record keys as each hashing reads it, refusing what Hudi refuses.

Callers hand a filter keys as lists, numpy, pandas or Arrow. pybloom-live hashes Python
objects, so its hasher takes a numpy object array; Hudi's hashing hashes a key's Java UTF-8
bytes, so its hasher takes one Arrow array of them. Both refuse null keys (Hudi throws
``NullPointerException``), and Hudi's refuses empty ones (Hadoop's ``HashFunction``), before a
filter's add policy moves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NULL_KEY", "as_key_array", "as_utf8_column", "java_utf8"]

NULL_KEY = "bloom filter keys cannot be null (Hudi throws NullPointerException)"


def as_key_array(keys: Iterable[Any]) -> np.ndarray:
    """Keys (list, numpy, pandas, pyarrow) as a numpy object array, refusing nulls."""
    if isinstance(keys, pa.Array | pa.ChunkedArray):
        if keys.null_count:
            raise TypeError(NULL_KEY)
        return keys.to_numpy(zero_copy_only=False)
    if hasattr(keys, "to_numpy"):
        keys = keys.to_numpy()  # pandas
    arr = keys if isinstance(keys, np.ndarray) and keys.dtype == object else \
        np.asarray(list(keys) if not isinstance(keys, np.ndarray) else keys, dtype=object)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if len(arr) and (arr == None).any():  # noqa: E711 - elementwise, in C
        raise TypeError(NULL_KEY)
    return arr


def java_utf8(key: Any) -> bytes:
    """``key.getBytes(StandardCharsets.UTF_8)`` of a key (non-strings as ``str(key)``, as
    pybloom hashes them). A ``str`` holding surrogates is read as Java's UTF-16 would hold
    it: a pair is one character, a lone surrogate becomes ``?`` (Java's replacement)."""
    if key is None:
        raise TypeError(NULL_KEY)
    text = key if isinstance(key, str) else str(key)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        utf16 = text.encode("utf-16-le", "surrogatepass")
        return utf16.decode("utf-16-le", "surrogatepass").encode("utf-8", "replace")


def as_utf8_column(keys: Iterable[Any]) -> pa.Array:
    """Keys as one Arrow array of the bytes Hudi hashes: strings stay Arrow strings (no
    Python object per key), binary stays bytes; nulls and empty keys refused as Hudi does."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if isinstance(keys, pa.Array):
        if keys.null_count:
            raise TypeError(NULL_KEY)
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
            col = pa.array([java_utf8(k) for k in seq], type=pa.large_binary())
        if col.null_count:
            raise TypeError(NULL_KEY)
    if len(col) and pc.min(pc.binary_length(col)).as_py() == 0:
        raise ValueError("Hudi's bloom filter refuses empty keys (Hadoop's HashFunction: "
                         "key length must be > 0)")
    return col
