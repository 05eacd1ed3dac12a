"""bloom on Spark, distributed as ``SparkHoodieBloomIndexHelper``: footers in tasks,
range pruning per batch slice, one key check per candidate file (the core does both)."""

from __future__ import annotations

from collections import Counter

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql import types as T

from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter, TagContext
from indexes.bloom.core import FileRanges, candidate_pairs, check_keys, read_key_range
from tableformat.basefile import read_footer, read_record_keys
from tableformat.fs import IOStats


class BloomSpark(SparkAdapter):
    """Hudi's HoodieBloomIndex on Spark."""

    def _load_ranges(self, ctx: TagContext) -> dict[str, FileRanges]:
        """Step 1: footers' min/max, read in Spark tasks (one row per file comes back)."""
        slices = ctx.snapshot.in_partitions(ctx.partitions)
        if not slices:
            return {}
        table_uri, acc = ctx.table.uri, ctx.counters
        files = ctx.spark.createDataFrame(
            [(s.partition, s.file_id, s.path) for s in slices],
            "partition string, file_id string, path string",
        )
        n = max(1, min(len(slices), ctx.spark.sparkContext.defaultParallelism * 2))

        def read_ranges(frames):
            from tableformat.table import Table

            table = Table(table_uri)
            for pdf in frames:
                stats = IOStats()
                rows = [read_key_range(table.fs, table.abs_path(p), stats) for p in pdf["path"]]
                acc.add({"range_footers_read": stats.footers_read,
                         "bytes_read": stats.bytes_read})
                yield pdf.assign(min_key=[r[0] for r in rows], max_key=[r[1] for r in rows])

        out = files.repartition(n).mapInPandas(
            read_ranges, "partition string, file_id string, path string, min_key string, "
                         "max_key string").toPandas()  # one row per base file: bounded
        return {p: FileRanges.build(g["file_id"], g["min_key"], g["max_key"])
                for p, g in out.groupby("partition")}

    def tag_location(self, batch, ctx: TagContext):
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
        table_uri, acc = ctx.table.uri, ctx.counters

        def explode_candidates(frames):
            """Step 2: range pruning on the broadcast min/max of each partition's files."""
            for pdf in frames:
                out = []
                for part, g in pdf.groupby(part_field, sort=False):
                    r = bc_ranges.value.get(part)
                    if r is None:
                        continue
                    keys = g[key_field].to_numpy(dtype=object)
                    k, f = candidate_pairs(keys, r, prune)
                    out.append(pd.DataFrame({"partition": part, "key": keys[k],
                                             "file_id": r.file_ids[f]}))
                if out:
                    yield pd.concat(out, ignore_index=True)

        def check_file(pdf: pd.DataFrame) -> pd.DataFrame:
            """Step 3: Hudi's bloom check + key lookup for one candidate file."""
            from tableformat.table import Table

            table = Table(table_uri)
            part, fid = pdf["partition"].iat[0], pdf["file_id"].iat[0]
            stats, counts = IOStats(), Counter()
            keys = pdf["key"].to_numpy(dtype=object)
            path = table.abs_path(bc_paths.value[(part, fid)])
            footer = read_footer(table.fs, path, stats)
            found = check_keys(footer, keys, counts,
                               lambda: read_record_keys(table.fs, path, stats))
            acc.add({**counts, "files_read": stats.files_read, "bytes_read": stats.bytes_read,
                     "check_footers_read": stats.footers_read})
            return pd.DataFrame({"partition": part, "key": keys[found], "file_id": fid})

        pair_schema = "partition string, key string, file_id string"
        pairs = batch.select(key_field, part_field).mapInPandas(explode_candidates, pair_schema)
        matches = pairs.groupBy("partition", "file_id").applyInPandas(check_file, pair_schema)
        matches = matches.select(
            F.col("partition").alias("__p"), F.col("key").alias("__k"),
            F.col("file_id").alias(FILE_ID_COL))
        tagged = batch.join(
            matches,
            (batch[part_field] == matches["__p"]) & (batch[key_field] == matches["__k"]),
            "left",
        ).drop("__p", "__k").withColumn(BUCKET_COL, F.lit(None).cast("int"))
        return tagged.select([f.name for f in schema.fields])

