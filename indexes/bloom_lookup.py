"""Spark-free core of the bloom index: range pruning and the per-file key check.

The Spark index and the simulator both call these; every counter is incremented by the
code that did the work (a probe, a footer read, a key-column read).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow.fs as pafs

from indexbench.basefile import MAX_KEY_FOOTER, MIN_KEY_FOOTER, read_footer, read_record_keys
from indexbench.fs import IOStats
from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter


@dataclass(frozen=True)
class FileRanges:
    """Min/max record key of every candidate file of one partition, sorted by min key."""

    file_ids: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray

    @classmethod
    def build(cls, file_ids, mins, maxs) -> FileRanges:
        order = np.argsort(np.asarray(mins, dtype=object), kind="stable")
        return cls(np.asarray(file_ids, dtype=object)[order],
                   np.asarray(mins, dtype=object)[order], np.asarray(maxs, dtype=object)[order])


def candidate_pairs(keys: np.ndarray, ranges: FileRanges, prune_by_ranges: bool = True
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(key index, file index) of every key-file comparison left after range pruning.

    With pruning, a file is a candidate for exactly the keys within its [min, max]; keys
    are sorted once and each file's candidates are one contiguous slice of them.
    """
    keys = np.asarray(keys, dtype=object)
    n_files = len(ranges.file_ids)
    if keys.size == 0 or n_files == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if not prune_by_ranges:
        k = np.tile(np.arange(keys.size), n_files)
        f = np.repeat(np.arange(n_files), keys.size)
        return k, f
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    lo = np.searchsorted(sorted_keys, ranges.mins, side="left")
    hi = np.searchsorted(sorted_keys, ranges.maxs, side="right")
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    file_idx = np.repeat(np.arange(n_files), counts)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    key_idx = order[np.arange(total) + starts]
    return key_idx, file_idx


def read_key_range(fs: pafs.FileSystem, path: str, stats: IOStats) -> tuple[str, str, int]:
    """Min key, max key and row count from a base file's footer."""
    footer = read_footer(fs, path, stats)
    return footer[MIN_KEY_FOOTER], footer[MAX_KEY_FOOTER], int(footer["_num_rows"])


def check_keys_in_file(fs: pafs.FileSystem, path: str, keys: np.ndarray, stats: IOStats,
                       counts: Counter) -> np.ndarray:
    """Hudi's HoodieKeyLookupHandle: probe the file's bloom, then confirm hits on its keys.

    Returns a boolean mask of the keys really present. A file is opened for its key
    column only when at least one probe was positive; a positive the keys do not
    confirm is a false positive.
    """
    footer = read_footer(fs, path, stats)
    bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer[TYPE_CODE_KEY])
    keys = np.asarray(keys, dtype=object)
    maybe = bloom.might_contain_many(keys)
    positives = int(maybe.sum())
    counts["candidate_files"] += 1
    counts["bloom_checks"] += int(keys.size)
    counts["bloom_positives"] += positives
    found = np.zeros(keys.size, dtype=bool)
    if positives:
        file_keys = read_record_keys(fs, path, stats).to_numpy(zero_copy_only=False)
        found[maybe] = np.isin(keys[maybe], file_keys)
    true_pos = int(found.sum())
    counts["true_positives"] += true_pos
    counts["false_positives"] += positives - true_pos
    return found
