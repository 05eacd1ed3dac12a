"""The hash-bucket index base class (Hudi's ``HoodieBucketIndex``), engine-neutral.

``hash(index key) % N`` picks a record's bucket, the bucket id is in its file group's
id, so tagging reads no data file. What differs between simple-bucket (fixed ``N``),
multiple-rehash (``N`` grown by rescales) and partition-bucket (``N`` from versioned
regex rules) is only :meth:`BucketIndex.bucket_counts` (and what each adds to the
figures and the invariants); routing, lookup and verification are here.
"""

from __future__ import annotations

import numpy as np

from indexes.base import Param, RecordIndex, bucket_fill
from indexes.bucket.files import bucket_problems
from indexes.bucket.routing import lookup_candidates, route
from indexes.lookup import Candidates
from indexes.roles import Bucketed, PointLookups, TableFigures
from tableformat.errors import IndexBenchError


class BucketIndex(TableFigures, Bucketed, PointLookups, RecordIndex):
    """Routing by ``hash(hash fields) % N`` with each partition's current ``N``."""

    index_type = "BUCKET"
    assigns_inserts = True
    # HoodieSimpleBucketIndex.canIndexLogFiles is false: on merge-on-read a bucket's
    # first write is a base file (Hudi's create handle), later ones go to its logs
    CAN_INDEX_LOG_FILES = False
    PARAMS = (
        Param("num_buckets", "hoodie.bucket.index.num.buckets", int, 16,
              "buckets per partition (Hudi's default is 256; 16 keeps the default run small)"),
        Param("hash_field", "hoodie.bucket.index.hash.field", str, "",
              "comma-separated index-key fields (default: the record key)"),
    )

    def validate(self) -> None:
        if self.params["num_buckets"] < 1:
            raise IndexBenchError("hoodie.bucket.index.num.buckets must be >= 1")

    def hudi_bucket_options(self) -> dict[str, str]:
        """Hudi's BUCKET/SIMPLE options for this index's count and hash field (an empty
        hash field is Hudi's default too: the record key)."""
        out = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "SIMPLE",
               "hoodie.bucket.index.num.buckets": str(self.params["num_buckets"])}
        if self.params["hash_field"]:
            out["hoodie.bucket.index.hash.field"] = self.params["hash_field"]
        return out

    def hash_fields(self, record_key_field: str) -> list[str]:
        fields = [f.strip() for f in self.params["hash_field"].split(",") if f.strip()]
        return fields or [record_key_field]

    def bucket_counts(self, snapshot, partitions: list[str]) -> dict[str, int]:
        """Bucket count per partition (fixed here; subclasses make it per partition)."""
        return {p: self.params["num_buckets"] for p in partitions}

    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = [s.num_records for s in snapshot.slices.values()]
        return {**bucket_fill(np.array(counts)), "index_mem_bytes": 0, "index_disk_bytes": 0}

    def bucket_problems(self, snapshot) -> list[str]:
        """The bucket invariant against the partitions' current counts (``verify``)."""
        return bucket_problems(snapshot.slices.values(),
                               self.bucket_counts(snapshot, snapshot.partitions()))

    def query_key_fields(self, record_key_field: str) -> list[str]:
        return self.hash_fields(record_key_field)

    def hash_layout(self, snapshot) -> dict[str, int]:
        """Records sit in ``hash(hash fields) % N`` of their partition's current N."""
        return self.bucket_counts(snapshot, snapshot.partitions())

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """Hash → bucket → the one file group of that bucket: no file is read to locate."""
        files = view.files.get(partition, ())
        if not files:  # a partition the table does not have: nothing holds the keys
            return Candidates.none()
        return lookup_candidates(files, view.bucket_counts[partition],
                                 [keys.column(f) for f in self.hash_fields(
                                     view.record_key_field)], counts)

    def row_buckets(self, data, partition: str, config, snapshot) -> np.ndarray:
        """The bucket each row must live in (``verify`` checks base file contents)."""
        n = self.bucket_counts(snapshot, [partition])[partition]
        return route([data[f] for f in self.hash_fields(config.record_key_field)],
                     np.full(len(data), partition, dtype=object), {partition: n})


__all__ = ["BucketIndex"]
