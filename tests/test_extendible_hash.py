"""extendible-hash: the directory core (routing, splits, doublings, its invariants, its
history on the timeline, the split plans) without Spark, property-based where it can;
on Spark a split that rewrites only its bucket's file group, routing after it, the
``rescale`` command, and a killed split — each snapshot equal to a dict oracle,
``verify`` clean. (The contract tests run it through every preset, the simulator,
merge-on-read and hudi-rs.)"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_oracle import DDL, apply_batch, committed

import indexes
from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.rescale import rescale_table
from indexbench.verify import verify_table
from indexes.bucket.rescale import RescaleError
from indexes.extendible_hash.core import (
    DIRECTORY_KEY,
    MAX_DEPTH,
    SPLIT_KEY,
    Capacity,
    Directory,
    Router,
    SplitPlanner,
    committed_directories,
    directory_partition,
    history_problems,
    plan_requested_split,
    plan_split,
    split_children,
    split_order,
    split_point,
)
from indexes.extendible_hash.storage import METADATA_DIR
from indexes.hashing import bucket_ids
from tableformat.basefile import bucket_file_id, bucket_of_file_id
from tableformat.table import FileSlice, Snapshot
from writeclient.faults import SimulatedCrash, simulated_crash

NAME = "extendible-hash"
keys_st = st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=200)


# ---------------------------------------------------------------- cores (no Spark)
@settings(max_examples=40, deadline=None)
@given(keys_st, st.integers(0, 6))
def test_the_initial_directory_routes_exactly_as_simple_bucket(keys, depth):
    """d = log2 N, every local depth d: entry i is bucket i, so the bucket is Hudi's
    ``hash % N`` (simple-bucket's) for every key."""
    n = 1 << depth
    cols = [np.array(keys, dtype=object)]
    router = Router.of({"p": Directory.initial("p", n)})
    got = router.route(cols, np.full(len(keys), "p", dtype=object))
    assert got.tolist() == bucket_ids(cols, n).tolist()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 3), st.lists(st.integers(0, 10**6), min_size=1, max_size=12),
       st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=300))
def test_splits_keep_every_invariant_and_move_only_the_split_buckets_keys(
        depth, picks, hashes):
    """After any sequence of splits: the directory is well formed; a split moves only
    keys of the split bucket, exactly those with bit ``l`` set, to ``p + 2^l``; the
    directory doubles exactly when ``l`` was ``d``; the history check accepts it."""
    h = np.array(hashes, dtype=np.int64)
    d = Directory.initial("p", 1 << depth)
    for n, pick in enumerate(picks):
        buckets = sorted(d.local_depths)
        b = buckets[pick % len(buckets)]
        depth_b = d.local_depths[b]
        before = d.route(h)
        after_dir = d.split(b, f"i{n}")
        after = after_dir.route(h)
        assert after_dir.problems() == []
        assert after_dir.global_depth == d.global_depth + (depth_b == d.global_depth)
        mine = before == b
        moves = split_children(h, b, depth_b)
        assert (after[~mine] == before[~mine]).all()  # other buckets keep every key
        assert (after[mine & moves] == b + (1 << depth_b)).all()
        assert (after[mine & ~moves] == b).all()
        assert after_dir.local_depths[b] == after_dir.local_depths[b + (1 << depth_b)] \
            == depth_b + 1
        # every bucket holds exactly the keys whose low local-depth bits are its id
        depths = np.array([after_dir.local_depths[int(x)] for x in after], dtype=np.int64)
        assert ((h & ((1 << depths) - 1)) == after).all()
        d = after_dir
    assert Directory.from_json(json.loads(d.stored)).stored == d.stored


def test_directory_problems_name_what_is_wrong():
    d = Directory.initial("p", 4).split(1)  # d = 3, buckets 0, 1, 2, 3, 5
    ptrs = d.pointers.copy()
    ptrs[5] = 1  # entry 5 must point at bucket 5
    bad = Directory("p", 3, ptrs, d.local_depths, 1)
    (problem,) = [p for p in bad.problems() if "low local-depth bits" in p]
    assert "1 entries" in problem
    assert any("2^(d - local depth)" in p for p in bad.problems())
    short = Directory("p", 3, d.pointers[:6].copy(), d.local_depths, 1)
    assert short.problems() == ["partition 'p': directory version 1 has 6 entries, not "
                                "2^3 = 8"]


def _slice(partition: str, bucket: int, records: int, size: int = 1000,
           tail: str = "x") -> FileSlice:
    fid = bucket_file_id(bucket, f"{partition}/{bucket}/{tail}")
    return FileSlice(partition, fid, f"{partition}/{fid}_1-0-1_1.parquet", "1", records, size)


