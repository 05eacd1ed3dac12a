"""Completed instant files in Hudi's shape: ``HoodieCommitMetadata`` (``.commit``,
``.deltacommit``) and ``HoodieReplaceCommitMetadata`` (``.replacecommit``) JSON.

Writers hand the table their write stats and extraMetadata; this module turns them into
what Hudi's Jackson mapper writes, so Hudi readers (hudi-rs, Hudi's timeline and file
system view) read the timeline as their own:

- each write stat carries every ``HoodieWriteStat`` field (``partitionPath``,
  ``fileSizeInBytes``, ``totalWriteErrors``, the log/compaction counters at 0, ...), then
  the project's own per-file fields (Hudi's mapper ignores unknown properties);
- ``extraMetadata.schema`` is the Avro schema of the data (Hudi readers parse it as
  Avro), and the writer's Spark schema is kept under :data:`SPARK_SCHEMA_KEY`; a commit
  that names no schema (an index-only replacecommit) repeats the table's latest one,
  since Hudi readers take the schema from the latest completed instant;
- extraMetadata is string → string and ``operationType`` one of Hudi's
  ``WriteOperationType`` names, as Hudi deserializes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.avro_schema import avro_schema_json, is_spark_struct_json

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"  # a merge-on-read write: HoodieCommitMetadata, logs in its stats
REPLACE = "replacecommit"
COMPACTION = "compaction"  # pending action of a compaction; it completes as a ``commit``
SCHEMA_KEY = "schema"  # Hudi's: the Avro schema of the data
SPARK_SCHEMA_KEY = "indexbench.spark.schema"  # the project's: the writer's Spark schema
PROJECT_KEY_PREFIX = "indexbench."  # every extraMetadata key our writer adds starts so

# org.apache.hudi.common.model.WriteOperationType (Hudi 0.14/0.15)
WRITE_OPERATION_TYPES = frozenset({
    "INSERT", "INSERT_PREPPED", "UPSERT", "UPSERT_PREPPED", "BULK_INSERT",
    "BULK_INSERT_PREPPED", "DELETE", "DELETE_PREPPED", "BOOTSTRAP", "INSERT_OVERWRITE",
    "CLUSTER", "DELETE_PARTITION", "INSERT_OVERWRITE_TABLE", "COMPACT", "INDEX",
    "ALTER_SCHEMA", "LOG_COMPACT", "UNKNOWN",
})

# HoodieWriteStat's fields in Hudi's declaration order, with what Hudi writes for a base
# file written without logs, CDC or event times (``None`` → JSON null).
WRITE_STAT_FIELDS: tuple[tuple[str, Any], ...] = (
    ("fileId", None), ("path", None), ("cdcStats", None), ("prevCommit", "null"),
    ("numWrites", 0), ("numDeletes", 0), ("numUpdateWrites", 0), ("numInserts", 0),
    ("totalWriteBytes", 0), ("totalWriteErrors", 0), ("tempPath", None),
    ("partitionPath", None), ("totalLogRecords", 0), ("totalLogFilesCompacted", 0),
    ("totalLogSizeCompacted", 0), ("totalUpdatedRecordsCompacted", 0),
    ("totalLogBlocks", 0), ("totalCorruptLogBlock", 0), ("totalRollbackBlocks", 0),
    ("fileSizeInBytes", None), ("minEventTime", None), ("maxEventTime", None),
    ("runtimeStats", None),
)
# HoodieDeltaWriteStat's own fields (a log file's stat), after HoodieWriteStat's
DELTA_WRITE_STAT_FIELDS = ("logVersion", "logOffset", "baseFile", "logFiles")
# HoodieWriteStat.RuntimeStats (milliseconds of the write handle), in Hudi's order
RUNTIME_STATS_FIELDS = ("totalScanTime", "totalUpsertTime", "totalCreateTime")
_HUDI_STAT_NAMES = (frozenset(name for name, _ in WRITE_STAT_FIELDS)
                    | set(DELTA_WRITE_STAT_FIELDS) | set(RUNTIME_STATS_FIELDS))


def hoodie_write_stat(stat: Mapping[str, Any], partition: str) -> dict[str, Any]:
    """One file's ``HoodieWriteStat`` (Hudi's fields first), then the project's fields.

    A base file's ``fileSizeInBytes`` is its ``totalWriteBytes``, as Hudi sets both."""
    given = stat.get("partitionPath", partition)
    if given != partition:
        raise ValueError(f"write stat of {stat.get('path')!r} says partition {given!r}, "
                         f"listed under {partition!r}")
    out = {name: default if stat.get(name) is None else stat[name]
           for name, default in WRITE_STAT_FIELDS}
    out["partitionPath"] = partition
    if out["fileSizeInBytes"] is None:
        out["fileSizeInBytes"] = out["totalWriteBytes"]
    if any(stat.get(name) is not None for name in RUNTIME_STATS_FIELDS):
        out["runtimeStats"] = {name: int(stat.get(name) or 0) for name in RUNTIME_STATS_FIELDS}
    if stat.get("logVersion") is not None:  # a log file: HoodieDeltaWriteStat
        logs = stat.get("logFiles") or []
        out.update(logVersion=int(stat["logVersion"]), logOffset=int(stat.get("logOffset") or 0),
                   baseFile=stat.get("baseFile") or "",
                   logFiles=logs.split(",") if isinstance(logs, str) else list(logs))
    out.update((k, v) for k, v in stat.items() if k not in _HUDI_STAT_NAMES)
    return out


