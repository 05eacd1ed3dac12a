"""extendible-hash in the simulator: the same directories, plans and hash as on Spark.

Routing hashes every record's index key (Hudi's Java hash, :mod:`indexes.hashing`) and
looks its partition's committed directory up; slots are the directory's bucket ids
(:class:`indexes.bucket.sim.BucketSim`'s counting). After a commit the split service
plans with the same core (:func:`~indexes.extendible_hash.core.plan_split`, over the
model's file slices) and repeats, one model replacecommit per split, until nothing is
over capacity. A split's children are counted exactly: the records of the buckets over
capacity are regenerated once per round from their ordinals (keys are pure functions
of them) and only their hashes kept, sorted so that each bucket's are one run and its
children's the run's halves (:func:`~indexes.extendible_hash.core.split_order`): a
child that splits again in the same round needs no second pass, and a split is a
bisection. Bytes are modelled (records × the model's record size).

A 10M-key load splits thousands of buckets, so the loop keeps its state from one split
to the next instead of reading the whole table per split (which made it quadratic):
:class:`~indexes.extendible_hash.core.SplitPlanner` plans as
:func:`~indexes.extendible_hash.core.plan_split` would, and :class:`SplitTally` keeps
the directories and every file group's records in the snapshot's order, so the fill
before and after a split and :meth:`table_metrics` are the values a pass over the
snapshot gives (the same arrays, so the same floats). The tests run the loop with a
tally that reads the snapshot each time and compare every row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from indexes.base import bucket_fill
from indexes.bucket.files import new_bucket_file_id
from indexes.bucket.sim import BucketSim, SlotCounts
from indexes.extendible_hash.core import (
    MAX_DEPTH,
    SplitPlan,
    SplitPlanner,
    masked_hash,
    split_figures,
    split_metadata,
    split_order,
    split_point,
)
from indexes.roles import SimTableServices
from indexes.simulation import SimAdapter, SimBatch, SimChunk
from metrics.rows import WriteTotals, footer_totals, service_row
from tableformat.basefile import bucket_of_file_id

KEY_SHIFT = 27  # (partition, bucket) packed in one int64: bucket ids are below 2^26


class ExtendibleHashSim(SimTableServices, BucketSim):
    """Counts records per (partition, bucket) as the Spark tasks route them, and splits
    buckets after commits."""

    def begin(self, batch: SimBatch) -> None:
        SimAdapter.begin(self, batch)
        parts = batch.partitions
        self.router = self.index.router(self.model.snapshot, parts)
        self.at = np.array([self.router.partitions.index(p) for p in parts], dtype=np.int64)
        self.num = self.router.sizes(parts)
        self.slots = SlotCounts(self.num)
        self.fields = self.index.hash_fields(batch.key_field)
        # a bulk load's records are all the table's: the hashes routing computes are the
        # ones its splits count (kept until then, 12 bytes a record, not regenerated)
        self.loaded: list[tuple[np.ndarray, np.ndarray]] | None = [] if batch.bulk else None

    def buckets(self, chunk: SimChunk) -> np.ndarray:
        """Bucket of every record of the chunk under its partition's directory."""
        h = masked_hash([self.batch.keys.column(f, chunk.ordinals) for f in self.fields])
        if self.loaded is not None:
            self.loaded.append((chunk.part, h))
        return self.router.route_codes(h, self.at[chunk.part])

    # ---- the split service ---------------------------------------------------------
    def tally(self) -> SplitTally | None:
        """What the split loop plans and reports from (None: splits are off)."""
        planner = self.index.split_planner(self.model.snapshot)
        return None if planner is None else SplitTally(self.index, self.model, planner)

    def table_services(self, batch_no: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        tally = self.tally()
        held: dict[tuple[str, int], np.ndarray] | None = None
        while tally is not None and (plan := tally.next()) is not None:
            key = (plan.partition, plan.bucket)
            if held is None or key not in held:
                held = self._hashes_over_capacity(key)
            rows.append(self._split(plan, held, batch_no, tally))
        self.loaded = None
        return rows

    def _records(self, partitions: list[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(partition index, masked hash) of the table's records, at least those of
        ``partitions``: a bulk load's as routed, else regenerated from their ordinals."""
        if self.loaded is not None:
            yield from self.loaded
            return
        for chunk in self.batch.existing(partitions):
            yield chunk.part, masked_hash([self.batch.keys.column(f, chunk.ordinals)
                                           for f in self.fields])

    def _hashes_over_capacity(self, also: tuple[str, int]) -> dict[tuple[str, int], np.ndarray]:
        """The records of every bucket over capacity (and ``also``), from one pass over
        their partitions' records: per bucket its records' hashes as sorted
        :func:`~indexes.extendible_hash.core.split_order` keys (the partition above
        them), so each split of the round, children's included, is a bisection."""
        snap, capacity = self.model.snapshot, self.index.capacity()
        wanted = {(s.partition, bucket_of_file_id(s.file_id))
                  for s in snap.slices.values() if capacity.over(s)} | {also}
        parts = sorted({p for p, _ in wanted})
        router = self.index.router(snap, parts)
        keys = np.array(sorted((router.partitions.index(p) << KEY_SHIFT) + b
                               for p, b in wanted), dtype=np.int64)
        names = self.batch.partitions
        at = np.array([router.partitions.index(p) if p in router.partitions else -1
                       for p in names], dtype=np.int64)
        packs, orders = [], []
        for part, h in self._records(parts):
            codes = at[part]  # -1: a partition not read (below: no bucket of the round)
            packed = (codes << KEY_SHIFT) + router.route_codes(h, codes)
            keep = np.isin(packed, keys)
            packs.append(packed[keep])
            orders.append((codes[keep] << MAX_DEPTH) | split_order(h[keep]))
        packed = np.concatenate([np.empty(0, np.int64), *packs])
        order = np.concatenate([np.empty(0, np.int64), *orders])
        sort = np.argsort(order)  # a partition's buckets: one run each (a prefix of bits)
        packed, order = packed[sort], order[sort]
        cuts = np.flatnonzero(np.diff(packed)) + 1
        starts, ends = np.r_[0, cuts], np.r_[cuts, len(packed)]
        found = {int(packed[a]): order[a:b] for a, b in zip(starts.tolist(), ends.tolist(),
                                                           strict=True) if b > a}
        return {(router.partitions[int(k) >> KEY_SHIFT], int(k) & ((1 << KEY_SHIFT) - 1)):
                found.get(int(k), order[:0]) for k in keys}

    def _split(self, plan: SplitPlan, held: dict[tuple[str, int], np.ndarray],
               batch_no: int, tally: SplitTally) -> dict[str, Any]:
        """One split as a model replacecommit, and its row (the runner's columns)."""
        model = self.model
        p, b, s = plan.partition, plan.bucket, plan.slices[0]
        records = held.pop((p, b))
        stay = split_point(records, plan.local_depth)
        moved = len(records) - stay
        fill_before = tally.fill(p)
        instant = model.new_instant()
        written = [model.slice_of(p, new_bucket_file_id(instant, p, child), instant, n)
                   for child, n in ((b, stay), (plan.new_bucket, moved)) if n]
        directory = plan.after.at(instant)
        model.commit(instant, written, {p: [s.file_id]},
                     split_metadata(plan, directory, moved, model.snapshot.schema))
        tally.done(plan, directory, written)
        held[(p, b)], held[(p, plan.new_bucket)] = records[:stay], records[stay:]
        writes = WriteTotals(files_written=len(written),
                             **footer_totals(written),
                             records_written=sum(w.num_records for w in written),
                             bytes_written=sum(w.size_bytes for w in written))
        row = service_row(
            operation=self.index.SERVICES[0].operation, batch_no=batch_no, instant=instant,
            figures=split_figures(plan, moved, fill_before), files_read=s.file_count,
            bytes_read=s.total_bytes, writes=writes, after=model.snapshot, timings={},
            shuffle_bytes=0, shuffle_read_bytes=None, spark_jobs=None)
        row.update({f"rescaled_{k}_after": v for k, v in tally.fill(p).items()})
        row.update(tally.metrics())
        return row


class SplitTally:
    """The split loop's view of the model table, kept from one split to the next: the
    plans (:class:`~indexes.extendible_hash.core.SplitPlanner`), every partition's
    directory, and every file group's records in the snapshot's order (a dict's: a
    split's replaced group leaves its place, its children come last), so a partition's
    fill and the table's metrics are computed from the very arrays a pass over the
    snapshot builds, without the pass."""

    def __init__(self, index, model, planner: SplitPlanner):
        self.index, self.model, self.planner = index, model, planner
        self.table = OrderedCounts()
        self.partitions: dict[str, OrderedCounts] = {}
        self._fills: dict[str, dict[str, float]] = {}  # a partition's, until it changes
        for (p, fid), s in model.snapshot.slices.items():
            self._add(p, fid, s.num_records)

    def _add(self, partition: str, file_id: str, records: int) -> None:
        self.table.add((partition, file_id), records)
        self.partitions.setdefault(partition, OrderedCounts()).add(file_id, records)

    def next(self) -> SplitPlan | None:
        """The next split the inline policy plans (None: none)."""
        return self.planner.next()

    def fill(self, partition: str) -> dict[str, float]:
        """:func:`~indexes.bucket.files.partition_bucket_fill` of one partition, now
        (a split's fill after is the next split's of that partition before)."""
        if partition not in self._fills:
            self._fills[partition] = bucket_fill(self.partitions[partition].values())
        return dict(self._fills[partition])

    def metrics(self) -> dict[str, float]:
        """The index's ``table_metrics`` of the model's snapshot, now."""
        return self.index.metrics_of(self.table.values(), self.planner.directories)

    def done(self, plan: SplitPlan, directory, written) -> None:
        """``plan`` committed as ``directory``, its slice replaced by ``written``."""
        self.planner.done(plan, directory, written)
        self._fills.pop(plan.partition, None)
        for s in plan.slices:
            self.table.remove((s.partition, s.file_id))
            self.partitions[s.partition].remove(s.file_id)
        for s in written:
            self._add(s.partition, s.file_id, s.num_records)


class OrderedCounts:
    """Integers keyed like a dict, in its order (insertion; a removed key leaves its
    place), held in a growing array so that :meth:`values` is one numpy selection."""

    def __init__(self) -> None:
        self._values = np.empty(64, np.int64)
        self._alive = np.zeros(64, bool)
        self._n = 0
        self._at: dict[Any, int] = {}

    def add(self, key: Any, value: int) -> None:
        if key in self._at:  # a dict keeps a key's place when its value changes
            self._values[self._at[key]] = value
            return
        if self._n == len(self._values):
            self._values = np.concatenate([self._values, np.empty(self._n, np.int64)])
            self._alive = np.concatenate([self._alive, np.zeros(self._n, bool)])
        self._values[self._n], self._alive[self._n] = value, True
        self._at[key] = self._n
        self._n += 1

    def remove(self, key: Any) -> None:
        self._alive[self._at.pop(key)] = False

    def values(self) -> np.ndarray:
        """The values in order (int64, as ``np.array`` of the dict's values makes them)."""
        return self._values[:self._n][self._alive[:self._n]]


__all__ = ["ExtendibleHashSim", "OrderedCounts", "SplitTally"]
