"""simple-bucket on Spark: the routing core runs in ``mapInArrow`` over the batch."""

from __future__ import annotations

import numpy as np
from pyspark.sql import types as T

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext, batch_hash_fields
from indexes.simple_bucket.core import existing_bucket_files, file_id_table, route


class SimpleBucketSpark(SparkAdapter):
    """Tag by hash in the tasks; only the snapshot's file names are broadcast."""

    def tag_location(self, batch, ctx: TagContext):
        cfg = ctx.table.config
        fields = batch_hash_fields(self.index, batch.columns, cfg.record_key_field)
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        counts = self.index.bucket_counts(ctx.snapshot, ctx.partitions)
        part_field, instant, acc = cfg.partition_field, ctx.instant, ctx.counters
        schema = T.StructType(batch.schema.fields + [
            T.StructField(FILE_ID_COL, T.StringType(), False),
            T.StructField(BUCKET_COL, T.IntegerType(), False),
        ])

        def tag(batches):
            import pyarrow as pa

            for rb in batches:
                parts = rb.column(part_field)
                buckets = route([rb.column(f) for f in fields], parts, counts)
                acc.add({"keys_hashed": rb.num_rows})
                names, inverse = file_id_table(parts, buckets, existing, instant)
                fids = pa.array(names, pa.string()).take(pa.array(inverse))
                yield pa.RecordBatch.from_arrays(
                    [*rb.columns, fids, pa.array(buckets.astype(np.int32))],
                    schema=rb.schema.append(pa.field(FILE_ID_COL, pa.string(), False))
                    .append(pa.field(BUCKET_COL, pa.int32(), False)))

        return batch.mapInArrow(tag, schema)

    def verify(self, spark, table, snapshot) -> list[str]:
        return self.index.bucket_problems(snapshot)
