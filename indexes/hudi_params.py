"""Hudi configs that several indexes declare with the same key, default and meaning:
one declaration each, so their defaults cannot drift apart (bloom and multi-fg-bucket
both size bloom filters and base files the way Hudi does)."""

from __future__ import annotations

from indexes.base import Param
from indexes.bloom_filter import DEFAULT_FPP
from tableformat import sizing

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

__all__ = ["ESTIMATION_THRESHOLD", "FILTER_TYPE", "FPP", "RECORD_SIZE_ESTIMATE"]
