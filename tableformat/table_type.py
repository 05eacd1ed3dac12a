"""``hoodie.table.type``: copy-on-write or merge-on-read, fixed when a table is created.

Copy-on-write rewrites a file group's base file on every write to it; merge-on-read
appends the batch's records of a file group to a new log file (Hudi's log format,
:mod:`tableformat.hudi_log`) and merges base and logs on read until a compaction
writes a new base file. See docs/table-format.md (merge-on-read).
"""

from __future__ import annotations

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
