"""simple-bucket: ``hash(index key) % N`` picks the bucket; no data file is read to tag.

The bucket id is encoded in the file group id (RFC-29), so tagging needs only the file
names of the snapshot; the hash is Hudi's (Java ``List<String>.hashCode``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from pyspark.sql import types as T

from indexbench.basefile import bucket_file_id, bucket_of_file_id
from indexbench.errors import IndexBenchError, InvariantViolation
from indexes.base import BUCKET_COL, FILE_ID_COL, Param, RecordIndex, TagContext, bucket_fill
from indexes.hashing import bucket_ids


def existing_bucket_files(slices) -> dict[tuple[str, int], str]:
    """``(partition, bucket) -> file id`` of committed file groups; two per bucket is an error."""
    out: dict[tuple[str, int], str] = {}
    for s in slices:
        key = (s.partition, bucket_of_file_id(s.file_id))
        if key in out:
            raise InvariantViolation(
                f"bucket {key[1]} of partition {key[0]!r} is claimed by two file groups: "
                f"{out[key]} and {s.file_id}")
        out[key] = s.file_id
    return out


def assign_file_ids(
    partitions: pd.Series, buckets: np.ndarray, existing: dict[tuple[str, int], str], instant: str
) -> np.ndarray:
    """File id per row: the bucket's file group, or a new one named after (instant, bucket).

    New ids are a pure function of (instant, partition, bucket), so every task of the
    batch names a new bucket's file group alike without talking to the others.
    """
    pairs = pd.DataFrame({"p": partitions.to_numpy(), "b": buckets})
    uniq = pairs.drop_duplicates().reset_index(drop=True)
    uniq["fid"] = [existing.get((p, int(b))) or bucket_file_id(int(b), f"{instant}/{p}/{b}")
                   for p, b in zip(uniq["p"], uniq["b"], strict=True)]
    return pairs.merge(uniq, on=["p", "b"], how="left")["fid"].to_numpy()


class SimpleBucketIndex(RecordIndex):
    """Hudi's simple bucket index (``hoodie.index.type=BUCKET``, engine SIMPLE)."""

    name = "simple-bucket"
    index_type = "BUCKET"
    assigns_inserts = True
    PARAMS = (
        Param("num_buckets", "hoodie.bucket.index.num.buckets", int, 16,
              "buckets per partition (Hudi's default is 256; 16 keeps the default run small)"),
        Param("hash_field", "hoodie.bucket.index.hash.field", str, "",
              "comma-separated index-key fields (default: the record key)"),
    )

    def validate(self) -> None:
        if self.params["num_buckets"] < 1:
            raise IndexBenchError("hoodie.bucket.index.num.buckets must be >= 1")

    def hash_fields(self, record_key_field: str) -> list[str]:
        fields = [f.strip() for f in self.params["hash_field"].split(",") if f.strip()]
        return fields or [record_key_field]

    def bucket_counts(self, snapshot, partitions: list[str]) -> dict[str, int]:
        """Bucket count per partition (fixed here; multiple-rehash overrides)."""
        return {p: self.params["num_buckets"] for p in partitions}

    def tag_location(self, batch, ctx: TagContext):
        cfg = ctx.table.config
        fields = self.hash_fields(cfg.record_key_field)
        missing = [f for f in fields if f not in batch.columns]
        if missing:
            raise IndexBenchError(f"index-key field(s) {missing} are not columns of the batch")
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        counts = self.bucket_counts(ctx.snapshot, ctx.partitions)
        part_field, instant = cfg.partition_field, ctx.instant
        schema = T.StructType(batch.schema.fields + [
            T.StructField(FILE_ID_COL, T.StringType(), False),
            T.StructField(BUCKET_COL, T.IntegerType(), False),
        ])

        def tag(frames):
            for pdf in frames:
                n = pdf[part_field].map(counts).to_numpy(dtype=np.int64)
                buckets = bucket_ids([pdf[f] for f in fields], n)
                pdf[FILE_ID_COL] = assign_file_ids(pdf[part_field], buckets, existing, instant)
                pdf[BUCKET_COL] = buckets.astype(np.int32)
                yield pdf

        return batch.mapInPandas(tag, schema)

    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = [s.num_records for s in snapshot.slices.values()]
        return {**bucket_fill(np.array(counts)), "index_mem_bytes": 0, "index_disk_bytes": 0}

    def verify(self, spark, table, snapshot) -> list[str]:
        """Problems with the bucket invariant: one file group per bucket, ids in range."""
        problems = []
        per_bucket = Counter((s.partition, bucket_of_file_id(s.file_id))
                             for s in snapshot.slices.values())
        problems += [f"bucket {b} of {p!r} has {n} file groups"
                     for (p, b), n in per_bucket.items() if n > 1]
        counts = self.bucket_counts(snapshot, snapshot.partitions())
        problems += [f"file group of bucket {b} in {p!r} is outside 0..{counts[p] - 1}"
                     for (p, b) in per_bucket if b >= counts[p]]
        return problems

    def row_buckets(self, data: pd.DataFrame, partition: str, config, snapshot) -> np.ndarray:
        """The bucket each row must live in (``verify`` checks base file contents)."""
        n = self.bucket_counts(snapshot, [partition])[partition]
        return bucket_ids([data[f] for f in self.hash_fields(config.record_key_field)], n)
