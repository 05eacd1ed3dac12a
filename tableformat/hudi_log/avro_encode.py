"""Vectorized Avro binary encoding of Arrow columns: no Python loop over records.

Avro's binary encoding of a record is its fields' encodings back to back: ``int`` and
``long`` as zigzag varints, ``float``/``double`` as little-endian IEEE, ``boolean`` as
one byte, ``string``/``bytes`` as a varint length then the bytes, a union as the
varint branch index then the branch's value, a ``fixed`` as its bytes.

How it is vectorized: each field becomes one or more *pieces* — an Arrow binary array
holding, for every row, that part of the row's encoding (built with numpy from the
column's buffers: a varint matrix masked to each value's byte count, the union's index
byte, the little-endian bytes of a float, ...). One call to Arrow's
``binary_join_element_wise`` then concatenates the pieces row by row in C++, so a
record's bytes — and the block's — come out contiguous. A null value is a null piece,
which the join replaces by nothing; its union index piece says ``null``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tableformat.hudi_log.schema import Field

_SEVEN = np.arange(10, dtype=np.uint64) * np.uint64(7)
_VARINT_LIMITS = np.left_shift(np.uint64(1), _SEVEN[1:])  # 2^7 .. 2^63
INT32_MAX = 2**31 - 1


class AvroEncodeError(ValueError):
    """Records that do not fit the schema (a null in a non-null field, a bad cast)."""


@dataclass(frozen=True)
class Piece:
    """One part of every row's encoding: ``array`` (binary, a null row contributes no
    bytes) and each row's byte count (0 where null)."""

    array: pa.Array
    lengths: np.ndarray  # int64


def zigzag(values: np.ndarray) -> np.ndarray:
    """Avro's zigzag mapping of signed ints to unsigned (0, -1, 1, -2 → 0, 1, 2, 3);
    the same bytes for ``int`` and ``long`` since ints are sign-extended first."""
    v = values.astype(np.int64, copy=False)
    return (np.left_shift(v, 1) ^ np.right_shift(v, 63)).view(np.uint64)


def varint_bytes(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each unsigned value's varint (7 bits a byte, low group first, high bit = more):
    its byte count and all bytes back to back."""
    n = len(z)
    if n == 0 or int(z.max()) < 0x80:
        return np.ones(n, np.int64), z.astype(np.uint8)
    count = 1 + np.searchsorted(_VARINT_LIMITS, z, side="right").astype(np.int64)
    width = int(count.max())
    k = np.arange(width)
    groups = (np.right_shift(z[:, None], _SEVEN[:width]) & np.uint64(0x7F)).astype(np.uint8)
    groups |= np.where(k[None, :] < (count - 1)[:, None], np.uint8(0x80), np.uint8(0))
    return count, groups[k[None, :] < count[:, None]]


def _validity(valid: np.ndarray | None) -> pa.Buffer | None:
    return None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))


def piece(lengths: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None) -> Piece:
    """A piece from each row's byte count and the bytes back to back (null rows, if
    ``valid`` is given, keep their bytes in ``data`` but contribute none)."""
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > INT32_MAX:
        raise AvroEncodeError("a piece of the block exceeds 2 GiB (Hudi's blocks are "
                              "int-sized: split the records into several blocks)")
    array = pa.Array.from_buffers(
        pa.binary(), len(lengths),
        [_validity(valid), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
    return Piece(array, lengths if valid is None else np.where(valid, lengths, 0))


def fixed_piece(rows: np.ndarray, valid: np.ndarray | None) -> Piece:
    """A piece of fixed-width values: ``rows`` is (n, width) uint8."""
    n, width = rows.shape
    return piece(np.full(n, width, np.int64), np.ascontiguousarray(rows).reshape(-1), valid)


def varint_piece(z: np.ndarray, valid: np.ndarray | None = None) -> Piece:
    count, data = varint_bytes(z)
    return piece(count, data, valid)


def _valid_mask(array: pa.Array) -> np.ndarray | None:
    if array.null_count == 0:
        return None
    return array.is_valid().to_numpy(zero_copy_only=False)


def _numbers(array: pa.Array, dtype: str) -> np.ndarray:
    """The values of a primitive array as numpy (nulls as 0)."""
    if array.null_count:
        array = array.fill_null(False if pa.types.is_boolean(array.type) else 0)
    return array.to_numpy(zero_copy_only=False).astype(dtype, copy=False)


def _string_pieces(array: pa.Array, valid: np.ndarray | None) -> list[Piece]:
    binary = array.cast(pa.binary()) if array.type != pa.binary() else array
    lengths = pc.binary_length(binary).fill_null(0).to_numpy().astype(np.int64)
    return [varint_piece(zigzag(lengths), valid), Piece(binary, lengths)]


def _decimal_piece(array: pa.Array, size: int, valid: np.ndarray | None) -> Piece:
    """Avro's decimal on ``fixed``: the unscaled value big-endian two's complement in
    ``size`` bytes — the low ``size`` bytes of Arrow's little-endian 16, reversed."""
    raw = np.frombuffer(array.buffers()[1], np.uint8).reshape(-1, 16)
    rows = raw[array.offset:array.offset + len(array), :size][:, ::-1]
    return fixed_piece(rows, valid)


