"""multi-fg-bucket on Spark: route by hash, look keys up inside their bucket, place inserts.

1. A ``mapInArrow`` adds every row's bucket (``hash % N``, the routing core).
2. Footer ranges of the partitions' file groups are read in tasks (one row per group
   comes back); each row is paired with the groups of its bucket whose range holds its
   key (:func:`~indexes.multi_fg_bucket.core.candidate_pairs`), in tasks.
3. One task per candidate group probes its bloom filter and reads its key column on a
   positive (:func:`~indexes.bloom_filter.key_check.check_filter`); the confirmed
   (key, group) pairs are joined back: an update's file group.
4. The insert count of each bucket comes to the driver (one row per bucket), which plans
   the bucket's newest group then new ones (:mod:`~indexes.multi_fg_bucket.plan`); one
   task per bucket ranks its inserts by key and cuts them at the plan.

Located rows are persisted once, so the counters of steps 1-3 are counted once. The
tagging's own jobs (the range read, the insert count) and the rows it persists (routed,
located) are counted too: ``tag_jobs``, ``tag_rows_persisted``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext, batch_hash_fields
from indexes.bloom_filter.key_check import check_filter, count_file_read
from indexes.bloom_filter.spark_ranges import read_key_ranges
from indexes.bucket.routing import route
from indexes.bucket.spark_routing import tagged_schema
from indexes.multi_fg_bucket.core import candidate_pairs, footer_filter
from indexes.multi_fg_bucket.layout import partition_groups
from indexes.multi_fg_bucket.plan import plan_counters, plan_inserts, records_per_group
from indexes.roles import VerifiesIndex
from tableformat.basefile import (
    IS_DELETED,
    read_footer,
    read_record_keys,
)
from tableformat.fs import IOStats
from writeclient import sizing

PAIR_SCHEMA = "partition string, key string, file_id string"


class MultiFgBucketSpark(VerifiesIndex, SparkAdapter):
    """Hash buckets, bloom lookups bounded to the bucket, inserts to the newest group."""

    def __init__(self, index):
        super().__init__(index)
        self._cleanup: list = []
        self._counters = None

    def _release(self) -> None:
        """Drop the last batch's broadcasts and cached rows (kept until its commit)."""
        for fn in self._cleanup:
            try:
                fn()
            except Exception:  # noqa: BLE001 - a cleanup must not mask the commit outcome
                pass
        self._cleanup = []

    def _read_ranges(self, ctx: TagContext, groups) -> dict[str, tuple[pa.Array, pa.Array]]:
        """Footer min/max key of every file group, read in tasks; one row per group back."""
        rows = [(p, str(fid), str(path)) for p, g in groups.items()
                for fid, path in zip(g.file_ids, g.paths, strict=True)]
        out = read_key_ranges(ctx, rows)
        got = {(r.partition, r.file_id): (r.min_key, r.max_key) for r in out.itertuples()}
        return {p: (pa.array([got[(p, f)][0] for f in g.file_ids], pa.string()),
                    pa.array([got[(p, f)][1] for f in g.file_ids], pa.string()))
                for p, g in groups.items()}

    # ---- tagLocation ------------------------------------------------------------------
    def tag_location(self, batch, ctx: TagContext):
        self._release()  # a batch that failed before its commit left them
        cfg = ctx.table.config
        key, part = cfg.record_key_field, cfg.partition_field
        fields = batch_hash_fields(self.index, batch.columns, key)
        counts = self.index.bucket_counts(ctx.snapshot, ctx.partitions)
        groups = partition_groups(ctx.snapshot.in_partitions(ctx.partitions), cfg.table_type)
        acc = self._counters = ctx.counters
        has_deletes = IS_DELETED in batch.columns
        schema = tagged_schema(batch.schema, nullable=True)

        # the routed rows are persisted when there are groups to look up, the located ones
        # always: the time model prices both (tag_rows_persisted)
        persisted = 2 if groups else 1

        def add_bucket(batches):
            for rb in batches:
                buckets = route([rb.column(f) for f in fields], rb.column(part), counts)
                acc.add({"keys_hashed": rb.num_rows,
                         "tag_rows_persisted": persisted * rb.num_rows})
                yield pa.RecordBatch.from_arrays(
                    [*rb.columns, pa.array(buckets.astype(np.int32))],
                    schema=rb.schema.append(pa.field(BUCKET_COL, pa.int32(), False)))

        routed = batch.mapInArrow(add_bucket, T.StructType(
            batch.schema.fields + [T.StructField(BUCKET_COL, T.IntegerType(), False)]))
        if groups:  # routed rows feed both the lookup and its join: hashed once
            routed = routed.persist(StorageLevel.MEMORY_AND_DISK)
            self._cleanup.append(routed.unpersist)
            located = self._locate(ctx, routed, groups, key, part)
        else:
            located = routed.withColumn(FILE_ID_COL, F.lit(None).cast("string"))
        located = located.persist(StorageLevel.MEMORY_AND_DISK)
        self._cleanup.append(located.unpersist)

        is_insert = F.col(FILE_ID_COL).isNull()
        if has_deletes:  # a delete of a key no group holds is no insert (the driver drops it)
            is_insert = is_insert & ~F.coalesce(F.col(IS_DELETED), F.lit(False))
        inserts = {(r[0], int(r[1])): int(r[2]) for r in located.where(is_insert)
                   .groupBy(part, BUCKET_COL).count().collect()}  # ok: one row per bucket
        acc.add({"tag_jobs": 1})  # that count: a Spark job of the tagging's own
        cfg_sizing = self.index.sizing()
        avg = sizing.average_record_size(ctx.snapshot.commits, cfg_sizing)
        plans = plan_inserts(inserts, groups, records_per_group(cfg_sizing, avg), ctx.instant)
        acc.add({**plan_counters(plans), "avg_record_size": avg})  # added once, here
        ctx.insert_groups.update((p, fid) for (p, _), pl in plans.items() for fid in pl.file_ids)
        names = [f.name for f in schema.fields]
        if not plans:
            return located.select(names)
        bc = ctx.spark.sparkContext.broadcast(
            {k: (pl.bounds, pl.file_ids) for k, pl in plans.items()})
        self._cleanup.append(bc.destroy)
        fid_at = located.columns.index(FILE_ID_COL)
        fid_field = to_arrow_schema(located.schema).field(FILE_ID_COL)

        def assign(group: pa.Table) -> pa.Table:
            """One bucket's inserts: ranked by record key, cut at the plan's counts."""
            import pyarrow.compute as pc

            bounds, ids = bc.value[(group.column(part)[0].as_py(),
                                    int(group.column(BUCKET_COL)[0].as_py()))]
            order = pc.sort_indices(group.column(key)).to_numpy()
            ranks = np.empty(len(order), np.int64)
            ranks[order] = np.arange(len(order), dtype=np.int64)
            target = np.searchsorted(bounds, ranks, side="right")
            return group.set_column(fid_at, fid_field,
                                    pa.array(ids, pa.string()).take(pa.array(target)))

        planned = located.where(is_insert).groupBy(part, BUCKET_COL).applyInArrow(
            assign, located.schema)
        return located.where(~is_insert).unionByName(planned).select(names)

    def _locate(self, ctx: TagContext, routed, groups, key: str, part: str):
        """Steps 2-3: each row's file group among its bucket's (null: in none)."""
        ranges = self._read_ranges(ctx, groups) if self.index.params["prune_by_ranges"] \
            else {}
        bc = ctx.spark.sparkContext.broadcast({p: (g, ranges.get(p)) for p, g in groups.items()})
        self._cleanup.append(bc.destroy)
        uri, acc = ctx.table.uri, ctx.counters
        pair_arrow = pa.schema([("partition", pa.string()), ("key", pa.string()),
                                ("file_id", pa.string())])

        def explode(batches):
            """Every row with the groups of its bucket whose range holds its key."""
            import pyarrow.compute as pc

            for rb in batches:
                parts = rb.column(1)
                for p in pc.unique(parts).to_pylist():
                    if p not in bc.value:
                        continue
                    g, r = bc.value[p]
                    mask = pc.equal(parts, p)
                    keys = rb.column(0).filter(mask)
                    buckets = rb.column(2).filter(mask).to_numpy()
                    acc.add({"keys_looked_up": int((g.span(buckets)[1] > 0).sum())})
                    k, j = candidate_pairs(buckets, g, keys, r)
                    if len(k):
                        yield pa.RecordBatch.from_arrays(
                            [pa.repeat(pa.scalar(p), len(k)), keys.take(pa.array(k)),
                             pa.array(g.file_ids[j], pa.string())], schema=pair_arrow)

        new_filter = self.index.filter_factory()

        def check(pairs: pa.Table) -> pa.Table:
            """One file group: bloom probes, then its key column if any was positive."""
            from tableformat.table import Table

            table = Table(uri)
            p, fid = pairs.column("partition")[0].as_py(), pairs.column("file_id")[0].as_py()
            g, _ = bc.value[p]
            path = table.abs_path(str(g.paths[int(np.flatnonzero(g.file_ids == fid)[0])]))
            stats, counts = IOStats(), Counter()
            keys = pairs.column("key").combine_chunks()
            bloom = footer_filter(read_footer(table.fs, path, stats))
            bloom = new_filter() if bloom is None else bloom  # no filter: holds nothing
            before = stats.bytes_read
            found = check_filter(bloom, keys, counts,
                                lambda: read_record_keys(table.fs, path, stats))
            if stats.files_read:
                count_file_read(counts, bool(found.any()), stats.bytes_read - before)
            acc.add({**counts, "files_read": stats.files_read, "bytes_read": stats.bytes_read,
                     "check_footers_read": stats.footers_read})
            n = int(found.sum())
            return pa.table({"partition": pa.repeat(pa.scalar(p), n),
                             "key": keys.filter(pa.array(found)),
                             "file_id": pa.repeat(pa.scalar(fid), n)})

        pairs = routed.select(key, part, BUCKET_COL).mapInArrow(explode, PAIR_SCHEMA)
        matches = pairs.groupBy("partition", "file_id").applyInArrow(check, PAIR_SCHEMA).select(
            F.col("partition").alias("__p"), F.col("key").alias("__k"),
            F.col("file_id").alias(FILE_ID_COL))
        return routed.join(matches, (routed[part] == matches["__p"])
                           & (routed[key] == matches["__k"]), "left").drop("__p", "__k")

    # ---- the checkpoint ------------------------------------------------------------
    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """Drop the batch's cached rows and broadcasts; the batch's probes per key."""
        self._release()
        acc, self._counters = self._counters, None
        if not ok or acc is None:
            return {}
        counts = acc.value
        looked = counts.get("keys_looked_up", 0)
        return {"candidates_per_key": counts.get("bloom_checks", 0) / looked if looked
                else None}

    def verify(self, spark, table, snapshot) -> list[str]:
        """File ids ``<bucket>-<ordinal>-…`` in range, ordinals contiguous per bucket (the
        per-file checks, filters holding their keys and records in their hash bucket,
        run in ``verify``'s tasks through the definition's hooks)."""
        return self.index.bucket_problems(snapshot)
