"""Bucket file groups (no Spark): their ids, the snapshot's, the invariant, their fill.

A bucket's file group id carries the bucket id in its first 8 digits (RFC-29); a new
one is a pure function of (instant, partition, bucket), so every task of a batch (and
the simulator) names it alike without talking. Every bucket index names, finds and
checks its file groups with these.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from indexes.base import bucket_fill
from indexes.bucket.routing import partition_codes
from tableformat.basefile import bucket_file_id, bucket_of_file_id
from tableformat.errors import InvariantViolation


def new_bucket_file_id(instant: str, partition: str, bucket: int) -> str:
    """A new bucket's file group id: a pure function of (instant, partition, bucket), so
    every task of a batch (and the simulator) names it alike without talking."""
    return bucket_file_id(int(bucket), f"{instant}/{partition}/{bucket}")


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


def file_id_table(
    partitions, buckets: np.ndarray, existing: dict[tuple[str, int], str], instant: str
) -> tuple[list[str], np.ndarray]:
    """The distinct file ids of the rows and each row's index into them.

    Names are looked up once per distinct (partition, bucket): the bucket's file group,
    or a new one named after (instant, partition, bucket)."""
    codes, values = partition_codes(partitions)
    b = np.asarray(buckets, dtype=np.int64)
    width = int(b.max(initial=0)) + 1
    pairs, inverse = np.unique(codes * width + b, return_inverse=True)  # few distinct
    names = [existing.get((values[c], int(x))) or new_bucket_file_id(instant, values[c], x)
             for c, x in zip((pairs // width).tolist(), (pairs % width).tolist(), strict=True)]
    return names, inverse.reshape(-1)


def assign_file_ids(
    partitions, buckets: np.ndarray, existing: dict[tuple[str, int], str], instant: str
) -> np.ndarray:
    """File id per row (an object array; Spark tasks take :func:`file_id_table` into Arrow)."""
    names, inverse = file_id_table(partitions, buckets, existing, instant)
    return np.asarray(names, dtype=object)[inverse]


def bucket_problems(slices, counts: dict[str, int]) -> list[str]:
    """The bucket invariant on file names: one file group per bucket, ids in range."""
    per_bucket = Counter((s.partition, bucket_of_file_id(s.file_id)) for s in slices)
    problems = [f"bucket {b} of {p!r} has {n} file groups"
                for (p, b), n in per_bucket.items() if n > 1]
    problems += [f"file group of bucket {b} in {p!r} is outside 0..{counts[p] - 1}"
                 for (p, b) in per_bucket if b >= counts[p]]
    return problems


def partition_bucket_fill(snapshot, partitions: list[str]) -> dict[str, float]:
    """Bucket size figures over some partitions only (skew before/after a rescale)."""
    wanted = set(partitions)
    return bucket_fill(np.array([s.num_records for s in snapshot.slices.values()
                                 if s.partition in wanted]))
