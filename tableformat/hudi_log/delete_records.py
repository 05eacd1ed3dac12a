"""A delete block's records: Avro ``HoodieDeleteRecordList`` (delete block version 3).

Hudi 0.14 (HUDI-5760) serializes the deleted keys with Avro instead of Kryo:
``{"deleteRecordList": [HoodieDeleteRecord]}``, each record ``recordKey`` and
``partitionPath`` (``["null", "string"]``) and ``orderingVal``, a union of ``null`` and
the value wrappers Hudi's column stats use (``BooleanWrapper``, ``IntWrapper``,
``LongWrapper``, ...; each a record of one field ``value``, so a wrapper's encoding is
its value's). ``HoodieAvroUtils.wrapValueIntoAvro`` picks the wrapper from the Java
type of the ordering value; here it is picked from the Arrow type of the column.

Hudi writes the list with ``SpecificDatumWriter`` through a buffered ``BinaryEncoder``:
one array block — the record count as a varint, the records, then ``0`` — and no block
for an empty list (just ``0``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from tableformat.hudi_log import avro_encode as enc
from tableformat.hudi_log.schema import Field

# HoodieDeleteRecordList.avsc (Hudi 0.14/0.15): orderingVal's union branches
BOOLEAN, INT, LONG, FLOAT, DOUBLE, BYTES, STRING, DATE, DECIMAL, TIME_MICROS, \
    TIMESTAMP_MICROS = range(1, 12)
_WRAPPED = {BOOLEAN: "boolean", INT: "int", LONG: "long", FLOAT: "float", DOUBLE: "double",
            BYTES: "bytes", STRING: "string", DATE: "date", TIME_MICROS: "long",
            TIMESTAMP_MICROS: "long"}
_ARROW_TO_BRANCH = {
    pa.bool_(): BOOLEAN, pa.int8(): INT, pa.int16(): INT, pa.int32(): INT,
    pa.int64(): LONG, pa.float32(): FLOAT, pa.float64(): DOUBLE, pa.binary(): BYTES,
    pa.large_binary(): BYTES, pa.string(): STRING, pa.large_string(): STRING,
    pa.date32(): DATE,
}
_KEY = Field("recordKey", "string", True, 1)
_PARTITION = Field("partitionPath", "string", True, 1)


class DeleteRecordError(ValueError):
    """Delete records Hudi's delete block cannot hold, or bytes that are not one."""


def ordering_branch(dtype: pa.DataType) -> int:
    """The ``orderingVal`` branch Hudi writes for an ordering column of this type.

    Timestamps are their microseconds in a ``LongWrapper``: an Avro record holds a
    ``timestamp-micros`` value as a Java ``Long``, which is what Hudi wraps."""
    if pa.types.is_timestamp(dtype):
        return LONG
    if dtype in _ARROW_TO_BRANCH:
        return _ARROW_TO_BRANCH[dtype]
    raise DeleteRecordError(f"no delete-block ordering value for Arrow type {dtype} "
                            "(supported: bool, integers, float, double, string, binary, "
                            "date, timestamp)")


def _ordering_array(values: pa.Array, branch: int) -> pa.Array:
    if pa.types.is_timestamp(values.type):
        return values.cast(pa.timestamp("us", values.type.tz)).view(pa.int64())
    return values


