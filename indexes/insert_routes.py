"""Where the driver's insert planner put each key, for the simulators of indexes that
leave their inserts to it (bloom, external-kv): no per-key state.

The planner (:func:`indexbench.driver.plan_inserts`) draws each insert of a partition
into a bucket by its key's Hudi hash (MD5, :func:`indexes.md5_hash.hudi_insert_hash`)
against the plan's cumulative weights (:func:`writeclient.sizing.draw_buckets`). So the
file group of any key is found again from its insert batch (the first ordinal of the
batch) and its hash: a batch's route keeps only the plan's weights, its insert count and
each bucket's file. A new file group that Hudi's create handle rolls over
(:mod:`writeclient.create_handle`) takes its keys in insert-hash order, so the route also
keeps, per rolled bucket, the hashes where each further file starts. Spark-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from writeclient import create_handle, sizing

# a rolled bucket: the hash each further file starts at, and those files' bucket numbers
Splits = dict[int, tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class RollOver:
    """The simulator's model of a create handle's roll-over: every record of the
    workload ``raw_record`` bytes in the Parquet writer's estimate (measured on its
    rows, :mod:`indexbench.sim.record_size`; exact where the records are of one width,
    as uuid keys and a fixed payload make them)."""

    raw_record: int
    max_file_size: int
    compression_ratio: float = sizing.COMPRESSION_RATIO

    def sizes(self, n: int) -> list[int]:
        """The records of each file a create handle given ``n`` records writes."""
        if n <= create_handle.FIRST_CHECK:
            return [n]
        return create_handle.roll_over(np.full(n, self.raw_record, np.int64),
                                       self.max_file_size, self.compression_ratio)


def roll_over_model(cfg: sizing.SizingConfig, model: object) -> RollOver | None:
    """The roll-over of a simulated table (its model's ``raw_record_bytes``; None: no
    model of them, nothing rolls over)."""
    raw = int(getattr(model, "raw_record_bytes", 0) or 0)
    return RollOver(raw, cfg.max_file_size, cfg.compression_ratio) if raw > 0 else None


def split_buckets(bucket: np.ndarray, hashes: np.ndarray, splits: Splits) -> np.ndarray:
    """Buckets after the roll-over: a key of a rolled bucket goes to the file whose
    starting hash is the last at or below its own."""
    out = bucket.copy()
    for b, (starts, files) in splits.items():
        m = np.flatnonzero(bucket == b)
        j = np.searchsorted(starts, hashes[m], side="right")
        out[m] = np.where(j == 0, b, files[np.maximum(j - 1, 0)])
    return out


@dataclass
class Route:
    """Where one insert batch's keys of a partition went: the plan's cumulative weights,
    the batch's insert count there, each bucket's file (-1: drawn no key; rolled-over
    files numbered after the plan's buckets) and the roll-over's splits."""

    weights: np.ndarray  # float64
    num_inserts: int
    files: np.ndarray  # int64 file index
    splits: Splits = field(default_factory=dict)

    def bucket_of(self, hashes: np.ndarray) -> np.ndarray:
        """The bucket of keys of this batch: Hudi's draw again, then the roll-over."""
        bucket = sizing.draw_buckets(hashes, self.weights, self.num_inserts)
        return split_buckets(bucket, hashes, self.splits) if self.splits else bucket


def roll_over(hashes: np.ndarray, bucket: np.ndarray, plan: sizing.InsertPlan,
              roll: RollOver | None) -> tuple[np.ndarray, list[str], Splits]:
    """The plan's buckets as written: each new file group's create handle takes its keys
    in insert-hash order (:func:`writeclient.create_handle.rollover_order`) and rolls
    over where :meth:`RollOver.sizes` says. Returns each key's bucket, every bucket's
    file id (the rolled files' after the plan's) and the splits."""
    ids = list(plan.file_ids)
    splits: Splits = {}
    if roll is None:
        return bucket, ids, splits
    drawn = np.bincount(bucket, minlength=len(ids))
    for b in np.flatnonzero(drawn > create_handle.FIRST_CHECK).tolist():
        if b < plan.topped_up:  # a small file is merged into, never rolled over
            continue
        sizes = roll.sizes(int(drawn[b]))
        if len(sizes) < 2:
            continue
        ranked = np.sort(hashes[bucket == b])
        files = np.arange(len(ids), len(ids) + len(sizes) - 1, dtype=np.int64)
        ids += [create_handle.rolled_file_id(plan.file_ids[b], k) for k in range(1, len(sizes))]
        splits[b] = (ranked[np.cumsum(sizes)[:-1]], files)
    return (split_buckets(bucket, hashes, splits) if splits else bucket), ids, splits


def draw_inserts(hashes: np.ndarray, plan: sizing.InsertPlan, roll: RollOver | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], Splits]:
    """(order, starts, bounds, file ids, splits): the inserts grouped by the bucket
    Hudi's draw (and its create handles' roll-over) gives them; bucket ``b`` takes
    ``order[starts[b]:bounds[b]]`` (empty: drawn no key) and is file ``ids[b]``."""
    bucket, ids, splits = roll_over(hashes, plan.draw(hashes), plan, roll)
    order = np.argsort(bucket, kind="stable")
    bounds = np.cumsum(np.bincount(bucket, minlength=len(ids))).astype(np.int64)
    starts = np.concatenate(([0], bounds[:-1])).astype(np.int64)
    return order, starts, bounds, ids, splits


@dataclass
class InsertRoutes:
    """One partition's file groups in order of creation and every insert batch's route."""

    file_ids: list[str] = field(default_factory=list)
    routes: dict[int, Route] = field(default_factory=dict)  # by the batch's first ordinal

    def place(self, ids: list[str], drawn: np.ndarray) -> tuple[np.ndarray, int]:
        """The file index of each bucket (file ``ids[b]``) that was drawn a key (existing
        small files keep theirs, new file groups are appended; -1: none drawn, no file)
        and how many file groups are new."""
        index = {fid: i for i, fid in enumerate(self.file_ids)}
        files = np.array([index.get(fid, -1) for fid in ids], np.int64)
        fresh = np.flatnonzero((files < 0) & (np.asarray(drawn) > 0))
        files[fresh] = len(self.file_ids) + np.arange(len(fresh))
        self.file_ids += [ids[b] for b in fresh]
        return files, len(fresh)

    def record(self, first_ordinal: int, plan: sizing.InsertPlan, files: np.ndarray,
               splits: Splits | None = None) -> None:
        """Keep the batch's route: the plan's weights, its inserts, each bucket's file
        and the roll-over's splits."""
        self.routes[first_ordinal] = Route(plan.weights, int(sum(plan.counts)), files,
                                           splits or {})

    def add(self, first_ordinal: int, hashes: np.ndarray, plan: sizing.InsertPlan,
            roll: RollOver | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Route one batch's inserts of the partition by the plan: (the file index of
        each bucket, -1 for one drawn no key; the keys each was drawn; each bucket's
        file id, rolled-over files after the plan's)."""
        bucket, ids, splits = roll_over(hashes, plan.draw(hashes), plan, roll)
        drawn = np.bincount(bucket, minlength=len(ids))
        files, _ = self.place(ids, drawn)
        self.record(first_ordinal, plan, files, splits)
        return files, drawn, ids

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
