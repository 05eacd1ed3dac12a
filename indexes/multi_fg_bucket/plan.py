"""Where a bucket's inserts go (no Spark): its newest file group until full, then new ones.

A file group is full at ``hoodie.parquet.max.file.size / averageBytesPerRecord``
records: Hudi's own size for a new file group (``UpsertPartitioner`` with
``hoodie.copyonwrite.insert.auto.split``), with Hudi's average record size
(:func:`writeclient.sizing.average_record_size`). The fill is counted in records of
the group's base file rather than read as its Parquet bytes, so the Spark driver and
the simulator (which only models bytes) place every insert alike.

Inserts of one bucket are ranked by record key (byte order) and cut at the planned
counts: the newest group takes the lowest keys, each new group the next run, so the
groups one batch opens have disjoint key ranges and footer-range pruning can skip them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from indexes.multi_fg_bucket.layout import PartitionGroups, new_group_id
from writeclient.sizing import SizingConfig


@dataclass
class BucketPlan:
    """One bucket's inserts: per target file group, its id and record count."""

    file_ids: list[str] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    opened: int = 0  # new file groups among them
    topped_up: int = 0  # inserts into the bucket's newest existing group

    @property
    def bounds(self) -> np.ndarray:
        """Cumulative counts: target ``i`` takes insert ranks ``[bounds[i-1], bounds[i])``."""
        return np.cumsum(np.asarray(self.counts, dtype=np.int64))

    def target_of_ranks(self, ranks: np.ndarray) -> np.ndarray:
        """Target index of each insert rank (0 = the lowest key of the bucket's inserts)."""
        return np.searchsorted(self.bounds, np.asarray(ranks, np.int64), side="right")


def records_per_group(cfg: SizingConfig, avg_record_size: int) -> int:
    """Records a file group holds when full: max file size / average record size."""
    return max(1, int(cfg.max_file_size) // max(1, int(avg_record_size)))


def plan_bucket(inserts: int, newest: tuple[str, int, int, bool] | None, per_group: int,
                name: Callable[[int], str]) -> BucketPlan:
    """Place ``inserts`` records in one bucket.

    ``newest``: (file id, ordinal, records, open) of the bucket's newest file group, or
    None; ``name(ordinal)`` names a new group. The newest group takes what fits while it
    is open; the rest fill new groups of ``per_group`` records, ordinals counting on."""
    plan = BucketPlan()
    left = int(inserts)
    nxt = 0
    if newest is not None:
        fid, ordinal, records, is_open = newest
        nxt = int(ordinal) + 1
        room = min(per_group - int(records), left) if is_open else 0
        if room > 0:
            plan.file_ids.append(fid)
            plan.counts.append(int(room))
            plan.topped_up = int(room)
            left -= int(room)
    while left > 0:
        take = min(per_group, left)
        plan.file_ids.append(name(nxt))
        plan.counts.append(take)
        plan.opened += 1
        nxt += 1
        left -= take
    return plan


def plan_inserts(inserts: Mapping[tuple[str, int], int],
                 groups: Mapping[str, PartitionGroups], per_group: int, instant: str
                 ) -> dict[tuple[str, int], BucketPlan]:
    """Every touched bucket's plan: ``inserts`` is (partition, bucket) → insert count,
    ``groups`` the snapshot's file groups per partition (before this batch)."""
    out = {}
    for (p, b), n in sorted(inserts.items()):
        if n <= 0:
            continue
        pg = groups.get(p)
        i = pg.newest(b) if pg is not None else None
        newest = None if i is None else (pg.file_ids[i], int(pg.ordinals[i]),
                                         int(pg.records[i]), bool(pg.open[i]))
        out[(p, b)] = plan_bucket(n, newest, per_group,
                                  lambda o, p=p, b=b: new_group_id(instant, p, b, o))
    return out


def plan_counters(plans: Mapping[tuple[str, int], BucketPlan]) -> dict[str, int]:
    """What the plans did: groups opened, newest groups topped up and their inserts."""
    return {"file_groups_opened": sum(pl.opened for pl in plans.values()),
            "small_files_topped_up": sum(pl.topped_up > 0 for pl in plans.values()),
            "small_file_inserts": sum(pl.topped_up for pl in plans.values())}
