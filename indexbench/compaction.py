"""Merge-on-read compaction: a table service of the table type, not of an index.

Hudi's compaction with its defaults: the plan takes every file slice that has log files
(``LogFileSizeBasedCompactionStrategy`` under a 500 GB IO budget takes them all here),
each task reads its share of the slices (base file and logs), merges each with the
pre-combine rule (:func:`tableformat.slice_reader.read_slice`) and writes a new base file named
after the compaction instant, with the index's footer (a bloom filter for bloom). The
timeline is Hudi's: ``<instant>.compaction.requested`` (the plan: Hudi's
``HoodieCompactionPlan`` in Avro, which the execution reads back, as Hudi's compactor
does) → ``.compaction.inflight`` → ``<instant>.commit`` (operationType ``COMPACT``).
File groups keep their ids, so no index has to learn anything.

It runs inline after ``hoodie.compact.inline.max.delta.commits`` delta commits since the
last compaction (Hudi's ``NUM_COMMITS`` trigger) when ``hoodie.compact.inline`` is true,
and on demand with ``indexbench compact TABLE``. The service runner
(:mod:`indexbench.services`) times, commits and undoes it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from indexbench.writer import base_file_footer
from indexes import roles
from indexes.base import PendingService, RecordIndex, ServiceWork, TableService
from tableformat import basefile as bf
from tableformat.commit_metadata import COMMIT, COMPACTION
from tableformat.compaction_plan import (
    COMPACT_OPERATION,
    COMPACTION_ROW,
    CompactionPlan,
    plan_compaction,
)
from tableformat.fs import IOStats
from tableformat.slice_reader import LogReadStats, read_slice
from tableformat.table import FileSlice, Snapshot, Table
from tableformat.table_type import MERGE_ON_READ
from writeclient.faults import fail_task_if_asked, hang_if

HANG_IN_COMPACTION = "compaction_in_task"  # fault injection: a task hangs after its file
COMPACT = TableService(
    name="compact", help="merge every file slice's log files into a new base file",
    operation=COMPACTION_ROW, action=COMPACTION, completed_action=COMMIT, inline=True,
    command="compact", usage="indexbench compact TABLE")


def plan(table: Table, snapshot: Snapshot, options: dict[str, Any]) -> CompactionPlan | None:
    """Every slice with log files, when the trigger (inline) or the caller (on demand,
    ``options`` non-empty or ``force``) asks; None: nothing to do. The rule is
    :func:`tableformat.compaction_plan.plan_compaction`, the simulator's too."""
    return plan_compaction(snapshot, table.config.table_type, table.write_config,
                           force=bool(options.get("force")))


def execute(spark: SparkSession, table: Table, index: RecordIndex, the_plan: CompactionPlan,
            instant: str, counters) -> ServiceWork:
    """Each task reads its file slices merged and writes their new base files."""
    cfg = table.config
    uri, key, order = table.uri, cfg.record_key_field, cfg.ordering_field
    footer_fn = roles.footer_writer(index)
    slices = list(the_plan.slices)
    # a few tasks per core, each compacting a share of the slices: a task per slice
    # costs more than it compacts when slices are small (bloom: hundreds of files)
    tasks = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 2))
    rows = spark.sparkContext.parallelize(range(len(slices)), tasks)
    by_number = spark.sparkContext.broadcast(slices)

    def compact(numbers: Iterator[int]) -> Iterator[dict[str, Any]]:
        from pyspark import TaskContext

        tc = TaskContext.get()
        fail_task_if_asked(tc)
        t = Table(uri)
        for i in numbers:
            s = by_number.value[i]
            io, logs = IOStats(), LogReadStats()
            records = read_slice(t.fs, t.root, s, key, order, stats=io, log_stats=logs)
            counters.add({"files_read": io.files_read, "bytes_read": io.bytes_read,
                          "log_files_read": logs.log_files_read,
                          "log_bytes_read": logs.log_bytes_read})
            token = bf.task_write_token(tc)
            stat = write_compacted(t, s, records, instant, token, footer_fn)
            hang_if(HANG_IN_COMPACTION)
            stat.update(totalLogFilesCompacted=len(s.logs), totalLogSizeCompacted=s.log_bytes,
                        totalLogRecords=logs.log_records_read,
                        totalLogBlocks=logs.log_blocks_read,
                        totalUpdatedRecordsCompacted=logs.log_records_read)
            yield stat

    try:
        stats = rows.mapPartitions(compact).collect()  # ok: one write stat per file slice
    finally:
        by_number.destroy()
    return ServiceWork(stats=stats, operation_type=COMPACT_OPERATION,
                       figures=the_plan.figures())


