"""``indexbench rescale``: refuse bad arguments, take the writer lock, rescale, record.

The rescale itself (planning, Spark jobs, replacecommit) belongs to the multiple-rehash
index: :mod:`indexes.multiple_rehash.core` and :mod:`indexes.multiple_rehash.spark`.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from indexbench.failed_write import undone_on_failure
from indexes.multiple_rehash import require_rescalable
from indexes.multiple_rehash.core import plan_rescale
from indexes.multiple_rehash.spark import rescale
from tableformat.table import Table


def rescale_table(uri: str, mode: str = "rehash", factor: Any = None,
                  partitions: list[str] | None = None, num_buckets: int | None = None,
                  out: str | None = None, spark: SparkSession | None = None,
                  master: str | None = None) -> dict[str, Any]:
    """``indexbench rescale``: refuse bad arguments before anything is written, take the
    writer lock, rescale, and append the metrics row to ``out`` (if given)."""
    table = Table(uri)
    index = require_rescalable(table)
    plan_rescale(table.snapshot(), index, mode, factor, partitions, num_buckets)  # refuse early
    if spark is None:
        from indexbench.spark import get_session

        spark = get_session(master)
    with table, undone_on_failure(spark, table, "rescale"):
        row = rescale(spark, table, index, mode, factor, partitions, num_buckets)
    row = {"index": index.name, "workload": None, **row}
    if out:
        write_rescale_metrics(out, row, uri)
    return row


def write_rescale_metrics(out: str, row: dict[str, Any], table_uri: str) -> None:
    """Append the row to ``out``'s metrics files (run.json only if ``out`` has none)."""
    from pathlib import Path

    from tableformat import metrics as m

    row = {"run_id": row.get("run_id") or m.new_run_id(), **row}
    m.write_metrics(out, m.existing_rows(out) + [row])
    if not (Path(out) / "run.json").exists():
        m.write_run_json(out, {"run_id": row["run_id"], "command": "rescale",
                               "table": table_uri})
