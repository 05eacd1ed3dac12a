"""dynamic-rli end to end on real Spark and real files: oracle, immutable routing,
fill-before-create growth, lazy bootstrap and the eviction flow through the driver,
restart from the RLI, crash atomicity of data and RLI, collisions, verify, writer lock."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from conftest import read_snapshot, table_files

from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from indexes.dynamic_rli import rli
from indexes.dynamic_rli.assigner import PartitionIndex, assigner_of
from tableformat import basefile as bf
from tableformat.errors import ConcurrentWriterError, WriteFailedError
from tableformat.table import Table

PARAMS = {"num_assigners": 2, "max_records": 40}
# (partition, first key, last key) ranges per batch; see the eviction walk-through below
PLAN = [
    [("A", 0, 120), ("B", 0, 60)],      # A, B new
    [("A", 100, 220), ("C", 0, 50)],    # A grows; C new; B idle -> evicted
    [("B", 0, 40), ("A", 200, 260)],    # B: updates only (bootstrap); C idle -> evicted
    [("C", 0, 80), ("A", 0, 20)],       # C bootstrap + growth; A updates only -> evicted
]


def plan_batch(b: int, rng: np.random.Generator) -> pd.DataFrame:
    rows = [(f"{p}{k:04d}", p) for p, lo, hi in PLAN[b] for k in range(lo, hi)]
    pdf = pd.DataFrame(rows, columns=["key", "dt"])
    pdf["ts"] = rng.permutation(len(pdf)).astype("int64") + 1000 * b
    pdf["payload"] = [f"b{b}-{i}" for i in range(len(pdf))]
    return pdf


def key_buckets(uri: str) -> dict[str, int]:
    snap = read_snapshot(uri)
    return {k: bf.bucket_of_file_id(bf.BaseFileName.parse(f).file_id)
            for k, f in zip(snap["key"], snap["_hoodie_file_name"], strict=True)}


@pytest.fixture(scope="module")
def grown(spark, tmp_path_factory):
    """Four batches through one index instance; what each batch left behind."""
    uri = str(tmp_path_factory.mktemp("dyn") / "t")
    table, index = open_table(uri, "dynamic-rli", PARAMS)
    rng = np.random.default_rng(11)
    model, metrics, routes, caches = {}, [], [], []
    with table:
        for b in range(len(PLAN)):
            pdf = plan_batch(b, rng)
            for key, dt, ts, payload in pdf.itertuples(index=False):
                if key not in model or ts >= model[key][1]:
                    model[key] = (dt, ts, payload)
            metrics.append(upsert(spark, table, index, spark.createDataFrame(pdf),
                                  batch_no=b).metrics)
            routes.append(key_buckets(uri))
            caches.append({p: copy.deepcopy(index.caches[p]) for p in index.caches})
    return {"uri": uri, "index": index, "model": model, "metrics": metrics, "routes": routes,
            "caches": caches}


def test_oracle_snapshot_equals_dict_model(spark, grown):
    snap = read_snapshot(grown["uri"])
    assert snap["key"].is_unique
    assert {r.key: (r.dt, r.ts, r.payload) for r in snap.itertuples()} == grown["model"]
    assert grown["metrics"][-1]["table_records"] == len(grown["model"])
    assert verify_table(spark, grown["uri"]) == []


def test_existing_keys_keep_their_bucket_and_rli_entry(grown):
    routes = grown["routes"]
    for before, after in zip(routes, routes[1:], strict=False):
        assert all(after[k] == b for k, b in before.items())  # never moved
    table = Table(grown["uri"])
    snap = table.snapshot()
    entries = pd.concat([rli.read_record_index_locations(table, p, snap.completed).to_pandas()
                         for p in "ABC"])
    assert entries["record_key"].is_unique  # appended once, never rewritten
    first_seen = {k: i for i, r in reversed(list(enumerate(routes))) for k in r}
    inst = dict(zip(entries["record_key"], entries["instant"], strict=True))
    assert all(inst[k] == snap.completed[first_seen[k]] for k in first_seen)
    assert all(int(b) == routes[-1][k] for k, b in zip(entries["record_key"],
                                                       entries["bucket"], strict=True))


def test_buckets_fill_before_new_ones_and_grow_over_time(grown):
    P, cap = PARAMS["num_assigners"], PARAMS["max_records"]
    snap = Table(grown["uri"]).snapshot()
    by_part: dict[str, dict[int, int]] = {}
    for s in snap.slices.values():
        by_part.setdefault(s.partition, {})[bf.bucket_of_file_id(s.file_id)] = s.num_records
    for p, counts in by_part.items():
        for a in range(P):
            own = [n for b, n in counts.items() if b % P == a]
            assert max(own) <= cap
            assert sum(n < cap for n in own) <= 1, (p, counts)  # the newest one only
        assert set(range(P)) <= set(counts)  # the initial P buckets
    buckets = [m["buckets"] for m in grown["metrics"]]
    assert buckets == sorted(buckets) and buckets[-1] > buckets[0]
    assert sum(m["buckets_created"] for m in grown["metrics"]) == len(snap.slices)


def test_lazy_bootstrap_and_eviction_flow_through_the_driver(grown):
    m = grown["metrics"]
    got = [(x["partitions_bootstrapped"], x["rli_files_read"], x["keys_bootstrapped"],
            x["evictions"], x["resident_partitions"]) for x in m]
    assert got == [
        (2, 0, 0, 0, 2),    # A, B loaded (no RLI yet), both updated -> kept
        (1, 0, 0, 1, 2),    # C loaded; B idle, committed -> evicted
        (1, 2, 60, 2, 1),   # B re-bootstrapped from its RLI (a file per share); B, C go
        (1, 2, 50, 1, 1),   # C re-bootstrapped; A had only updates -> evicted
    ]
    assert [sorted(c) for c in grown["caches"]] == [["A", "B"], ["A", "C"], ["A"], ["C"]]
    assert all(x["index_mem_bytes"] > 0 and x["index_disk_bytes"] > 0 for x in m)
    # the driver holds no key state: only flags and per-share figures
    assert all(x["driver_index_mem_bytes"] == 0 for x in m)
    for c in grown["caches"]:
        for meta in c.values():
            assert not [v for v in vars(meta).values() if isinstance(v, np.ndarray)]
    # every resident partition was touched in every batch: the tasks hold exactly the
    # logical resident bytes, each share once, and every share is counted as a hit or a load
    assert [x["assigner_mem_bytes_total"] for x in m] == [x["index_mem_bytes"] for x in m]
    # each task holds its own share, none all of them (max ≈ total / P at scale:
    # indexes/dynamic_rli/benchmarks/bench_dynamic_rli_scale.py; 50-120 keys a partition here)
    assert all(0 < x["assigner_mem_bytes_max"] < x["assigner_mem_bytes_total"] for x in m)
    touched = [2 * len(b) for b in PLAN]  # P = 2 shares per touched partition
    assert [x["assigner_cache_hits"] + x["assigner_bootstraps"] for x in m] == touched


def test_restart_rebuilds_identical_routing_from_the_rli(grown):
    """A restart bootstraps each partition whole (the simulator's way) and an assigner
    task bootstraps one share from its own files: the same shares, the same bytes the
    tasks reported, the same routing of new keys."""
    uri = grown["uri"]
    _, fresh = open_table(uri, "dynamic-rli")
    table = Table(uri)
    snap = table.snapshot()
    P = PARAMS["num_assigners"]
    assert fresh.core.resolve_assigners(fresh.recorded_assigners(snap), 1) == P
    files = fresh.read_view_extra(snap)["index_files"]
    reported = {"A": grown["caches"][2]["A"], "C": grown["caches"][3]["C"]}  # all their keys
    for p, meta in reported.items():
        whole = fresh.core.partition_index(p, lambda p=p: rli.bootstrap_entries(table, snap, p))
        assert whole.nbytes == meta.nbytes and whole.num_keys == meta.num_keys
        new = np.arange(-500, 500, 7, dtype=np.int32)
        routed = copy.deepcopy(whole).assign(new, fresh.capacity())[0]
        for a in range(P):
            own = PartitionIndex.bootstrap(P, *rli.share_entries(table, files[p], a, P))
            for x, y in zip(whole.shares[a].map.items(), own.map.items(), strict=True):
                np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(whole.shares[a].keys_per_bucket, own.keys_per_bucket)
            mine = new[assigner_of(new, P) == a]
            np.testing.assert_array_equal(own.assign(mine, fresh.capacity())[0],
                                          routed[assigner_of(new, P) == a])


def test_verify_reports_orphans_duplicates_and_wrong_buckets(spark, grown):
    uri = grown["uri"]
    table = Table(uri)
    first = table.snapshot().completed[0]
    bogus = rli.entries_table(["A0000", "Z9999"], [0, 0], [7, 0], ["f", "f"], first)
    rel, _ = rli.write_file(table, "A", first, bogus, tag="bogus")
    try:
        problems = verify_table(spark, uri)
    finally:
        table.fs.delete_file(table.abs_path(rel))
    text = "\n".join(problems)
    assert "orphan RLI entry: key 'Z9999'" in text
    assert "key 'A0000' of 'A' has 2 RLI entries" in text


def test_second_writer_is_refused(tmp_path):
    uri = str(tmp_path / "t")
    first, _ = open_table(uri, "dynamic-rli", PARAMS)
    second, _ = open_table(uri, "dynamic-rli")
    with first, pytest.raises(ConcurrentWriterError, match="concurrent writers"):
        second.acquire_writer_lock()


CRASH_SCRIPT = textwrap.dedent("""
    import sys, pandas as pd
    from indexbench.spark import get_session
    from indexbench.driver import open_table, upsert
    spark = get_session("local[1]", shuffle_partitions=1)
    table, index = open_table(sys.argv[1], "dynamic-rli")
    pdf = pd.DataFrame({"key": ["a", "z"], "dt": ["p", "p"], "ts": [9, 9],
                        "payload": ["crashed", "crashed"]})
    with table:
        upsert(spark, table, index, spark.createDataFrame(pdf))
""")


def test_crash_between_data_write_and_rli_write(spark, tmp_path):
    """INDEXBENCH_CRASH_AT=after_write: the data files exist, the RLI entries do not;
    nothing is visible and the next writer removes the data files."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "dynamic-rli", PARAMS)
    good = pd.DataFrame({"key": ["a", "b"], "dt": ["p", "p"], "ts": [1, 2], "payload": ["x", "y"]})
    with table:
        upsert(spark, table, index, spark.createDataFrame(good))
    before = read_snapshot(uri)
    proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, uri],
                          env={**os.environ, "INDEXBENCH_CRASH_AT": "after_write"},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 137, proc.stderr[-2000:]
    (pending,) = Table(uri).pending_instants()
    left = [f for f in table_files(uri) if f.endswith(f"_{pending}.parquet")]
    # data and the assigner tasks' RLI file (written while tagging), none committed
    assert left and [f for f in left if "record_index" in f]
    pd.testing.assert_frame_equal(read_snapshot(uri), before)
    with Table(uri):
        pass
    assert not [f for f in table_files(uri) if pending in f]
    got = rli.read_record_index_locations(Table(uri), "p", Table(uri).snapshot().completed)
    assert sorted(got.column("record_key").to_pylist()) == ["a", "b"]


