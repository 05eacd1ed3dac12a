"""bloom on Spark, distributed as ``SparkHoodieBloomIndexHelper``: footers in tasks,
range pruning per batch slice, one key check per candidate file (the core does both)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext
from indexes.bloom.core import (
    FileRanges,
    candidate_pairs,
    check_keys,
)
from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from indexes.bloom_filter.key_check import count_file_read
from indexes.bloom_filter.spark_ranges import read_key_ranges
from tableformat.basefile import read_footer, read_record_keys
from tableformat.fs import IOStats

PAIRS_PER_BATCH = 1 << 16  # (key, file) pairs per Arrow batch sent back to the JVM


class BloomSpark(SparkAdapter):
    """Hudi's HoodieBloomIndex on Spark."""

    def _load_ranges(self, ctx: TagContext) -> dict[str, FileRanges]:
        """Step 1: footers' min/max, read in Spark tasks (one row per file comes back)."""
        slices = ctx.snapshot.in_partitions(ctx.partitions)
        if not slices:
            return {}
        out = read_key_ranges(ctx, [(s.partition, s.file_id, s.path) for s in slices])
        return {p: FileRanges.build(g["file_id"], g["min_key"], g["max_key"])
                for p, g in out.groupby("partition")}

    _broadcasts: tuple = ()

    def _release(self) -> None:
        """Drop the last batch's broadcasts (kept until its commit: a cached partition of
        the tagged batch lost with an executor is recomputed from them)."""
        for bc in self._broadcasts:
            bc.destroy()
        self._broadcasts = ()

    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        self._release()
        return {}

    def tag_location(self, batch, ctx: TagContext):
        self._release()  # a batch that failed before its commit left them
        cfg = ctx.table.config
        key_field, part_field = cfg.record_key_field, cfg.partition_field
        ranges = self._load_ranges(ctx)
        schema = T.StructType(batch.schema.fields + [
            T.StructField(FILE_ID_COL, T.StringType(), True),
            T.StructField(BUCKET_COL, T.IntegerType(), True),
        ])
        if not ranges:  # empty table: everything is an insert
            return batch.withColumn(FILE_ID_COL, F.lit(None).cast("string")).withColumn(
                BUCKET_COL, F.lit(None).cast("int")).select([f.name for f in schema.fields])

        bc_ranges = ctx.spark.sparkContext.broadcast(ranges)
        prune = self.index.params["prune_by_ranges"]
        paths = {(s.partition, s.file_id): s.path for s in ctx.snapshot.in_partitions(ranges)}
        bc_paths = ctx.spark.sparkContext.broadcast(paths)
        self._broadcasts = (bc_ranges, bc_paths)
        table_uri, acc = ctx.table.uri, ctx.counters

        new_filter = self.index.filter_factory()  # every file of the table shares its hashing
        template = new_filter()
        pos_dtype, slices = np.dtype(template.position_dtype), template.first_salt_slices
        width_bytes = slices * pos_dtype.itemsize
        template_family = template.hash_family
        del template  # holds hashlib objects: the task closures must not capture it

        def explode_candidates(batches):
            """Step 2: range pruning on the broadcast min/max of each partition's files;
            each key is hashed once here, for all the files it is compared with."""
            import pyarrow as pa
            import pyarrow.compute as pc

            hasher = new_filter()  # one per task: only its hashing is used
            for rb in batches:
                parts = rb.column(part_field)
                for part in pc.unique(parts).to_pylist():
                    r = bc_ranges.value.get(part)
                    if r is None:
                        continue
                    keys = rb.column(key_field).filter(pc.equal(parts, part))
                    k, f = candidate_pairs(keys.to_numpy(zero_copy_only=False), r, prune)
                    if not len(k):
                        continue
                    has = np.zeros(len(keys), dtype=bool)
                    has[k] = True  # hash only keys some file's range holds, each once
                    column = np.cumsum(has) - 1
                    pos = hasher.prehash(keys.filter(pa.array(has)))  # (slices, keys)
                    for lo in range(0, len(k), PAIRS_PER_BATCH):  # bounded Arrow batches
                        kk, ff = k[lo:lo + PAIRS_PER_BATCH], f[lo:lo + PAIRS_PER_BATCH]
                        hashes = pa.FixedSizeBinaryArray.from_buffers(
                            pa.binary(width_bytes), len(kk),
                            [None, pa.py_buffer(np.ascontiguousarray(pos[:, column[kk]].T))])
                        yield pa.RecordBatch.from_arrays(
                            [pa.repeat(pa.scalar(part), len(kk)), keys.take(pa.array(kk)),
                             pa.array(r.file_ids[ff], pa.string()), hashes.cast(pa.binary())],
                            schema=pair_arrow)

        def check_file(pairs):
            """Step 3: Hudi's bloom check + key lookup for one candidate file."""
            import pyarrow as pa

            from tableformat.table import Table

            table = Table(table_uri)
            part, fid = pairs.column("partition")[0].as_py(), pairs.column("file_id")[0].as_py()
            stats, counts = IOStats(), Counter()
            keys = pairs.column("key").combine_chunks()
            raw = pairs.column("key_hash").combine_chunks().cast(pa.binary(width_bytes))
            offset = raw.offset * width_bytes
            words = np.frombuffer(raw.buffers()[1], dtype=pos_dtype, offset=offset,
                                  count=len(keys) * slices).reshape(len(keys), -1).T
            path = table.abs_path(bc_paths.value[(part, fid)])
            footer = read_footer(table.fs, path, stats)
            bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
            same = bloom.hash_family == template_family
            before = stats.bytes_read
            found = check_keys(bloom, keys, counts,
                               lambda: read_record_keys(table.fs, path, stats),
                               words if same else None)
            if stats.files_read:
                count_file_read(counts, bool(found.any()), stats.bytes_read - before)
            acc.add({**counts, "files_read": stats.files_read, "bytes_read": stats.bytes_read,
                     "check_footers_read": stats.footers_read})
            return pa.table({"partition": pa.repeat(pa.scalar(part), int(found.sum())),
                             "key": keys.filter(pa.array(found)),
                             "file_id": pa.repeat(pa.scalar(fid), int(found.sum()))})

        pair_schema = "partition string, key string, file_id string"
        pair_arrow = pa.schema([("partition", pa.string()), ("key", pa.string()),
                                ("file_id", pa.string()), ("key_hash", pa.binary())])
        pairs = batch.select(key_field, part_field).mapInArrow(
            explode_candidates, pair_schema + ", key_hash binary")
        matches = pairs.groupBy("partition", "file_id").applyInArrow(check_file, pair_schema)
        matches = matches.select(
            F.col("partition").alias("__p"), F.col("key").alias("__k"),
            F.col("file_id").alias(FILE_ID_COL))
        tagged = batch.join(
            matches,
            (batch[part_field] == matches["__p"]) & (batch[key_field] == matches["__k"]),
            "left",
        ).drop("__p", "__k").withColumn(BUCKET_COL, F.lit(None).cast("int"))
        return tagged.select([f.name for f in schema.fields])

