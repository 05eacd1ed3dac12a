"""Spark-free core of the bloom index: range pruning and the per-file key check.

The Spark adapter and the simulator both call these; every counter is incremented by
the code that did the work (a probe, a key-column read). Keys may be strings (object
arrays) or any order-preserving codes (the simulator's uint64 key codes): pruning only
compares them. The key check takes the file's key column as a callable, so it is read
only when a probe was positive, whatever stores the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from indexes.bloom_filter.key_check import check_filter
from indexes.lookup import Candidates
from tableformat.basefile import MAX_KEY_FOOTER, MIN_KEY_FOOTER, read_footer
from tableformat.fs import IOStats


@dataclass(frozen=True)
class FileRanges:
    """Min/max record key of every candidate file of one partition, sorted by min key."""

    file_ids: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    ranged: np.ndarray | None = None  # False: the footer had no min/max (every key)

    @classmethod
    def build(cls, file_ids, mins, maxs) -> FileRanges:
        """From footers' min/max keys; a file whose footer has none (``None``) is kept as
        "no range": Hudi compares such a file with every key of its partition."""
        mins, maxs = np.asarray(mins, dtype=object), np.asarray(maxs, dtype=object)
        ranged = np.array([isinstance(a, str) and isinstance(b, str)  # not None / NaN
                           for a, b in zip(mins, maxs, strict=True)], dtype=bool)
        key = np.where(ranged, mins, "")  # no-range files first; their bounds are unused
        order = np.argsort(key, kind="stable")
        return cls(np.asarray(file_ids, dtype=object)[order], mins[order], maxs[order],
                   ranged[order])

    def has_range(self) -> np.ndarray:
        """Whether each file's footer had a min/max key (all, unless ``ranged`` says)."""
        return np.ones(len(self.file_ids), bool) if self.ranged is None else self.ranged


def candidate_slices(sorted_keys: np.ndarray, ranges: FileRanges
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per file, the slice ``[lo, hi)`` of ``sorted_keys`` within its [min, max].

    With pruning a file is a candidate for exactly the keys in its range, a contiguous
    run of the sorted keys: counting needs no per-key × per-file pairs (the simulator),
    and :func:`candidate_pairs` expands the same slices (the Spark adapter).
    """
    ranged = ranges.has_range()
    if ranged.all():
        lo = np.searchsorted(sorted_keys, ranges.mins, side="left")
        hi = np.searchsorted(sorted_keys, ranges.maxs, side="right")
        return lo, np.maximum(hi, lo)
    lo = np.zeros(len(ranged), np.int64)
    hi = np.full(len(ranged), len(sorted_keys), np.int64)
    if ranged.any():
        lo[ranged] = np.searchsorted(sorted_keys, ranges.mins[ranged], side="left")
        hi[ranged] = np.maximum(np.searchsorted(sorted_keys, ranges.maxs[ranged],
                                                side="right"), lo[ranged])
    return lo, hi


def candidate_pairs(keys: np.ndarray, ranges: FileRanges, prune_by_ranges: bool = True
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(key index, file index) of every key-file comparison left after range pruning."""
    keys = np.asarray(keys, dtype=object)
    n_files = len(ranges.file_ids)
    if keys.size == 0 or n_files == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if not prune_by_ranges:
        k = np.tile(np.arange(keys.size), n_files)
        f = np.repeat(np.arange(n_files), keys.size)
        return k, f
    order = np.argsort(keys, kind="stable")
    lo, hi = candidate_slices(keys[order], ranges)
    counts = hi - lo
    total = int(counts.sum())
    file_idx = np.repeat(np.arange(n_files), counts)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    key_idx = order[np.arange(total) + starts]
    return key_idx, file_idx


def check_keys(footer: Mapping[str, str] | HoodieBloomFilter, keys: np.ndarray | pa.Array,
               counts: Counter, file_keys: Callable[[], pa.Array | np.ndarray],
               prehashed: np.ndarray | None = None) -> np.ndarray:
    """Hudi's HoodieKeyLookupHandle: probe the file's bloom, then confirm hits on its keys.

    ``footer``: the file's footer metadata (or its deserialized filter). Returns a
    boolean mask of the keys really present. ``file_keys`` (the record-key column) is
    called only when at least one probe was positive; a positive the keys do not
    confirm is a false positive. ``prehashed``: the keys' ``HoodieBloomFilter.prehash``
    positions (from a filter of the same ``hash_family``), computed once for all the
    files they are probed against.
    """
    bloom = footer if isinstance(footer, HoodieBloomFilter) else \
        HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
    keys = keys if isinstance(keys, pa.Array) else pa.array(np.asarray(keys, dtype=object),
                                                            pa.string())
    return check_filter(bloom, keys, counts, file_keys, prehashed)


def lookup_candidates(fs: pafs.FileSystem, files: list[tuple[str, str]], keys: pa.Array,
                      stats: IOStats, counts: Counter, prune_by_ranges: bool = True
                      ) -> Candidates:
    """A point lookup's bloom path: every file's footer (min/max key and filter), range
    pruning, then a probe of each remaining file's filter; the (key, file) pairs whose
    probe is positive are the files to read. ``files``: (file id, absolute path)."""
    if not files or not len(keys):
        return Candidates.none()
    footers = {fid: read_footer(fs, path, stats) for fid, path in files}
    ranges = FileRanges.build(list(footers), [footers[f].get(MIN_KEY_FOOTER) for f in footers],
                              [footers[f].get(MAX_KEY_FOOTER) for f in footers])
    k, f = candidate_pairs(keys.to_numpy(zero_copy_only=False), ranges, prune_by_ranges)
    positive = np.zeros(len(k), dtype=bool)
    probed = 0
    for j in np.unique(f):
        at = np.flatnonzero(f == j)
        footer = footers[ranges.file_ids[j]]
        if FOOTER_KEY not in footer:  # an emptied file group's base file: nothing to hold
            continue
        bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
        positive[at] = bloom.might_contain_many(keys.take(pa.array(k[at])))
        probed += len(at)
    counts["candidate_files"] += len(np.unique(f))
    counts["bloom_checks"] += probed
    counts["bloom_positives"] += int(positive.sum())
    return Candidates.from_rows(k[positive], ranges.file_ids[f[positive]])
