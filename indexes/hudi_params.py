"""Hudi configs that several indexes declare with the same key, default and meaning:
one declaration each, so their defaults cannot drift apart (bloom and multi-fg-bucket
both size bloom filters and base files the way Hudi does)."""

from __future__ import annotations

from indexes.base import Param
from indexes.bloom_filter import DEFAULT_FPP
from writeclient import sizing

FPP = Param("fpp", "hoodie.index.bloom.fpp", float, DEFAULT_FPP,
            "target false-positive probability")
FILTER_TYPE = Param("filter_type", "hoodie.bloom.index.filter.type", str, "DYNAMIC_V0",
                    "SIMPLE or DYNAMIC_V0", choices=("SIMPLE", "DYNAMIC_V0"))
RECORD_SIZE_ESTIMATE = Param("record_size_estimate", "hoodie.copyonwrite.record.size.estimate",
                             int, sizing.RECORD_SIZE_ESTIMATE,
                             "bytes per record before a commit gives an average")
ESTIMATION_THRESHOLD = Param("estimation_threshold", "hoodie.record.size.estimation.threshold",
                             float, sizing.ESTIMATION_THRESHOLD,
                             "a commit gives the average record size if it wrote more than "
                             "this times the small-file limit")
RECORD_SIZE_MAX_COMMITS = Param("record_size_max_commits",
                                "_hoodie.record.size.estimator.max.commits", int,
                                sizing.RECORD_SIZE_MAX_COMMITS,
                                "the newest this many commits and delta commits are read for "
                                "the average record size (Hudi 1.x)")
RECORD_SIZE_METADATA = Param("record_size_metadata_bytes",
                             "hoodie.record.size.estimator.average.metadata.size", int,
                             sizing.RECORD_SIZE_METADATA_BYTES,
                             "bytes of each base file's metadata left out of the average "
                             "record size")
SMALL_FILE_CANDIDATES = Param("small_file_candidates",
                              "hoodie.merge.small.file.group.candidates.limit", int,
                              sizing.SMALL_FILE_CANDIDATES,
                              "merge-on-read: the smallest this many base files without logs "
                              "of a partition are topped up with inserts")

__all__ = ["ESTIMATION_THRESHOLD", "FILTER_TYPE", "FPP", "RECORD_SIZE_ESTIMATE",
           "RECORD_SIZE_MAX_COMMITS", "RECORD_SIZE_METADATA", "SMALL_FILE_CANDIDATES"]
