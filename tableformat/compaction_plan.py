"""Merge-on-read compaction, what it decides (no Spark): when, which slices, its figures.

The Spark service (:mod:`indexbench.compaction`) and the simulator's model table both
call these on a :class:`~tableformat.table.Snapshot`, so the two engines compact the
same file slices after the same batches. Hudi's defaults: the ``NUM_COMMITS`` trigger
(``hoodie.compact.inline.max.delta.commits`` delta commits since the last compaction)
and ``LogFileSizeBasedCompactionStrategy`` under its 500 GB IO budget, which takes every
file slice with log files at this project's scales.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tableformat.commit_metadata import COMMIT, DELTA_COMMIT
from tableformat.errors import IndexBenchError
from tableformat.table import FileSlice, Snapshot
from tableformat.table_type import MERGE_ON_READ
from tableformat.timeline_avro import deserialize_compaction_plan, serialize_compaction_plan
from tableformat.write_config import MAX_FILE_SIZE, WriteConfig

COMPACT_OPERATION = "COMPACT"  # a compaction commit's operationType
COMPACTION_ROW = "compaction"  # the ``operation`` of its metrics rows
# CompactionUtils.LATEST_COMPACTION_METADATA_VERSION: file names, not paths, in the plan
COMPACTION_METADATA_VERSION = 2
# FileSliceMetricUtils / CompactionStrategy: the metrics of each operation
TOTAL_IO_READ_MB, TOTAL_IO_WRITE_MB, TOTAL_IO_MB = (
    "TOTAL_IO_READ_MB", "TOTAL_IO_WRITE_MB", "TOTAL_IO_MB")
TOTAL_LOG_FILE_SIZE, TOTAL_LOG_FILES = "TOTAL_LOG_FILES_SIZE", "TOTAL_LOG_FILES"
_MB = 1024 * 1024


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def slice_metrics(s: FileSlice, max_file_size: int = MAX_FILE_SIZE) -> dict[str, float]:
    """``FileSliceMetricUtils.addFileSliceCommonMetrics`` of one slice: megabytes read
    (base + logs) and written (the base file's size, or ``hoodie.parquet.max.file.size``
    for a log-only slice), whole MB as Hudi's ``FSUtils.getSizeInMB`` truncates them."""
    read_mb = (s.size_bytes + s.log_bytes) // _MB
    write_mb = (s.size_bytes if s.size_bytes > 0 else max_file_size) // _MB
    return {TOTAL_IO_READ_MB: float(read_mb), TOTAL_IO_WRITE_MB: float(write_mb),
            TOTAL_IO_MB: float(read_mb + write_mb), TOTAL_LOG_FILE_SIZE: float(s.log_bytes),
            TOTAL_LOG_FILES: float(len(s.logs))}


@dataclass(frozen=True)
class CompactionPlan:
    """The file slices to compact (Hudi's ``HoodieCompactionOperation`` list)."""

    slices: tuple[FileSlice, ...]

    def operations(self, max_file_size: int = MAX_FILE_SIZE) -> list[dict[str, Any]]:
        """Hudi's ``HoodieCompactionOperation`` of each slice
        (``CompactionUtils.buildFromFileSlice``): file names, the base instant, the
        strategy's metrics."""
        return [{"baseInstantTime": s.instant,
                 "deltaFilePaths": [_name(lf.path) for lf in s.logs],
                 "dataFilePath": _name(s.path) if s.path else None,
                 "fileId": s.file_id, "partitionPath": s.partition,
                 "metrics": slice_metrics(s, max_file_size), "bootstrapFilePath": None}
                for s in self.slices]

    def request(self, max_file_size: int = MAX_FILE_SIZE) -> bytes:
        """The ``.compaction.requested`` file as Hudi writes it: a ``HoodieCompactionPlan``
        in an Avro data file (:mod:`tableformat.timeline_avro`), version 2, no extra
        metadata or strategy (``CompactionStrategy.generateCompactionPlan``)."""
        return serialize_compaction_plan({
            "operations": self.operations(max_file_size), "extraMetadata": None,
            "version": COMPACTION_METADATA_VERSION})

    @classmethod
    def from_request(cls, data: bytes, snapshot: Snapshot) -> CompactionPlan:
        """The plan a ``.compaction.requested`` file holds, as the committed slices it
        names (what Hudi's compactor reads: the files of each operation). A plan that
        names a slice the snapshot does not hold, or other files of it, is refused."""
        plan = deserialize_compaction_plan(data)
        slices = []
        for op in plan["operations"] or ():
            s = snapshot.slices.get((op["partitionPath"] or "", op["fileId"]))
            if s is None or (s.instant, _name(s.path) if s.path else None,
                             [_name(lf.path) for lf in s.logs]) != (
                    op["baseInstantTime"], op["dataFilePath"], list(op["deltaFilePaths"] or ())):
                raise IndexBenchError(
                    f"the compaction plan names file slice {op['fileId']} of "
                    f"{op['partitionPath']!r} at {op['baseInstantTime']}, which the table "
                    "does not hold as planned; run indexbench verify")
            slices.append(s)
        return cls(tuple(slices))

    def figures(self) -> dict[str, float]:
        """The compaction row's own columns (``log_bytes_compacted`` is bytes: modelled
        in a simulated row)."""
        return {"slices_compacted": len(self.slices),
                "log_files_compacted": sum(len(s.logs) for s in self.slices),
                "log_bytes_compacted": sum(s.log_bytes for s in self.slices)}


def delta_commits_since_compaction(snapshot: Snapshot) -> int:
    """Delta commits completed after the latest compaction (Hudi's NUM_COMMITS count).

    A replacecommit (a rescale, a resize) neither counts nor resets the count; a
    compaction completes as a ``commit`` whose operationType is COMPACT."""
    n = 0
    for c in reversed(snapshot.commits):
        if c.action == DELTA_COMMIT:
            n += 1
        elif c.action == COMMIT and snapshot.operations.get(c.instant) == COMPACT_OPERATION:
            break
    return n


def plan_compaction(snapshot: Snapshot, table_type: str, config: WriteConfig,
                    force: bool = False) -> CompactionPlan | None:
    """Every slice with log files, when the inline trigger is due (or ``force``: on
    demand); None: not a merge-on-read table, not due, or nothing to compact."""
    if table_type != MERGE_ON_READ:
        return None
    if not force and (not config.compact_inline
                      or delta_commits_since_compaction(snapshot) < config.max_delta_commits):
        return None
    slices = tuple(s for _, s in sorted(snapshot.slices.items()) if s.logs)
    return CompactionPlan(slices) if slices else None
