"""multi-fg-bucket: RFC-29's pattern 2, several file groups per hash bucket.

``hash(index key) % N`` picks the bucket, as simple-bucket's; the bucket holds file
groups ``<bucket>-<ordinal>-…`` (:mod:`~indexes.multi_fg_bucket.layout`). Inserts fill
the bucket's newest group until it is full, then open the next
(:mod:`~indexes.multi_fg_bucket.plan`); an update finds its group by a bloom lookup
bounded to the bucket (:mod:`~indexes.multi_fg_bucket.core`): the random access RFC-29
says pattern 2 cannot avoid, counted. Hudi never built it (``BucketIndexEngineType`` has
SIMPLE and CONSISTENT_HASHING only). Spark adapter :mod:`~indexes.multi_fg_bucket.spark`,
simulator :mod:`~indexes.multi_fg_bucket.sim`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import pyarrow as pa

from indexes.base import TAG_JOBS, TAG_ROWS_PERSISTED, Metric, Param, fraction
from indexes.bloom_filter import (
    DEFAULT_MAX_ENTRIES,
    DEFAULT_NUM_ENTRIES,
    FOOTER_KEY,
    HASHINGS,
    PYBLOOM,
    HoodieBloomFilter,
)
from indexes.bloom_filter.metrics import FOOTER_METRICS
from indexes.bloom_filter.roles import BloomFilterTheory, BloomSimOptions
from indexes.bucket.advice import bucket_count_candidates
from indexes.bucket.index import BucketIndex
from indexes.hudi_params import ESTIMATION_THRESHOLD, FILTER_TYPE, FPP, RECORD_SIZE_ESTIMATE
from indexes.lookup import Candidates
from indexes.multi_fg_bucket.core import footer_filter
from indexes.multi_fg_bucket.layout import fill, groups_of_files, layout_problems
from indexes.roles import AdvisedSettings, Candidate, FileSizing, FooterData, TableShape
from tableformat.errors import IndexBenchError
from writeclient import sizing

__all__ = ["MultiFgBucketIndex"]

DEFAULT_SCALE = 1 / 1000  # as bloom's: file sizes and filter entries shrink together


class MultiFgBucketIndex(AdvisedSettings, BloomFilterTheory, BloomSimOptions, FileSizing,
                         FooterData, BucketIndex):
    """Hash buckets of several file groups, found inside a bucket by bloom filters."""

    ADVICE_TRADEOFF = ("no Hudi counterpart; a bucket holds several file groups found by "
                       "their bloom filters, so tagging probes filters inside the bucket")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """Buckets sized for now, its file groups at Hudi's sizing (scale 1)."""
        return bucket_count_candidates(shape, scale=shape.scale)[:1]


    name = "multi-fg-bucket"
    index_type = "BUCKET"
    assigns_inserts = True
    # Hudi's reasoning for HoodieBloomIndex: the filters are in base-file footers, so a
    # key in a log file could not be found. On merge-on-read, updates go to their file
    # group's log and inserts only to base files (README.md here).
    CAN_INDEX_LOG_FILES = False
    SPARK_ADAPTER = "indexes.multi_fg_bucket.spark:MultiFgBucketSpark"
    SIM_ADAPTER = "indexes.multi_fg_bucket.sim:MultiFgBucketSim"
    METRICS = (
        Metric("file_groups_per_bucket_max", "most file groups of one bucket"),
        Metric("file_groups_per_bucket_mean", "file groups per bucket that has any"),
        Metric("file_group_records_max", "records of the largest file group"),
        Metric("file_group_records_cov", "CoV of records per file group"),
        Metric("keys_looked_up", "batch records whose bucket has file groups: each is "
               "looked up among them", counter=True),
        Metric("candidates_per_key", "bloom probes (key, file group of its bucket, after "
               "range pruning) per key looked up"),
        Metric("file_groups_opened", "file groups this batch's inserts opened", counter=True),
        *FOOTER_METRICS,
        TAG_JOBS,
        TAG_ROWS_PERSISTED,
    )
    PARAMS = (
        *BucketIndex.PARAMS,
        Param("max_file_size", "hoodie.parquet.max.file.size", int, sizing.MAX_FILE_SIZE,
              "a file group is full at this size / the average record size, in records "
              "(times indexbench.scale)"),
        Param("small_file_limit", "hoodie.parquet.small.file.limit", int,
              sizing.SMALL_FILE_LIMIT, "with the estimation threshold: which commit gives "
              "the average record size (times indexbench.scale)"),
        RECORD_SIZE_ESTIMATE,
        ESTIMATION_THRESHOLD,
        Param("num_entries", "hoodie.index.bloom.num_entries", int, DEFAULT_NUM_ENTRIES,
              "entries each file group's filter (row) is sized for (times indexbench.scale)"),
        FPP,
        FILTER_TYPE,
        Param("max_entries", "hoodie.bloom.index.filter.dynamic.max.entries", int,
              DEFAULT_MAX_ENTRIES, "bound of a DYNAMIC_V0 filter (times indexbench.scale)"),
        Param("hashing", "indexbench.bloom.hash", str, PYBLOOM,
              "bit positions of the footer filters: pybloom or hudi (Hadoop's murmur)",
              choices=HASHINGS),
        Param("prune_by_ranges", "hoodie.bloom.index.prune.by.ranges", bool, True,
              "compare a key only with its bucket's file groups whose min/max holds it"),
        Param("scale", "indexbench.scale", fraction, DEFAULT_SCALE,
              "shrinks file sizes and filter entries together, keeping Hudi's ratios "
              "(1 = Hudi's sizes; accepts 1/1000)"),
    )

    def validate(self) -> None:
        super().validate()
        p = self.params
        if p["num_entries"] < 1 or p["max_entries"] < 1:
            raise IndexBenchError("hoodie.index.bloom.num_entries and "
                                  "hoodie.bloom.index.filter.dynamic.max.entries must be >= 1")
        if not 0 < p["fpp"] < 1:
            raise IndexBenchError("hoodie.index.bloom.fpp must be in (0, 1)")
        if p["max_file_size"] < 1 or p["small_file_limit"] < 0:
            raise IndexBenchError("hoodie.parquet.max.file.size must be >= 1 and "
                                  "hoodie.parquet.small.file.limit >= 0")
        if p["record_size_estimate"] < 1 or p["estimation_threshold"] < 0:
            raise IndexBenchError("hoodie.copyonwrite.record.size.estimate must be >= 1 and "
                                  "hoodie.record.size.estimation.threshold >= 0")
        if not 0 < p["scale"] <= 1:
            raise IndexBenchError("indexbench.scale must be in (0, 1]")

    def _scaled(self, value: int) -> int:
        return max(1, round(value * self.params["scale"]))

    def sizing(self) -> sizing.SizingConfig:
        """Hudi's sizing configs, byte sizes after the scale (the insert plan's)."""
        p = self.params
        return sizing.SizingConfig(
            max_file_size=self._scaled(p["max_file_size"]),
            small_file_limit=round(p["small_file_limit"] * p["scale"]),
            record_size_estimate=p["record_size_estimate"],
            estimation_threshold=p["estimation_threshold"])

    @property
    def filter_entries(self) -> tuple[int, int]:
        """(num_entries, max_entries) the filters are built with, after the scale."""
        return self._scaled(self.params["num_entries"]), self._scaled(self.params["max_entries"])

    def describe(self) -> dict[str, Any]:
        num, mx = self.filter_entries
        return {**super().describe(), "engine": "MULTI_FILE_GROUP",
                "effective_max_file_size": self.sizing().max_file_size,
                "effective_num_entries": num, "effective_max_entries": mx}

    # ---- the filters in every base file's footer -----------------------------------
    def filter_factory(self) -> Callable[[], HoodieBloomFilter]:
        """A picklable maker of this table's empty filters (for task closures)."""
        p = self.params
        num, mx = self.filter_entries
        return partial(HoodieBloomFilter.create, p["filter_type"], num, p["fpp"], mx,
                       hashing=p["hashing"])

    def new_filter(self) -> HoodieBloomFilter:
        return self.filter_factory()()

    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        """The file group's bloom filter, as Hudi's HoodieBloomFilterWriteSupport writes it."""
        bloom = self.new_filter()
        bloom.add_keys(record_keys if bloom.hashing != PYBLOOM else record_keys.to_pylist())
        entries = bloom.footer_entries()
        return entries, len(entries[FOOTER_KEY])

    def verify_base_file(self, path: str, footer: dict[str, str], keys) -> list[str]:
        """The file group's filter holds every key of its base file."""
        bloom = footer_filter(footer)
        if bloom is None:
            return ["no bloom filter in the footer"]
        missing = int((~bloom.might_contain_many(keys)).sum())
        return [f"bloom filter misses {missing} of its keys"] if missing else []

    # ---- figures and invariants -----------------------------------------------------
    def table_metrics(self, snapshot) -> dict[str, float]:
        disk = sum(s.index_bytes for s in snapshot.slices.values())
        return {**fill(snapshot.slices.values()), "index_mem_bytes": 0,
                "index_disk_bytes": disk}

    def bucket_problems(self, snapshot) -> list[str]:
        """File ids ``<bucket>-<ordinal>-…``, buckets in range, ordinals 0..k-1."""
        return layout_problems(snapshot.slices.values(),
                               self.bucket_counts(snapshot, snapshot.partitions()))

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """Hash → bucket → its file groups → footer ranges and filters (reads counted)."""
        from indexes.multi_fg_bucket.core import lookup_candidates

        files = view.files.get(partition, ())
        if not files:  # a partition the table does not have: nothing holds the keys
            return Candidates.none()
        groups = groups_of_files(files)
        paths = [table.abs_path(p) for p in groups.paths]
        cols = [keys.column(f) for f in self.hash_fields(view.record_key_field)]
        return lookup_candidates(table.fs, groups, paths, view.bucket_counts[partition], cols,
                                 keys.column(view.record_key_field), stats, counts,
                                 self.params["prune_by_ranges"])
