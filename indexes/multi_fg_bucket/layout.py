"""A bucket's file groups (no Spark): their ids, the snapshot's layout, invariants, fill.

RFC-29's pattern 2 names a bucket's file groups ``${bucketId}_${filegroupId}…``: the
bucket id, then the file group's ordinal in its bucket. Hudi's base file names already
use ``_`` between file id, write token and instant (``FSUtils.getFileId`` takes the text
before the first ``_``), so the ordinal goes into Hudi's bucket file id shape instead:
the 8-digit bucket id, then the group's 8-digit ordinal in place of the uuid's second
and third fields, the rest of a uuid and ``-0`` — ``00000002-0000-0001-a392-22a91eafd130-0``
is file group 1 of bucket 2. :func:`tableformat.basefile.bucket_of_file_id` still reads the bucket,
so every bucket-aware reader (verify, bucket-aligned scans) works unchanged, and
Hudi readers see ordinary file ids. Nothing else is stored: the layout of a partition
is its file names.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from indexes.base import bucket_fill
from tableformat.basefile import bucket_of_file_id
from tableformat.errors import IndexBenchError
from tableformat.table_type import insert_candidates

ORDINAL_DIGITS = 8  # in the uuid's second and third fields, 4 digits each
MAX_FILE_GROUPS = 10**ORDINAL_DIGITS  # file groups per bucket


def file_group_id(bucket: int, ordinal: int, seed: str) -> str:
    """File group ``ordinal`` of ``bucket``: Hudi's bucket file id with the ordinal in
    its second and third fields; the uuid tail is a pure function of ``seed`` (instant,
    partition, bucket, ordinal), so every task and the simulator name a new group alike."""
    if not 0 <= ordinal < MAX_FILE_GROUPS:
        raise IndexBenchError(
            f"bucket {bucket} would need file group {ordinal:,}; at most {MAX_FILE_GROUPS:,} "
            "per bucket (raise hoodie.parquet.max.file.size or hoodie.bucket.index.num.buckets)")
    tail = str(uuid.uuid5(uuid.NAMESPACE_URL, seed))[18:]
    return f"{int(bucket):08d}-{int(ordinal) // 10**4:04d}-{int(ordinal) % 10**4:04d}{tail}-0"


def new_group_id(instant: str, partition: str, bucket: int, ordinal: int) -> str:
    """A file group opened by ``instant``'s inserts."""
    return file_group_id(bucket, ordinal, f"{instant}/{partition}/{bucket}/{ordinal}")


def ordinal_of(file_id: str) -> int:
    """The file group's ordinal in its bucket, parsed back from its id."""
    head = file_id[9:13] + file_id[14:18]
    if len(file_id) < 20 or file_id[8] != "-" or file_id[13] != "-" or file_id[18] != "-" \
            or not head.isdigit():
        raise ValueError(f"file id {file_id!r} is not <8-digit bucket>-<4 digits>-<4 digits>"
                         "-… (a bucket and an 8-digit file group ordinal)")
    return int(head)


