"""The table's data schema as Hudi writes it into commit metadata: an Avro record schema.

Hudi's Spark writer converts the batch's ``StructType`` to Avro
(``AvroConversionUtils.convertStructTypeToAvroSchema``: Spark's ``SchemaConverters.toAvroType``
plus ``"default": null`` on nullable fields) and stores it under ``extraMetadata.schema``;
Hudi readers (hudi-rs, Hudi's ``TableSchemaResolver``) parse that string as Avro. This
module does the same conversion from Spark's schema JSON (``StructType.json()``), without
importing pyspark, so the table format stays Spark-free.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_]")
_INVALID_FIRST_CHAR = re.compile(r"[^A-Za-z_]")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(-?\d+)\)$")
_CHAR = re.compile(r"^(char|varchar)\(\d+\)$")
_PRIMITIVES: dict[str, Any] = {
    "boolean": "boolean",
    "byte": "int",
    "short": "int",
    "integer": "int",
    "long": "long",
    "float": "float",
    "double": "double",
    "string": "string",
    "binary": "bytes",
    "null": "null",
    "void": "null",  # Spark's NullType
    "date": {"type": "int", "logicalType": "date"},
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "timestamp_ntz": {"type": "long", "logicalType": "local-timestamp-micros"},
}


def sanitize_name(name: str) -> str:
    """An Avro name from any string, as Hudi's ``HoodieAvroUtils.sanitizeName`` makes it."""
    if name and _INVALID_FIRST_CHAR.match(name[0]):
        name = _INVALID_FIRST_CHAR.sub("__", name, count=1)
    return _INVALID_CHARS.sub("__", name)


def record_name_and_namespace(table_name: str) -> tuple[str, str]:
    """``(<table>_record, hoodie.<table>)``: Hudi's top-level record name for a table."""
    name = sanitize_name(table_name)
    return f"{name}_record", f"hoodie.{name}"


def _min_bytes_for_precision(precision: int) -> int:
    """Spark's ``Decimal.minBytesForPrecision``: the fixed size a decimal needs."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


def _avro_type(spark_type: Any, nullable: bool, record_name: str, namespace: str) -> Any:
    """Spark's ``SchemaConverters.toAvroType`` over the JSON form of a Spark type."""
    if isinstance(spark_type, str):
        if spark_type in _PRIMITIVES:
            avro = _PRIMITIVES[spark_type]
        elif _CHAR.match(spark_type):
            avro = "string"
        elif m := _DECIMAL.match(spark_type):
            precision, scale = int(m[1]), int(m[2])
            full = f"{namespace}.{record_name}" if namespace else record_name
            avro = {"type": "fixed", "name": "fixed", "namespace": full,
                    "size": _min_bytes_for_precision(precision), "logicalType": "decimal",
                    "precision": precision, "scale": scale}
        else:
            raise ValueError(f"no Avro type for the Spark type {spark_type!r}")
        if avro == "null":
            return avro
    elif spark_type.get("type") == "array":
        avro = {"type": "array", "items": _avro_type(
            spark_type["elementType"], spark_type["containsNull"], record_name, namespace)}
    elif spark_type.get("type") == "map":
        if spark_type["keyType"] != "string":
            raise ValueError("Avro maps need string keys: "
                             f"{json.dumps(spark_type['keyType'])} is not one")
        avro = {"type": "map", "values": _avro_type(
            spark_type["valueType"], spark_type["valueContainsNull"], record_name, namespace)}
    elif spark_type.get("type") == "struct":
        child_ns = f"{namespace}.{record_name}" if namespace else record_name
        avro = {"type": "record", "name": record_name,
                **({"namespace": namespace} if namespace else {}),
                "fields": [_avro_field(f, child_ns) for f in spark_type["fields"]]}
    else:
        raise ValueError(f"no Avro type for the Spark type {json.dumps(spark_type)}")
    return ["null", avro] if nullable else avro


def _avro_field(field: dict, namespace: str) -> dict:
    """One record field; a nullable one gets ``"default": null`` as Hudi adds it."""
    avro = _avro_type(field["type"], field.get("nullable", True), field["name"], namespace)
    out: dict[str, Any] = {"name": field["name"], "type": avro}
    comment = (field.get("metadata") or {}).get("comment")
    if comment:
        out["doc"] = comment
    if isinstance(avro, list) and "null" in avro:
        out["default"] = None
    return out


def avro_schema_json(spark_schema_json: str, table_name: str) -> str:
    """The Avro schema Hudi would store for a table named ``table_name`` whose writer
    schema is the Spark ``StructType`` JSON ``spark_schema_json`` (no meta columns)."""
    struct = json.loads(spark_schema_json)
    if struct.get("type") != "struct":
        raise ValueError("not a Spark StructType JSON")
    name, namespace = record_name_and_namespace(table_name)
    return json.dumps(_avro_type(struct, False, name, namespace), separators=(",", ":"))


def is_spark_struct_json(text: str | None) -> bool:
    """Whether ``text`` is a Spark ``StructType`` JSON (tables written before issue #15
    kept it where Hudi keeps the Avro schema)."""
    if not text:
        return False
    try:
        return json.loads(text).get("type") == "struct"
    except (ValueError, AttributeError):
        return False

