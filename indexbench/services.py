"""The table-service runner: one place that times, commits and undoes every table service.

YCSB's ``DBWrapper`` does all the timing so that bindings contain none; here the same
holds for table services (bucket rescale, consistent-hashing resize, RLI compaction, and
every service an index declares in ``SERVICES``). An index's Spark adapter only plans
and executes (``plan_service`` / ``execute_service``); the runner

- starts the service's instant (``<instant>.<action>.requested`` with the plan, then
  ``.inflight``), runs the execution under a shuffle meter and the work counters,
- owns the crash points ``<service>_after_write`` and ``<service>_before_commit``,
- assembles the commit (``partitionToWriteStats``, ``partitionToReplaceFileIds``,
  ``extraMetadata``) and completes it atomically,
- undoes an instant that fails (:func:`indexbench.failed_write.undone_on_failure`),
- builds the metrics row with the one row builder (:func:`metrics.rows.service_row`).

A service may stay inflight across commits on purpose (consistent-hashing's pending
resize, dual-written meanwhile): its execution is then kept in the inflight file and
completed by a later run of the service, or by :func:`finish_pending` before the writer
lets go. See docs/driver.md (table services).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pyspark.sql import SparkSession

from indexbench.compaction import Compaction, table_services
from indexbench.failed_write import undone_on_failure
from indexes import roles
from indexes.base import PendingService, RecordIndex, TableService
from indexes.counters import ShuffleMeter, new_counters
from metrics.rows import WriteTotals, service_row
from tableformat.table import Table, stats_by_partition
from writeclient.faults import crash_if


def services_of(table: Table, index: RecordIndex) -> tuple[TableService, ...]:
    """The index's declared services, then the table type's (compaction on MOR)."""
    return (*roles.services(index), *table_services(table))


def _definition(index: RecordIndex, service: TableService) -> Any:
    """Who plans ``service``: the index, or the table type's service."""
    return index if service in roles.services(index) else Compaction(index)


def _adapter(index: RecordIndex, service: TableService) -> Any:
    """Who executes and completes ``service``: the index's Spark adapter, or the table
    type's service."""
    return index.spark if service in roles.services(index) else Compaction(index)


def run_inline(spark: SparkSession, table: Table, index: RecordIndex,
               batch_no: int | None) -> list[dict[str, Any]]:
    """After a commit: every inline service of the index and of the table type, in
    order; one row per service instant that completed. A service declared ``repeat``
    runs again after each instant it completes until it plans nothing (each step is
    planned on the snapshot the previous one left). The caller holds the lock."""
    rows: list[dict[str, Any]] = []
    for service in services_of(table, index):
        if service.inline:
            while True:
                done = run_service(spark, table, index, service, {}, batch_no)
                rows += done
                if not (service.repeat and done):
                    break
    return rows


def finish_pending(spark: SparkSession, table: Table, index: RecordIndex
                   ) -> list[dict[str, Any]]:
    """At the end of a run: complete what a service left inflight (a new writer would
    roll it back); one row each."""
    rows = []
    for service in services_of(table, index):
        pending = _adapter(index, service).find_pending(service, table)
        if pending is not None:
            with undone_on_failure(spark, table, service.name):
                rows.append(complete(spark, table, index, pending, None))
    return rows


def plan(table: Table, index: RecordIndex, service: TableService,
         options: dict[str, Any]) -> Any | None:
    """The service's plan against the committed snapshot; nothing is written."""
    return _definition(index, service).plan_service(service, table, table.snapshot(), options)


