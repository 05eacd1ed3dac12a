"""The settings ``indexbench advise`` tries for a hash-bucket index: a bucket count that
keeps each bucket's file near Hudi's target size now, and one that does at the end of
the horizon (Hudi's guidance for ``hoodie.bucket.index.num.buckets``: size buckets by the
data volume they will hold, as files are sized)."""

from __future__ import annotations

from typing import Any

from indexes.roles import Candidate, TableShape


def bucket_count_candidates(shape: TableShape, **also: Any) -> tuple[Candidate, ...]:
    """``num_buckets`` sized for the table now and for the horizon (one when equal),
    each with the parameters ``also`` gives."""
    now, later = shape.buckets_for(shape.records_now), shape.buckets_for(
        shape.records_at_horizon)
    out = [Candidate(f"{buckets(now)}, for now", {"num_buckets": now, **also})]
    if later != now:
        out.append(Candidate(f"{buckets(later)}, for the horizon",
                             {"num_buckets": later, **also}))
    return tuple(out)


def buckets(n: int) -> str:
    """"1 bucket", "16 buckets"."""
    return f"{n:,} bucket" + ("" if n == 1 else "s")


def power_of_two_at_least(n: int) -> int:
    return 1 << max(0, (max(1, n) - 1).bit_length())
