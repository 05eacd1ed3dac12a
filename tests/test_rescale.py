"""multiple-rehash and bucket rescale on real Spark and real files: invariant, oracle,
upserts after rescales, no shuffle in rehash, crash mid-rescale, refusals, policy, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from conftest import read_snapshot, table_files

from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.rescale import rescale_table
from indexbench.verify import verify_table
from indexes.bucket.slices import HANG_IN_TASK, build_overwrite_job, build_rehash_job
from indexes.hashing import bucket_ids
from indexes.multiple_rehash import bucket_count_history
from indexes.multiple_rehash.core import RescaleError, plan_rescale, rehash_factor
from tableformat import basefile as bf
from tableformat.errors import IndexBenchError, TableConfigError
from tableformat.table import FileSlice, Table

PARAMS = {"num_buckets": 4, "hash_field": "ik"}
PARTS = ["2026-01-01", "2026-01-02"]


def rescale(spark, table, index, mode, factor=None, partitions=None, num_buckets=None):
    """One on-demand rescale through the service runner; the caller holds the lock."""
    options = {"mode": mode, "factor": factor, "partitions": partitions,
               "num_buckets": num_buckets}
    [row] = services.run_service(spark, table, index, index.service("rescale"), options, None)
    return row


def make_batch(rng: np.random.Generator, pool: int, n: int, batch: int) -> pd.DataFrame:
    """Keys from a pool (inserts and updates mix); a key's partition and index key are
    fixed; 60 index-key values, so many records share one (as RFC-29's index key)."""
    ids = rng.integers(0, pool, n)
    pdf = pd.DataFrame({
        "key": [f"k{i:05d}" for i in ids],
        "dt": [PARTS[i % 2] for i in ids],
        "ts": rng.integers(0, 10_000, n).astype("int64"),
        "ik": [f"ik{(i * 7919) % 60}" for i in ids],
        "payload": [f"b{batch}-r{j}" for j in range(n)],
    })
    return pdf.sort_values("ts").drop_duplicates(["key", "ts"])  # no ties: exact oracle


def apply_to_model(model: dict, pdf: pd.DataFrame) -> None:
    """The oracle: per key the larger ts wins (ties impossible by construction)."""
    for key, dt, ts, ik, payload in pdf.itertuples(index=False):
        if key not in model or ts >= model[key][1]:
            model[key] = (dt, ts, ik, payload)


def check_table(spark, uri: str, model: dict, verify: bool = True) -> dict[str, int]:
    """Oracle contents, every record in bucket hash % current N, one file group per bucket."""
    table = Table(uri)
    snap = table.snapshot()
    _, index = open_table(uri, "multiple-rehash")
    counts = index.bucket_counts(snap, snap.partitions())
    data = read_snapshot(uri)
    got = {r.key: (r.dt, r.ts, r.ik, r.payload) for r in data.itertuples()}
    assert len(data) == len(model) and got == model
    file_bucket = data["_hoodie_file_name"].map(
        lambda n: bf.bucket_of_file_id(bf.BaseFileName.parse(n).file_id)).to_numpy()
    want = bucket_ids([data["ik"]], data["dt"].map(counts).to_numpy(dtype=np.int64))
    assert (want == file_bucket).all()
    groups = [(s.partition, bf.bucket_of_file_id(s.file_id)) for s in snap.slices.values()]
    assert len(groups) == len(set(groups))
    assert all(b < counts[p] for p, b in groups)
    if verify:  # indexbench verify agrees (a Spark job: only where it matters)
        assert verify_table(spark, uri) == []
    return counts


def load(spark, uri: str, batches: list[tuple[int, int]], seed: int = 3,
         model: dict | None = None):
    table, index = open_table(uri, "multiple-rehash", PARAMS)
    rng = np.random.default_rng(seed)
    model = {} if model is None else model
    with table:
        for b, (pool, n) in enumerate(batches):
            pdf = make_batch(rng, pool, n, b)
            apply_to_model(model, pdf)
            upsert(spark, table, index, spark.createDataFrame(pdf), batch_no=b)
    return table, index, model


def file_sizes(uri: str, paths) -> int:
    t = Table(uri)
    return sum(t.fs.get_file_info(t.abs_path(p)).size for p in paths)


def test_split_bucket_core_without_spark(tmp_path):
    """Old bucket b of N splits into b, b+N, b+2N under % 3N; one read, sorted children."""
    import pyarrow as pa

    from indexes.bucket.slices import split_bucket
    from tableformat.fs import IOStats

    table = Table(str(tmp_path / "t"))
    keys = np.array([f"k{i:04d}" for i in range(3000)], dtype=object)
    n, b = 4, 1
    keys = keys[bucket_ids([keys], n) == b]
    data = pa.table({c: pa.array([""] * len(keys)) for c in bf.META_COLUMNS}
                    | {"key": pa.array(keys)})
    data = data.set_column(2, bf.RECORD_KEY, pa.array(keys))
    table.fs.create_dir(table.abs_path("p"), recursive=True)
    old = "p/" + bf.BaseFileName(bf.bucket_file_id(b), "0-0-0", "20260101000000000").name
    bf.write_base_file(table.fs, table.abs_path(old), data, {})
    io = IOStats()
    old_slice = FileSlice("p", "x", old, "20260101000000000", len(keys), 0)
    stats = split_bucket(table, old_slice, b, n, 3 * n, ["key"], "20260101000000001",
                         "0-1-0", lambda k: ({}, 0), io)
    assert io.files_read == 1 and sorted(s["bucketId"] for s in stats) == [1, 5, 9]
    assert sum(s["numWrites"] for s in stats) == len(keys)
    for s in stats:
        child = bf.read_base_file(table.fs, table.abs_path(s["path"])).to_pandas()
        assert (bucket_ids([child["key"]], 3 * n) == s["bucketId"]).all()
        assert child["key"].is_monotonic_increasing
        assert (child[bf.FILE_NAME] == s["path"].split("/")[-1]).all()


@pytest.mark.parametrize(("mode", "factor", "buckets", "new_n"),
                         [("rehash", 2, None, 8), ("overwrite", None, 3, 3)])
def test_rescale_keeps_contents_and_bucket_invariant(spark, tmp_path, mode, factor, buckets,
                                                     new_n):
    uri = str(tmp_path / "t")
    table, index, model = load(spark, uri, [(500, 400), (700, 300)])
    before = table.snapshot()
    with table:
        row = rescale(spark, table, index, mode, factor, num_buckets=buckets)
    after = table.snapshot()
    assert check_table(spark, uri, model) == {p: new_n for p in PARTS}
    new = [s for s in after.slices.values() if s.instant == row["instant"]]
    assert len(new) == len(after.slices)  # every old file group was replaced
    # counters come from the tasks that did the work
    assert row["files_read"] == len(before.slices)
    assert row["bytes_read"] >= 0.9 * sum(s.size_bytes for s in before.slices.values())
    assert row["files_written"] == len(new)
    assert row["bytes_written"] == file_sizes(uri, [s.path for s in new])
    assert row["records"] == row["records_rewritten"] == len(model)
    assert (row["from_buckets"], row["to_buckets"]) == (8, 2 * new_n)
    if mode == "rehash":
        assert row["shuffle_bytes"] == 0 and row["shuffle_read_bytes"] == 0
    else:
        assert row["shuffle_bytes"] > 0 and row["shuffle_read_bytes"] > 0
    hist = bucket_count_history(after)
    assert [(h.instant, h.partition, h.from_buckets, h.to_buckets, h.mode) for h in hist] == \
        [(row["instant"], p, 4, new_n, mode) for p in PARTS]
    meta = Table(uri).read_commit(row["instant"], "replacecommit")
    assert sorted(meta["partitionToReplaceFileIds"][PARTS[0]]) == sorted(
        s.file_id for s in before.slices.values() if s.partition == PARTS[0])


def test_rehash_plan_has_no_exchange_overwrite_has_one(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index, _ = load(spark, uri, [(300, 250)])
    snap = table.snapshot()
    counters = spark.sparkContext.accumulator(0)
    rplan = plan_rescale(snap, index, "rehash", 2)
    job = build_rehash_job(spark, table, index, rplan, "20990101000000000", counters)
    plan = job._jdf.queryExecution().executedPlan().toString()
    assert "Exchange" not in plan and "MapInPandas" in plan, plan
    assert job.rdd.getNumPartitions() == len(snap.slices)  # one task per old bucket
    oplan = plan_rescale(snap, index, "overwrite", 2)
    job = build_overwrite_job(spark, table, index, oplan, "20990101000000000", counters,
                              snap.schema)
    assert "Exchange hashpartitioning" in job._jdf.queryExecution().executedPlan().toString()


@pytest.mark.parametrize("mode", ["rehash", "overwrite"])
def test_upserts_after_rescales_land_in_new_buckets(spark, tmp_path, mode):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "multiple-rehash", PARAMS)
    rng = np.random.default_rng(11)
    model: dict = {}
    # per batch: (key pool, rows, rescale after it: (factor, partitions) or None)
    steps = [(400, 300, (2, [PARTS[0]])), (600, 250, (2, None)), (800, 250, None),
             (900, 200, (3, [PARTS[1]])), (1000, 200, None)]
    want = {p: 4 for p in PARTS}
    with table:
        for b, (pool, n, rescale_after) in enumerate(steps):
            pdf = make_batch(rng, pool, n, b)
            apply_to_model(model, pdf)
            m = upsert(spark, table, index, spark.createDataFrame(pdf), batch_no=b).metrics
            assert m["table_records"] == len(model)
            if rescale_after:
                k, parts = rescale_after
                rescale(spark, table, index, mode, k, parts)
                for p in parts or PARTS:
                    want[p] *= k
    assert check_table(spark, uri, model) == want
    assert [h.to_buckets for h in bucket_count_history(table.snapshot())] == [8, 16, 8, 24]


CRASH_SCRIPT = textwrap.dedent("""
    import sys
    from indexbench.rescale import rescale_table
    from indexbench.spark import get_session
    spark = get_session("local[1]", shuffle_partitions=2)
    rescale_table(sys.argv[1], "rehash", 2, spark=spark)
""")


def test_killed_rescale_leaves_old_snapshot_and_is_rolled_back(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index, model = load(spark, uri, [(300, 250)])
    before = read_snapshot(uri)
    before_files = table_files(uri)
    proc = subprocess.Popen([sys.executable, "-c", CRASH_SCRIPT, uri],
                            env={**os.environ, "INDEXBENCH_CRASH_AT": HANG_IN_TASK},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        leftovers: list[str] = []
        while time.time() < deadline and not leftovers and proc.poll() is None:
            pending = Table(uri).pending_instants()
            leftovers = [f for f in table_files(uri) - before_files
                         if pending and f.endswith(f"_{pending[0]}.parquet")]
            time.sleep(0.2)
        assert leftovers, "the writer was expected mid-rescale, with children written"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the writer, its JVM and its Python workers
        proc.wait(timeout=30)
    t = Table(uri)
    (instant,) = t.pending_instants()
    assert any(n.startswith(f"{instant}.replacecommit") for n in os.listdir(t.meta))
    pd.testing.assert_frame_equal(read_snapshot(uri), before)  # old snapshot intact
    assert bucket_count_history(t.snapshot()) == []
    with t:  # the next writer takes over the dead writer's lock and rolls back
        pass
    assert not [f for f in table_files(uri) if f.endswith(f"_{instant}.parquet")]
    assert t.pending_instants() == []
    check_table(spark, uri, model, verify=False)
    row = rescale_table(uri, "rehash", 2, spark=spark)  # and a rescale now succeeds
    assert row["to_buckets"] == 16
    check_table(spark, uri, model)


def test_refusals_write_nothing(spark, tmp_path):
    for bad in (1, 0, -2, 1.5, "2.5", "x", None, True):
        with pytest.raises(RescaleError, match="integer >= 2"):
            rehash_factor(bad)
    assert rehash_factor("3") == rehash_factor(3.0) == 3
    uri = str(tmp_path / "t")
    table, index, _ = load(spark, uri, [(200, 150)])
    files = table_files(uri)
    for kwargs, match in [
        ({"mode": "rehash", "factor": 1.5}, "integer >= 2"),
        ({"mode": "rehash", "factor": 1}, "integer >= 2"),
        ({"mode": "rehash", "factor": 2, "partitions": ["nope"]}, "no file groups"),
        ({"mode": "overwrite", "factor": 0}, ">= 1"),
        ({"mode": "overwrite", "factor": 1.1}, "whole bucket count"),
        ({"mode": "overwrite"}, "exactly one"),
        ({"mode": "sideways", "factor": 2}, "mode"),
    ]:
        with pytest.raises(RescaleError, match=match):
            rescale_table(uri, spark=spark, **kwargs)
        assert table_files(uri) == files, kwargs
    other = str(tmp_path / "sb")
    sb, sbi = open_table(other, "simple-bucket", {"num_buckets": 4})
    with sb:
        upsert(spark, sb, sbi, spark.createDataFrame(make_batch(np.random.default_rng(1),
                                                                50, 40, 0)))
    sb_files = table_files(other)
    with pytest.raises(TableConfigError, match="only multiple-rehash tables"):
        rescale_table(other, "rehash", 2, spark=spark)
    assert table_files(other) == sb_files
    with pytest.raises(IndexBenchError, match="rescale.factor"):
        open_table(str(tmp_path / "bad"), "multiple-rehash", {"rescale_factor": 1})


def test_auto_rescale_policy_and_cli(spark, tmp_path):
    import workloads
    from indexbench import api
    from indexbench.cli import main

    w = workloads.load("hot-index-key", initial_records=2000, batches=2, batch_size=400,
                       partitions=2)
    out, uri = str(tmp_path / "out"), str(tmp_path / "t")
    params = {"num_buckets": 2, "hash_field": "index_key",
              "indexbench.rescale.max.bucket.records": 300, "max_num_buckets": 8}
    df = api.run("multiple-rehash", w, params=params, table=uri, out=out, spark=spark)
    resc = df[df["operation"] == "rescale"]
    assert len(resc) >= 1 and (resc["mode"] == "rehash").all()
    assert resc["shuffle_bytes"].eq(0).all() and resc["files_read"].gt(0).all()
    t = Table(uri)
    _, index = open_table(uri, "multiple-rehash")
    counts = index.bucket_counts(t.snapshot(), t.snapshot().partitions())
    assert set(counts.values()) <= {2, 4, 8} and max(counts.values()) > 2
    assert len(api.summary(df)) == 1
    assert verify_table(spark, uri) == []
    # the CLI: refusal (exit 2, nothing written), then an overwrite with a metrics row
    files = table_files(uri)
    assert main(["rescale", uri, "--factor", "1.5", "--mode", "rehash"]) == 2
    assert table_files(uri) == files
    cli_out = str(tmp_path / "cli")
    assert main(["rescale", uri, "--factor", "2", "--mode", "overwrite", "--partition",
                 t.snapshot().partitions()[0], "--out", cli_out]) == 0
    m = pd.read_parquet(os.path.join(cli_out, "metrics.parquet"))
    assert list(m["operation"]) == ["rescale"] and m["shuffle_bytes"].iat[0] > 0
    assert json.loads(open(os.path.join(cli_out, "run.json")).read())["command"] == "rescale"
    assert verify_table(spark, uri) == []
