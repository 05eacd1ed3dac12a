"""The simulator's incremental paths give exactly what the straightforward ones give
(Spark-free): extendible-hash's split loop, planned and reported from state kept across
splits, against the same loop reading the model's snapshot for every figure (rows,
model commits, directories, bit for bit); the model table's running table figures
against sums over its slices; the cost model's seconds of many rows at once against one
row at a time. Before these paths a 10M-key extendible-hash load took minutes of
per-split passes over the whole table (docs/simulator.md, "Simulator speed")."""

from __future__ import annotations

import copy
import math
import pickle
import random

import pandas as pd
import pytest

import indexes
from indexbench.sim import driver
from indexbench.sim.cost import PROFILES, model_rows, model_seconds
from indexbench.sim.driver import simulate
from indexes.bucket.files import partition_bucket_fill
from indexes.extendible_hash.sim import ExtendibleHashSim, OrderedCounts
from indexes.simulation import SimBatch
from metrics.rows import table_figures
from tableformat.table import FileSlice, LogFile, SliceMap, Snapshot

NAME = "extendible-hash"
WALL_CLOCK = ["sim_s", "run_id"]  # measured seconds and the run's id: not results
SMALL = {"hoodie.bucket.index.num.buckets": 2, "hoodie.bucket.index.extendible.max.records": 150}
MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline.max.delta.commits": 2}


class ScanTally:
    """The straightforward split loop's view: every plan, fill and metric from a pass
    over the model's snapshot (what the simulator did before it kept state; with the
    round's hashes regenerated, as it did for a bulk load too)."""

    def __init__(self, index, model):
        self.index, self.model = index, model

    def next(self):
        return self.index.plan_service(self.index.SERVICES[0], None, self.model.snapshot, {})

    def fill(self, partition):
        return partition_bucket_fill(self.model.snapshot, [partition])

    def metrics(self):
        return self.index.table_metrics(self.model.snapshot)

    def done(self, plan, directory, written):
        pass


def _run(monkeypatch, scan: bool, workload: str, params: dict, **sizes):
    """Rows and model of one simulated run, the split loop incremental or scanning."""
    models = []
    made = driver.model_table
    monkeypatch.setattr(driver, "model_table",
                        lambda *a, **k: models.append(made(*a, **k)) or models[-1])
    if scan:  # ... and the split round's hashes regenerated, a bulk load's too
        monkeypatch.setattr(ExtendibleHashSim, "tally",
                            lambda self: ScanTally(self.index, self.model))
        monkeypatch.setattr(SimBatch, "bulk", property(lambda self: False))
    try:
        df = simulate(NAME, workload, params=params, write=False, **sizes)
    finally:
        monkeypatch.undo()
    return df.drop(columns=WALL_CLOCK, errors="ignore"), models[0]


@pytest.mark.parametrize("workload, params, sizes", [
    # directories capped at 16 entries: buckets that may no longer split stay over
    ("uniform", {**SMALL, "hoodie.bucket.index.max.num.buckets": 16},
     {"initial_records": 6000, "batches": 3, "batch_size": 1500}),
    ("growing", SMALL, {"initial_records": 3000, "batches": 3, "batch_size": 1500}),
    ("hot-index-key", SMALL, {"initial_records": 3000, "batches": 2, "batch_size": 1000}),
    ("zipf-skewed", {**SMALL, **MOR}, {"initial_records": 3000, "batches": 4,
                                       "batch_size": 1000}),
    ("partition-skewed", {"hoodie.bucket.index.num.buckets": 4,
                          "hoodie.bucket.index.extendible.capacity.mode": "bytes",
                          "hoodie.bucket.index.extendible.max.file.bytes": 20000},
     {"initial_records": 5000, "batches": 2, "batch_size": 1000}),
])
def test_incremental_splits_give_the_scanning_loops_rows_and_commits(monkeypatch, workload,
                                                                     params, sizes):
    fast, model = _run(monkeypatch, False, workload, params, **sizes)
    slow, oracle = _run(monkeypatch, True, workload, params, **sizes)
    assert (fast["operation"] == "rescale").sum() > 5  # splits happened
    pd.testing.assert_frame_equal(fast, slow, check_exact=True)
    a, b = model.snapshot, oracle.snapshot
    assert list(a.slices.items()) == list(b.slices.items())  # same slices, same order
    assert (a.completed, a.extra, a.operations, a.commits, a.physical_files) == \
        (b.completed, b.extra, b.operations, b.commits, b.physical_files)
    index = driver._index_of(NAME, params)  # the table's write configs set aside
    assert index.directory_problems(a) == []
    got, want = (index.directories(s, s.partitions()) for s in (a, b))
    assert {p: d.stored for p, d in got.items()} == {p: d.stored for p, d in want.items()}


