"""The lookup inside a bucket (no Spark): candidate file groups, then bloom and key checks.

``hash % N`` names a key's bucket, but a bucket of pattern 2 holds several file groups,
so an update must find which one holds its key: Hudi's bloom lookup
(``HoodieKeyLookupHandle``) bounded to the bucket. The key is compared with the
bucket's groups only (never the partition's), pruned by each group's footer min/max key,
probed against each remaining group's bloom filter, and a positive probe reads that
group's record-key column to confirm — the "random access" RFC-29 warns pattern 2
cannot avoid. The Spark tasks, the simulator and point lookups call these; every
counter is incremented by the code that did the work.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from indexes.hashing import bucket_ids
from indexes.lookup import Candidates
from indexes.multi_fg_bucket.layout import PartitionGroups
from tableformat.basefile import MAX_KEY_FOOTER, MIN_KEY_FOOTER, read_footer
from tableformat.fs import IOStats


def expand(starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(row, item) pairs of rows that each own ``sizes[row]`` consecutive items from
    ``starts[row]``: every key with every file group of its bucket, without a loop."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    rows = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    first = np.cumsum(sizes) - sizes
    items = np.repeat(np.asarray(starts, np.int64) - first, sizes) + np.arange(total)
    return rows, items


def in_ranges(keys: pa.Array, mins: pa.Array, maxs: pa.Array) -> np.ndarray:
    """Whether each key lies in its pair's [min, max] (byte order, as Hudi compares
    record keys); a group whose footer has no range (an emptied base file) is kept, as
    Hudi compares such a file with every key."""
    ok = pc.and_kleene(pc.greater_equal(keys, mins), pc.less_equal(keys, maxs))
    return ok.fill_null(True).to_numpy(zero_copy_only=False)


def candidate_pairs(buckets: np.ndarray, groups: PartitionGroups, keys: pa.Array,
                    ranges: tuple[pa.Array, pa.Array] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(key index, group index) of every comparison a lookup makes: each key with the
    file groups of its own bucket, those whose footer range holds it when ``ranges``
    (min and max key of every group, aligned with ``groups``) are given.

    With ranges no pair is built to be pruned: the keys are sorted by (bucket, key), so
    a group's candidates are one slice, found by two binary searches per group (a
    bucket of many groups costs its surviving pairs, not keys × groups)."""
    if ranges is None:
        starts, sizes = groups.span(buckets)
        return expand(starts, sizes)
    if not len(keys) or not len(groups):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    b = np.asarray(buckets, dtype=np.int64)
    idx = pc.sort_indices(pa.table({"b": pa.array(b), "k": keys}),  # keys in byte order
                          sort_keys=[("b", "ascending"), ("k", "ascending")]).to_numpy()
    sorted_b = b[idx]
    sorted_k = keys.take(pa.array(idx)).to_numpy(zero_copy_only=False)
    first = np.searchsorted(sorted_b, groups.buckets, side="left")
    last = np.searchsorted(sorted_b, groups.buckets, side="right")
    lo, hi = first.copy(), last.copy()
    mins = ranges[0].to_numpy(zero_copy_only=False)
    maxs = ranges[1].to_numpy(zero_copy_only=False)
    for j in np.flatnonzero(last > first):  # one pair of searches per group, not per key
        if mins[j] is None or maxs[j] is None:
            continue  # no range (an emptied base file): every key of the bucket
        run = sorted_k[first[j]:last[j]]
        lo[j] = first[j] + np.searchsorted(run, mins[j], side="left")
        hi[j] = max(lo[j], first[j] + np.searchsorted(run, maxs[j], side="right"))
    g, at = expand(lo, hi - lo)
    return idx[at], g


def footer_filter(footer: Mapping[str, str]) -> HoodieBloomFilter | None:
    """The bloom filter in a base file's footer (None: the footer has none)."""
    if FOOTER_KEY not in footer:
        return None
    return HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))


def footer_ranges(footers: list[Mapping[str, str]]) -> tuple[pa.Array, pa.Array]:
    """Min and max record key of each footer (null where a footer has none)."""
    return (pa.array([f.get(MIN_KEY_FOOTER) for f in footers], pa.string()),
            pa.array([f.get(MAX_KEY_FOOTER) for f in footers], pa.string()))


def lookup_candidates(fs: pafs.FileSystem, groups: PartitionGroups, paths: list[str],
                      num_buckets: int, hash_columns: list, keys: pa.Array,
                      stats: IOStats, counts: Counter, prune: bool = True) -> Candidates:
    """A point lookup's path: hash → bucket → the bucket's groups whose range holds the
    key → a probe of each one's filter; the positive (key, group) pairs are the files to
    read. ``paths``: absolute base-file path of each group; footers are read once each,
    only for groups some key's bucket names."""
    if not len(groups) or not len(keys):
        return Candidates.none()
    buckets = bucket_ids(hash_columns, num_buckets)
    counts["keys_hashed"] += len(keys)
    k, g = candidate_pairs(buckets, groups, keys)
    wanted = np.unique(g)
    footers = {int(j): read_footer(fs, paths[int(j)], stats) for j in wanted}
    if prune and len(k):
        mins, maxs = footer_ranges([footers.get(j, {}) for j in range(len(groups))])
        keep = in_ranges(keys.take(pa.array(k)), mins.take(pa.array(g)),
                         maxs.take(pa.array(g)))
        k, g = k[keep], g[keep]
    positive = np.zeros(len(k), dtype=bool)
    for j in np.unique(g):
        at = np.flatnonzero(g == j)
        bloom = footer_filter(footers[int(j)])
        if bloom is not None:
            positive[at] = bloom.might_contain_many(keys.take(pa.array(k[at])))
    counts["candidate_files"] += len(np.unique(g))
    counts["bloom_checks"] += len(k)
    counts["bloom_positives"] += int(positive.sum())
    return Candidates.from_rows(k[positive], groups.file_ids[g[positive]])
