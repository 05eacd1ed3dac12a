"""``hoodie.table.type``: copy-on-write or merge-on-read, fixed when a table is created.

Copy-on-write rewrites a file group's base file on every write to it; merge-on-read
appends the batch's records of a file group to a new log file (Hudi's log format,
:mod:`tableformat.hudi_log`) and merges base and logs on read until a compaction
writes a new base file. See docs/table-format.md (merge-on-read).
"""

from __future__ import annotations

from collections.abc import Iterable

from tableformat.errors import TableConfigError

TABLE_TYPE = "hoodie.table.type"
COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
TABLE_TYPES = (COPY_ON_WRITE, MERGE_ON_READ)
# what a user may type (``--table-type mor``), as Hudi's Spark datasource also accepts
# the full names case-insensitively
SHORT_NAMES = {"cow": COPY_ON_WRITE, "mor": MERGE_ON_READ}


def check_table_type(value: str) -> str:
    """The canonical name of a table type, or one clear error."""
    name = SHORT_NAMES.get(value.lower(), value.upper())
    if name not in TABLE_TYPES:
        raise TableConfigError(f"{TABLE_TYPE}={value!r}: not a table type (cow, mor, "
                               f"{', '.join(TABLE_TYPES)})")
    return name


def short_name(table_type: str) -> str:
    """``cow`` / ``mor``: the label of a table type in rows, series and figures."""
    return {v: k for k, v in SHORT_NAMES.items()}[check_table_type(table_type)]


def writes_log_file(table_type: str, can_index_log_files: bool, exists: bool,
                    planned_inserts: bool, pending: bool = False) -> bool:
    """Whether an upsert appends a file group's records to a new log file (True) or
    writes it a base file (False): the one rule of the Spark driver and the simulator.

    Hudi's ``BaseSparkDeltaCommitActionExecutor``: on merge-on-read, an index that can
    index log files (``canIndexLogFiles``: consistent hashing, dynamic-rli) appends
    every file group's records, a new file group starting log-only. One that cannot
    (bloom: its filters are in base-file footers; Hudi's simple bucket index) appends to
    a file group that exists; a new file group, and the small base files an insert plan
    topped up (``planned_inserts``: Hudi's ``smallFileIds``), get a base file, merged
    with the group's updates, so bloom's lookups see every key. ``pending``: a file
    group not visible yet (a consistent-hashing dual write into a pending resize's
    child), whose records are appended to a log of the child on merge-on-read (RFC-42;
    Hudi's append handle writes them as any located record)."""
    if table_type != MERGE_ON_READ:
        return False
    if can_index_log_files or pending:
        return True
    return exists and not planned_inserts


def insert_candidates(slices: Iterable, table_type: str, can_index_log_files: bool) -> list:
    """The file slices an index's own insert planner may top up (multi-fg-bucket's): on
    merge-on-read, an index that cannot index log files takes only slices without log
    files, as Hudi's ``SparkUpsertDeltaCommitPartitioner`` does (inserts into a slice
    with logs would go to its log, where that index cannot find them). The driver's
    planner takes Hudi's full rule: :func:`writeclient.sizing.small_file_candidates`."""
    if table_type == MERGE_ON_READ and not can_index_log_files:
        return [s for s in slices if not s.logs]
    return list(slices)