def test_no_split_loop_when_splits_are_off(monkeypatch):
    df, _ = _run(monkeypatch, False, "uniform", {**SMALL, "indexbench.split.enabled": False},
                 initial_records=2000, batches=1, batch_size=500)
    assert (df["operation"] == "upsert").all()


def test_ordered_counts_keep_a_dicts_order():
    rng = random.Random(3)
    mine, ref = OrderedCounts(), {}
    for i in range(3000):
        key = rng.randrange(200)
        if key in ref and rng.random() < 0.4:
            mine.remove(key)
            del ref[key]
        else:
            mine.add(key, i)
            ref[key] = i
        if i % 97 == 0:
            assert mine.values().tolist() == list(ref.values())
    assert mine.values().tolist() == list(ref.values())


# ---------------------------------------------------------------- generic helpers
def _slice(rng: random.Random, fid: str) -> FileSlice:
    s = FileSlice("p", fid, None if rng.random() < 0.2 else f"p/{fid}.parquet",
                  "20260101000000000", rng.randrange(100), rng.randrange(10_000))
    for i in range(rng.randrange(3)):
        s = s.with_log(LogFile(f"p/.{fid}.log.{i + 1}", "20260101000000001",
                               rng.randrange(20), 0, 50))
    return s


def test_slice_map_keeps_the_sums_table_figures_reports():
    rng = random.Random(7)
    mine = Snapshot(SliceMap(), [], 3, None)
    for step in range(2000):
        key = ("p", f"f{rng.randrange(60)}")
        op = rng.random()
        if op < 0.55:
            mine.slices[key] = _slice(rng, key[1])
        elif op < 0.75:
            mine.slices.pop(key, None)
        elif op < 0.8 and key in mine.slices:
            del mine.slices[key]
        elif op < 0.85:
            mine.slices.update({key: _slice(rng, key[1])})
        elif op < 0.9:
            mine.slices.setdefault(key, _slice(rng, key[1]))
        elif op < 0.92 and mine.slices:
            mine.slices.popitem()
        elif op < 0.93:
            mine.slices.clear()
        plain = Snapshot(dict(mine.slices), [], 3, None)
        assert table_figures(mine) == table_figures(plain), step
    for copied in (copy.deepcopy(mine.slices), pickle.loads(pickle.dumps(mine.slices)),
                   SliceMap(mine.slices)):
        assert copied.sizes() == mine.slices.sizes() and copied == mine.slices


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def test_model_rows_gives_model_seconds_bit_for_bit():
    """One frame for many rows, each row's terms summed as a one-row frame sums them:
    rows of every index (upserts, rescales, resizes, compactions), with gaps."""
    rows = []
    for params in ({}, MOR):
        df = driver.simulate_compare(
            None, "growing", params={n: {**params, **({"hoodie.bucket.index.num.buckets": 2,
                                                      "indexbench.rescale.max.bucket.records":
                                                      100} if n == "multiple-rehash" else {}),
                                         **(SMALL if n == NAME else {})}
                                     for n in indexes.names()},
            write=False, initial_records=1500, batches=3, batch_size=600)
        rows += [{k: v for k, v in r.items() if not k.startswith("model_") or
                  k.removeprefix("model_") in ("bytes_read", "bytes_written")}
                 for r in df.to_dict("records")]
    rng = random.Random(11)
    for r in rows[:40]:  # gaps: a column missing, None or NaN in some rows only
        gap = dict(r)
        for col in rng.sample(sorted(gap), 5):
            if rng.random() < 0.5:
                del gap[col]
            else:
                gap[col] = rng.choice([None, float("nan")])
        rows.append(gap)
    assert {r.get("operation") for r in rows} >= {"upsert", "rescale", "compaction"}
    for cores in (1, 3):
        at_once = model_rows(rows, PROFILES["s3"], cores=cores)
        for row, got in zip(rows, at_once, strict=True):
            one = model_seconds(row, PROFILES["s3"], cores=cores)
            assert one.keys() == got.keys()
            assert all(_same(one[c], got[c]) for c in one), (row, one, got)
    assert model_rows([], PROFILES["s3"]) == []
