"""Hudi's copy-on-write file sizing (``UpsertPartitioner``), engine-neutral.

Inserts of a partition first top up its small files (base files under
``hoodie.parquet.small.file.limit``) up to ``hoodie.parquet.max.file.size``, counting
the room of a file in records of the average record size of the latest commit that
wrote enough bytes (``averageBytesPerRecord``); what is left goes to new file groups of
``maxFileSize / avgRecordSize`` records (``hoodie.copyonwrite.insert.auto.split``) or of
``hoodie.copyonwrite.insert.split.size``.

Which insert lands in which bucket is decided by a hash of its key, as Hudi's
``getPartition`` does, so a batch's new files overlap in key range. Hudi draws each key
into a bucket with probability = the bucket's weight, so a bucket may receive more than
its planned count; here the partition's inserts are ranked by (hash, key) and cut at
the planned counts, so every bucket receives exactly its plan and no file outgrows the
max size by more than one record's estimate. The hash is Spark SQL's ``hash(key)``
(Murmur3, seed 42; :func:`indexes.hashing.spark_murmur3_hash` computes it without
Spark), not Hudi's MD5, because both engines compute it vectorized.

The driver (Spark) and the bloom simulator call the same functions on the same inputs
(file ids and record counts are the same in both), except for file bytes: real Parquet
sizes in a real run, modelled ones in the simulator.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

# Hudi's defaults (HoodieStorageConfig / HoodieCompactionConfig).
MAX_FILE_SIZE = 125829120  # hoodie.parquet.max.file.size
SMALL_FILE_LIMIT = 104857600  # hoodie.parquet.small.file.limit
RECORD_SIZE_ESTIMATE = 1024  # hoodie.copyonwrite.record.size.estimate
INSERT_SPLIT_SIZE = 500000  # hoodie.copyonwrite.insert.split.size
AUTO_SPLIT = True  # hoodie.copyonwrite.insert.auto.split
ESTIMATION_THRESHOLD = 1.0  # hoodie.record.size.estimation.threshold


@dataclass(frozen=True)
class SizingConfig:
    """The write configs file sizing reads (byte sizes already scaled, if a scale applies)."""

    max_file_size: int = MAX_FILE_SIZE
    small_file_limit: int = SMALL_FILE_LIMIT
    record_size_estimate: int = RECORD_SIZE_ESTIMATE
    insert_split_size: int = INSERT_SPLIT_SIZE
    auto_split: bool = AUTO_SPLIT
    estimation_threshold: float = ESTIMATION_THRESHOLD


@dataclass(frozen=True)
class CommitTotals:
    """Bytes and records one completed instant wrote (its write stats summed)."""

    instant: str
    action: str
    bytes_written: int
    records_written: int


def average_record_size(commits: Sequence[CommitTotals], cfg: SizingConfig) -> int:
    """Hudi's ``averageBytesPerRecord``: the newest ``commit`` (not replacecommit) that
    wrote more than threshold × small-file-limit bytes gives ceil(bytes / records);
    before any such commit, ``hoodie.copyonwrite.record.size.estimate``."""
    threshold = int(cfg.estimation_threshold * cfg.small_file_limit)
    for c in reversed(commits):
        if c.action == "commit" and c.bytes_written > threshold and c.records_written > 0:
            return max(1, math.ceil(c.bytes_written / c.records_written))
    return max(1, int(cfg.record_size_estimate))


@dataclass(frozen=True)
class SmallFile:
    """A base file under the small-file limit: its file group and size."""

    file_id: str
    size_bytes: int


def file_sizes_by_partition(slices: Iterable) -> dict[str, list[tuple[str, int]]]:
    """(file id, bytes) of each latest base file, per partition (a snapshot's slices)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for s in slices:
        out.setdefault(s.partition, []).append((s.file_id, int(s.size_bytes)))
    return out


def small_files(files: Iterable[tuple[str, int]], cfg: SizingConfig) -> list[SmallFile]:
    """The partition's latest base files under the limit, oldest file group first (file
    ids sort by creation, see :func:`new_file_id`). Hudi takes them in its file-system
    view's order, which it does not specify; a fixed order keeps both engines identical."""
    if cfg.small_file_limit <= 0:
        return []
    return [SmallFile(fid, int(size)) for fid, size in sorted(files)
            if int(size) < cfg.small_file_limit]


def new_file_id(commit_seq: int, partition: str, n: int) -> str:
    """The n-th new file group of a partition in the commit that is the timeline's
    ``commit_seq``-th: uuid-shaped like Hudi's ``createNewFileIdPfx`` plus its "-0"
    write-handle suffix, and deterministic, so a retried batch and the simulator name
    the same file groups. The leading fields are (commit_seq, n) in fixed-width hex, so
    file-id order is creation order: the order small files are topped up in."""
    if not (0 <= commit_seq < 16**8 and 0 <= n < 16**8):
        raise ValueError(f"file id fields out of range: commit {commit_seq}, group {n}")
    tail = hashlib.sha256(f"{partition}/{commit_seq}/{n}".encode()).hexdigest()
    return f"{commit_seq:08x}-{n >> 16:04x}-{n & 0xFFFF:04x}-{tail[:4]}-{tail[4:16]}-0"


@dataclass
class InsertPlan:
    """Where one partition's inserts go: per bucket, a file id and a record count."""

    file_ids: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    topped_up: int = 0  # small files receiving inserts
    small_file_inserts: int = 0  # inserts routed to small files

    @property
    def bounds(self) -> np.ndarray:
        """Cumulative counts: bucket b takes insert ranks [bounds[b-1], bounds[b])."""
        return np.cumsum(np.asarray(self.counts, dtype=np.int64))

    def bucket_of_ranks(self, ranks: np.ndarray) -> np.ndarray:
        """Bucket of each insert rank (0 = first in (hash, key) order)."""
        return np.searchsorted(self.bounds, np.asarray(ranks, np.int64), side="right")


def plan_partition(num_inserts: int, smalls: Sequence[SmallFile], avg_record_size: int,
                   cfg: SizingConfig, new_file_id: Callable[[int], str]) -> InsertPlan:
    """``assignInserts`` for one partition: small files first, then new file groups.

    ``new_file_id(n)`` names the n-th new file group of the partition in this commit.
    """
    plan = InsertPlan()
    left = int(num_inserts)
    for sf in smalls:
        if left <= 0:
            break
        room = min((cfg.max_file_size - sf.size_bytes) // avg_record_size, left)
        if room > 0:
            plan.file_ids.append(sf.file_id)
            plan.counts.append(int(room))
            plan.topped_up += 1
            plan.small_file_inserts += int(room)
            left -= int(room)
    if left > 0:
        per = cfg.max_file_size // avg_record_size if cfg.auto_split else cfg.insert_split_size
        per = max(1, int(per))
        buckets = math.ceil(left / per)
        for b in range(buckets):
            plan.file_ids.append(new_file_id(b))
            plan.counts.append(per if b < buckets - 1 else left - (buckets - 1) * per)
    return plan
