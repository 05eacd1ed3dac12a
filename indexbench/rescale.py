"""``indexbench rescale``: refuse bad arguments, take the writer lock, rescale, record.

Two kinds of table rescale. multiple-rehash grows partitions by a factor (rehash or
overwrite: :mod:`indexes.multiple_rehash.core` / :mod:`indexes.multiple_rehash.spark`);
partition-bucket makes new regex rules the version in force and overwrites the
partitions whose count they change (RFC-89: :mod:`indexes.partition_bucket.core` /
:mod:`indexes.partition_bucket.spark`). Both are one replacecommit, planned and checked
before anything is written; the options of one kind are refused for the other.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

import indexes
from indexbench.failed_write import undone_on_failure
from indexes.multiple_rehash import MultipleRehashIndex
from indexes.multiple_rehash.core import RescaleError, RescalePlan, plan_rescale
from indexes.partition_bucket import PartitionBucketIndex
from indexes.partition_bucket.core import checked_config, new_config, plan_partition_rescale
from tableformat.errors import TableConfigError
from tableformat.table import Table


def rescalable_index(table: Table) -> MultipleRehashIndex | PartitionBucketIndex:
    """The table's index, or a refusal if its bucket counts cannot be rescaled."""
    if not table.exists():
        raise TableConfigError(f"no table at {table.uri} (.hoodie/hoodie.properties is missing)")
    cfg = table.config
    if cfg.index_name not in (MultipleRehashIndex.name, PartitionBucketIndex.name):
        raise TableConfigError(
            f"table {table.uri} uses index {cfg.index_name!r}; only multiple-rehash tables "
            "(--factor, --mode) and partition-bucket tables (--expressions) can be rescaled "
            "(their bucket counts are per partition and versioned)")
    index = indexes.from_table_config(cfg)
    assert isinstance(index, MultipleRehashIndex | PartitionBucketIndex)
    return index


def plan_table_rescale(table: Table, index: MultipleRehashIndex | PartitionBucketIndex,
                       mode: str | None = None, factor: Any = None,
                       partitions: list[str] | None = None, num_buckets: int | None = None,
                       expressions: str | None = None) -> RescalePlan:
    """Every argument checked against the committed snapshot; nothing is written."""
    snapshot = table.snapshot()
    if isinstance(index, PartitionBucketIndex):
        wrong = [opt for opt, bad in (("--mode rehash", mode == "rehash"),
                                      ("--factor", factor is not None),
                                      ("--partition", bool(partitions))) if bad]
        if wrong:
            raise RescaleError(
                f"{', '.join(wrong)}: only for multiple-rehash tables; a partition-bucket "
                "table is rescaled with --expressions 'regex,N;...' [--buckets DEFAULT], which "
                "overwrites every partition whose count the new rules change")
        current = checked_config(table, snapshot, index.initial_config())
        return plan_partition_rescale(snapshot, current,
                                      new_config(current, expressions, num_buckets))
    if expressions is not None:
        raise RescaleError("--expressions: a partition-bucket option; a multiple-rehash "
                           "table is rescaled with --factor K [--mode rehash|overwrite] or "
                           "--mode overwrite --buckets M")
    return plan_rescale(snapshot, index, mode or "rehash", factor, partitions, num_buckets)


def rescale_table(uri: str, mode: str | None = None, factor: Any = None,
                  partitions: list[str] | None = None, num_buckets: int | None = None,
                  out: str | None = None, spark: SparkSession | None = None,
                  master: str | None = None, *, expressions: str | None = None,
                  dry_run: bool = False) -> dict[str, Any]:
    """``indexbench rescale``: refuse bad arguments before anything is written, take the
    writer lock, rescale, and append the metrics row to ``out`` (if given).

    multiple-rehash: ``mode`` (default rehash), ``factor``, ``partitions``,
    ``num_buckets``. partition-bucket: ``expressions`` (the new rules) and optionally
    ``num_buckets`` (the new default). ``dry_run``: only the plan (which partitions, from
    and to how many buckets, how many files would be rewritten), nothing written, no
    Spark."""
    table = Table(uri)
    index = rescalable_index(table)
    plan = plan_table_rescale(table, index, mode, factor, partitions, num_buckets,
                              expressions)  # refuse early
    if dry_run:
        return dry_run_summary(index, plan)
    if spark is None:
        from indexbench.spark import get_session

        spark = get_session(master)
    with table, undone_on_failure(spark, table, "rescale"):
        if isinstance(index, PartitionBucketIndex):
            from indexes.partition_bucket.spark import rescale as partition_rescale

            row = partition_rescale(spark, table, index, expressions, num_buckets)
        else:
            from indexes.multiple_rehash.spark import rescale

            row = rescale(spark, table, index, mode or "rehash", factor, partitions,
                          num_buckets)
    row = {"index": index.name, "workload": None, **row}
    if out:
        write_rescale_metrics(out, row, uri)
    return row


def dry_run_summary(index, plan: RescalePlan) -> dict[str, Any]:
    """What a rescale would do: per partition, its bucket counts and files to rewrite."""
    files: dict[str, int] = {}
    for s in plan.slices:
        files[s.partition] = files.get(s.partition, 0) + 1
    return {"index": index.name, "dry_run": True, "mode": plan.mode,
            "partitions": [{"partition": p, "from_buckets": f, "to_buckets": t,
                            "files": files.get(p, 0)} for p, (f, t) in sorted(plan.counts.items())],
            "files": len(plan.slices), "from_buckets": plan.from_buckets,
            "to_buckets": plan.to_buckets}


def write_rescale_metrics(out: str, row: dict[str, Any], table_uri: str) -> None:
    """Append the row to ``out``'s metrics files (run.json only if ``out`` has none)."""
    from pathlib import Path

    from tableformat import metrics as m

    row = {"run_id": row.get("run_id") or m.new_run_id(), **row}
    m.write_metrics(out, m.existing_rows(out) + [row])
    if not (Path(out) / "run.json").exists():
        m.write_run_json(out, {"run_id": row["run_id"], "command": "rescale",
                               "table": table_uri})
