"""Where the driver's insert planner put each key, for the simulators of indexes that
leave their inserts to it (bloom, external-kv): no per-key state.

The planner (:func:`indexbench.driver.plan_inserts`) draws each insert of a partition
into a bucket by its key's Hudi hash (MD5, :func:`indexes.md5_hash.hudi_insert_hash`)
against the plan's cumulative weights (:func:`tableformat.sizing.draw_buckets`). So the
file group of any key is found again from its insert batch (the first ordinal of the
batch) and its hash: a batch's route keeps only the plan's weights, its insert count and
each bucket's file. Spark-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tableformat import sizing


@dataclass
class Route:
    """Where one insert batch's keys of a partition went: the plan's cumulative weights,
    the batch's insert count there and each bucket's file (-1: drawn no key)."""

    weights: np.ndarray  # float64
    num_inserts: int
    files: np.ndarray  # int64 file index

    def bucket_of(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of keys of this batch: Hudi's draw again."""
        return sizing.draw_buckets(hashes, self.weights, self.num_inserts)


def draw_inserts(hashes: np.ndarray, plan: sizing.InsertPlan
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, starts, bounds): the inserts grouped by the bucket Hudi's draw gives
    them; bucket ``b`` takes ``order[starts[b]:bounds[b]]`` (empty: drawn no key)."""
    bucket = plan.draw(hashes)
    order = np.argsort(bucket, kind="stable")
    bounds = np.cumsum(np.bincount(bucket, minlength=len(plan.counts))).astype(np.int64)
    starts = np.concatenate(([0], bounds[:-1])).astype(np.int64)
    return order, starts, bounds


@dataclass
class InsertRoutes:
    """One partition's file groups in order of creation and every insert batch's route."""

    file_ids: list[str] = field(default_factory=list)
    routes: dict[int, Route] = field(default_factory=dict)  # by the batch's first ordinal

    def place(self, plan: sizing.InsertPlan, drawn: np.ndarray) -> tuple[np.ndarray, int]:
        """The file index of each planned bucket that was drawn a key (existing small
        files keep theirs, new file groups are appended; -1: none drawn, no file) and how
        many file groups are new."""
        index = {fid: i for i, fid in enumerate(self.file_ids)}
        files = np.array([index.get(fid, -1) for fid in plan.file_ids], np.int64)
        fresh = np.flatnonzero((files < 0) & (np.asarray(drawn) > 0))
        files[fresh] = len(self.file_ids) + np.arange(len(fresh))
        self.file_ids += [plan.file_ids[b] for b in fresh]
        return files, len(fresh)

    def record(self, first_ordinal: int, plan: sizing.InsertPlan, files: np.ndarray) -> None:
        """Keep the batch's route: the plan's weights, its inserts and each bucket's file."""
        self.routes[first_ordinal] = Route(plan.weights, int(sum(plan.counts)), files)

    def add(self, first_ordinal: int, hashes: np.ndarray, plan: sizing.InsertPlan
            ) -> tuple[np.ndarray, np.ndarray]:
        """Route one batch's inserts of the partition by the plan: (the file index of
        each planned bucket, -1 for one drawn no key; the keys each was drawn)."""
        drawn = np.bincount(plan.draw(hashes), minlength=len(plan.counts))
        files, _ = self.place(plan, drawn)
        self.record(first_ordinal, plan, files)
        return files, drawn

    def file_of(self, ordinals: np.ndarray, hashes: np.ndarray) -> np.ndarray:
        """File index of existing keys: their insert batch's route, then its bucket."""
        firsts = np.array(sorted(self.routes), dtype=np.int64)
        g = firsts[np.searchsorted(firsts, ordinals, side="right") - 1]
        out = np.empty(len(ordinals), np.int64)
        for first in np.unique(g):
            sel = g == first
            route = self.routes[int(first)]
            out[sel] = route.files[route.bucket_of(hashes[sel])]
        assert (out >= 0).all(), "a key routed to a bucket its insert batch drew no key"
        return out
