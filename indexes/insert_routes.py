"""Where the driver's insert planner put each key, for the simulators of indexes that
leave their inserts to it (bloom, external-kv): no per-key state.

The planner (:func:`indexbench.driver.plan_inserts`) ranks a partition's inserts of a
batch by (Spark ``hash(key)``, key) and cuts the ranking at the plan's counts
(:class:`tableformat.sizing.InsertPlan`). So the file group of any key is found again
from its insert batch (the first ordinal of the batch), its hash and its key's order
code: the batch's route keeps only the (hash, code) of each planned bucket's first key.
Spark-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tableformat import sizing


@dataclass
class Route:
    """Where one insert batch's keys of a partition went: the (hash, key code) of the
    first key of each planned bucket in rank order, and the bucket's file."""

    hashes: np.ndarray  # int32
    codes: np.ndarray  # uint64
    files: np.ndarray  # int64 file index

    def bucket_of(self, hashes: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The bucket of keys of this batch: the last boundary at or before (hash, code)."""
        b = np.searchsorted(self.hashes, hashes, side="right") - 1
        while True:  # a boundary with the key's own hash: compare the key codes
            tie = (b >= 0) & (self.hashes[np.maximum(b, 0)] == hashes) & \
                (codes < self.codes[np.maximum(b, 0)])
            if not tie.any():
                break
            b[tie] -= 1
        # the first boundary is the batch's smallest (hash, key): a key below it was not
        # inserted by this batch in this partition
        assert (b >= 0).all(), "a key routed to an insert batch that did not insert it"
        return b


def rank_inserts(hashes: np.ndarray, codes: np.ndarray, plan: sizing.InsertPlan
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, starts, bounds): the inserts in (hash, key) order, as the planner ranks
    them; bucket ``b`` takes ``order[starts[b]:bounds[b]]``."""
    order = np.lexsort((codes, np.asarray(hashes, np.int32)))
    bounds = plan.bounds
    starts = np.concatenate(([0], bounds[:-1])).astype(np.int64)
    return order, starts, bounds


@dataclass
class InsertRoutes:
    """One partition's file groups in order of creation and every insert batch's route."""

    file_ids: list[str] = field(default_factory=list)
    routes: dict[int, Route] = field(default_factory=dict)  # by the batch's first ordinal

    def place(self, plan: sizing.InsertPlan) -> tuple[np.ndarray, int]:
        """The file index of each planned bucket (existing small files keep theirs, new
        file groups are appended) and how many file groups are new."""
        index = {fid: i for i, fid in enumerate(self.file_ids)}
        files = np.array([index.get(fid, -1) for fid in plan.file_ids], np.int64)
        fresh = np.flatnonzero(files < 0)
        files[fresh] = len(self.file_ids) + np.arange(len(fresh))
        self.file_ids += [plan.file_ids[b] for b in fresh]
        return files, len(fresh)

    def record(self, first_ordinal: int, hashes: np.ndarray, codes: np.ndarray,
               order: np.ndarray, starts: np.ndarray, files: np.ndarray) -> None:
        """Keep the batch's route: the first key of each bucket, and the bucket's file."""
        first = order[starts]
        self.routes[first_ordinal] = Route(np.asarray(hashes, np.int32)[first], codes[first],
                                           files)

    def add(self, first_ordinal: int, hashes: np.ndarray, codes: np.ndarray,
            plan: sizing.InsertPlan) -> np.ndarray:
        """Route one batch's inserts of the partition by the plan; the file index of
        each planned bucket."""
        order, starts, _ = rank_inserts(hashes, codes, plan)
        files, _ = self.place(plan)
        self.record(first_ordinal, hashes, codes, order, starts, files)
        return files

    def file_of(self, ordinals: np.ndarray, hashes: np.ndarray, codes: np.ndarray
                ) -> np.ndarray:
        """File index of existing keys: their insert batch's route, then its bucket."""
        firsts = np.array(sorted(self.routes), dtype=np.int64)
        g = firsts[np.searchsorted(firsts, ordinals, side="right") - 1]
        out = np.empty(len(ordinals), np.int64)
        for first in np.unique(g):
            sel = g == first
            route = self.routes[int(first)]
            out[sel] = route.files[route.bucket_of(hashes[sel], codes[sel])]
        return out
