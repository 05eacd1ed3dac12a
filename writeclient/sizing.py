"""Hudi's copy-on-write file sizing (``UpsertPartitioner``), engine-neutral.

Inserts of a partition first top up its small files (base files under
``hoodie.parquet.small.file.limit``; on merge-on-read, for an index that cannot index
log files, only the smallest base files without logs: :func:`small_file_candidates`) up
to ``hoodie.parquet.max.file.size``, counting the room of a file in records of the
average record size of the newest instant that wrote enough bytes (Hudi 1.x's
``AverageRecordSizeEstimator``: :func:`average_record_size`); what is left goes to new
file groups of ``ceil(maxFileSize / avgRecordSize)`` records
(``hoodie.copyonwrite.insert.auto.split``) or of ``hoodie.copyonwrite.insert.split.size``,
which Hudi's create handle may roll over into more (:mod:`writeclient.create_handle`).

Which insert lands in which bucket is Hudi's draw (``UpsertPartitioner.getPartition``):
``r = floorMod(md5(key), numInserts) / numInserts`` against the buckets' cumulative
weights (planned count / numInserts), :func:`draw_buckets`; ``md5(key)`` is
:func:`indexes.md5_hash.hudi_insert_hash`. So a batch's new files overlap in key range,
a bucket may receive a few records more or fewer than planned, and one planned for a
handful may receive none (no file is written for it), as in Hudi.

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

from tableformat.commit_metadata import CommitTotals
from tableformat.table_type import MERGE_ON_READ
from tableformat.write_config import MAX_FILE_SIZE

# Hudi's defaults (HoodieStorageConfig / HoodieCompactionConfig).
SMALL_FILE_LIMIT = 104857600  # hoodie.parquet.small.file.limit
RECORD_SIZE_ESTIMATE = 1024  # hoodie.copyonwrite.record.size.estimate
INSERT_SPLIT_SIZE = 500000  # hoodie.copyonwrite.insert.split.size
AUTO_SPLIT = True  # hoodie.copyonwrite.insert.auto.split
ESTIMATION_THRESHOLD = 1.0  # hoodie.record.size.estimation.threshold
RECORD_SIZE_MAX_COMMITS = 5  # _hoodie.record.size.estimator.max.commits (Hudi 1.x)
RECORD_SIZE_METADATA_BYTES = 0  # hoodie.record.size.estimator.average.metadata.size
SMALL_FILE_CANDIDATES = 1  # hoodie.merge.small.file.group.candidates.limit (merge-on-read)
COMPRESSION_RATIO = 0.1  # hoodie.parquet.compression.ratio (a create handle's roll-over)
# the instants AverageRecordSizeEstimator reads (a completed compaction is a "commit")
ESTIMATE_ACTIONS = frozenset({"commit", "deltacommit", "compaction"})


@dataclass(frozen=True)
class SizingConfig:
    """The write configs file sizing reads (byte sizes already scaled, if a scale applies)."""

    max_file_size: int = MAX_FILE_SIZE
    small_file_limit: int = SMALL_FILE_LIMIT
    record_size_estimate: int = RECORD_SIZE_ESTIMATE
    insert_split_size: int = INSERT_SPLIT_SIZE
    auto_split: bool = AUTO_SPLIT
    estimation_threshold: float = ESTIMATION_THRESHOLD
    record_size_max_commits: int = RECORD_SIZE_MAX_COMMITS
    record_size_metadata_bytes: int = RECORD_SIZE_METADATA_BYTES
    small_file_candidates: int = SMALL_FILE_CANDIDATES
    compression_ratio: float = COMPRESSION_RATIO



def average_record_size(commits: Sequence[CommitTotals], cfg: SizingConfig) -> int:
    """Hudi 1.x's ``AverageRecordSizeEstimator``: of the newest
    ``record_size_max_commits`` completed commits, delta commits and compactions
    (replacecommits never: clustering's files would skew it), the newest whose base
    files wrote more than threshold × small-file-limit bytes (after subtracting
    ``record_size_metadata_bytes`` per file) gives ceil(bytes / records); without one,
    ``hoodie.copyonwrite.record.size.estimate``. (Hudi 0.x read ``commit`` instants
    only, so a merge-on-read table kept the 1,024-byte default until a compaction.)"""
    threshold = int(cfg.estimation_threshold * cfg.small_file_limit)
    newest = [c for c in reversed(commits) if c.action in ESTIMATE_ACTIONS]
    for c in newest[:max(0, cfg.record_size_max_commits)]:
        written = c.bytes_written - c.base_files * cfg.record_size_metadata_bytes
        if written > threshold and c.records_written > 0:
            return max(1, math.ceil(written / c.records_written))
    return max(1, int(cfg.record_size_estimate))


@dataclass(frozen=True)
class SmallFile:
    """A base file under the small-file limit: its file group and size."""

    file_id: str
    size_bytes: int


def small_files(files: Iterable[tuple[str, int]], cfg: SizingConfig) -> list[SmallFile]:
    """The partition's latest base files under the limit, oldest file group first (file
    ids sort by creation, see :func:`new_file_id`). Hudi takes them in its file-system
    view's order, which it does not specify; a fixed order keeps both engines identical."""
    if cfg.small_file_limit <= 0:
        return []
    return [SmallFile(fid, int(size)) for fid, size in sorted(files)
            if int(size) < cfg.small_file_limit]