@dataclass(frozen=True)
class PartitionGroups:
    """One partition's file groups, sorted by (bucket, ordinal).

    ``records``: records of each group's base file (inserts never go to a log, so these
    are all its keys); ``open``: whether the group may take inserts (on merge-on-read,
    only a base file without logs, as Hudi's small-file rule for an index that cannot
    index log files)."""

    file_ids: np.ndarray  # object
    paths: np.ndarray  # object: base file path, relative to the table
    buckets: np.ndarray  # int64
    ordinals: np.ndarray  # int64
    records: np.ndarray  # int64
    open: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.file_ids)

    def span(self, buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First group index and group count of each bucket in ``buckets``."""
        b = np.asarray(buckets, dtype=np.int64)
        lo = np.searchsorted(self.buckets, b, side="left")
        return lo, np.searchsorted(self.buckets, b, side="right") - lo

    def newest(self, bucket: int) -> int | None:
        """Index of the bucket's newest file group (highest ordinal), or None."""
        hi = int(np.searchsorted(self.buckets, bucket, side="right"))
        return hi - 1 if hi and self.buckets[hi - 1] == bucket else None


def partition_groups(slices: Iterable, table_type: str) -> dict[str, PartitionGroups]:
    """The file groups of the snapshot ``slices`` per partition (``table_type`` decides
    which may take inserts: :func:`tableformat.table_type.insert_candidates`)."""
    slices = list(slices)
    can_insert = {(s.partition, s.file_id)
                  for s in insert_candidates(slices, table_type, can_index_log_files=False)}
    rows: dict[str, list[tuple]] = {}
    for s in slices:
        rows.setdefault(s.partition, []).append(
            (bucket_of_file_id(s.file_id), ordinal_of(s.file_id), s.file_id, s.path,
             s.base_records, (s.partition, s.file_id) in can_insert))
    out = {}
    for p, r in rows.items():
        r.sort(key=lambda t: (t[0], t[1]))
        out[p] = PartitionGroups(
            file_ids=np.array([t[2] for t in r], dtype=object),
            paths=np.array([t[3] for t in r], dtype=object),
            buckets=np.array([t[0] for t in r], dtype=np.int64),
            ordinals=np.array([t[1] for t in r], dtype=np.int64),
            records=np.array([t[4] for t in r], dtype=np.int64),
            open=np.array([t[5] for t in r], dtype=bool))
    return out


def groups_of_files(files: Iterable[tuple[str, str | None]]) -> PartitionGroups:
    """One partition's groups from (file id, base path) pairs alone (a reader's view)."""
    rows = sorted((bucket_of_file_id(f), ordinal_of(f), f, path) for f, path in files)
    n = len(rows)
    return PartitionGroups(
        file_ids=np.array([r[2] for r in rows], dtype=object),
        paths=np.array([r[3] for r in rows], dtype=object),
        buckets=np.array([r[0] for r in rows], dtype=np.int64),
        ordinals=np.array([r[1] for r in rows], dtype=np.int64),
        records=np.zeros(n, np.int64), open=np.zeros(n, bool))


def layout_problems(slices: Iterable, counts: dict[str, int]) -> list[str]:
    """The layout invariants on file names: each file id is ``<bucket>-<ordinal>-…``, its
    bucket within the partition's count, and a bucket's ordinals are exactly 0..k-1 (a
    group is opened only after the one before it, never removed)."""
    problems: list[str] = []
    ordinals: dict[tuple[str, int], list[int]] = {}
    for s in slices:
        try:
            b, o = bucket_of_file_id(s.file_id), ordinal_of(s.file_id)
        except ValueError as exc:
            problems.append(f"{s.partition!r}: {exc}")
            continue
        if b >= counts[s.partition]:
            problems.append(f"file group {s.file_id} of {s.partition!r} is in bucket {b}, "
                            f"outside 0..{counts[s.partition] - 1}")
        ordinals.setdefault((s.partition, b), []).append(o)
    for (p, b), got in sorted(ordinals.items()):
        if sorted(got) != list(range(len(got))):
            problems.append(f"bucket {b} of {p!r} has file group ordinals {sorted(got)}, "
                            f"not 0..{len(got) - 1}")
    return problems


def fill(slices: Iterable) -> dict[str, float]:
    """Bucket fill (records per bucket: the sum of its file groups), file groups per
    bucket, and the records of file groups — what the comparison reads."""
    slices = list(slices)
    per_bucket: Counter = Counter()
    groups: Counter = Counter()
    for s in slices:
        key = (s.partition, bucket_of_file_id(s.file_id))
        per_bucket[key] += s.num_records
        groups[key] += 1
    counts = np.array(list(groups.values()), dtype=np.float64)
    fg = bucket_fill(np.array([s.num_records for s in slices]))
    return {
        **bucket_fill(np.array(list(per_bucket.values()))),
        "file_groups_per_bucket_max": float(counts.max()) if counts.size else 0.0,
        "file_groups_per_bucket_mean": float(counts.mean()) if counts.size else 0.0,
        "file_group_records_max": fg["bucket_records_max"],
        "file_group_records_cov": fg["bucket_records_cov"],
    }
