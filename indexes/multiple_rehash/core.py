"""multiple-rehash core: bucket-count history, rescale planning and bucket splitting.

Spark-free: the Spark adapter (:mod:`indexes.multiple_rehash.spark`) and the simulator
both plan with :func:`plan_rescale`, split with :func:`~indexes.bucket.rescale.split_rows`
and record the new counts with :func:`~indexes.bucket.rescale.rescale_metadata` (the plan
types and the metadata are the bucket indexes' shared ones: :mod:`indexes.bucket.rescale`).
A rehash grows a partition N → k·N: bucket ``b`` holds exactly the records that go to
``b, b+N, …, b+(k−1)·N`` under ``% kN`` (since ``(h % kN) % N == h % N``), so each old
bucket is split on its own; an overwrite accepts any new count and reshuffles the
partition.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np

from indexes.bucket.rescale import (
    BUCKET_COUNTS_KEY,
    MODES,
    RESCALE_KEY,
    RescaleError,
    RescalePlan,
    wanted_partitions,
)

if TYPE_CHECKING:
    from indexes.multiple_rehash import MultipleRehashIndex
    from tableformat.table import Snapshot


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


# ---------------------------------------------------------------- validation (no Spark)
def rehash_factor(factor: Any) -> int:
    """The factor as an int, or a clear refusal: rehash needs an integer k ≥ 2."""
    if isinstance(factor, str):
        try:
            factor = float(factor) if any(c in factor for c in ".eE") else int(factor)
        except ValueError:
            raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}") from None
    if isinstance(factor, bool) or not isinstance(factor, Real):
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}")
    if not isinstance(factor, Integral) and not float(factor).is_integer():
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}: bucket b "
                           "can only split into b, b+N, …, b+(k−1)N (use --mode overwrite "
                           "for other counts)")
    k = int(factor)
    if k < 2:
        raise RescaleError(f"rehash factor must be an integer >= 2, not {factor!r}")
    return k


def plan_rescale(snapshot: Snapshot, index: MultipleRehashIndex, mode: str,
                 factor: Any = None, partitions: list[str] | None = None,
                 num_buckets: int | None = None) -> RescalePlan:
    """Check every argument against the committed snapshot; nothing is written here."""
    if mode not in MODES:
        raise RescaleError(f"rescale mode must be one of {', '.join(MODES)}, not {mode!r}")
    wanted = wanted_partitions(snapshot, partitions, "rescale")
    current = index.bucket_counts(snapshot, wanted)
    counts: dict[str, tuple[int, int]] = {}
    if mode == "rehash":
        if num_buckets is not None:
            raise RescaleError("rehash mode grows by --factor k; --buckets is for overwrite")
        k = rehash_factor(factor)
        counts = {p: (current[p], current[p] * k) for p in wanted}
        fac: float = k
    else:
        if (factor is None) == (num_buckets is None):
            raise RescaleError("overwrite mode needs exactly one of --factor or --buckets")
        for p in wanted:
            if num_buckets is not None:
                new = num_buckets
            else:
                try:
                    target = float(factor) * current[p]
                except (TypeError, ValueError):
                    raise RescaleError(f"factor must be a number, not {factor!r}") from None
                if not target.is_integer():
                    raise RescaleError(f"factor {factor} × {current[p]} buckets of {p!r} "
                                       "is not a whole bucket count")
                new = int(target)
            if isinstance(new, bool) or int(new) != new or new < 1:
                raise RescaleError(f"overwrite needs a new bucket count >= 1, not {new!r}")
            counts[p] = (current[p], int(new))
        fac = counts[wanted[0]][1] / counts[wanted[0]][0]
    too_many = [p for p, (_, t) in counts.items() if t > np.iinfo(np.int32).max
                or t > 99_999_999]
    if too_many:
        raise RescaleError(f"bucket count too large for an 8-digit bucket file id: {too_many}")
    return RescalePlan(mode, fac, counts, snapshot.in_partitions(wanted))


def history_problems(snapshot, initial: int) -> list[str]:
    """Problems of the bucket-count history (``verify``)."""
    problems = []
    current: dict[str, int] = {}
    for c in bucket_count_history(snapshot):
        before = current.get(c.partition, initial)
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


__all__ = ["BUCKET_COUNTS_KEY", "MODES", "RESCALE_KEY", "BucketCountChange", "RescaleError",
           "RescalePlan", "bucket_count_history", "current_bucket_counts", "history_problems",
           "plan_rescale", "rehash_factor"]