def run_service(spark: SparkSession, table: Table, index: RecordIndex,
                service: TableService, options: dict[str, Any], batch_no: int | None,
                planned: Any = None) -> list[dict[str, Any]]:
    """One step of ``service``: complete a pending instant whose time has come, or plan,
    execute and (unless it stays pending) complete a new one. ``planned``: a plan
    already checked by the caller. Returns the rows of completed instants."""
    adapter = _adapter(index, service)
    what = service.name if batch_no is None else f"{service.name} after batch {batch_no}"
    pending = adapter.find_pending(service, table)
    if pending is not None:
        if adapter.stays_pending(pending, table.snapshot()):
            return []
        with undone_on_failure(spark, table, what):
            return [complete(spark, table, index, pending, batch_no)]
    t_start = time.perf_counter()
    the_plan = planned if planned is not None else plan(table, index, service, options)
    if the_plan is None:
        return []
    with undone_on_failure(spark, table, what):
        pending = execute(spark, table, index, service, the_plan)
        if adapter.stays_pending(pending, table.snapshot()):
            return []
        return [complete(spark, table, index, pending, batch_no, t_start)]


def execute(spark: SparkSession, table: Table, index: RecordIndex, service: TableService,
            the_plan: Any) -> PendingService:
    """Start the service's instant and run its execution; nothing is visible yet. A
    service that may stay pending keeps what it did in its inflight file."""
    adapter = _adapter(index, service)
    t0 = time.perf_counter()
    instant = table.start_instant(service.action, adapter.service_request(service, the_plan))
    counters = new_counters(spark)
    # the group must be unique in the application: instants come from a benchmark
    # clock, so two tables' services may share one (a group's jobs are all counted)
    group = f"indexbench-{service.name}-{instant}-{uuid.uuid4().hex[:8]}"
    with ShuffleMeter(spark, group) as meter:
        work = adapter.execute_service(service, the_plan, spark, table, instant, counters)
    work.read = {**dict(counters.value), **work.read}
    crash_if(f"{service.crash_prefix}_after_write")
    pending = PendingService(service, instant, the_plan, work,
                             execute_s=time.perf_counter() - t0,
                             shuffle_bytes=meter.write_bytes,
                             shuffle_read_bytes=meter.read_bytes, spark_jobs=len(meter.jobs))
    if service.may_stay_pending:
        table.write_inflight(instant, inflight_body(pending), service.action)
    return pending


def inflight_body(pending: PendingService) -> dict[str, Any]:
    """What an executed service keeps in its inflight file until it completes."""
    return {"partitionToWriteStats": stats_by_partition(pending.work.stats),
            "execute_s": pending.execute_s, **pending.work.read,
            "shuffle_bytes": pending.shuffle_bytes, "spark_jobs": pending.spark_jobs}


def complete(spark: SparkSession, table: Table, index: RecordIndex, pending: PendingService,
             batch_no: int | None, t_start: float | None = None) -> dict[str, Any]:
    """Commit an executed service atomically; its metrics row."""
    t1 = time.perf_counter()
    before = table.snapshot()
    adapter = _adapter(index, pending.service)
    work = adapter.complete_service(pending, table, before)
    metadata = {
        "operationType": work.operation_type,
        "partitionToWriteStats": stats_by_partition(work.stats),
        "partitionToReplaceFileIds": {p: sorted(ids) for p, ids in sorted(work.replaced.items())},
        "extraMetadata": work.extra_metadata,
    }
    crash_if(f"{pending.service.crash_prefix}_before_commit")
    table.complete_instant(pending.instant, metadata,
                           pending.service.completed_action or pending.service.action)
    if work.on_complete is not None:
        work.on_complete()
    commit_s = time.perf_counter() - t1
    after = table.snapshot()
    executed = pending.work.stats  # the execution's own writes (not later dual writes)
    total_s = (time.perf_counter() - t_start) if t_start is not None \
        else (pending.execute_s or 0) + commit_s
    row = service_row(
        operation=pending.service.operation, batch_no=batch_no, instant=pending.instant,
        figures=work.figures, files_read=pending.work.read.get("files_read", 0),
        bytes_read=pending.work.read.get("bytes_read", 0),
        writes=WriteTotals.from_stats(executed), after=after,
        timings={"write_s": pending.execute_s, "commit_s": commit_s, "total_s": total_s},
        shuffle_bytes=pending.shuffle_bytes, shuffle_read_bytes=pending.shuffle_read_bytes,
        spark_jobs=pending.spark_jobs)
    row.update(adapter.service_figures(pending, before, after))
    row.update(roles.table_metrics(index, after))
    return row
