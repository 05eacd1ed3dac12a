"""multi-fg-bucket's lookup inside one bucket as its file groups grow (RFC-29's "random
access" of pattern 2): per key, the candidate groups, bloom probes, key-column reads
and false positives, and the seconds of the whole lookup (no Spark, no I/O: a group's
key column comes from memory, so the time is the index's own work)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

import indexes
from benchmarks._data import SAMPLING, uuid_keys
from indexes.bloom_filter.key_check import check_filter
from indexes.multi_fg_bucket.core import candidate_pairs, footer_filter
from indexes.multi_fg_bucket.layout import groups_of_files, new_group_id

GROUP_KEYS = 1_000  # keys per file group: a full 1.2 MB group of 1 KB records
# Hudi's ratio of keys per file to filter capacity at that size: 600 entries a row,
# DYNAMIC_V0 up to 1,000, fpp 1e-9 (Hudi's defaults times 1/100)
PARAMS = {"indexbench.scale": "1/100"}
PROBES = 1_000  # keys of one batch in the bucket: half updates, half inserts


class MultiFgBucketLookup:
    """One batch's keys looked up among the ``file_groups`` of their bucket, with the
    index's filters at Hudi's sizes times 1/100 (:data:`PARAMS`); ``keys``:
    random (``uuid``: ranges overlap, every group is a candidate) or ``time-ordered``
    (groups hold consecutive key ranges, so footer ranges prune)."""

    rounds, repeat = SAMPLING

    params = [[1, 2, 4, 8, 16], ["uuid", "time-ordered"]]
    param_names = ["file_groups", "keys"]

    def setup(self, file_groups: int, keys: str) -> None:
        index = indexes.get("multi-fg-bucket", **PARAMS)
        total = file_groups * GROUP_KEYS
        if keys == "uuid":
            stored = uuid_keys(total, seed=1)
            new = uuid_keys(PROBES // 2, seed=2)
        else:
            stored = np.array([f"{i:013d}" for i in range(total)], dtype=object)
            new = np.array([f"{i:013d}" for i in range(total, total + PROBES // 2)],
                           dtype=object)
        self.stored = [pa.array(np.sort(stored[g * GROUP_KEYS:(g + 1) * GROUP_KEYS]))
                       for g in range(file_groups)]
        footers = [index.base_file_footer(k)[0] for k in self.stored]
        self.filters = [footer_filter(f) for f in footers]
        self.ranges = (pa.array([k[0].as_py() for k in self.stored]),
                       pa.array([k[-1].as_py() for k in self.stored]))
        self.groups = groups_of_files([(new_group_id("i", "p", 0, g), f"g{g}")
                                       for g in range(file_groups)])
        rng = np.random.default_rng(3)
        updates = rng.choice(stored, PROBES // 2, replace=False)
        self.keys = pa.array(np.concatenate([updates, new]).tolist())
        self.counts = self.lookup()

    def lookup(self) -> Counter:
        counts: Counter = Counter()
        k, g = candidate_pairs(np.zeros(len(self.keys), np.int64), self.groups, self.keys,
                               self.ranges)
        for j in np.unique(g):
            probe = self.keys.take(pa.array(k[g == j]))

            def file_keys(j=j):
                counts["files_read"] += 1
                return self.stored[int(j)]

            check_filter(self.filters[int(j)], probe, counts, file_keys)
        return counts

    def time_lookup(self, file_groups: int, keys: str) -> None:
        self.lookup()

    def track_candidates_per_key(self, file_groups: int, keys: str) -> float:
        return self.counts["bloom_checks"] / len(self.keys)

    track_candidates_per_key.unit = "groups"

    def track_false_positives_per_key(self, file_groups: int, keys: str) -> float:
        return self.counts["false_positives"] / len(self.keys)

    track_false_positives_per_key.unit = "probes"

    def track_key_reads(self, file_groups: int, keys: str) -> float:
        return float(self.counts["files_read"])

    track_key_reads.unit = "files"
