"""Hudi's copy-on-write file sizing: small files are topped up first, then new file
groups; the core's arithmetic against Hudi's, and the driver on real files."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from indexbench.driver import open_table, upsert
from indexes.md5_hash import hudi_insert_hash
from tableformat.commit_metadata import CommitTotals
from writeclient import sizing
from writeclient.sizing import SizingConfig


def new_id(n: int) -> str:
    return f"new-{n}"


def test_small_files_are_topped_up_first_then_new_groups():
    cfg = SizingConfig(max_file_size=1000, small_file_limit=800, insert_split_size=7,
                       auto_split=True)
    smalls = sizing.small_files([("b", 700), ("a", 100), ("c", 900), ("d", 799)], cfg)
    assert [s.file_id for s in smalls] == ["a", "b", "d"]  # c is not small; id order
    plan = sizing.plan_partition(30, smalls, 50, cfg, new_id)
    # room = (max - size) // avg: a 18, b 6, d 4 (all 28), then 2 into a new group of 20
    assert plan.file_ids == ["a", "b", "d", "new-0"]
    assert plan.counts == [18, 6, 4, 2]
    assert (plan.topped_up, plan.small_file_inserts) == (3, 28)
    # a small batch stops at the first small file with room
    assert sizing.plan_partition(5, smalls, 50, cfg, new_id).counts == [5]


def test_new_file_groups_auto_split_or_split_size():
    auto = SizingConfig(max_file_size=1000, small_file_limit=0, auto_split=True)
    plan = sizing.plan_partition(45, [], 100, auto, new_id)
    assert plan.counts == [10, 10, 10, 10, 5] and plan.topped_up == 0
    fixed = SizingConfig(max_file_size=1000, small_file_limit=0, auto_split=False,
                         insert_split_size=20)
    assert sizing.plan_partition(45, [], 100, fixed, new_id).counts == [20, 20, 5]
    assert sizing.small_files([("a", 1)], fixed) == []  # limit 0 turns top-up off


def test_average_record_size_is_hudis():
    cfg = SizingConfig(small_file_limit=1000, record_size_estimate=1024,
                       estimation_threshold=1.0)
    assert sizing.average_record_size([], cfg) == 1024
    commits = [CommitTotals("1", "commit", 5000, 40),  # qualifies: 125 B
               CommitTotals("2", "replacecommit", 9000, 10),  # never used
               CommitTotals("3", "commit", 900, 9)]  # under threshold × limit
    assert sizing.average_record_size(commits, cfg) == 125
    commits.append(CommitTotals("4", "commit", 3001, 30))
    assert sizing.average_record_size(commits, cfg) == 101  # ceil(100.03)


def test_average_record_size_reads_hudi_1x_instants():
    """AverageRecordSizeEstimator (Hudi 1.2.0): delta commits count (their base files),
    only the newest max.commits instants are read, metadata bytes leave each file."""
    cfg = SizingConfig(small_file_limit=1000, record_size_estimate=1024,
                       estimation_threshold=1.0, record_size_max_commits=2)
    mor = [CommitTotals("1", "deltacommit", 4000, 20, 2),  # 200 B, but the third newest
           CommitTotals("2", "deltacommit", 0, 0, 0),  # updates into logs only
           CommitTotals("3", "deltacommit", 900, 9, 1)]  # under the threshold
    assert sizing.average_record_size(mor, cfg) == 1024  # the 0.x rule gave 1,024 too
    wide = SizingConfig(**{**cfg.__dict__, "record_size_max_commits": 5})
    assert sizing.average_record_size(mor, wide) == 200
    assert sizing.average_record_size(mor + [CommitTotals("4", "replacecommit", 9000, 9)],
                                      cfg) == 1024  # a replacecommit neither counts nor uses
    meta = SizingConfig(**{**wide.__dict__, "record_size_metadata_bytes": 1600})
    assert sizing.average_record_size(mor, meta) == 1024  # 4000 - 2 × 1600 under threshold
    meta = SizingConfig(**{**wide.__dict__, "record_size_metadata_bytes": 500})
    assert sizing.average_record_size(mor, meta) == 150  # (4000 - 1000) / 20


class _Slice:
    def __init__(self, fid: str, size: int, logs: int = 0, partition: str = "p"):
        self.partition, self.file_id, self.size_bytes = partition, fid, size
        self.logs = ("log",) * logs


def test_small_file_candidates_follow_each_partitioner():
    """Copy-on-write (UpsertPartitioner): every base file under the limit, id order.
    Merge-on-read without a log index (SparkUpsertDeltaCommitPartitioner): slices
    without logs, smallest first, at most candidates.limit per partition."""
    cfg = SizingConfig(max_file_size=1000, small_file_limit=800, small_file_candidates=1)
    slices = [_Slice("a", 500), _Slice("b", 100, logs=1), _Slice("c", 300), _Slice("d", 300),
              _Slice("e", 900), _Slice("f", 700, partition="q")]
    cow = sizing.small_file_candidates(slices, "COPY_ON_WRITE", False, cfg)
    assert {p: [s.file_id for s in v] for p, v in cow.items()} == {
        "p": ["a", "b", "c", "d"], "q": ["f"]}
    mor = sizing.small_file_candidates(slices, "MERGE_ON_READ", False, cfg)
    assert {p: [(s.file_id, s.size_bytes) for s in v] for p, v in mor.items()} == {
        "p": [("c", 300)], "q": [("f", 700)]}  # b has logs; c and d tie: id order
    two = SizingConfig(**{**cfg.__dict__, "small_file_candidates": 2})
    assert [s.file_id for s in sizing.small_file_candidates(
        slices, "MERGE_ON_READ", False, two)["p"]] == ["c", "d"]
    logs_ok = sizing.small_file_candidates(slices, "MERGE_ON_READ", True, cfg)
    assert [s.file_id for s in logs_ok["p"]] == ["a", "b", "c", "d"]
    off = SizingConfig(**{**cfg.__dict__, "small_file_limit": 0})
    assert sizing.small_file_candidates(slices, "MERGE_ON_READ", False, off) == {}


def test_inserts_are_drawn_as_hudis_get_partition():
    """r = floorMod(md5 long, n) / n against the cumulative weights: an exact hit is that
    bucket, a miss its insertion point, past the end the first bucket; about the planned
    counts land in each bucket, not exactly them."""
    plan = sizing.InsertPlan(file_ids=["x", "y", "z"], counts=[3, 5, 2])
    assert plan.weights.tolist() == [0.3, 0.8, 1.0]
    # n = 10: hashes whose floorMod gives r = 0.0, 0.3 (exact hit), 0.31.., 0.9, 0.99..
    hashes = np.array([0, 3, -7, 9, 10**18 + 9, -1], np.int64)
    assert (np.mod(hashes, 10) == [0, 3, 3, 9, 9, 9]).all()
    assert plan.draw(hashes).tolist() == [0, 0, 0, 2, 2, 2]
    edge = sizing.draw_buckets(np.array([5], np.int64), np.array([0.25, 0.5, 0.75, 0.9999]), 6)
    assert edge.tolist() == [3]  # r = 0.833 < the last weight
    past = sizing.draw_buckets(np.array([5], np.int64), np.array([0.5, 0.75]), 6)
    assert past.tolist() == [0]  # weights that do not reach r: Hudi's first bucket
    big = sizing.InsertPlan(file_ids=["x", "y", "z"], counts=[3000, 5000, 2000])
    hashes = np.random.default_rng(1).integers(-2**63, 2**63 - 1, 10000, dtype=np.int64)
    got = np.bincount(big.draw(hashes), minlength=3)
    assert got.sum() == 10000 and (np.abs(got - [3000, 5000, 2000]) < 200).all()
    assert got.tolist() != [3000, 5000, 2000]  # a draw, not a cut


def test_hudis_insert_hash_is_md5s_first_eight_bytes_little_endian():
    keys = ["", "a", "k00001", "é漢字🙂", "x" * 55, "y" * 56, "z" * 64, "w" * 200,
            "0f8c6b36-4f4e-4b9a-9d0e-6a3c2f1e9b77"]
    want = [int.from_bytes(hashlib.md5(k.encode()).digest()[:8], "little", signed=True)
            for k in keys]
    assert hudi_insert_hash(pa.array(keys)).tolist() == want
    assert hudi_insert_hash(pa.array([], pa.string())).tolist() == []


def batch(keys, ts=1) -> pd.DataFrame:
    return pd.DataFrame({"key": list(keys), "dt": "p", "ts": ts,
                         "payload": [f"payload-{k}-{'x' * 40}" for k in keys]})


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_inserts_fill_small_files_before_new_ones(spark, tmp_path, scale):
    """Real files: the second batch's inserts land in the first batch's small files up to
    the max size (one record's estimate at most over), before any new file group."""
    estimate = 400
    params = {"scale": scale, "max_file_size": int(60_000 / scale),
              "small_file_limit": int(40_000 / scale), "record_size_estimate": estimate,
              "estimation_threshold": 1e9,  # keep the estimate: the test knows the room
              "num_entries": 200, "fpp": 0.01}
    table, index = open_table(str(tmp_path / "t"), "bloom", params)
    cfg = index.sizing()
    assert cfg.max_file_size == 60_000 and cfg.small_file_limit == 40_000
    with table:
        first = upsert(spark, table, index,
                       spark.createDataFrame(batch([f"k{i:05d}" for i in range(300)])))
        # 60_000 // 400 = 150 records per new file group: two groups
        assert first.metrics["files_written"] == 2
        before = {s.file_id: s for s in table.snapshot().slices.values()}
        assert all(s.size_bytes < 40_000 for s in before.values())
        second = upsert(spark, table, index, spark.createDataFrame(
            batch([f"n{i:05d}" for i in range(120)], ts=2)))
    m = second.metrics
    after = table.snapshot().slices.values()
    assert m["inserts"] == 120 and m["small_file_inserts"] == 120
    assert m["small_files_topped_up"] >= 1 and m["file_groups"] == 2  # no new group
    for s in after:
        old = before[s.file_id]
        room = (cfg.max_file_size - old.size_bytes) // estimate
        assert s.num_records - old.num_records <= room
        assert old.size_bytes + (s.num_records - old.num_records) * estimate \
            <= cfg.max_file_size + estimate
        assert s.size_bytes <= cfg.max_file_size + estimate  # the file as written
    # the first small file (in file-id order) is filled first
    first_id = sorted(before)[0]
    grown = {s.file_id: s.num_records - before[s.file_id].num_records for s in after}
    assert grown[first_id] == min(120, (cfg.max_file_size - before[first_id].size_bytes)
                                  // estimate)


def test_a_file_without_min_max_is_compared_with_every_key(spark, tmp_path):
    """Hudi's "files with no ranges": a footer without min/max keys makes the file a
    candidate for every key of its partition, and its keys are still found."""
    from tableformat import basefile as bf

    params = {"scale": 1, "small_file_limit": 0, "auto_split": False,
              "insert_split_size": 50, "num_entries": 100, "fpp": 0.01}
    table, index = open_table(str(tmp_path / "t"), "bloom", params)
    keys = [f"k{i:04d}" for i in range(100)]
    with table:
        upsert(spark, table, index, spark.createDataFrame(batch(keys)))
        s = sorted(table.snapshot().slices.values(), key=lambda s: s.file_id)[0]
        path = table.abs_path(s.path)
        data = bf.read_base_file(table.fs, path)
        footer = bf.read_footer(table.fs, path)
        kept = {k: v for k, v in footer.items()
                if k not in (bf.MIN_KEY_FOOTER, bf.MAX_KEY_FOOTER, "_num_rows",
                             bf.CREATED_BY)}
        bf.write_base_file(table.fs, path, data, kept)
        other = [o for o in table.snapshot().slices.values() if o.file_id != s.file_id][0]
        ranged = bf.read_footer(table.fs, table.abs_path(other.path))
        probe = ["zzz-new"] + keys[::10]
        m = upsert(spark, table, index, spark.createDataFrame(batch(probe, ts=2))).metrics
    assert m["updates"] == 10 and m["inserts"] == 1
    in_range = sum(ranged[bf.MIN_KEY_FOOTER] <= k <= ranged[bf.MAX_KEY_FOOTER] for k in probe)
    assert m["candidate_files"] == 2
    assert m["bloom_checks"] == len(probe) + in_range  # every key meets the no-range file