def write_compacted(table: Table, s: FileSlice, records: pa.Table, instant: str, token: str,
                    footer_fn) -> dict[str, Any]:
    """The slice's new base file (every record's ``_hoodie_file_name`` is its name)."""
    name = bf.BaseFileName(s.file_id, token, instant).name
    rel = f"{s.partition}/{name}" if s.partition else name
    schema = records.schema
    records = records.set_column(schema.get_field_index(bf.FILE_NAME), schema.field(bf.FILE_NAME),
                                 pa.repeat(pa.scalar(name), records.num_rows))
    footer, index_bytes, min_key, max_key = base_file_footer(records, footer_fn)
    size = bf.write_base_file(table.fs, table.abs_path(rel), records, footer)
    return {"partitionPath": s.partition, "fileId": s.file_id, "path": rel,
            "prevCommit": s.instant, "numWrites": records.num_rows, "numInserts": 0,
            "numUpdateWrites": 0, "numDeletes": 0, "totalWriteBytes": size,
            "indexBytes": index_bytes, "mergeFilesRead": 0, "mergeBytesRead": 0,
            "minRecordKey": min_key, "maxRecordKey": max_key,
            "bucketId": _bucket(s.file_id)}


def _bucket(file_id: str) -> int | None:
    try:
        return bf.bucket_of_file_id(file_id)
    except ValueError:
        return None


class Compaction:
    """The compaction service in the shape the runner calls (definition + adapter)."""

    def __init__(self, index: RecordIndex):
        self.index = index

    def plan_service(self, service: TableService, table: Table, snapshot: Snapshot,
                     options: dict[str, Any]) -> CompactionPlan | None:
        return plan(table, snapshot, options)

    def service_request(self, service: TableService, the_plan: CompactionPlan) -> bytes:
        """Hudi's ``HoodieCompactionPlan``, Avro (a log-only slice's write estimate is the
        index's ``hoodie.parquet.max.file.size``)."""
        return the_plan.request(roles.sizing_of(self.index).max_file_size)

    def execute_service(self, service: TableService, the_plan: CompactionPlan, spark,
                        table: Table, instant: str, counters) -> ServiceWork:
        """Compact what ``.compaction.requested`` says, read back from the timeline as
        Hudi's compactor reads it (``CompactionUtils.getCompactionPlan``)."""
        requested = CompactionPlan.from_request(table.read_requested(instant, COMPACTION),
                                                table.snapshot())
        return execute(spark, table, self.index, requested, instant, counters)

    def stays_pending(self, pending: PendingService, snapshot: Snapshot) -> bool:
        return False

    def find_pending(self, service: TableService, table: Table) -> PendingService | None:
        return None

    def complete_service(self, pending: PendingService, table: Table,
                         snapshot: Snapshot) -> ServiceWork:
        return pending.work

    def service_figures(self, pending: PendingService, before: Snapshot,
                        after: Snapshot) -> dict[str, Any]:
        """The log files and bytes the tasks read (counted by the reader), apart from
        the row's files_read / bytes_read, which hold base and log files together."""
        read = pending.work.read
        return {"log_files_read": read.get("log_files_read", 0),
                "log_bytes_read": read.get("log_bytes_read", 0)}


def table_services(table: Table) -> tuple[TableService, ...]:
    """The services of the table type: compaction on merge-on-read."""
    return (COMPACT,) if table.config.table_type == MERGE_ON_READ else ()