def spark_schema(extra: Mapping[str, str]) -> str | None:
    """The writer's Spark schema JSON recorded in an instant's extraMetadata, if any
    (older tables kept it under ``schema``, where Hudi keeps the Avro schema)."""
    if extra.get(SPARK_SCHEMA_KEY):
        return extra[SPARK_SCHEMA_KEY]
    old = extra.get(SCHEMA_KEY)
    return old if is_spark_struct_json(old) else None


def _extra_metadata(extra: Mapping[str, Any], table_name: str,
                    latest_spark_schema: Callable[[], str | None]) -> dict[str, str]:
    """extraMetadata as Hudi's ``Map<String, String>``, with both schemas."""
    out: dict[str, str] = {}
    for key, value in extra.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise TypeError(f"extraMetadata[{key!r}] must be a string (Hudi's extraMetadata "
                            f"is string → string), not {type(value).__name__}")
        out[key] = value
    spark = spark_schema(out) or latest_spark_schema()
    if spark is not None:
        out[SPARK_SCHEMA_KEY] = spark
        if SCHEMA_KEY not in out or is_spark_struct_json(out[SCHEMA_KEY]):
            out[SCHEMA_KEY] = avro_schema_json(spark, table_name)
    return dict(sorted(out.items()))


def hoodie_commit_metadata(metadata: Mapping[str, Any], action: str, table_name: str,
                           latest_spark_schema: Callable[[], str | None] = lambda: None
                           ) -> dict[str, Any]:
    """The JSON object of a completed ``commit``, ``deltacommit`` or ``replacecommit``.

    ``metadata`` holds ``partitionToWriteStats`` (partition → write stats),
    ``partitionToReplaceFileIds`` (replacecommit only), ``operationType`` and
    ``extraMetadata``, whose ``schema`` may be the writer's Spark ``StructType`` JSON;
    ``latest_spark_schema`` gives the table's current Spark schema for a commit without
    one (called only then)."""
    if action not in (COMMIT, DELTA_COMMIT, REPLACE):
        raise ValueError(f"not a commit action: {action!r}")
    operation = metadata.get("operationType") or "UNKNOWN"
    if operation not in WRITE_OPERATION_TYPES:
        raise ValueError(f"operationType {operation!r} is not one of Hudi's WriteOperationType "
                         "names (Hudi could not read the commit)")
    replaced = metadata.get("partitionToReplaceFileIds") or {}
    if replaced and action != REPLACE:
        raise ValueError("only a replacecommit replaces file groups")
    out: dict[str, Any] = {"partitionToWriteStats": {
        partition: [hoodie_write_stat(s, partition) for s in stats]
        for partition, stats in sorted((metadata.get("partitionToWriteStats") or {}).items())}}
    if action == REPLACE:
        out["partitionToReplaceFileIds"] = {p: list(ids) for p, ids in sorted(replaced.items())}
    out["compacted"] = bool(metadata.get("compacted", False))
    out["extraMetadata"] = _extra_metadata(metadata.get("extraMetadata") or {}, table_name,
                                           latest_spark_schema)
    out["operationType"] = operation
    return out


def written_by_indexbench(extra: dict) -> bool:
    """Whether an instant's extraMetadata is our writer's: every commit it makes carries
    a key of the project's. An instant without one was made by Hudi's own writer (a table
    of ours it continued), which records none of our per-commit facts."""
    return any(k.startswith(PROJECT_KEY_PREFIX) for k in extra)

@dataclass(frozen=True)
class CommitTotals:
    """Bytes, records and base files one completed instant wrote (its base files' write
    stats summed: Hudi's estimate reads a delta commit's base files only)."""

    instant: str
    action: str
    bytes_written: int
    records_written: int
    base_files: int = 0