def value_pieces(field: Field, array: pa.Array) -> list[Piece]:
    """The pieces of one field's values (without the union index)."""
    valid = _valid_mask(array)
    kind = field.kind
    if kind == "null":
        return []
    if kind in ("string", "bytes"):
        return _string_pieces(array, valid)
    if kind in ("int", "long", "date"):
        return [varint_piece(zigzag(_numbers(array.view(pa.int32()) if kind == "date"
                                             else array, "int64")), valid)]
    if kind in ("timestamp-micros", "local-timestamp-micros"):
        return [varint_piece(zigzag(_numbers(array.view(pa.int64()), "int64")), valid)]
    if kind in ("float", "double"):
        dtype = "<f4" if kind == "float" else "<f8"
        values = _numbers(array, dtype)
        return [fixed_piece(values.view(np.uint8).reshape(len(array), -1), valid)]
    if kind == "boolean":
        return [fixed_piece(_numbers(array, "uint8").reshape(-1, 1), valid)]
    if kind == "decimal":
        return [_decimal_piece(array, field.size, valid)]
    raise AssertionError(kind)


def union_index_piece(field: Field, array: pa.Array) -> Piece:
    """Each row's union branch as a one-byte varint (branch b is zigzag(b) = 2b)."""
    valid = _valid_mask(array)
    value, null = 2 * field.value_branch, 2 * (1 - field.value_branch)
    data = np.full(len(array), value, np.uint8) if valid is None else \
        np.where(valid, value, null).astype(np.uint8)
    return piece(np.ones(len(array), np.int64), data)


def column(field: Field, values: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column as one array of the field's Arrow type (a safe cast), or an error."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    want = field.arrow_type
    if array.type != want:
        try:
            array = array.cast(want)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise AvroEncodeError(f"column {field.name!r} ({array.type}) cannot be written "
                                  f"as Avro {field.kind}: {e}") from None
    if array.null_count and not field.nullable:
        raise AvroEncodeError(f"column {field.name!r} holds nulls but its Avro type is not "
                              "a union with null")
    return array


def field_pieces(field: Field, values: pa.ChunkedArray | pa.Array) -> list[Piece]:
    """Every piece of one field: the union index (if nullable), then the value."""
    array = column(field, values)
    pieces = [union_index_piece(field, array)] if field.nullable and field.kind != "null" \
        else []
    return pieces + value_pieces(field, array)


def join(pieces: list[Piece], n: int) -> tuple[np.ndarray, pa.Buffer]:
    """Concatenate the pieces row by row: each row's byte count and all rows' bytes."""
    lengths = np.zeros(n, np.int64)
    for p in pieces:
        lengths += p.lengths
    if not pieces or n == 0:
        return lengths, pa.py_buffer(b"")
    if int(lengths.sum()) > INT32_MAX:
        raise AvroEncodeError("the records exceed 2 GiB (Hudi's blocks are int-sized: "
                              "split the records into several blocks)")
    arrays = [p.array for p in pieces]
    joined = pc.binary_join_element_wise(*arrays, pa.scalar(b"", pa.binary()),
                                         null_handling="replace", null_replacement="")
    offsets = np.frombuffer(joined.buffers()[1], np.int32)[joined.offset:joined.offset + n + 1]
    data = joined.buffers()[2]
    return lengths, data.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))


def encode_records(table: pa.Table, fields: list[Field],
                   length_prefix: bool = True) -> tuple[np.ndarray, pa.Buffer]:
    """Each record's Avro encoding, back to back, each after its 4-byte big-endian
    length if ``length_prefix`` (the layout of an Avro data block's records).

    Columns are matched to fields by name; a column missing for a nullable field is
    written as null, extra columns are an error (the schema would not describe them)."""
    n = table.num_rows
    names = set(table.column_names)
    extra = names - {f.name for f in fields}
    if extra:
        raise AvroEncodeError(f"columns {sorted(extra)} are not in the block's schema")
    pieces: list[Piece] = []
    for f in fields:
        if f.name in names:
            pieces += field_pieces(f, table.column(f.name))
        elif f.nullable:
            pieces += field_pieces(f, pa.nulls(n, f.arrow_type))
        else:
            raise AvroEncodeError(f"column {f.name!r} is missing and its Avro type is not "
                                  "a union with null")
    lengths = np.zeros(n, np.int64)
    for p in pieces:
        lengths += p.lengths
    if length_prefix:
        prefix = lengths.astype(">u4").view(np.uint8).reshape(n, 4)
        pieces = [fixed_piece(prefix, None), *pieces]
    return join(pieces, n)
