"""``indexbench compact TABLE``: compact a merge-on-read table now (every file slice with
log files gets a new base file), through the table-service runner.

Bad input is refused before Spark starts: no table, a copy-on-write table (nothing to
compact), a table with no log files (said, not an error: nothing is written).
"""

from __future__ import annotations

from typing import Any

import indexes
from indexbench import services
from indexbench.compaction import COMPACT, plan
from indexbench.rescale import write_rescale_metrics
from tableformat.errors import IndexBenchError
from tableformat.table import Table
from tableformat.table_type import MERGE_ON_READ


def compact_table(uri: str, out: str | None = None, spark: Any = None,
                  master: str | None = None) -> dict[str, Any] | None:
    """Compact ``uri``; its metrics row (appended to ``out`` if given), or None when no
    file slice has log files."""
    table = Table(uri)
    if not table.exists():
        raise IndexBenchError(f"{uri}: no table here (.hoodie/hoodie.properties is missing)")
    cfg = table.config
    if cfg.table_type != MERGE_ON_READ:
        raise IndexBenchError(f"{uri} is a {cfg.table_type} table: only merge-on-read "
                              "tables have log files to compact")
    if plan(table, table.snapshot(), {"force": True}) is None:
        return None
    index = indexes.from_table_config(cfg)
    if spark is None:
        from indexbench.spark import get_session

        spark = get_session(master)
    with table:
        rows = services.run_service(spark, table, index, COMPACT, {"force": True}, None)
    if not rows:  # a writer compacted it meanwhile
        return None
    row = {"index": index.name, "workload": None, "table_type": "mor", **rows[0]}
    if out:
        write_rescale_metrics(out, row, uri)
    return row
