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
from tableformat.table import FileSlice, Snapshot
from tableformat.table_type import MERGE_ON_READ
from tableformat.write_config import WriteConfig

COMPACT_OPERATION = "COMPACT"  # a compaction commit's operationType
COMPACTION_ROW = "compaction"  # the ``operation`` of its metrics rows


@dataclass(frozen=True)
class CompactionPlan:
    """The file slices to compact (Hudi's ``HoodieCompactionOperation`` list)."""

    slices: tuple[FileSlice, ...]

    def request(self) -> dict[str, Any]:
        """The ``.compaction.requested`` body: Hudi's plan fields, as JSON."""
        return {"operations": [
            {"fileId": s.file_id, "partitionPath": s.partition,
             "baseInstantTime": s.instant,
             "dataFilePath": s.path.rsplit("/", 1)[-1] if s.path else None,
             "deltaFilePaths": [lf.path.rsplit("/", 1)[-1] for lf in s.logs],
             "metrics": {"TOTAL_LOG_FILES": float(len(s.logs)),
                         "TOTAL_LOG_FILES_SIZE": float(s.log_bytes)}}
            for s in self.slices], "version": 2}

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
