"""Vectorized Avro binary decoding of an Avro data block's records into Arrow.

The records of a data block are ``[int32 big-endian length][Avro record]`` back to back.
Decoding runs *field by field over all records at once*: a cursor array holds each
record's read position, and every field is read for every record with numpy — a union
index byte, a zigzag varint (one byte position at a time, each time only for the
varints that continue), the little-endian bytes of a float (a sliding-window view of
the block, so no index matrix), a string's length then an Arrow ``binary_view``
pointing into the block (cast to a plain string array by Arrow in C++, which copies
each value once). At the end each cursor must sit exactly at its record's end, which
checks every length prefix against the schema.

The one step per record in Python is :func:`record_starts`: where record *i + 1* starts
depends on record *i*'s length prefix, a chain no numpy operation follows without
pointer-jumping over every byte offset (work of order bytes × log records, slower than
the chain itself). It is one ``struct.unpack_from`` per record, ~0.25 µs, a small part
of the decode.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from numpy.lib.stride_tricks import sliding_window_view

from tableformat.hudi_log.schema import Field, arrow_schema

_INT = struct.Struct(">i")


class AvroDecodeError(ValueError):
    """Bytes that are not the Avro encoding of the schema's records."""


def record_starts(content: bytes | memoryview, start: int, count: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Walk ``count`` length-prefixed records from ``start``: each record's first byte
    and its length. Refuses a prefix that is negative or runs past the content."""
    unpack = _INT.unpack_from
    size = len(content)
    if count < 0 or 4 * count > size - start:  # each record takes 4 bytes at least
        raise AvroDecodeError(f"{count} records cannot fit the block's {size} bytes")
    prefixes: list[int] = []
    add = prefixes.append
    p = start
    try:
        for _ in range(count):
            add(p)
            p += 4 + unpack(content, p)[0]
    except struct.error:
        raise AvroDecodeError(f"record {len(prefixes) - 1} of {count}: its length prefix at "
                              f"byte {p} runs past the block's content ({size} bytes)") from None
    s = np.array(prefixes, np.int64) + 4
    n = np.diff(np.append(s, p + 4)) - 4
    if count and (n.min() < 0 or p > size):
        bad = int(np.argmax((n < 0) | (s + n > size)))
        raise AvroDecodeError(f"record {bad} of {count}: length {int(n[bad])} at byte "
                              f"{int(s[bad]) - 4} does not fit the block's {size} bytes")
    if p != size:
        raise AvroDecodeError(f"{size - p} bytes after the block's {count} records")
    return s, n


class Cursor:
    """The read position of every record, over the block's bytes (never copied)."""

    def __init__(self, content: bytes | memoryview, starts: np.ndarray):
        self.raw = content
        self.buf = np.frombuffer(content, np.uint8)
        self.size = len(content)
        self.pos = starts.copy()

    def gather(self, pos: np.ndarray, width: int) -> np.ndarray:
        """``width`` bytes from each position, (n, width) uint8; bytes past the end of
        the content read as its last byte (a read that needs them is caught later, when
        the cursors disagree with the records' length prefixes)."""
        limit = self.size - width
        if limit < 0:
            return np.take(self.buf, pos[:, None] + np.arange(width), mode="clip")
        # a sliding window view: indexing copies ``width`` bytes a row, no index matrix
        out = sliding_window_view(self.buf, width)[np.minimum(pos, limit)]
        tail = pos > limit
        if tail.any():
            out[tail] = np.take(self.buf, pos[tail, None] + np.arange(width), mode="clip")
        return out

    def check(self, pos: np.ndarray) -> None:
        """Refuse a read that starts at or after the end of the content."""
        if len(pos) and int(pos.max()) >= self.size:
            raise AvroDecodeError("a record's fields run past the end of the block")

    def varint(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The unsigned varint at each position: its value and byte count. Reads one
        byte position at a time, each time only for the varints not finished yet."""
        self.check(pos)
        first = self.buf[pos]
        value = (first & 0x7F).astype(np.uint64)
        count = np.ones(len(pos), np.int64)
        more = np.flatnonzero(first >= 0x80)
        for k in range(1, 10):
            if more.size == 0:
                return value, count
            b = np.take(self.buf, pos[more] + k, mode="clip")
            value[more] |= np.left_shift((b & 0x7F).astype(np.uint64), np.uint64(7 * k))
            count[more] += 1
            more = more[b >= 0x80]
        if more.size:
            raise AvroDecodeError("a varint runs over 10 bytes")
        return value, count

    def long(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zigzag-decoded longs at each position and their byte counts."""
        z, count = self.varint(pos)
        value = np.right_shift(z, np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)
        return value, count

    def fixed(self, pos: np.ndarray, width: int) -> np.ndarray:
        """``width`` bytes at each position, (n, width) uint8."""
        self.check(pos)
        return self.gather(pos, width)

    def _views(self, start: np.ndarray, length: np.ndarray) -> np.ndarray:
        """Arrow binary views of the values at ``start``: per value (int32 LE) its
        length, then up to 12 bytes inline, or its first 4 bytes, buffer 0 and its
        offset in the block."""
        m = len(start)
        head = self.gather(start, 12)
        views = np.empty((m, 4), np.int32)
        views[:, 0] = length
        short = length <= 12
        if short.any():
            head &= np.where(np.arange(12)[None, :] < length[:, None], np.uint8(0xFF),
                             np.uint8(0))
        inline = head.view(np.int32)
        if short.all():
            views[:, 1:] = inline
        elif not short.any():
            views[:, 1], views[:, 2], views[:, 3] = inline[:, 0], 0, start
        else:
            views[:, 1] = inline[:, 0]
            views[:, 2] = np.where(short, inline[:, 1], 0)
            views[:, 3] = np.where(short, inline[:, 2], start)
        return views

    def binary(self, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """Length-prefixed bytes at each position as an Arrow binary array, and the
        bytes each value took (varint + data)."""
        length, count = self.long(pos)
        start = pos + count
        if len(length) and (length.min() < 0 or int((start + length).max()) > self.size):
            raise AvroDecodeError("a string or bytes length runs past its record")
        views = self._views(start, length)
        array = pa.Array.from_buffers(pa.binary_view(), len(pos),
                                      [None, pa.py_buffer(views), pa.py_buffer(self.raw)])
        return array.cast(pa.binary()), count + length


def _with_nulls(values: pa.Array, valid: np.ndarray | None, n: int) -> pa.Array:
    """Spread the values of the valid rows over all ``n`` rows (nulls elsewhere)."""
    if valid is None:
        return values
    index = np.full(n, -1, np.int64)
    index[valid] = np.arange(int(valid.sum()))
    return values.take(pa.array(index, mask=~valid))


def _values(cur: Cursor, field: Field, pos: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """The values of ``field`` at ``pos`` and the bytes each took."""
    kind, m = field.kind, len(pos)
    if kind in ("int", "long", "date", "timestamp-micros", "local-timestamp-micros"):
        v, count = cur.long(pos)
        if kind in ("int", "date"):
            if len(v) and (v.min() < -(2**31) or v.max() > 2**31 - 1):
                raise AvroDecodeError(f"field {field.name!r}: an int out of 32-bit range")
            v = v.astype(np.int32)
        return pa.array(v).view(field.arrow_type), count
    if kind in ("float", "double"):
        width = 4 if kind == "float" else 8
        v = cur.fixed(pos, width).view("<f4" if width == 4 else "<f8").reshape(m)
        return pa.array(v.astype(v.dtype.newbyteorder("="))), np.full(m, width, np.int64)
    if kind == "boolean":
        cur.check(pos)
        v = cur.buf[pos]
        if len(v) and v.max() > 1:
            raise AvroDecodeError(f"field {field.name!r}: a boolean byte is not 0 or 1")
        return pa.array(v.astype(bool)), np.ones(m, np.int64)
    if kind in ("string", "bytes"):
        array, count = cur.binary(pos)
        if kind == "string":
            try:
                array = array.cast(pa.string())
            except pa.ArrowInvalid as e:
                raise AvroDecodeError(f"field {field.name!r}: {e}") from None
        return array, count
    if kind == "decimal":
        be = cur.fixed(pos, field.size)
        le = np.where((be[:, :1] >= 0x80), np.uint8(0xFF), np.uint8(0)).repeat(16, axis=1)
        le[:, :field.size] = be[:, ::-1]
        return pa.Array.from_buffers(field.arrow_type, m, [None, pa.py_buffer(le)]), \
            np.full(m, field.size, np.int64)
    if kind == "null":
        return pa.nulls(m), np.zeros(m, np.int64)
    raise AssertionError(kind)


def read_field(cur: Cursor, field: Field, n: int) -> pa.Array:
    """Decode ``field`` for every record and advance the cursors past it."""
    try:
        return _read_field(cur, field, n)
    except AvroDecodeError as e:
        if str(e).startswith("field "):
            raise
        raise AvroDecodeError(f"field {field.name!r}: {e}") from None


def _read_field(cur: Cursor, field: Field, n: int) -> pa.Array:
    valid = None
    if field.nullable and field.kind != "null":
        index, count = cur.long(cur.pos)
        valid = index == field.value_branch
        if not (valid | (index == 1 - field.value_branch)).all():
            raise AvroDecodeError(f"field {field.name!r}: a union index is not 0 or 1")
        cur.pos += count
        if valid.all():
            valid = None
    pos = cur.pos if valid is None else cur.pos[valid]
    values, taken = _values(cur, field, pos)
    if valid is None:
        cur.pos += taken
    else:
        cur.pos[valid] += taken
    if field.kind == "null":
        return pa.nulls(n)
    return _with_nulls(values, valid, n)


def decode_records(content: bytes | memoryview, start: int, count: int,
                   fields: list[Field]) -> pa.Table:
    """``count`` length-prefixed Avro records from ``content[start:]`` as a table."""
    starts, lengths = record_starts(content, start, count)
    cur = Cursor(content, starts)
    columns = [read_field(cur, f, count) for f in fields]
    ends = starts + lengths
    if count and not np.array_equal(cur.pos, ends):
        bad = int(np.argmax(cur.pos != ends))
        raise AvroDecodeError(f"record {bad}: the schema's fields take "
                              f"{int(cur.pos[bad] - starts[bad])} bytes, its length prefix "
                              f"says {int(lengths[bad])}")
    return pa.Table.from_arrays(columns, schema=arrow_schema(fields))
