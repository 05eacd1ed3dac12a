"""multiple-rehash: a simple-bucket table whose partitions can grow N → k·N (RFC-29).

Routing is simple-bucket's (``hash(index key) % N``, Hudi's hash), except that ``N`` is
the partition's *current* bucket count. Counts live in the timeline: every rescale is a
replacecommit whose extraMetadata records the partition's new count (and the old one,
the mode and the factor), so the history of "which instant set which count" is read
back from completed instants only, and a table that never rescales behaves exactly like
simple-bucket. Planning and splitting are in :mod:`indexes.multiple_rehash.core`; the
Spark rescale jobs in :mod:`indexes.multiple_rehash.spark`; the simulator's in
:mod:`indexes.multiple_rehash.sim`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.base import BUCKET_COUNT_TOTAL, Param, ServiceOption, TableService
from indexes.bucket.advice import buckets
from indexes.bucket.files import partition_bucket_fill
from indexes.bucket.index import BucketIndex
from indexes.bucket.rescale_rows import RESCALE_METRICS
from indexes.multiple_rehash.core import (
    BUCKET_COUNTS_KEY,
    MODES,
    RESCALE_KEY,
    bucket_count_history,
    current_bucket_counts,
    history_problems,
    plan_rescale,
)
from indexes.roles import AdvisedSettings, Candidate, TableServices, TableShape
from tableformat.errors import IndexBenchError


class MultipleRehashIndex(AdvisedSettings, TableServices, BucketIndex):
    """Simple-bucket routing with per-partition bucket counts that rescales can grow."""

    ADVICE_TRADEOFF = ("no Hudi counterpart: a partition whose fullest bucket passes the "
                       "size limit is rewritten into a multiple of its buckets")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """Buckets sized for now, rescaled when a bucket passes Hudi's file size: at a
        larger size the table starts with the buckets it would have been rescaled to."""
        now = shape.buckets_for(shape.records_now)
        return (Candidate(f"{buckets(now)} now, rescaled by size",
                          {"num_buckets": shape.buckets_for(shape.grown_to),
                           "rescale_max_bucket_bytes": shape.file_bytes}),)


    name = "multiple-rehash"
    index_type = "BUCKET"
    SPARK_ADAPTER = "indexes.multiple_rehash.spark:MultipleRehashSpark"
    SIM_ADAPTER = "indexes.multiple_rehash.sim:MultipleRehashSim"
    METRICS = (BUCKET_COUNT_TOTAL, *RESCALE_METRICS)
    SERVICES = (
        TableService(
            "rescale", "grow partitions' bucket counts N -> k*N (RFC-29): rehash or overwrite",
            operation="rescale", inline=True, command="rescale",
            usage="--factor K [--mode rehash|overwrite] or --mode overwrite --buckets M",
            options=(
                ServiceOption("--factor", "factor", "k, N -> k*N buckets (rehash: integer "
                              ">= 2; overwrite: any > 1)", metavar="K"),
                ServiceOption("--buckets", "num_buckets", "overwrite: the new bucket count",
                              type=int, metavar="N"),
                ServiceOption("--mode", "mode", "rehash (default) or overwrite",
                              choices=("rehash", "overwrite")),
                ServiceOption("--partition", "partitions", "partition to rescale "
                              "(repeatable; default: all)", repeatable=True, metavar="P"),
            )),
    )
    PARAMS = BucketIndex.PARAMS + (
        Param("rescale_max_bucket_records", "indexbench.rescale.max.bucket.records", int, 0,
              "after each commit, rescale a partition whose largest bucket holds more "
              "records than this (0 = off)"),
        Param("rescale_max_bucket_bytes", "indexbench.rescale.max.bucket.bytes", int, 0,
              "after each commit, rescale a partition whose largest base file is larger "
              "than this many bytes (0 = off)"),
        Param("rescale_factor", "indexbench.rescale.factor", int, 2,
              "growth factor k of an automatic rescale (N → k·N)"),
        Param("rescale_mode", "indexbench.rescale.mode", str, "rehash",
              "automatic rescale mode: rehash (split buckets locally) or overwrite (reshuffle)",
              choices=MODES),
        Param("max_num_buckets", "hoodie.bucket.index.max.num.buckets", int, 4096,
              "no automatic rescale beyond this many buckets per partition"),
    )

    def validate(self) -> None:
        super().validate()
        p = self.params
        if p["rescale_factor"] < 2:
            raise IndexBenchError("indexbench.rescale.factor must be an integer >= 2")
        if p["rescale_max_bucket_records"] < 0 or p["rescale_max_bucket_bytes"] < 0:
            raise IndexBenchError("indexbench.rescale.max.bucket.* must be >= 0 (0 = off)")
        if p["max_num_buckets"] < p["num_buckets"]:
            raise IndexBenchError("hoodie.bucket.index.max.num.buckets must be >= "
                                  "hoodie.bucket.index.num.buckets")

    @property
    def policy_enabled(self) -> bool:
        return bool(self.params["rescale_max_bucket_records"]
                    or self.params["rescale_max_bucket_bytes"])

    def bucket_counts(self, snapshot, partitions: list[str]) -> dict[str, int]:
        """Each partition's current count: its last rescale, else the table's initial N."""
        current = current_bucket_counts(snapshot, self.params["num_buckets"])
        return {p: current.get(p, self.params["num_buckets"]) for p in partitions}

    def table_metrics(self, snapshot) -> dict[str, float]:
        out = super().table_metrics(snapshot)
        counts = self.bucket_counts(snapshot, snapshot.partitions())
        out["bucket_count_total"] = int(sum(counts.values()))
        return out

    def plan_service(self, service, table, snapshot, options) -> Any | None:
        """The rescale plan. Inline (no options, after a commit): the auto-rescale
        policy — every partition whose largest bucket is too big, in one replacecommit
        (``hoodie.bucket.index.max.num.buckets`` stops the growth: a hot index key
        cannot be split by any bucket count). On demand (``indexbench rescale``): the
        given mode (default rehash), factor, partitions or bucket count."""
        if not options:
            if not self.policy_enabled:
                return None
            over = self.oversized_partitions(snapshot)
            if not over:
                return None
            return plan_rescale(snapshot, self, self.params["rescale_mode"],
                                factor=self.params["rescale_factor"], partitions=sorted(over))
        return plan_rescale(snapshot, self, options.get("mode") or "rehash",
                            options.get("factor"), options.get("partitions"),
                            options.get("num_buckets"))

    def bucket_problems(self, snapshot) -> list[str]:
        """Simple-bucket's invariants against current counts, plus a coherent history."""
        return super().bucket_problems(snapshot) + history_problems(
            snapshot, self.params["num_buckets"])

    def oversized_partitions(self, snapshot) -> dict[str, dict[str, Any]]:
        """Partitions the after-commit policy wants rescaled, with why (records/bytes)."""
        max_rec = self.params["rescale_max_bucket_records"]
        max_bytes = self.params["rescale_max_bucket_bytes"]
        if not (max_rec or max_bytes):
            return {}
        per: dict[str, list[tuple[int, int]]] = {}
        for s in snapshot.slices.values():
            per.setdefault(s.partition, []).append((s.num_records, s.size_bytes))
        counts = self.bucket_counts(snapshot, list(per))
        out = {}
        for partition, sizes in sorted(per.items()):
            arr = np.array(sizes, dtype=np.int64)
            big_rec, big_bytes = int(arr[:, 0].max()), int(arr[:, 1].max())
            over = (max_rec and big_rec > max_rec) or (max_bytes and big_bytes > max_bytes)
            grown = counts[partition] * self.params["rescale_factor"]
            if over and grown <= self.params["max_num_buckets"]:
                out[partition] = {"bucket_records_max": big_rec, "bucket_bytes_max": big_bytes,
                                  "from": counts[partition], "to": grown}
        return out


__all__ = ["BUCKET_COUNTS_KEY", "MODES", "RESCALE_KEY", "MultipleRehashIndex",
           "bucket_count_history", "partition_bucket_fill"]