def _snapshot(slices, extra: dict | None = None) -> Snapshot:
    completed = sorted(extra or {})
    return Snapshot({(s.partition, s.file_id): s for s in slices}, completed, len(slices),
                    None, extra or {})


def test_plans_split_the_bucket_most_over_capacity_within_the_directory_cap():
    slices = [_slice("p", 0, 90), _slice("p", 1, 150, 10), _slice("q", 0, 150, 5000),
              _slice("q", 1, 40)]
    snap = _snapshot(slices)
    dirs = committed_directories(snap, ["p", "q"], 2)
    plan = plan_split(snap, dirs, Capacity("records", 100, 0), 8)
    # a tie on records: partition, then bucket decide
    assert (plan.partition, plan.bucket, plan.new_bucket, plan.counts) == \
        ("p", 1, 3, {"p": (2, 3)})
    assert plan.doubled and plan.after.global_depth == 2
    by_bytes = plan_split(snap, dirs, Capacity("bytes", 0, 4000), 8)
    assert (by_bytes.partition, by_bytes.bucket) == ("q", 0)
    assert plan_split(snap, dirs, Capacity("records", 200, 0), 8) is None
    assert plan_split(snap, dirs, Capacity("records", 100, 0), 2) is None  # d is at the cap
    # on demand: the largest of the given partitions, or the bucket named
    assert plan_requested_split(snap, dirs, ["q"], None, 8).bucket == 0
    assert plan_requested_split(snap, dirs, ["q"], 1, 8).bucket == 1
    for partitions, bucket, msg in ((["p", "q"], 1, "exactly one --partition"),
                                    (["p"], 7, "no bucket of 'p'"),
                                    (["zz"], None, "have no file groups"),
                                    (["q"], 1, "cannot split")):
        with pytest.raises(RescaleError, match=msg):
            plan_requested_split(snap, dirs, partitions, bucket, 2 if msg == "cannot split"
                                 else 8)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.lists(st.integers(0, 10**6), min_size=1, max_size=40),
       st.text(max_size=8), st.lists(st.booleans(), min_size=40, max_size=40))
def test_the_stored_directory_is_its_compact_json_through_any_chain_of_splits(
        depth, picks, partition, reread):
    """``stored`` (encoded from the split directory's edited items, or with one ``%``)
    is byte for byte ``json.dumps(to_json())``, whether the chain of splits started
    from a directory read back from its JSON or was named after an instant (``at``)."""
    d = Directory.initial(partition, 1 << depth)
    for n, pick in enumerate(picks):
        if reread[n]:
            d = Directory.from_json(json.loads(d.stored))
        b = sorted(d.local_depths)[pick % d.num_buckets]
        d = d.split(b) if n % 2 else d.split(b).at(f"{n:017d}")
        assert d.stored == json.dumps(d.to_json(), separators=(",", ":")).encode()
        assert directory_partition(d.stored.decode()) == partition
    fresh = Directory.from_json(json.loads(d.stored))
    assert fresh.stored == json.dumps(fresh.to_json(), separators=(",", ":")).encode()
    assert directory_partition(json.dumps(d.to_json())) == partition  # not compact


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 2**31 - 1), max_size=400), st.integers(0, 25),
       st.integers(0, 5))
def test_a_split_is_a_bisection_of_split_order_keys(hashes, depth, code):
    """Sorted :func:`split_order` keys (a partition's code above them): the records of
    any bucket are one run, and :func:`split_point` counts the ones that stay exactly
    as :func:`split_children` does."""
    h = np.array(hashes, dtype=np.int64)
    keys = np.sort((code << MAX_DEPTH) | split_order(h))
    bucket = int(h[0]) & ((1 << depth) - 1) if len(h) else 0
    mine = (h & ((1 << depth) - 1)) == bucket
    run = np.sort((code << MAX_DEPTH) | split_order(h[mine]))
    lo = int(np.searchsorted(keys, run[0])) if len(run) else 0
    assert keys[lo:lo + len(run)].tolist() == run.tolist()  # one run
    assert split_point(run, depth) == int((~split_children(h[mine], bucket, depth)).sum())


