"""partition-bucket on Spark: simple-bucket's tagging under the rule version in force, and
RFC-89's offline rescale (``call partitionBucketIndexManager(overwrite => ...)``).

Tagging is simple-bucket's ``mapInArrow`` over the batch with this index's per-partition
counts; as Hudi's writer loads the hashing config once on the driver and hands it to
every task, the version is loaded from
``.hoodie/.bucket_index/partition_bucket_index_meta/configs``
before the batch is routed (and checked against the timeline). The rescale is
multiple-rehash's overwrite job and replacecommit
(:func:`indexes.multiple_rehash.spark.execute_rescale`) over the
partitions whose count the new rules change, with the new ``<instant>.hashing_config``
written before the replacecommit completes: it is in force exactly from then, and a
rescale that dies first leaves a config no loader takes (its instant never completes)
and that the next writer's rollback deletes.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession

from indexes.base import CommitContext, SparkAdapter, TagContext
from indexes.multiple_rehash.spark import execute_rescale
from indexes.partition_bucket import PartitionBucketIndex
from indexes.partition_bucket.core import (
    HashingConfig,
    checked_config,
    commit_metadata,
    new_config,
    plan_partition_rescale,
    rescale_extra,
    stored_config_problems,
    write_hashing_config,
)
from tableformat.table import Table


class PartitionBucketSpark(SparkAdapter):
    """Routing by simple-bucket's tasks; the rule version recorded with every commit."""

    def __init__(self, index: PartitionBucketIndex):
        super().__init__(index)
        from indexes.simple_bucket.spark import SimpleBucketSpark

        self._routing = SimpleBucketSpark(index)
        self._routed: dict[str, HashingConfig] = {}  # instant → the version it routed with

    def tag_location(self, batch, ctx: TagContext):
        self._routed[ctx.instant] = checked_config(ctx.table, ctx.snapshot,
                                                   self.index.initial_config())
        return self._routing.tag_location(batch, ctx)

    def update_location(self, ctx: CommitContext) -> dict:
        """Version 0's file is written (once) before the first commit completes; the
        commit records its version and the counts of the partitions it wrote."""
        config = self._routed.get(ctx.instant) or self.index.config_in_force(
            ctx.table.snapshot())
        write_hashing_config(ctx.table, self.index.initial_config())
        return commit_metadata(config, (s["partitionPath"] for s in ctx.write_stats))

    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        self._routed.pop(instant, None)
        return {}

    def verify(self, spark, table, snapshot) -> list[str]:
        return self.index.bucket_problems(snapshot) + stored_config_problems(
            table, snapshot, self.index.initial_config())


def rescale(spark: SparkSession, table: Table, index: PartitionBucketIndex,
            expressions: str, num_buckets: Any = None,
            batch_no: int | None = None) -> dict[str, Any]:
    """Make new rules the version in force: one replacecommit that overwrites the
    partitions whose count changes (none: it replaces nothing) and names the new
    ``<instant>.hashing_config``; returns the metrics row. All writers must be stopped:
    the caller holds the writer lock."""
    t_start = time.perf_counter()
    before = table.snapshot()
    current = checked_config(table, before, index.initial_config())
    new = new_config(current, expressions, num_buckets)
    plan = plan_partition_rescale(before, current, new)

    def publish(instant: str) -> dict[str, str]:
        config = new.with_instant(instant)
        write_hashing_config(table, index.initial_config())
        write_hashing_config(table, config)
        return rescale_extra(config)

    return execute_rescale(spark, table, index, plan, before, batch_no=batch_no,
                           extra_metadata=publish, t_start=t_start)
