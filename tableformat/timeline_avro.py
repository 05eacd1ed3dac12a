"""Hudi's Avro timeline metadata: the compaction plan in ``<instant>.compaction.requested``.

Hudi table version 6 (0.14/0.15) writes a requested compaction as
``TimelineMetadataUtils.serializeCompactionPlan``: one ``HoodieCompactionPlan`` record in
an Avro object container file (``DataFileWriter`` over a ``SpecificDatumWriter``, no
codec), the writer's schema in the file's header. The schema below is hudi-common's
``HoodieCompactionOperation.avsc`` (which defines ``HoodieCompactionPlan``) with
``HoodieCompactionStrategy.avsc`` inlined where it is first used, as Avro's Java schema
writer embeds a named type; field order, names, types and defaults are Hudi's, so Hudi
(and any Avro reader) decodes the file with its own schema. fastavro writes and reads it.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import fastavro

NAMESPACE = "org.apache.hudi.avro.model"

# hudi-common/src/main/avro/HoodieCompactionStrategy.avsc (0.14/0.15)
_STRATEGY = {
    "namespace": NAMESPACE, "name": "HoodieCompactionStrategy", "type": "record",
    "fields": [
        {"name": "compactorClassName", "type": ["null", "string"], "default": None},
        {"name": "strategyParams", "type": ["null", {"type": "map", "values": "string"}],
         "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

# hudi-common/src/main/avro/HoodieCompactionOperation.avsc (0.14/0.15)
COMPACTION_PLAN_SCHEMA: dict[str, Any] = {
    "namespace": NAMESPACE, "type": "record", "name": "HoodieCompactionPlan",
    "fields": [
        {"name": "operations", "type": ["null", {"type": "array", "items": {
            "name": "HoodieCompactionOperation", "type": "record", "fields": [
                {"name": "baseInstantTime", "type": ["null", "string"]},
                {"name": "deltaFilePaths",
                 "type": ["null", {"type": "array", "items": "string"}], "default": None},
                {"name": "dataFilePath", "type": ["null", "string"], "default": None},
                {"name": "fileId", "type": ["null", "string"]},
                {"name": "partitionPath", "type": ["null", "string"], "default": None},
                {"name": "metrics", "type": ["null", {"type": "map", "values": "double"}],
                 "default": None},
                {"name": "bootstrapFilePath", "type": ["null", "string"], "default": None},
            ]}}], "default": None},
        {"name": "extraMetadata", "type": ["null", {"type": "map", "values": "string"}],
         "default": None},
        {"name": "version", "type": ["int", "null"], "default": 1},
        {"name": "strategy", "type": ["null", _STRATEGY], "default": None},
        {"name": "preserveHoodieMetadata", "type": ["null", "boolean"], "default": False},
    ],
}
_PARSED = fastavro.parse_schema(COMPACTION_PLAN_SCHEMA)


def serialize_compaction_plan(plan: Mapping[str, Any]) -> bytes:
    """``TimelineMetadataUtils.serializeCompactionPlan``: one record, an Avro data file."""
    out = io.BytesIO()
    fastavro.writer(out, _PARSED, [dict(plan)], codec="null")
    return out.getvalue()


def deserialize_compaction_plan(data: bytes) -> dict[str, Any]:
    """``TimelineMetadataUtils.deserializeCompactionPlan``: the plan record, read with
    this schema (a plan with fewer fields, from an older writer, gets their defaults)."""
    records = list(fastavro.reader(io.BytesIO(data), reader_schema=_PARSED))
    if len(records) != 1:
        raise ValueError(f"a compaction plan file holds one record, not {len(records)}")
    return records[0]