def test_the_split_planner_plans_as_plan_split_one_split_after_another():
    """Over random tables (ties on records, a directory cap that leaves buckets over
    capacity, a file group whose bucket its directory lacks), the incremental planner
    makes :func:`plan_split`'s plan at every step of the inline loop."""
    rng = random.Random(4)
    for trial in range(30):
        slices = [_slice(p, b, rng.choice([50, 120, 120, 300, 900]), tail=f"{trial}")
                  for p in ("p", "q", "r") for b in range(4)]
        slices.append(_slice("q", 9, 500, tail="stray"))  # bucket 9: not in q's directory
        snap = _snapshot(slices)
        dirs = committed_directories(snap, ["p", "q", "r"], 4)
        capacity, cap = Capacity("records", 100, 0), rng.choice([8, 16, 64])
        planner = SplitPlanner(snap, dirs, capacity, cap)
        for step in range(200):
            want = plan_split(snap, dirs, capacity, cap)
            got = planner.next()
            if want is None:
                assert got is None
                break
            assert (got.partition, got.bucket, got.slices, got.after.stored) == \
                (want.partition, want.bucket, want.slices, want.after.stored), (trial, step)
            (s,) = want.slices
            stay = rng.randrange(s.num_records + 1)
            written = [_slice(s.partition, b, n, tail=f"{trial}-{step}")
                       for b, n in ((want.bucket, stay), (want.new_bucket,
                                                          s.num_records - stay)) if n]
            del snap.slices[(s.partition, s.file_id)]
            snap.slices.update({(w.partition, w.file_id): w for w in written})
            dirs[s.partition] = want.after.at(f"{step:017d}")
            planner.done(got, dirs[s.partition], written)
        else:
            raise AssertionError("the loop did not end")


def test_bucket_aware_scans_only_while_every_bucket_has_the_global_depth():
    """``hash_layout``: ``h % 2^d`` places every record until a partition has buckets
    of mixed local depths; splitting all of them makes the layout uniform again."""
    index = indexes.get(NAME, **{"hoodie.bucket.index.num.buckets": 2})
    d0 = Directory.initial("p", 2)
    assert index.hash_layout(_snapshot([_slice("p", 0, 5)])) == {"p": 2}
    d1 = d0.split(0, "20260101000000002")
    d2 = d1.split(1, "20260101000000003")
    for versions, want in (([d1], None), ([d1, d2], {"p": 4})):
        extra = {d.instant: {DIRECTORY_KEY: d.stored.decode()} for d in versions}
        assert index.hash_layout(_snapshot([_slice("p", 0, 5)], extra)) == want


def test_the_committed_directory_and_its_history_come_from_the_timeline():
    d0 = Directory.initial("p", 2)
    d1 = d0.split(1, "20260101000000002")
    d2 = d1.split(3, "20260101000000003")
    extra = {i: {DIRECTORY_KEY: d.stored.decode(),
                 SPLIT_KEY: json.dumps({"bucket": b})}
             for i, d, b in (("20260101000000002", d1, 1), ("20260101000000003", d2, 3))}
    snap = _snapshot([], extra)
    dirs = committed_directories(snap, ["p", "q"], 2)
    assert dirs["p"].stored == d2.stored
    assert dirs["q"].stored == Directory.initial("q", 2).stored
    assert history_problems(snap, 2) == []
    extra["20260101000000003"][SPLIT_KEY] = json.dumps({"bucket": 0})
    (problem,) = history_problems(_snapshot([], extra), 2)
    assert "is not version 1 with bucket 0 split" in problem


def test_parameters_are_refused_in_one_line():
    for params, msg in (({"hoodie.bucket.index.num.buckets": 12}, "power of two"),
                        ({"hoodie.bucket.index.max.num.buckets": 8}, "must be >="),
                        ({"hoodie.bucket.index.extendible.capacity.mode": "rows"},
                         "must be one of")):
        with pytest.raises(Exception, match=msg):
            indexes.get(NAME, **params)


def test_the_simulator_splits_with_the_same_plans():
    from indexbench.sim.driver import simulate

    df = simulate(NAME, "growing", batches=3, batch_size=2000, initial_records=4000,
                  params={"hoodie.bucket.index.num.buckets": 2,
                          "hoodie.bucket.index.extendible.max.records": 400}, write=False)
    split = df[df["operation"] == "rescale"]
    assert len(split) and (split["splits"] == 1).all()
    assert (split["to_buckets"] == split["from_buckets"] + 1).all()
    assert (split["records_moved"] <= split["records"]).all()
    assert df["table_records"].is_monotonic_increasing  # a split moves, never loses
    last = df.iloc[-1]
    assert last["bucket_records_max"] <= 400  # every bucket over capacity was split
    assert last["bucket_count_total"] == 2 * 4 + len(split)  # 4 partitions of 2, +1 each
    assert 0 < split["directory_doublings"].sum() < len(split)
    assert last["directory_entries"] >= last["bucket_count_total"]


# ---------------------------------------------------------------- on Spark
def _rows(rng: random.Random, n: int, step: int, keys: int, deletes: float = 0.0):
    return [(f"k{rng.randrange(keys):03d}", rng.choice(["p", "q/r"]), rng.randrange(5),
             rng.random() < deletes, f"s{step}-{i}") for i in range(n)]


