"""The ``delta`` peer: the identical batches upserted with delta-rs MERGE (``deltalake``).

What a Python user without a record index gets: a Delta table partitioned by ``dt``, and
per batch (the initial load included, into an empty table, as the Hudi driver does)

    MERGE INTO t USING s ON t.dt = s.dt AND t.key = s.key
      WHEN MATCHED AND s.ts >= t.ts THEN UPDATE SET *
      WHEN NOT MATCHED THEN INSERT *

after the batch is pre-combined as Hudi's ``combine.before.upsert`` does (one record per
(dt, key): the larger ``ts`` wins, the later arrival on ties). With ``s.ts >= t.ts`` the
larger ordering value wins and a tie goes to the incoming record, Hudi's
``DefaultHoodieRecordPayload``. The batch comes from ``workloads.generator``, the same
rows Spark's executors produce for the index runs.

A workload with deletes (``delete_fraction > 0``) carries ``_hoodie_is_deleted``; the
pre-combine keeps the winner's flag, and the MERGE applies the same rule to deletes:

    MERGE INTO t USING s ON t.dt = s.dt AND t.key = s.key
      WHEN MATCHED AND s.ts >= t.ts AND s._hoodie_is_deleted THEN DELETE
      WHEN MATCHED AND s.ts >= t.ts AND NOT s._hoodie_is_deleted THEN UPDATE SET * (but the flag)
      WHEN NOT MATCHED AND NOT s._hoodie_is_deleted THEN INSERT * (but the flag)

so a delete of a missing key is a no-op and the flag is never stored.

Timing (the driver's phases): ``generate_s`` builds the batch as Arrow, ``precombine_s``
reduces it, ``write_s`` is the MERGE call (delta-rs joins, rewrites the touched files and
commits inside it, so there is no separate ``tag_s``/``commit_s``), ``total_s`` all
three. Counting files and bytes afterwards is not timed.

Rows are ``index = "delta-merge"``, ``run_mode = "peer"``; columns a record index fills
but MERGE has no such thing for (files read by an index, bloom counters, buckets, index
bytes, file groups) are empty, never 0 (``metrics.rows.peer_upsert_row``).
"""

from __future__ import annotations

import os
import time
from importlib import metadata
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from metrics.rows import peer_upsert_row
from tableformat.errors import TableConfigError
from tableformat.precombine import precombine as combine
from workloads import Workload
from workloads import generator as G

NAME = "delta"
SERIES = ("delta-merge",)  # the ``index`` value of its metrics rows
KEY, PARTITION, ORDERING = "key", "dt", "ts"
PREDICATE = f"t.{PARTITION} = s.{PARTITION} AND t.{KEY} = s.{KEY}"
UPDATE_WHEN = f"s.{ORDERING} >= t.{ORDERING}"
DELETED = G.DELETE_COLUMN  # Hudi's _hoodie_is_deleted: only in workloads with deletes
DELETE_WHEN = f"{UPDATE_WHEN} AND s.{DELETED}"
WORKLOAD_KEY = "indexbench.workload"
BATCH_KEY = "indexbench.batch"
# The batch is in memory: a materialised source lets delta-rs derive its early pruning
# predicate (partitions and key ranges of the batch) from it.
STREAMED_EXEC = False


def describe(series: str = SERIES[0]) -> dict[str, Any]:
    """What the peer does, for run.json and the report."""
    try:
        version = metadata.version("deltalake")
    except metadata.PackageNotFoundError:  # pragma: no cover - checked before it runs
        version = None
    return {"peer": NAME, "engine": "delta-rs MERGE", "deltalake": version,
            "merge_predicate": PREDICATE, "update_when": UPDATE_WHEN,
            "insert_when": "not matched", "partition_by": PARTITION,
            "delete_when": f"{DELETE_WHEN} (workloads with deletes; then updates and "
                           f"inserts also need NOT s.{DELETED})",
            "precombine": f"one record per ({PARTITION}, {KEY}): larger {ORDERING}, "
                          "later arrival on ties",
            "streamed_exec": STREAMED_EXEC}


def precombine(batch: pa.Table, key: str = KEY, partition: str = PARTITION,
               ordering: str = ORDERING) -> pa.Table:
    """One record per (partition, key): the larger ordering value, the later arrival on
    ties (Hudi's combine-before-upsert). Rows come out sorted by (partition, key)."""
    return combine(batch, [partition, key], ordering)


