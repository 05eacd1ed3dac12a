"""Hudi's insert-routing hash, vectorized: ``NumericUtils.getMessageDigestHash("MD5", key)``.

Hudi's ``UpsertPartitioner.getPartition`` draws each insert of a partition into one of
the partition's insert buckets (small files topped up, new file groups) with

    r = floorMod(md5(recordKey), numInserts) / numInserts

against the buckets' cumulative weights (:func:`writeclient.sizing.draw_buckets`).
``md5(recordKey)`` is the MD5 digest of the key's UTF-8 bytes, its first eight bytes read
as a little-endian ``long`` (``NumericUtils.padToLong``). Here MD5 (RFC 1321) runs over
numpy uint32 columns, one step for every row at once, rows grouped by byte length as the
other string hashes of :mod:`indexes.hashing` are; hashlib would take a Python call per
key.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.hashing import string_width_groups

__all__ = ["hudi_insert_hash", "md5_long_fixed"]

_S = np.array([7, 12, 17, 22] * 4 + [5, 9, 14, 20] * 4 + [4, 11, 16, 23] * 4
              + [6, 10, 15, 21] * 4, dtype=np.uint32)
_K = np.array([int(abs(np.sin(np.float64(i + 1))) * 2**32) & 0xFFFFFFFF for i in range(64)],
              dtype=np.uint32)
_INIT = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476)


def _g(i: int) -> int:
    """The message word step ``i`` reads."""
    return (i, (5 * i + 1) % 16, (3 * i + 5) % 16, (7 * i) % 16)[i // 16]


_BLOCK_ROWS = 1 << 15  # rows hashed at once: the working set stays in cache


def md5_long_fixed(mat: np.ndarray) -> np.ndarray:
    """``padToLong(md5(row))`` of rows that are all ``width`` bytes: an (n, width) uint8
    matrix in, int64 out, hashed in blocks of rows (bounded temporaries)."""
    mat = np.asarray(mat, dtype=np.uint8)
    out = np.empty(len(mat), np.int64)
    for a in range(0, len(mat), _BLOCK_ROWS):
        out[a:a + _BLOCK_ROWS] = _md5_long_block(mat[a:a + _BLOCK_ROWS])
    return out


def _md5_long_block(mat: np.ndarray) -> np.ndarray:
    n, width = mat.shape
    blocks = (width + 8) // 64 + 1
    msg = np.zeros((n, blocks * 64), np.uint8)
    msg[:, :width] = mat
    msg[:, width] = 0x80
    msg[:, -8:] = np.frombuffer((width * 8).to_bytes(8, "little"), np.uint8)
    words = np.ascontiguousarray(msg).view("<u4").astype(np.uint32)
    state = [np.full(n, v, np.uint32) for v in _INIT]
    f = np.empty(n, np.uint32)
    tmp = np.empty(n, np.uint32)
    for blk in range(blocks):
        m = words[:, blk * 16:(blk + 1) * 16]
        a, b, c, d = (s.copy() for s in state)
        for i in range(64):
            r = i // 16
            if r == 0:  # (b & c) | (~b & d)
                np.bitwise_and(b, c, out=f)
                np.bitwise_and(~b, d, out=tmp)
            elif r == 1:  # (d & b) | (~d & c)
                np.bitwise_and(d, b, out=f)
                np.bitwise_and(~d, c, out=tmp)
            if r < 2:
                f |= tmp
            elif r == 2:
                np.bitwise_xor(b, c, out=f)
                f ^= d
            else:  # c ^ (b | ~d)
                np.bitwise_or(b, ~d, out=f)
                f ^= c
            f += a
            f += _K[i]
            f += m[:, _g(i)]
            a, d, c = d, c, b
            s = _S[i]
            np.right_shift(f, np.uint32(32) - s, out=tmp)
            f <<= s
            f |= tmp
            b = b + f
        for s, v in zip(state, (a, b, c, d), strict=True):
            s += v
    # digest bytes 0..7 are a then b, each little-endian: the long is b:a
    return ((state[1].astype(np.uint64) << np.uint64(32)) | state[0]).view(np.int64)


def hudi_insert_hash(values: Any) -> np.ndarray:
    """Hudi's MD5 routing hash of each record key (a string column), as int64 (0 for a
    null, which a record key never is)."""
    n, groups = string_width_groups(values)
    out = np.zeros(n, np.int64)
    for rows, mat in groups:
        out[rows] = md5_long_fixed(mat)
    return out
