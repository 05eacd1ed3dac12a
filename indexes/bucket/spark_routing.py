"""Hash-bucket routing on Spark: the tagging tasks, and the tagged batch's schema.

:class:`BucketRoutingSpark` tags a batch in ``mapInArrow``: every task hashes its rows
with the routing core (:mod:`indexes.bucket.routing`) under the partitions' current
counts (or an index's own router, :meth:`BucketRoutingSpark.bucket_router`); only the
snapshot's file names are broadcast, no data file is read.
:func:`tagged_schema` is the schema every Spark adapter's tagging returns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pyarrow as pa
from pyspark.sql import types as T

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext, batch_hash_fields
from indexes.bucket.files import existing_bucket_files, file_id_table
from indexes.bucket.routing import route
from indexes.roles import CombinesInWriter, VerifiesIndex


def tagged_schema(schema: T.StructType, nullable: bool = False) -> T.StructType:
    """The batch's schema plus the columns tagging adds: FILE_ID_COL and BUCKET_COL
    (``nullable``: some rows may get no location)."""
    return T.StructType(schema.fields + [
        T.StructField(FILE_ID_COL, T.StringType(), nullable),
        T.StructField(BUCKET_COL, T.IntegerType(), nullable),
    ])


class BucketRoutingSpark(CombinesInWriter, VerifiesIndex, SparkAdapter):
    """Tag by hash in the tasks; only the snapshot's file names are broadcast."""

    def bucket_router(self, ctx: TagContext) -> Callable[[list, pa.Array], np.ndarray]:
        """``(index-key columns, partition values) -> bucket of every row`` under the
        snapshot's routing state, shipped to the tasks (default: ``hash % N`` under the
        partitions' current counts)."""
        counts = self.index.bucket_counts(ctx.snapshot, ctx.partitions)
        return functools.partial(route, counts=counts)

    def tag_location(self, batch, ctx: TagContext):
        cfg = ctx.table.config
        fields = batch_hash_fields(self.index, batch.columns, cfg.record_key_field)
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        router = self.bucket_router(ctx)
        part_field, instant, acc = cfg.partition_field, ctx.instant, ctx.counters
        schema = tagged_schema(batch.schema)
        counted = not ctx.combined_in_writer  # else each write counts its combined records

        def tag(batches):
            for rb in batches:
                parts = rb.column(part_field)
                buckets = router([rb.column(f) for f in fields], parts)
                if counted:
                    acc.add({"keys_hashed": rb.num_rows})
                names, inverse = file_id_table(parts, buckets, existing, instant)
                fids = pa.array(names, pa.string()).take(pa.array(inverse))
                yield pa.RecordBatch.from_arrays(
                    [*rb.columns, fids, pa.array(buckets.astype(np.int32))],
                    schema=rb.schema.append(pa.field(FILE_ID_COL, pa.string(), False))
                    .append(pa.field(BUCKET_COL, pa.int32(), False)))

        return batch.mapInArrow(tag, schema)

    def writer_combine(self, table, columns: list[str]) -> tuple[str, ...] | None:
        """A record's bucket is its hash's: when the hash is of the record key alone,
        every record of a key reaches one file group (a hash field other than the key
        could send two records of one key to two buckets before they are combined)."""
        key = table.config.record_key_field
        if list(self.index.hash_fields(key)) != [key]:
            return None
        return ("keys_hashed",)

    def verify(self, spark, table, snapshot) -> list[str]:
        return self.index.bucket_problems(snapshot)


__all__ = ["BucketRoutingSpark", "tagged_schema"]
