"""Setting and testing bit positions in a filter row, for many keys at once, in numpy.

Both hashings end in the same place: absolute positions into a row's little-bit-order
``bitarray`` (Hadoop's ``BloomFilter.write`` order). Adds and probes go through these
functions over the whole batch instead of per key and per bit in Python; which of two
strategies is cheaper depends on how many keys there are against the row's size.
"""

from __future__ import annotations

from typing import Protocol

import bitarray
import numpy as np

__all__ = ["BitRow", "bits_all_set", "set_bits", "slices_all_set"]


class BitRow(Protocol):
    """What these functions read of a row (either hashing's)."""

    bitarray: bitarray.bitarray
    num_bits: int


def set_bits(row: BitRow, positions: np.ndarray) -> None:
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


def bits_all_set(row: BitRow, positions: np.ndarray) -> np.ndarray:
    """Per key (row of ``positions``): are all its bits set?"""
    buf = np.frombuffer(row.bitarray, dtype=np.uint8)
    bits = (buf[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
    return bits.all(axis=1)


def slices_all_set(row: BitRow, pos_t: np.ndarray) -> np.ndarray:
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
