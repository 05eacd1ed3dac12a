"""The Avro record schema of a data block, flattened to what the vectorized codec needs.

A data block's ``SCHEMA`` header is the writer schema *with* Hudi's five meta fields
(``HoodieAvroUtils.addMetadataFields``: each ``{"name": ..., "type": ["null", "string"],
"doc": "", "default": null}``, before the data fields), and every record in the block
carries them. :func:`with_meta_fields` makes that schema from the table's schema as
``tableformat.avro_schema`` writes it into commit metadata.

The codec supports every top-level Avro type ``tableformat.avro_schema`` emits for a
flat Spark schema — ``null``, ``boolean``, ``int``, ``long``, ``float``, ``double``,
``string``, ``bytes``, ``date``, ``timestamp-micros``, ``local-timestamp-micros`` and
``decimal`` on ``fixed`` — each optionally in a two-branch union with ``null``. Nested
records, arrays and maps are refused with :class:`UnsupportedAvroSchema`: the benchmark
never writes them, and their per-item layout would need another encoder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

META_FIELDS = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key",
               "_hoodie_partition_path", "_hoodie_file_name")


class UnsupportedAvroSchema(ValueError):
    """A schema the log block codec does not encode (nested types, other unions)."""


@dataclass(frozen=True)
class Field:
    """One top-level field: its Avro kind, whether it is a ``null`` union and which
    branch holds the value."""

    name: str
    kind: str  # boolean int long float double string bytes date timestamp-micros
    # local-timestamp-micros decimal null
    nullable: bool
    value_branch: int = 0  # union branch of the value (the null branch is the other one)
    size: int = 0  # fixed size of a decimal
    precision: int = 0
    scale: int = 0

    @property
    def arrow_type(self) -> pa.DataType:
        return _ARROW[self.kind] if self.kind != "decimal" else \
            pa.decimal128(self.precision, self.scale)


_ARROW: dict[str, pa.DataType] = {
    "null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "string": pa.string(),
    "bytes": pa.binary(), "date": pa.date32(),
    "timestamp-micros": pa.timestamp("us", tz="UTC"),
    "local-timestamp-micros": pa.timestamp("us"),
}
_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "string", "bytes")
_LOGICAL = {("int", "date"): "date", ("long", "timestamp-micros"): "timestamp-micros",
            ("long", "local-timestamp-micros"): "local-timestamp-micros"}


def _kind(avro: Any, where: str) -> tuple[str, dict]:
    """The codec's kind for a non-union Avro type (and the decimal's parameters)."""
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return avro, {}
        raise UnsupportedAvroSchema(f"{where}: Avro type {avro!r} is not supported by the "
                                    "log block codec (named types are refused)")
    if isinstance(avro, dict):
        base, logical = avro.get("type"), avro.get("logicalType")
        if logical is None and base in _PRIMITIVES:
            return _kind(base, where)
        if (base, logical) in _LOGICAL:
            return _LOGICAL[base, logical], {}
        if base == "fixed" and logical == "decimal":
            precision, scale = int(avro["precision"]), int(avro.get("scale", 0))
            if precision > 38 or int(avro["size"]) > 16:
                raise UnsupportedAvroSchema(f"{where}: decimal({precision},{scale}) is wider "
                                            "than 38 digits (Arrow decimal128)")
            return "decimal", {"size": int(avro["size"]), "precision": precision,
                               "scale": scale}
    raise UnsupportedAvroSchema(
        f"{where}: Avro type {json.dumps(avro)} is not supported by the log block codec "
        "(supported: null, boolean, int, long, float, double, string, bytes, date, "
        "timestamp-micros, local-timestamp-micros, decimal on fixed; each optionally in "
        "a union with null)")


def parse_fields(schema_json: str) -> list[Field]:
    """The top-level fields of an Avro record schema, or :class:`UnsupportedAvroSchema`."""
    schema = json.loads(schema_json)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise UnsupportedAvroSchema("a data block's schema must be an Avro record")
    fields = []
    for f in schema["fields"]:
        avro, where = f["type"], f"field {f['name']!r}"
        if isinstance(avro, list):
            if len(avro) != 2 or avro.count("null") != 1:
                raise UnsupportedAvroSchema(f"{where}: only unions of null and one type are "
                                            f"supported, not {json.dumps(avro)}")
            branch = 1 - avro.index("null")
            kind, extra = _kind(avro[branch], where)
            fields.append(Field(f["name"], kind, True, branch, **extra))
        else:
            kind, extra = _kind(avro, where)
            fields.append(Field(f["name"], kind, kind == "null", **extra))
    return fields


def arrow_schema(fields: list[Field]) -> pa.Schema:
    """The Arrow schema a decoded data block has (union with null → nullable)."""
    return pa.schema([pa.field(f.name, f.arrow_type, nullable=f.nullable) for f in fields])


def _meta_field(name: str) -> dict:
    # HoodieAvroUtils.addMetadataFields: new Schema.Field(name, METADATA_FIELD_SCHEMA, "",
    # JsonProperties.NULL_VALUE) with METADATA_FIELD_SCHEMA = union(null, string)
    return {"name": name, "type": ["null", "string"], "doc": "", "default": None}


def with_meta_fields(schema_json: str) -> str:
    """The writer schema with Hudi's meta fields first, as a data block's ``SCHEMA``
    header holds it (unchanged if it already starts with them).

    Serialized compactly in the key order Avro Java's ``Schema.toString()`` uses
    (``type``, ``name``, ``namespace``, ``doc``, ``fields``; per field ``name``,
    ``type``, ``doc``, ``default``), which is also how ``tableformat.avro_schema``
    writes the table's schema."""
    schema = json.loads(schema_json)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise UnsupportedAvroSchema("a data block's schema must be an Avro record")
    names = [f["name"] for f in schema["fields"]]
    if tuple(names[:len(META_FIELDS)]) == META_FIELDS:
        return schema_json
    clash = set(names) & set(META_FIELDS)
    if clash:
        raise UnsupportedAvroSchema(f"schema has meta fields {sorted(clash)} out of place")
    schema = {**schema, "fields": [_meta_field(n) for n in META_FIELDS] + schema["fields"]}
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