def small_file_candidates(slices: Iterable, table_type: str, can_index_log_files: bool,
                          cfg: SizingConfig) -> dict[str, list[SmallFile]]:
    """The small files each partition's inserts top up first, in the order they are
    filled (a snapshot's slices in; Hudi's ``getSmallFiles``).

    Copy-on-write: every latest base file under the small-file limit, oldest file group
    first (:func:`small_files`; Hudi lists them in its file-system view's order, a
    HashSet of its random file ids: docs/fidelity.md#bloom). Merge-on-read with an index
    that can index log files (external-kv; no Hudi counterpart here) takes the same rule,
    where Hudi's ``isSmallFile`` compares base + logs × the log-to-parquet ratio with
    the max file size. Merge-on-read
    with an index that cannot (bloom: inserts in a log are invisible to its lookups):
    ``SparkUpsertDeltaCommitPartitioner.getSmallFileCandidates`` takes only slices
    without log files, smallest base file first, at most
    ``hoodie.merge.small.file.group.candidates.limit`` of them per partition (ties in
    size broken by file id, where Hudi keeps its file-system view's order)."""
    by_partition: dict[str, list] = {}
    for s in slices:
        by_partition.setdefault(s.partition, []).append(s)
    if table_type != MERGE_ON_READ or can_index_log_files:
        return {p: small_files([(s.file_id, int(s.size_bytes)) for s in ss], cfg)
                for p, ss in by_partition.items()}
    if cfg.small_file_limit <= 0:
        return {}
    out: dict[str, list[SmallFile]] = {}
    for p, ss in by_partition.items():
        bare = sorted((int(s.size_bytes), s.file_id) for s in ss
                      if not s.logs and int(s.size_bytes) < cfg.small_file_limit)
        out[p] = [SmallFile(fid, size) for size, fid in bare[:max(0, cfg.small_file_candidates)]]
    return out


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
    def weights(self) -> np.ndarray:
        """Hudi's cumulative weights of the buckets (``InsertBucketCumulativeWeightPair``):
        each bucket's planned count over the partition's inserts, summed in order in
        doubles as Hudi's loop sums them."""
        counts = np.asarray(self.counts, dtype=np.int64)
        return np.cumsum(counts.astype(np.float64) / float(max(int(counts.sum()), 1)))

    def draw(self, key_hashes: np.ndarray) -> np.ndarray:
        """The bucket of each insert, from its key's Hudi hash: :func:`draw_buckets`."""
        return draw_buckets(key_hashes, self.weights, int(sum(self.counts)))


def draw_buckets(key_hashes: np.ndarray, weights: np.ndarray, num_inserts: int) -> np.ndarray:
    """Hudi's ``getPartition`` for inserts: ``r = floorMod(hash, n) / n`` with ``n`` the
    partition's inserts, then ``Collections.binarySearch`` of ``r`` in the cumulative
    weights (an exact hit is that bucket, else the insertion point; past the end, where
    rounding leaves the last weight under ``r``, Hudi's "first one, by default")."""
    n = max(int(num_inserts), 1)
    r = np.mod(np.asarray(key_hashes, np.int64), n).astype(np.float64) / float(n)
    b = np.searchsorted(weights, r, side="left")
    return np.where(b >= len(weights), 0, b)


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
        # Hudi 1.x: (int) Math.ceil(1.0 * maxFileSize / avgRecordSize) (0.x: floor)
        per = math.ceil(cfg.max_file_size / avg_record_size) if cfg.auto_split \
            else cfg.insert_split_size
        per = max(1, int(per))
        buckets = math.ceil(left / per)
        for b in range(buckets):
            plan.file_ids.append(new_file_id(b))
            plan.counts.append(per if b < buckets - 1 else left - (buckets - 1) * per)
    return plan
