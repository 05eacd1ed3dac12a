"""bloom: Hudi's default index, distributed as HoodieBloomIndex does it.

1. read the min/max key from the footers of the base files in the batch's partitions
   (one Spark task per slice of files);
2. prune: a key is compared only with files whose [min, max] holds it;
3. per candidate file (one group per file): probe its bloom filter, then read the
   record-key column once if any probe was positive, and join.
"""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql import types as T

from indexbench.errors import IndexBenchError
from indexbench.fs import IOStats
from indexes.base import BUCKET_COL, FILE_ID_COL, Param, RecordIndex, TagContext
from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from indexes.bloom_lookup import FileRanges, candidate_pairs, check_keys_in_file, read_key_range


class BloomIndex(RecordIndex):
    """Hudi's BLOOM index with Hudi's defaults."""

    name = "bloom"
    index_type = "BLOOM"
    PARAMS = (
        Param("num_entries", "hoodie.index.bloom.num_entries", int, 60000,
              "entries each filter (row) is sized for"),
        Param("fpp", "hoodie.index.bloom.fpp", float, 1e-9, "target false-positive probability"),
        Param("filter_type", "hoodie.bloom.index.filter.type", str, "DYNAMIC_V0",
              "SIMPLE or DYNAMIC_V0", choices=("SIMPLE", "DYNAMIC_V0")),
        Param("max_entries", "hoodie.bloom.index.filter.dynamic.max.entries", int, 100000,
              "bound of a DYNAMIC_V0 filter before adds go round-robin"),
        Param("max_records_per_file", "hoodie.copyonwrite.insert.split.size", int, 2000,
              "inserts per new file group (Hudi's default is 500000; small-file packing is "
              "not done)"),
        Param("prune_by_ranges", "hoodie.bloom.index.prune.by.ranges", bool, True,
              "compare keys only with files whose min/max range holds them"),
    )

    def validate(self) -> None:
        p = self.params
        if p["num_entries"] < 1 or p["max_entries"] < 1:
            raise IndexBenchError("bloom num_entries and max_entries must be >= 1")
        if p["max_records_per_file"] < 1:
            raise IndexBenchError("hoodie.copyonwrite.insert.split.size must be >= 1")
        if not 0 < p["fpp"] < 1:
            raise IndexBenchError("hoodie.index.bloom.fpp must be in (0, 1)")

    def new_filter(self) -> HoodieBloomFilter:
        p = self.params
        return HoodieBloomFilter.create(p["filter_type"], p["num_entries"], p["fpp"],
                                        p["max_entries"])

    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        bloom = self.new_filter()
        bloom.add_keys(record_keys.to_pylist())
        text = bloom.serialize()
        return {FOOTER_KEY: text, TYPE_CODE_KEY: bloom.type_code}, len(text)

    # ---- tagging -----------------------------------------------------------
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
            from indexbench.table import Table

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
        prune = self.params["prune_by_ranges"]
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
            from indexbench.table import Table

            table = Table(table_uri)
            part, fid = pdf["partition"].iat[0], pdf["file_id"].iat[0]
            stats, counts = IOStats(), Counter()
            keys = pdf["key"].to_numpy(dtype=object)
            found = check_keys_in_file(table.fs, table.abs_path(bc_paths.value[(part, fid)]),
                                       keys, stats, counts)
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

    def table_metrics(self, snapshot) -> dict[str, float]:
        disk = sum(s.index_bytes for s in snapshot.slices.values())
        return {"index_disk_bytes": disk, "index_mem_bytes": 0}


def measured_fp_rate(counts: dict) -> float:
    """False positives over probes of keys that were not in the probed file."""
    negatives = counts.get("bloom_checks", 0) - counts.get("true_positives", 0)
    return counts.get("false_positives", 0) / negatives if negatives else float("nan")