def encode_delete_records(keys: pa.Array, partitions: pa.Array,
                          ordering_values: pa.Array) -> bytes:
    """The Avro encoding of a ``HoodieDeleteRecordList``, vectorized like data records."""
    n = len(keys)
    if len(partitions) != n or len(ordering_values) != n:
        raise DeleteRecordError("keys, partitions and ordering values differ in length")
    if n == 0:
        return b"\x00"
    branch = ordering_branch(ordering_values.type) if ordering_values.type != pa.null() \
        else 0
    pieces = enc.field_pieces(_KEY, keys) + enc.field_pieces(_PARTITION, partitions)
    valid = None if ordering_values.null_count == 0 else \
        ordering_values.is_valid().to_numpy(zero_copy_only=False)
    index = np.full(n, 2 * branch, np.uint8) if valid is None else \
        np.where(valid, 2 * branch, 0).astype(np.uint8)
    pieces.append(enc.piece(np.ones(n, np.int64), index))
    if branch:
        wrapped = Field("value", _WRAPPED[branch], False)
        values = _ordering_array(ordering_values, branch)
        if values.type != wrapped.arrow_type:
            values = values.cast(wrapped.arrow_type)
        pieces += enc.value_pieces(wrapped, values)
    _, data = enc.join(pieces, n)
    _, head = enc.varint_bytes(enc.zigzag(np.array([n])))
    return head.tobytes() + data.to_pybytes() + b"\x00"


class _Reader:
    """A sequential Avro reader over one datum (a delete list has no per-record length
    prefix, so its records are read one after the other)."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def long(self) -> int:
        shift = result = 0
        while True:
            if self.pos >= len(self.data):
                raise DeleteRecordError("the delete records end inside a varint")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise DeleteRecordError("a varint runs over 10 bytes")

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise DeleteRecordError("a length runs past the delete records")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def value(self, kind: str) -> object:
        if kind in ("int", "long", "date"):
            return self.long()
        if kind == "boolean":
            return self.raw(1) != b"\x00"
        if kind in ("float", "double"):
            return np.frombuffer(self.raw(4 if kind == "float" else 8),
                                 "<f4" if kind == "float" else "<f8")[0].item()
        if kind in ("string", "bytes"):
            b = self.raw(self.long())
            return b.decode("utf-8") if kind == "string" else b
        raise AssertionError(kind)

    def optional_string(self) -> str | None:
        branch = self.long()
        if branch not in (0, 1):
            raise DeleteRecordError(f"a key or partition union index is {branch}")
        return None if branch == 0 else self.value("string")


_BRANCH_TO_ARROW = {BOOLEAN: pa.bool_(), INT: pa.int32(), LONG: pa.int64(),
                    FLOAT: pa.float32(), DOUBLE: pa.float64(), BYTES: pa.binary(),
                    STRING: pa.string(), DATE: pa.date32(), TIME_MICROS: pa.int64(),
                    TIMESTAMP_MICROS: pa.int64()}


def decode_delete_records(data: bytes) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Keys, partitions and ordering values of a ``HoodieDeleteRecordList``.

    Records are read one by one (Avro arrays have no per-item lengths); the ordering
    values become one Arrow array, so a block mixing ordering types (Hudi never writes
    one: a table has one ordering field) is refused."""
    r = _Reader(data)
    keys: list[str | None] = []
    parts: list[str | None] = []
    values: list[object] = []
    branches: set[int] = set()
    while True:
        count = r.long()
        if count == 0:
            break
        if count < 0:  # a block with its byte size (Avro spec); Hudi never writes one
            count = -count
            r.long()
        for _ in range(count):
            keys.append(r.optional_string())
            parts.append(r.optional_string())
            branch = r.long()
            if branch == 0:
                values.append(None)
                continue
            if branch == DECIMAL or branch not in _WRAPPED:
                raise DeleteRecordError(f"orderingVal union branch {branch} is not supported")
            branches.add(branch)
            values.append(r.value(_WRAPPED[branch]))
    if r.pos != len(data):
        raise DeleteRecordError(f"{len(data) - r.pos} bytes after the delete records")
    if len(branches) > 1:
        raise DeleteRecordError(f"delete records mix ordering value types {sorted(branches)}")
    dtype = _BRANCH_TO_ARROW[branches.pop()] if branches else pa.null()
    ordering = pa.array(values, pa.int32() if dtype == pa.date32() else dtype)
    if dtype == pa.date32():
        ordering = ordering.view(pa.date32())
    return pa.array(keys, pa.string()), pa.array(parts, pa.string()), ordering