def _upsert(spark, table, index, oracle, rows, n):
    with table:
        upsert(spark, table, index, spark.createDataFrame(
            [(k, p, ts, pl, d) for k, p, ts, d, pl in rows], DDL), batch_no=n)
    apply_batch(oracle, rows)


def _files_of(uri: str, instant: str) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs if instant in f]


def test_a_split_rewrites_only_its_bucket_and_routing_follows_it(spark, tmp_path):
    uri = str(tmp_path / "t")
    rng = random.Random(5)
    oracle: dict = {}
    table, index = open_table(uri, NAME, {"hoodie.bucket.index.num.buckets": 2,
                                          "indexbench.split.enabled": "false"})
    _upsert(spark, table, index, oracle, _rows(rng, 160, 0, 400), 0)
    before = table.snapshot()
    biggest = max(before.slices.values(), key=lambda s: s.num_records)
    limit = biggest.num_records - 1  # exactly one bucket over capacity, at first
    splitting = indexes.get(NAME, **{"hoodie.bucket.index.num.buckets": 2,
                                     "hoodie.bucket.index.extendible.max.records": limit})
    with table:
        rows = services.run_inline(spark, table, splitting, None)
    after = table.snapshot()
    first = rows[0]
    assert (first["mode"], first["splits"], first["files_read"]) == ("split", 1, 1)
    assert first["records"] == biggest.num_records  # both children, nothing else
    assert first["directory_doublings"] == 1 and first["global_depth"] == 2
    # every other file group kept its file slice: only the split bucket was rewritten
    untouched = {k: s.path for k, s in before.slices.items() if k != (biggest.partition,
                                                                    biggest.file_id)}
    assert all(after.slices[k].path == v for k, v in untouched.items())
    assert len(rows) == len([i for i, a in table.completed_instants() if a == "replacecommit"])
    assert max(s.num_records for s in after.slices.values()) <= limit
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    instant = first["instant"]
    assert os.path.exists(f"{uri}/{METADATA_DIR}/{biggest.partition}/{instant}.hashing_meta")
    # upserts after the splits route through the new directories
    _upsert(spark, table, splitting, oracle, _rows(rng, 80, 1, 400, 0.2), 1)
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    # indexbench rescale: one named bucket, one replacecommit; refusals write nothing
    d = splitting.directories(table.snapshot(), ["p"])["p"]
    named = bucket_of_file_id(max(table.snapshot().in_partitions(["p"]),
                                  key=lambda s: s.num_records).file_id)
    n_instants = len(table.completed_instants())
    with pytest.raises(RescaleError, match="no bucket of 'p'"):
        rescale_table(uri, partitions=["p"], bucket=d.size + 1, spark=spark)
    assert len(table.completed_instants()) == n_instants
    row = rescale_table(uri, partitions=["p"], bucket=named, spark=spark)
    assert (row["splits"], row["to_buckets"]) == (1, d.num_buckets + 1)
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    # a tampered .hashing_meta is reported
    path = f"{uri}/{METADATA_DIR}/p/{row['instant']}.hashing_meta"
    stored = json.loads(open(path).read())
    stored["pointers"][0] = stored["pointers"][-1]
    open(path, "w").write(json.dumps(stored))
    assert any("differs from the replacecommit" in p for p in verify_table(spark, uri))


def test_a_split_killed_before_its_commit_is_rolled_back(spark, tmp_path):
    uri = str(tmp_path / "t")
    rng = random.Random(9)
    oracle: dict = {}
    table, index = open_table(uri, NAME, {"hoodie.bucket.index.num.buckets": 2,
                                          "hoodie.bucket.index.extendible.max.records": 500})
    _upsert(spark, table, index, oracle, _rows(rng, 120, 0, 300), 0)
    splitting = indexes.get(NAME, **{"hoodie.bucket.index.num.buckets": 2,
                                     "hoodie.bucket.index.extendible.max.records": 20})
    with simulated_crash("split_before_commit"), pytest.raises(SimulatedCrash), table:
        services.run_inline(spark, table, splitting, None)
    (pending,) = table.pending_instants()
    assert _files_of(f"{uri}/{METADATA_DIR}", pending)  # written, never visible
    assert committed(uri) == oracle
    table, index = open_table(uri, NAME)
    with table:
        assert pending in table.rolled_back[0]
    assert not _files_of(uri, pending)  # base files and .hashing_meta went with it
    assert committed(uri) == oracle and verify_table(spark, uri) == []
    with table:
        assert services.run_inline(spark, table, splitting, None)  # splits again
    assert committed(uri) == oracle and verify_table(spark, uri) == []
