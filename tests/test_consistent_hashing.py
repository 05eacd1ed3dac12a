"""consistent-hashing (RFC-42): the ring and plan cores against Hudi's rules, and on
Spark a resize's split with dual writes, a merge, and a killed resize — each step's
snapshot equal to a dict oracle, ``verify`` clean."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import xxhash
from test_oracle import DDL, apply_batch, committed

import indexes
from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from indexes.consistent_hashing.plan import MERGE, SPLIT, ResizePlan, plan_partition
from indexes.consistent_hashing.ring import (
    HASH_VALUE_MASK,
    Ring,
    committed_rings,
    legacy_default_postfix,
)
from indexes.consistent_hashing.spark import PendingResize
from indexes.consistent_hashing.storage import METADATA_DIR
from tableformat.errors import TableConfigError
from tableformat.table import Snapshot
from writeclient.faults import SimulatedCrash, simulated_crash

NAME = "consistent-hashing"


# ---------------------------------------------------------------- cores (no Spark)
def test_default_ring_is_hudis():
    ring = Ring.default("2026/01/02", 4)
    step = (HASH_VALUE_MASK + 3) // 4
    assert ring.values.tolist() == [step, 2 * step, 3 * step, HASH_VALUE_MASK]
    # Hudi 1.2's generateUUID: the file ids Hudi 1.2.0's own writer gave partition
    # 2026-01-01's default ring of 16 buckets (its 00000000000000.hashing_meta)
    hudi = Ring.default("2026-01-01", 16)
    assert [n.file_id_prefix for n in hudi.nodes[:2]] == [
        "d0eb1cc5-5ac9-36f4-9b9e-34ca04e0726b", "44996483-9d6d-3bb5-ae42-92b7cc3f19e9"]
    assert ring.nodes[2].file_id.endswith("-0") and len(ring.nodes[2].file_id) == 38


def test_a_table_with_hudi_014s_default_ring_names_is_refused_in_one_line():
    """Before 2026-11-28 the default ring took Hudi 0.14's names; Hudi 1.2's writer builds
    other file groups for it, so such a table is refused, not written beside."""
    legacy = f"00000003-{legacy_default_postfix('2026/01/02')}-0"
    assert legacy == "00000003-0000-0000-0000-000020260102-0"
    snap = Snapshot(slices={("2026/01/02", legacy): None}, completed=["1"], physical_files=1,
                    schema=None)
    with pytest.raises(TableConfigError, match="Hudi 0.14's default ring"):
        committed_rings(snap, ["2026/01/02"], 4)


def test_a_clustering_by_hudis_writer_is_refused_in_one_line():
    """Hudi's clustering records its new rings only in .hashing_meta files, not in the
    replacecommit our rings are read from: refused, not routed by a stale ring."""
    snap = Snapshot(slices={}, completed=["1", "2"], physical_files=0, schema=None,
                    extra={"1": {"indexbench.spark.schema": "{}"}, "2": {"schema": "{}"}},
                    operations={"1": "UPSERT", "2": "CLUSTER"})
    with pytest.raises(TableConfigError, match="clustering by Hudi's own writer"):
        committed_rings(snap, ["p"], 4)
    snap.operations["2"] = "UPSERT"  # Hudi's upserts into our ring's file groups are fine
    assert committed_rings(snap, ["p"], 4)["p"] == Ring.default("p", 4)


def test_locate_is_the_first_node_at_or_above_the_hash_wrapping():
    ring = Ring.default("p", 4)
    v = ring.values
    hashes = np.array([0, v[0], v[0] + 1, v[3], v[1] - 1])
    assert ring.locate(hashes).tolist() == [0, 0, 1, 3, 1]
    # a ring whose last node is below the mask wraps the top range to its first node
    small = Ring("p", "0", 0, ring.nodes[:2])
    assert small.locate(np.array([HASH_VALUE_MASK])).tolist() == [0]


def test_keys_hash_with_hudis_xxhash32():
    from indexes.xxhash32 import consistent_hash

    keys = ["a", "key-1", "0000000000158-2e34fb"]
    want = [xxhash.xxh32_intdigest(k.encode(), 0) & HASH_VALUE_MASK for k in keys]
    assert consistent_hash([np.array(keys, dtype=object)]).tolist() == want


def test_split_halves_the_range_and_merge_keeps_the_last_value():
    ring = Ring.default("p", 4)
    left, right = ring.split_children(1)
    assert left.value == (ring.values[0] + ring.values[1]) // 2 and right.value == ring.values[1]
    assert {left.tag, right.tag} == {"REPLACE"}
    grown = ring.apply([left, right], "t1")
    assert grown.num_buckets == 5 and grown.seq_no == 1
    assert ring.nodes[1].file_id not in grown.file_ids  # both halves are new file groups
    merged = grown.apply(grown.merge_children([1, 2]), "t2")
    assert merged.values.tolist() == ring.values.tolist()
    with pytest.raises(ValueError):
        ring.merge_children([0, 2])
    # a first node's predecessor is the last one: the range wraps over the mask
    assert ring.split_children(0)[0].value == (ring.values[3] + ring.values[0]
                                               + HASH_VALUE_MASK + 1) // 2 & HASH_VALUE_MASK


def test_plan_splits_big_groups_merges_small_neighbours_within_the_bounds():
    ring = Ring.default("p", 4)
    ids = ring.file_ids
    sizes = {ids[0]: 500, ids[1]: 10, ids[2]: 10, ids[3]: 10}
    groups = plan_partition(ring, sizes, split_size=100, merge_size=50, max_buckets=8,
                            min_buckets=2)
    assert [(g.kind, g.file_ids) for g in groups] == [
        (SPLIT, (ids[0],)), (MERGE, (ids[1], ids[2], ids[3]))]
    # the merge keeps the last node's value, with a new file group; the others go
    assert [c.tag for c in groups[1].children] == ["DELETE", "DELETE", "REPLACE"]
    # min 3 buckets: one split slot gives 4 − 3 + 1 = 2 nodes to merge away
    tight = plan_partition(ring, sizes, 100, 50, max_buckets=8, min_buckets=3)
    assert tight[1].file_ids == (ids[1], ids[2], ids[3])
    # no split slot above max: no split, and no merge below min
    assert plan_partition(ring, sizes, 100, 50, max_buckets=4, min_buckets=4) == []
    # nodes without a file group are never planned
    assert plan_partition(ring, {ids[0]: 500}, 100, 50, 8, 1)[0].file_ids == (ids[0],)


def test_plan_json_round_trips_and_rings_come_from_the_timeline():
    ring = Ring.default("p", 2)
    groups = plan_partition(ring, {ring.file_ids[0]: 500}, 100, 50, 8, 2)
    plan = ResizePlan("20260101000000001", groups, {"p": ring})
    body = json.loads(json.dumps(plan.to_json()))
    back = ResizePlan.from_json(plan.instant, body)
    assert back.groups == groups and back.rings_after["p"].num_buckets == 3
    extra = {"20260101000000001": {"indexbench.consistent.hashing.rings": json.dumps(
        {"p": back.rings_after["p"].to_json()})}}
    snap = Snapshot({}, ["20260101000000001"], 0, None, extra)
    rings = committed_rings(snap, ["p", "q"], 2)
    assert rings["p"].num_buckets == 3 and rings["q"] == Ring.default("q", 2)


# ---------------------------------------------------------------- on Spark
def _batch(spark, rows):
    return spark.createDataFrame([(k, p, ts, pl, d) for k, p, ts, d, pl in rows], DDL)


def _rows(rng: random.Random, n: int, step: int, keys: int, deletes: float = 0.0):
    return [(f"k{rng.randrange(keys):03d}", rng.choice(["p", "q/r"]), rng.randrange(5),
             rng.random() < deletes, f"s{step}-{i}") for i in range(n)]


def _index(**params):
    base = {"hoodie.bucket.index.num.buckets": 2, "indexbench.resize.pending.commits": 1}
    return indexes.get(NAME, **{**base, **params})


def _services(spark, table, index):
    with table:
        return services.run_inline(spark, table, index, batch_no=None)


def _upsert(spark, table, index, oracle, rows, n):
    with table:
        upsert(spark, table, index, _batch(spark, rows), batch_no=n)
    apply_batch(oracle, rows)


def _loaded(spark, tmp_path, seed: int, n: int, keys: int):
    """A table of ``n`` upserted records and an index whose split threshold is below
    every file group (so a resize splits them all)."""
    uri = str(tmp_path / "t")
    rng = random.Random(seed)
    oracle: dict = {}
    table, index = open_table(uri, NAME, {"hoodie.bucket.index.num.buckets": 2})
    _upsert(spark, table, index, oracle, _rows(rng, n, 0, keys), 0)
    smallest = min(s.size_bytes for s in table.snapshot().slices.values())
    return uri, rng, oracle, table, _index(**{"hoodie.parquet.max.file.size": smallest // 3})


def _files_of(uri: str, instant: str) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs if instant in f]


def test_split_with_dual_writes_then_a_merge_keep_the_snapshot_equal_to_the_oracle(
        spark, tmp_path):
    uri, rng, oracle, table, splitting = _loaded(spark, tmp_path, 7, 120, 200)

    # one writer holds the table throughout: a new one would roll the pending resize back
    with table:
        # 1. schedule + execute: nothing visible changes
        assert services.run_inline(spark, table, splitting, None) == []
        pending = PendingResize.find(table)
        assert pending is not None and pending.plan.splits == 4 and committed(uri) == oracle
        # 2. an upsert while pending writes resized buckets' records to their children too
        rows = _rows(rng, 60, 1, 260, 0.2)
        res = upsert(spark, table, splitting, _batch(spark, rows), batch_no=1)
        apply_batch(oracle, rows)
        assert committed(uri) == oracle
        # every bucket splits: each record is looked up on both rings, written twice
        assert res.metrics["ring_lookups"] == res.metrics["records"] * 2
        assert res.metrics["dual_written_records"] == (
            res.metrics["inserts"] + res.metrics["updates"] + res.metrics["deletes"])
        assert res.metrics["dual_written_files"] > 0
        # 3. complete: the children (execution + dual writes) replace the old groups
        [row] = services.run_inline(spark, table, splitting, None)
    assert (row["mode"], row["splits"], row["from_buckets"], row["to_buckets"]) == \
        ("resize", 4, 4, 8)
    assert row["dual_written_records"] == res.metrics["dual_written_records"]
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    snap = table.snapshot()
    assert all(r.num_buckets == 4 for r in splitting.rings(snap, ["p", "q/r"]).values())
    assert os.path.exists(f"{uri}/{METADATA_DIR}/q/r/{pending.instant}.hashing_meta")
    assert not _files_of(uri, f"_{pending.instant}-")  # older child versions were cleaned
    # routing after the resize uses the new ring
    _upsert(spark, table, splitting, oracle, _rows(rng, 40, 2, 260), 2)
    assert committed(uri) == oracle

    # 4. merge back (inline: no pending commits) down to the minimum
    merging = _index(**{"hoodie.parquet.max.file.size": 10**9,
                        "hoodie.bucket.index.min.num.buckets": 1,
                        "indexbench.resize.pending.commits": 0})
    [row] = _services(spark, table, merging)
    assert row["merges"] > 0 and row["to_buckets"] < row["from_buckets"]
    assert committed(uri) == oracle and verify_table(spark, uri) == []


def test_a_resize_killed_before_its_commit_is_rolled_back(spark, tmp_path):
    uri, rng, oracle, table, splitting = _loaded(spark, tmp_path, 3, 80, 150)
    rows = _rows(rng, 40, 1, 150, 0.2)
    with simulated_crash("resize_before_commit"), pytest.raises(SimulatedCrash), table:
        services.run_inline(spark, table, splitting, None)
        instant = PendingResize.find(table).instant
        upsert(spark, table, splitting, _batch(spark, rows), batch_no=1)
        apply_batch(oracle, rows)
        services.run_inline(spark, table, splitting, None)
    assert committed(uri) == oracle  # the old snapshot, readable
    table, index = open_table(uri, NAME)
    with table:
        assert instant in table.rolled_back[0]
    assert not _files_of(uri, instant) and PendingResize.find(table) is None
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    # the next writer plans the resize again and completes it
    rows = _rows(rng, 30, 2, 150)
    with table:
        services.run_inline(spark, table, splitting, None)
        upsert(spark, table, splitting, _batch(spark, rows), batch_no=2)
        apply_batch(oracle, rows)
        assert len(services.run_inline(spark, table, splitting, None)) == 1
    assert committed(uri) == oracle and verify_table(spark, uri) == []


MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline": "false"}


def _mor_rows(rng: random.Random, n: int, step: int, keys: int, deletes: float = 0.0):
    """A key's partition is a function of it (hudi-rs's rows are compared by key), and
    ordering values grow with the step: a later record always wins (hudi-rs keeps a
    deleted key's ordering value, the harness forgets it: docs/merge-on-read.md)."""
    return [(k, ("p", "q/r")[int(k[1:]) % 2], 10 * step + ts, d, pl)
            for k, _, ts, d, pl in _rows(rng, n, step, keys, deletes)]


def _dual_logs(table, instant: str, resize: str) -> list[dict]:
    """The write stats of ``instant`` that are log files of ``resize``'s slices."""
    meta = table.read_commit(instant, "deltacommit")
    return [s for stats in meta["partitionToWriteStats"].values() for s in stats
            if s["path"].rsplit("/", 1)[-1].startswith(".") and f"_{resize}.log." in s["path"]]


def test_mor_dual_writes_append_child_logs_hidden_until_the_resize_completes(spark, tmp_path):
    """RFC-42 on merge-on-read: a pending resize's dual writes are log files of the
    children (base instant: the resize's, versions counting up), invisible to the
    harness and to hudi-rs until the replacecommit completes, deleted with a rolled-back
    resize, and merged into the children's slices after a completed one; the snapshot
    equals a dict oracle throughout, verify and compaction included."""
    hudi = pytest.importorskip("hudi", minversion="0.5.0")  # noqa: F841
    from test_hudi_interop import assert_hudi_rs_reads_the_merged_snapshot

    from indexbench.compaction import COMPACT

    uri, rng, oracle = str(tmp_path / "t"), random.Random(5), {}
    table, index = open_table(uri, NAME, {"hoodie.bucket.index.num.buckets": 2, **MOR})
    _upsert(spark, table, index, oracle, _mor_rows(rng, 120, 0, 200), 0)
    with table:  # base files, so the resize plans splits
        services.run_service(spark, table, index, COMPACT, {"force": True}, None)
    smallest = min(s.size_bytes for s in table.snapshot().slices.values())
    splitting = _index(**{"hoodie.parquet.max.file.size": smallest // 3,
                          "indexbench.resize.pending.commits": 2})

    # 1. a resize pending over two upserts, killed before its commit
    with simulated_crash("resize_before_commit"), pytest.raises(SimulatedCrash), table:
        services.run_inline(spark, table, splitting, None)
        resize = PendingResize.find(table).instant
        children = {f for ids in PendingResize.find(table).child_ids().values() for f in ids}
        for n in (1, 2):
            rows = _mor_rows(rng, 60, n, 260, 0.2)
            res = upsert(spark, table, splitting, _batch(spark, rows), batch_no=n)
            apply_batch(oracle, rows)
            logs = _dual_logs(table, res.instant, resize)
            assert {s["fileId"] for s in logs} <= children and len(logs) == \
                res.metrics["dual_written_files"] > 0
            assert {(s["prevCommit"], s["baseFile"], s["logVersion"]) for s in logs} == \
                {(resize, "", n)}  # a log-only slice to Hudi's view, numbered in order
            assert res.metrics["dual_merge_bytes_read"] == 0
            assert committed(uri) == oracle
            assert_hudi_rs_reads_the_merged_snapshot(uri)  # no child, no log of one
        services.run_inline(spark, table, splitting, None)
    assert _files_of(uri, f"_{resize}.log.") and committed(uri) == oracle
    table, _ = open_table(uri, NAME)
    with table:  # the next writer rolls the resize back: its children's logs go too
        assert resize in table.rolled_back[0]
    assert not _files_of(uri, resize) and committed(uri) == oracle

    # 2. planned again, dual-written, completed: the children's slices hold the logs
    splitting = _index(**{"hoodie.parquet.max.file.size": smallest // 3})
    with table:
        services.run_inline(spark, table, splitting, None)
        resize = PendingResize.find(table).instant
        rows = _mor_rows(rng, 60, 3, 260, 0.2)
        res = upsert(spark, table, splitting, _batch(spark, rows), batch_no=3)
        apply_batch(oracle, rows)
        [row] = services.run_inline(spark, table, splitting, None)
    assert row["dual_written_files"] == res.metrics["dual_written_files"]
    snap = table.snapshot()
    logged = {(s.partition, s.file_id): s for s in snap.slices.values() if s.logs}
    assert len(logged) == res.metrics["dual_written_files"]
    assert all(s.instant == resize and {lf.instant for lf in s.logs} == {res.instant}
               for s in logged.values())
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    assert_hudi_rs_reads_the_merged_snapshot(uri)
    with table:
        [row] = services.run_service(spark, table, index, COMPACT, {"force": True}, None)
    assert row["slices_compacted"] == len(logged)
    assert committed(uri) == oracle and verify_table(spark, uri) == []


def test_the_simulator_resizes_with_the_same_plan(tmp_path):
    from indexbench.sim.driver import simulate

    df = simulate(NAME, "growing", batches=3, batch_size=2000, initial_records=4000,
                  params={"hoodie.bucket.index.num.buckets": 2,
                          "hoodie.parquet.max.file.size": 20000}, write=False)
    resize = df[df["operation"] == "rescale"]
    assert len(resize) and (resize["splits"] > 0).all()
    assert (resize["to_buckets"] > resize["from_buckets"]).all()
    assert (resize["dual_written_records"] > 0).all()
    assert df["table_records"].is_monotonic_increasing  # a resize moves, never loses
    assert "model_dual_written_bytes" in df.columns and "dual_written_bytes" not in df.columns
