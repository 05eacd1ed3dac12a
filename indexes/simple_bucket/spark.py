"""simple-bucket on Spark: the routing core runs in ``mapInPandas`` over the batch."""

from __future__ import annotations

import numpy as np
from pyspark.sql import types as T

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext
from indexes.simple_bucket.core import assign_file_ids, existing_bucket_files, route
from tableformat.errors import IndexBenchError


class SimpleBucketSpark(SparkAdapter):
    """Tag by hash in the tasks; only the snapshot's file names are broadcast."""

    def tag_location(self, batch, ctx: TagContext):
        cfg = ctx.table.config
        fields = self.index.hash_fields(cfg.record_key_field)
        missing = [f for f in fields if f not in batch.columns]
        if missing:
            raise IndexBenchError(f"index-key field(s) {missing} are not columns of the batch")
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        counts = self.index.bucket_counts(ctx.snapshot, ctx.partitions)
        part_field, instant, acc = cfg.partition_field, ctx.instant, ctx.counters
        schema = T.StructType(batch.schema.fields + [
            T.StructField(FILE_ID_COL, T.StringType(), False),
            T.StructField(BUCKET_COL, T.IntegerType(), False),
        ])

        def tag(frames):
            for pdf in frames:
                parts = pdf[part_field].to_numpy(dtype=object)
                buckets = route([pdf[f] for f in fields], parts, counts)
                acc.add({"keys_hashed": len(pdf)})
                pdf[FILE_ID_COL] = assign_file_ids(parts, buckets, existing, instant)
                pdf[BUCKET_COL] = buckets.astype(np.int32)
                yield pdf

        return batch.mapInPandas(tag, schema)

    def verify(self, spark, table, snapshot) -> list[str]:
        return self.index.bucket_problems(snapshot)