def test_failed_commit_after_rli_write_then_collisions(spark, tmp_path, monkeypatch):
    """The RLI file is written but the commit fails: the writer undoes the instant on the
    spot (its RLI file included), the index drops its uncommitted mappings; the retry
    indexes colliding keys."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "dynamic-rli", {**PARAMS, "hash_function": "java"})
    # Java String.hashCode: "Aa" == "BB" (2112), "Ab" == "BC" (2113)
    one = pd.DataFrame({"key": ["Aa", "k1"], "dt": "p", "ts": 1, "payload": "one"})
    two = pd.DataFrame({"key": ["BB", "Ab", "BC", "k1"], "dt": "p", "ts": 2, "payload": "two"})
    with table:
        upsert(spark, table, index, spark.createDataFrame(one))
        real = Table.complete_instant

        def crash(self, instant, metadata, action="commit"):
            raise OSError("simulated crash before the commit file")

        monkeypatch.setattr(Table, "complete_instant", crash)
        before = table_files(uri)
        with pytest.raises(WriteFailedError, match="simulated crash before the commit"):
            upsert(spark, table, index, spark.createDataFrame(two))
        monkeypatch.setattr(Table, "complete_instant", real)
        assert table_files(uri) == before and not table.pending_instants()
    got = rli.read_record_index_locations(table, "p", table.snapshot().completed)
    assert sorted(got.column("record_key").to_pylist()) == ["Aa", "k1"]
    with table:  # the retry
        m = upsert(spark, table, index, spark.createDataFrame(two)).metrics
    assert m["hash_collisions"] == 2  # BB hit Aa's hash; Ab and BC share one new hash
    assert m["rli_entries_written"] == 3 and m["inserts"] == 3
    b = key_buckets(uri)
    assert b["BB"] == b["Aa"] and b["Ab"] == b["BC"]
    got = rli.read_record_index_locations(table, "p", table.snapshot().completed).to_pandas()
    assert sorted(got["record_key"]) == sorted(b)  # one entry per key, colliding ones too
    assert all(int(x) == b[k] for k, x in zip(got["record_key"], got["bucket"], strict=True))


def test_rli_compaction_end_to_end(spark, tmp_path):
    """rli.compact.files=1: after a batch adds a second RLI file to a partition's shares,
    the partition's RLI is compacted into one file per share by its own replacecommit (the inline
    service after the commit, through the service runner); routing and every invariant
    survive, and the replaced files are gone."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "dynamic-rli", {**PARAMS, "rli_compact_files": 1})
    rng = np.random.default_rng(5)
    metrics = []
    with table:
        for b in range(3):
            pdf = pd.DataFrame({"key": [f"A{k:04d}" for k in range(b * 50, b * 50 + 60)],
                                "dt": "A"})
            pdf["ts"] = rng.permutation(len(pdf)).astype("int64") + 1000 * b
            pdf["payload"] = f"b{b}"
            upsert(spark, table, index, spark.createDataFrame(pdf))
            metrics.append(services.run_inline(spark, table, index, batch_no=b))
    assert [[m["rli_compactions"] for m in rows] for rows in metrics] == [[], [1], [1]]
    row = metrics[1][0]
    assert row["operation"] == "rli_compaction" and row["files_read"] == 4  # 2 per share
    assert row["rli_entries_written"] == 110 and row["bytes_read"] > 0
    snapshot = Table(uri).snapshot()
    visible = rli.visible_files(Table(uri), "A", snapshot.completed,
                                rli.replaced_files(snapshot.extra))
    assert len(visible) == 2 and {rli.share_of(f.path) for f in visible} == {0, 1}
    on_disk = [f for f in table_files(uri) if "/record_index/A/" in f]
    assert len(on_disk) == 2
    assert verify_table(spark, uri) == []
    assert len(read_snapshot(uri)) == 160
