"""Hudi's create handle rolls a new file group over (writeclient.create_handle), and the
simulator's routes (indexes.insert_routes) roll the same keys into the same files."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from indexes.insert_routes import InsertRoutes, RollOver, draw_inserts
from indexes.md5_hash import hudi_insert_hash
from writeclient import create_handle as ch
from writeclient.sizing import InsertPlan, new_file_id


def test_the_roll_over_is_where_hudis_writer_cut_its_files():
    """Hudi 1.2's merge-on-read bloom table of the default comparison (docs/fidelity.md)
    rolled every new file group over at 445 records, its rows 353 raw bytes each before
    the sequence number's record digits; a file of 100 records or fewer is never checked."""
    assert ch.max_file_size(125829) == 125829 + 12583
    assert ch.roll_over(np.full(529, 353), 125829) == [445, 84]
    assert ch.roll_over(np.full(1500, 353), 125829) == [445, 445, 445, 165]
    assert ch.roll_over(np.full(445, 353), 125829) == [445]
    assert ch.roll_over(np.full(100, 10**6), 125829) == [100]  # no check before the 100th
    assert ch.roll_over(np.full(1000, 353), 10**9) == [1000]
    assert ch.roll_over(np.empty(0, np.int64), 125829) == []


def test_raw_bytes_count_what_parquet_mr_buffers():
    """A string is its length plus 4, a long 8, a null nothing; the five meta columns
    are modelled from the instant, partition and file id."""
    t = pa.table({"key": ["a" * 36, "b" * 36], "ts": pa.array([1, None], pa.int64()),
                  "payload": ["x" * 64, None]})
    instant, fid = "20260101000000000", new_file_id(1, "2026-01-01", 0)
    raw = ch.raw_bytes(t, "key", "2026-01-01", instant, fid, ["key", "ts", "payload"])
    meta = (17 + 4) + (len(f"{instant}_0_") + 4) + (10 + 4) \
        + (len(f"{fid}_0-0-0_{instant}.parquet") + 4)
    assert raw.tolist() == [meta + 40 + 40 + 8 + 68, meta + 40 + 40]


def test_rolled_file_ids_follow_hudis_names_and_overlap_in_key_range():
    """The rolled files are ``<prefix>-1``, ``-2`` (Hudi's ``getNextFileId``), taken in
    insert-hash order, so their key ranges overlap as Hudi's do; small files are never
    rolled over."""
    keys = pa.array([f"{i:036d}" for i in range(1400)])
    t = pa.table({"key": keys, "payload": pa.array(["p" * 250] * 1400)})
    hashes = hudi_insert_hash(keys)
    ids = ["small-0", new_file_id(3, "p", 0)]
    bucket = np.where(np.arange(1400) < 200, 0, 1)
    fids = ch.rolled_file_ids(t, bucket, hashes, ids, 1, "key", "p", "20260101000000000",
                              ["key", "payload"], 125829).to_numpy(zero_copy_only=False)
    names, counts = np.unique(fids, return_counts=True)
    got = dict(zip(names.tolist(), counts.tolist(), strict=True))
    assert got.pop("small-0") == 200
    prefix = ids[1][:-2]
    assert sorted(got) == [f"{prefix}-{k}" for k in range(len(got))] and len(got) > 1
    raw = ch.raw_bytes(t.slice(200), "key", "p", "20260101000000000", ids[1], ["key", "payload"])
    assert [got[f"{prefix}-{k}"] for k in range(len(got))] == ch.roll_over(raw, 125829)
    first = np.flatnonzero(fids == f"{prefix}-0")
    second = np.flatnonzero(fids == f"{prefix}-1")
    assert first.min() < second.max() and second.min() < first.max()  # overlapping ranges


@pytest.mark.parametrize("n", [90, 700, 2500])
def test_the_simulators_routes_roll_the_same_keys_into_the_same_files(n):
    """Records of one width: the Spark planner's roll-over (per record) and the
    simulator's (per bucket, a hash per further file) put every key in the same file,
    and the route finds each key's file again from its hash alone."""
    keys = pa.array([f"k-{i:033d}" for i in range(n)])
    t = pa.table({"key": keys, "payload": pa.array(["p" * 200] * n)})
    hashes = hudi_insert_hash(keys)
    plan = InsertPlan(file_ids=["small-0", new_file_id(2, "p", 0), new_file_id(2, "p", 1)],
                      counts=[n // 10, n - n // 10 - n // 3, n // 3], topped_up=1)
    bucket = plan.draw(hashes)
    instant, cols = "20260101000000000", ["key", "payload"]
    spark = ch.rolled_file_ids(t, bucket, hashes, plan.file_ids, 1, "key", "p", instant,
                               cols, 125829).to_numpy(zero_copy_only=False)
    width = ch.raw_bytes(t.slice(0, 1), "key", "p", instant, plan.file_ids[1], cols)[0]
    roll = RollOver(int(width), 125829)
    order, starts, bounds, ids, splits = draw_inserts(hashes, plan, roll)
    sim = np.empty(n, dtype=object)
    for b, fid in enumerate(ids):
        sim[order[starts[b]:bounds[b]]] = fid
    assert (sim == spark).all()
    assert bool(splits) == (n > 1000)
    routes = InsertRoutes(file_ids=["small-0"])
    files, drawn, got_ids = routes.add(0, hashes, plan, roll)
    assert got_ids == ids and drawn.sum() == n
    found = np.asarray(routes.file_ids, dtype=object)[routes.file_of(np.arange(n), hashes)]
    assert (found == spark).all()
