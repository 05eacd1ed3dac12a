"""Bucket rescale plans (no Spark): what both rescale-capable bucket indexes share.

multiple-rehash (RFC-29: rehash N → k·N, or overwrite) and partition-bucket (RFC-89:
overwrite the partitions new rules change) both plan a :class:`RescalePlan`, run it as
one replacecommit (:func:`indexes.bucket.slices.rescale_work`, committed by the service
runner) and record the partitions' new counts in its extraMetadata
(:func:`rescale_metadata`). A rehash splits each old bucket on its own
(:func:`split_rows`): bucket ``b`` of ``N`` holds exactly the records that go to
``b, b+N, …, b+(k−1)·N`` under ``% kN`` (``(h % kN) % N == h % N``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexes.base import RescaleError
from tableformat.commit_metadata import SPARK_SCHEMA_KEY
from tableformat.errors import InvariantViolation

# extraMetadata of a rescale replacecommit (Hudi keeps extraMetadata as string → string)
BUCKET_COUNTS_KEY = "indexbench.bucket.index.partition.num.buckets"  # JSON {partition: N}
RESCALE_KEY = "indexbench.bucket.rescale"  # JSON {mode, factor, from: {partition: N}}

MODES = ("rehash", "overwrite")


@dataclass
class RescalePlan:
    """What a rescale will do: per partition (from, to) bucket counts, and the mode."""

    mode: str
    factor: float
    counts: dict[str, tuple[int, int]]
    slices: list = field(default_factory=list)  # the FileSlices to replace

    def dry_run(self) -> dict[str, Any]:
        """What the rescale would do (``indexbench rescale --dry-run``): per partition
        its bucket counts and files to rewrite; nothing is written."""
        files: dict[str, int] = {}
        for s in self.slices:
            files[s.partition] = files.get(s.partition, 0) + 1
        return {"mode": self.mode,
                "partitions": [{"partition": p, "from_buckets": f, "to_buckets": t,
                                "files": files.get(p, 0)}
                               for p, (f, t) in sorted(self.counts.items())],
                "files": len(self.slices), "from_buckets": self.from_buckets,
                "to_buckets": self.to_buckets}

    @property
    def from_buckets(self) -> int:
        return sum(f for f, _ in self.counts.values())

    @property
    def to_buckets(self) -> int:
        return sum(t for _, t in self.counts.values())


def wanted_partitions(snapshot, partitions: list[str] | None, what: str) -> list[str]:
    """The partitions a rescale command names (default: every committed one), sorted;
    one :class:`RescaleError` if the table or a named partition has no file groups
    (``what``: the service, for the message: "rescale", "split")."""
    present = snapshot.partitions()
    if not present:
        raise RescaleError(f"the table has no committed file groups: nothing to {what}")
    wanted = sorted(set(partitions)) if partitions else present
    unknown = [p for p in wanted if p not in present]
    if unknown:
        raise RescaleError(f"partition(s) {unknown} have no file groups in the table; "
                           f"known: {', '.join(present[:10])}{' …' if len(present) > 10 else ''}")
    return wanted


def rescale_metadata(plan: RescalePlan, schema: str | None) -> dict[str, str]:
    """extraMetadata of the rescale replacecommit: the partitions' new counts and why."""
    counts = sorted(plan.counts.items())
    return {
        SPARK_SCHEMA_KEY: schema,
        BUCKET_COUNTS_KEY: json.dumps({p: t for p, (_, t) in counts}),
        RESCALE_KEY: json.dumps({"mode": plan.mode, "factor": plan.factor,
                                 "from": {p: f for p, (f, _) in counts}}),
    }


def split_rows(new_buckets: np.ndarray, bucket: int, from_buckets: int, to_buckets: int,
               where: str = "") -> list[tuple[int, np.ndarray]]:
    """Rows of old bucket ``bucket`` per child under ``% to_buckets`` (empty children
    omitted: simple-bucket never makes an empty file group). A row hashing outside the
    bucket means the table broke the bucket invariant: refuse."""
    stray = int((new_buckets % from_buckets != bucket).sum())
    if stray:
        raise InvariantViolation(f"{where}: {stray} records do not belong to bucket {bucket} "
                                 f"of {from_buckets}; run indexbench verify")
    out = []
    for child in range(bucket, to_buckets, from_buckets):
        rows = np.flatnonzero(new_buckets == child)
        if rows.size:
            out.append((child, rows))
    return out
