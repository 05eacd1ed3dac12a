"""partition-bucket on Spark: simple-bucket's tagging under the rule version in force, and
RFC-89's offline rescale (``call partitionBucketIndexManager(overwrite => ...)``).

Tagging is the hash-bucket ``mapInArrow`` over the batch
(:mod:`indexes.bucket.spark_routing`) with this index's per-partition counts; as Hudi's
writer loads the hashing config once on the driver and hands it to every task, the
version is loaded from
``.hoodie/.bucket_index/partition_bucket_index_meta/configs``
before the batch is routed (and checked against the timeline). The rescale is
the bucket indexes' shared overwrite job and replacecommit
(:func:`indexes.bucket.slices.rescale_work`, multiple-rehash's too, committed by the
service runner) over the
partitions whose count the new rules change, with the new ``<instant>.hashing_config``
written before the replacecommit completes: it is in force exactly from then, and a
rescale that dies first leaves a config no loader takes (its instant never completes)
and that the next writer's rollback deletes.
"""

from __future__ import annotations

from indexes.base import CommitContext, PendingService, ServiceWork, TagContext
from indexes.bucket.slices import BucketRescaleSpark
from indexes.partition_bucket import PartitionBucketIndex
from indexes.partition_bucket.core import (
    HashingConfig,
    checked_config,
    commit_metadata,
    rescale_extra,
    stored_config_problems,
    write_hashing_config,
    write_initial_config,
)


class PartitionBucketSpark(BucketRescaleSpark):
    """Hash-bucket routing tasks; the rule version recorded with every commit."""

    def __init__(self, index: PartitionBucketIndex):
        super().__init__(index)
        self._routed: dict[str, HashingConfig] = {}  # instant → the version it routed with

    def tag_location(self, batch, ctx: TagContext):
        self._routed[ctx.instant] = checked_config(ctx.table, ctx.snapshot,
                                                   self.index.initial_config())
        return super().tag_location(batch, ctx)

    def update_location(self, ctx: CommitContext) -> dict:
        """Version 0's file is written (once) before the first commit completes; the
        commit records its version and the counts of the partitions it wrote."""
        config = self._routed.get(ctx.instant) or self.index.config_in_force(
            ctx.table.snapshot())
        write_initial_config(ctx.table, self.index.initial_config())
        return commit_metadata(config, (s["partitionPath"] for s in ctx.write_stats))

    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        self._routed.pop(instant, None)
        return {}

    def verify(self, spark, table, snapshot) -> list[str]:
        return self.index.bucket_problems(snapshot) + stored_config_problems(
            table, snapshot, self.index.initial_config())

    def complete_service(self, pending: PendingService, table, snapshot) -> ServiceWork:
        """The new rules become the version in force with the replacecommit: their
        ``<instant>.hashing_config`` is written now, before it completes (a rescale
        that dies first leaves a config no loader takes, which the rollback deletes)."""
        config = pending.plan.config.with_instant(pending.instant)
        write_initial_config(table, self.index.initial_config())
        write_hashing_config(table, config)
        work = pending.work
        work.extra_metadata = {**work.extra_metadata, **rescale_extra(config)}
        return work
