"""multiple-rehash: a simple-bucket table whose partitions can grow N → k·N (RFC-29).

Routing is simple-bucket's (``hash(index key) % N``, Hudi's hash), except that ``N`` is
the partition's *current* bucket count. Counts live in the timeline: every rescale is a
replacecommit whose extraMetadata records the partition's new count (and the old one,
the mode and the factor), so the history of "which instant set which count" is read
back from completed instants only, and a table that never rescales behaves exactly like
simple-bucket. The rescale operation itself is in :mod:`indexbench.rescale`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from indexbench.errors import IndexBenchError
from indexes.base import Param, bucket_fill
from indexes.simple_bucket import SimpleBucketIndex

# extraMetadata of a rescale replacecommit (Hudi keeps extraMetadata as string → string)
BUCKET_COUNTS_KEY = "indexbench.bucket.index.partition.num.buckets"  # JSON {partition: N}
RESCALE_KEY = "indexbench.bucket.rescale"  # JSON {mode, factor, from: {partition: N}}

MODES = ("rehash", "overwrite")


@dataclass(frozen=True)
class BucketCountChange:
    """One entry of a partition's bucket-count history."""

    instant: str
    partition: str
    from_buckets: int
    to_buckets: int
    mode: str


def bucket_count_history(snapshot) -> list[BucketCountChange]:
    """Every bucket-count change of the completed timeline, oldest first."""
    out = []
    for instant in snapshot.completed:
        extra = snapshot.extra.get(instant, {})
        if BUCKET_COUNTS_KEY not in extra:
            continue
        counts = json.loads(extra[BUCKET_COUNTS_KEY])
        info = json.loads(extra.get(RESCALE_KEY, "{}"))
        before = info.get("from", {})
        for partition, n in sorted(counts.items()):
            out.append(BucketCountChange(instant, partition, int(before.get(partition, 0)),
                                         int(n), str(info.get("mode", ""))))
    return out


def current_bucket_counts(snapshot, default: int) -> dict[str, int]:
    """Latest count of every partition that was ever rescaled (others use ``default``)."""
    counts: dict[str, int] = {}
    for change in bucket_count_history(snapshot):
        counts[change.partition] = change.to_buckets
    return counts


class MultipleRehashIndex(SimpleBucketIndex):
    """Simple-bucket routing with per-partition bucket counts that rescales can grow."""

    name = "multiple-rehash"
    index_type = "BUCKET"
    PARAMS = SimpleBucketIndex.PARAMS + (
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

    def verify(self, spark, table, snapshot) -> list[str]:
        """Simple-bucket's invariants against current counts, plus a coherent history."""
        problems = super().verify(spark, table, snapshot)
        current: dict[str, int] = {}
        for c in bucket_count_history(snapshot):
            before = current.get(c.partition, self.params["num_buckets"])
            if c.from_buckets and c.from_buckets != before:
                problems.append(f"instant {c.instant} rescaled {c.partition!r} from "
                                f"{c.from_buckets} buckets, but it had {before}")
            if c.to_buckets < 1:
                problems.append(f"instant {c.instant} set {c.to_buckets} buckets on "
                                f"{c.partition!r}")
            if c.mode == "rehash" and (c.to_buckets % before or c.to_buckets // before < 2):
                problems.append(f"instant {c.instant}: rehash of {c.partition!r} from {before} "
                                f"to {c.to_buckets} buckets is not a multiple k >= 2")
            current[c.partition] = c.to_buckets
        return problems

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

    def run_table_services(self, spark, table, batch_no: int | None = None) -> list[dict]:
        """After-commit hook (Hudi's inline table services): the auto-rescale policy."""
        if not self.policy_enabled:
            return []
        from indexbench.rescale import auto_rescale

        return auto_rescale(spark, table, self, batch_no=batch_no)


def partition_bucket_fill(snapshot, partitions: list[str]) -> dict[str, float]:
    """Bucket size figures over some partitions only (skew before/after a rescale)."""
    wanted = set(partitions)
    return bucket_fill(np.array([s.num_records for s in snapshot.slices.values()
                                 if s.partition in wanted]))