def _files(table) -> dict[str, tuple[int, int]]:
    """Live data files of the table's current version: path → (bytes, records)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return {}
    records = (actions["num_records"].to_pylist() if "num_records" in actions.column_names
               else [None] * actions.num_rows)
    return {p: (int(s), int(r) if r is not None else 0) for p, s, r in zip(
        actions["path"].to_pylist(), actions["size_bytes"].to_pylist(), records, strict=True)}


class DeltaMergeTable:
    """A Delta table the batches of one workload are merged into, batch after batch.

    Like the index runs' tables it resumes: each commit carries the workload fingerprint
    and batch number (commit ``custom_metadata``); a table of another workload is refused.
    """

    def __init__(self, uri: str, fingerprint: str):
        from deltalake import DeltaTable

        self.uri, self.fingerprint = str(uri), fingerprint
        if DeltaTable.is_deltatable(self.uri):
            self.table = DeltaTable(self.uri)
        else:
            self.table = DeltaTable.create(self.uri, schema=G.ARROW_SCHEMA,
                                           partition_by=[PARTITION], name=SERIES[0])
        self._known = _files(self.table)

    def describe(self) -> dict[str, Any]:
        """What this table resolved (nothing beyond ``describe()``)."""
        return {}

    def close(self) -> None:
        """Nothing stays open between batches."""

    def committed_batches(self) -> int:
        """Batches of this workload already merged (0 for a new table)."""
        done = -1
        for commit in self.table.history():
            if WORKLOAD_KEY in commit:
                if commit[WORKLOAD_KEY] != self.fingerprint:
                    raise TableConfigError(
                        f"Delta table {self.uri} holds batches of another workload; "
                        "use another --out")
                done = max(done, int(commit[BATCH_KEY]))
        return done + 1

    def files_on_storage(self) -> int:
        """Data files every committed version added (as the driver's ``files_in_table``:
        all versions; nothing is vacuumed)."""
        return sum(int((c.get("operationMetrics") or {}).get("num_target_files_added") or 0)
                   for c in self.table.history())

    def upsert(self, w: Workload, batch_no: int) -> dict[str, Any]:
        """Generate, pre-combine and MERGE one batch; its metrics row."""
        from deltalake import CommitProperties

        t_start = time.perf_counter()
        batch = G.batch_table(w, batch_no)
        t0 = time.perf_counter()
        source = precombine(batch)  # whole rows: the winner keeps its delete flag
        t1 = time.perf_counter()
        merge = self.table.merge(
            source, PREDICATE, source_alias="s", target_alias="t",
            streamed_exec=STREAMED_EXEC,
            commit_properties=CommitProperties(custom_metadata={
                WORKLOAD_KEY: self.fingerprint, BATCH_KEY: str(batch_no)}))
        has_deletes = DELETED in source.column_names
        if has_deletes:  # the first matching clause applies; the flag is never stored
            merge = merge.when_matched_delete(predicate=DELETE_WHEN) \
                .when_matched_update_all(predicate=f"{UPDATE_WHEN} AND NOT s.{DELETED}",
                                         except_cols=[DELETED]) \
                .when_not_matched_insert_all(predicate=f"NOT s.{DELETED}",
                                             except_cols=[DELETED])
        else:
            merge = merge.when_matched_update_all(predicate=UPDATE_WHEN) \
                .when_not_matched_insert_all()
        stats = merge.execute()
        t2 = time.perf_counter()
        # delete records of the batch (after pre-combining), whether or not they matched
        source_deletes = int(pc.sum(source[DELETED]).as_py() or 0) if has_deletes else 0
        timings = {"generate_s": t0 - t_start, "precombine_s": t1 - t0, "write_s": t2 - t1,
                   "total_s": t2 - t_start}

        after = _files(self.table)  # not timed: the harness's bookkeeping
        added = [v for p, v in after.items() if p not in self._known]
        self._known = after
        inserted = int(stats["num_target_rows_inserted"])
        extra = {}
        if "num_target_rows_deleted" in stats:
            # stored records removed: the delete records that matched and won on ts (the
            # driver's numDeletes); 0 in a workload without deletes, as the driver's
            extra["deletes"] = int(stats["num_target_rows_deleted"])
        return peer_upsert_row(
            batch_no=batch_no, input_records=batch.num_rows,
            records=source.num_rows,
            partitions_touched=len(pc.unique(source[PARTITION])),
            inserts=inserted,
            # Hudi counts an incoming record whose key exists as an update even when the
            # stored record wins; delta's num_target_rows_updated only when s.ts >= t.ts.
            # Delete records are not updates (a delete of a missing key inserts nothing).
            updates=int(stats["num_source_rows"]) - source_deletes - inserted,
            records_written=int(stats["num_output_rows"]),
            files_written=int(stats["num_target_files_added"]),
            bytes_written=sum(size for size, _n in added),
            files_in_table=self.files_on_storage(),
            table_records=sum(n for _s, n in after.values()),
            table_bytes=sum(size for size, _n in after.values()), timings=timings,
            extra={"peer_table_version": self.table.version(),
                   "peer_rows_updated": int(stats["num_target_rows_updated"]),
                   "peer_rows_copied": int(stats["num_target_rows_copied"]),
                   "peer_files_removed": int(stats["num_target_files_removed"]),
                   "peer_execution_s": stats["execution_time_ms"] / 1000,
                   "peer_scan_s": stats["scan_time_ms"] / 1000,
                   "peer_rewrite_s": stats["rewrite_time_ms"] / 1000, **extra})


def location(tables_dir: str, series: str = SERIES[0]) -> str:
    """The Delta table of a run: ``<tables_dir>/delta-merge``."""
    return os.path.join(tables_dir, series)


def open_table(uri: str, fingerprint: str, *, series: str = SERIES[0],
               index_params: Any = None) -> DeltaMergeTable:
    """The Delta table at ``uri`` (created, partitioned by ``dt``, if missing); it
    mirrors no index, so ``index_params`` are not used."""
    return DeltaMergeTable(uri, fingerprint)


def read_table(uri: str) -> pa.Table:
    """Every row of the table's latest version (tests and notebooks: small tables)."""
    from deltalake import DeltaTable

    return pa.table(DeltaTable(uri).to_pyarrow_table())
