"""The upsert driver end to end on real Spark and real files: oracle, bad input, crash."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from conftest import read_snapshot, table_files

from indexbench import driver as driver_module
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from tableformat.errors import InvalidBatchError, TableConfigError
from tableformat.table import Table

PARAMS = {
    "bloom": {"num_entries": 200, "fpp": 0.01, "scale": 1, "insert_split_size": 60,
              "auto_split": False, "small_file_limit": 0},
    "simple-bucket": {"num_buckets": 8},
    "partition-bucket": {"num_buckets": 4},
}


def make_batch(rng: np.random.Generator, pool: int, n: int, batch: int) -> pd.DataFrame:
    """Random keys from a pool (so inserts, updates and in-batch duplicates mix); random
    ordering values, so an incoming record sometimes loses to the stored one."""
    ids = rng.integers(0, pool, n)
    return pd.DataFrame({
        "key": [f"k{i:05d}" for i in ids],
        "dt": [f"2026-01-0{1 + i % 3}" for i in ids],  # a key's partition never changes
        "ts": rng.integers(0, 1000, n).astype("int64"),
        "payload": [f"b{batch}-r{j}" for j in range(n)],
    })


def apply_to_model(model: dict, pdf: pd.DataFrame) -> None:
    """The oracle: per key, the record with the larger ts wins; ties go to the newcomer
    (within a batch the pre-combine keeps one of the tied rows: both carry that ts)."""
    for key, dt, ts, payload in pdf.itertuples(index=False):
        old = model.get(key)
        if old is None or ts >= old[1]:
            model[key] = (dt, ts, payload)


@pytest.mark.parametrize("index_name", ["bloom", "simple-bucket"])
def test_snapshot_equals_dict_oracle(spark, tmp_path, index_name):
    uri = str(tmp_path / index_name)
    table, index = open_table(uri, index_name, PARAMS[index_name])
    rng = np.random.default_rng(7)
    model: dict = {}
    with table:
        for b, (pool, n) in enumerate([(400, 300), (600, 250), (600, 250), (800, 300)]):
            pdf = make_batch(rng, pool, n, b)
            # make in-batch ties impossible so the oracle is exact
            pdf = pdf.sort_values("ts").drop_duplicates(["key", "ts"])
            apply_to_model(model, pdf)
            result = upsert(spark, table, index, spark.createDataFrame(pdf), batch_no=b)
            m = result.metrics
            assert m["inserts"] + m["updates"] == pdf["key"].nunique() == m["records"]
            assert m["table_records"] == len(model)
    snap = read_snapshot(uri)
    assert snap["key"].is_unique
    got = {r.key: (r.dt, r.ts, r.payload) for r in snap.itertuples()}
    assert got == model
    assert (snap["_hoodie_record_key"] == snap["key"]).all()
    assert (snap["_hoodie_partition_path"] == snap["dt"]).all()
    assert verify_table(spark, uri) == []
    if index_name == "bloom":
        counts = snap.groupby("_hoodie_file_name").size()
        # inserts split at insert.split.size (60), drawn as Hudi draws them: about 60 each
        assert counts.max() <= 75
    else:
        groups = Table(uri).snapshot().slices.values()
        buckets = [(s.partition, s.file_id[:8]) for s in groups]
        assert len(buckets) == len(set(buckets))  # one file group per bucket


def test_first_upsert_counts_and_update_counts(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "simple-bucket", {"num_buckets": 4})
    first = pd.DataFrame({"key": ["a", "b", "c"], "dt": ["p"] * 3, "ts": [1, 1, 1],
                          "payload": ["x", "y", "z"]})
    second = pd.DataFrame({"key": ["a", "a", "d"], "dt": ["p"] * 3, "ts": [0, 5, 1],
                           "payload": ["old", "new", "w"]})
    with table:
        m1 = upsert(spark, table, index, spark.createDataFrame(first)).metrics
        m2 = upsert(spark, table, index, spark.createDataFrame(second)).metrics
    assert (m1["inserts"], m1["updates"]) == (3, 0)
    assert (m2["input_records"], m2["records"], m2["inserts"], m2["updates"]) == (3, 2, 1, 1)
    snap = read_snapshot(uri).set_index("key")
    assert snap.loc["a", "payload"] == "new" and snap.loc["b", "payload"] == "y"
    # copy-on-write: the untouched records of the buckets of "a" and "d" were copied over
    from indexes.hashing import bucket_ids

    b = dict(zip("abcd", bucket_ids([pd.Series(list("abcd"))], 4), strict=True))
    copied = [k for k in "bc" if b[k] in (b["a"], b["d"])]
    assert m2["records_rewritten"] == len(copied)
    assert m2["files_written"] == len({b["a"], b["d"]})


def table_with_two_records(spark, uri: str, index_name: str):
    """A table holding keys a and b after one commit."""
    table, index = open_table(uri, index_name)
    good = pd.DataFrame({"key": ["a", "b"], "dt": ["p", "p"], "ts": [1, 2],
                         "payload": ["x", "y"]})
    with table:
        upsert(spark, table, index, spark.createDataFrame(good))
    return table, index


def _bad_batches(spark):
    ok = pd.DataFrame({"key": ["a", "c"], "dt": ["p", "p"], "ts": [1, 1], "payload": ["x", "z"]})
    yield "1 record(s) with null record key", ok.assign(key=["a", None])
    yield "1 record(s) with empty record key", ok.assign(key=["a", ""])
    yield "no record key column", ok.drop(columns="key")
    yield "no partition column", ok.drop(columns="dt")
    yield "no ordering column", ok.drop(columns="ts")
    yield "null or empty partition", ok.assign(dt=["p", ""])
    yield "schema conflicts", ok.assign(ts=["not a number", "x"])
    yield "not a column of the table", ok.assign(extra=[1, 2])
    yield "must be a string", ok.assign(key=[1, 2])


@pytest.mark.parametrize("index_name", ["bloom", "simple-bucket"])
def test_bad_input_is_refused_and_table_unchanged(spark, tmp_path, index_name):
    uri = str(tmp_path / "t")
    table, index = table_with_two_records(spark, uri, index_name)
    before = table_files(uri)
    for expected, pdf in _bad_batches(spark):
        df = spark.createDataFrame(pdf.astype(object).where(pdf.notna(), None)) \
            if pdf.isna().any().any() else spark.createDataFrame(pdf)
        with table, pytest.raises(InvalidBatchError) as err:
            upsert(spark, table, index, df)
        assert expected in str(err.value), str(err.value)
        assert table_files(uri) == before, expected
    assert verify_table(spark, uri) == []


def test_a_column_hudi_cannot_store_is_refused_before_anything_is_written(spark, tmp_path):
    """The commit records the Avro schema: a type Avro has no form for fails validation."""
    uri = str(tmp_path / "t")
    table, index = table_with_two_records(spark, uri, "simple-bucket")
    before = table_files(uri)
    df = spark.sql("select 'a' as key, 'p' as dt, 3L as ts, 'x' as payload, "
                   "map(1, 'one') as m")
    with table, pytest.raises(InvalidBatchError, match="Hudi cannot store.*string keys"):
        upsert(spark, table, index, df)
    assert table_files(uri) == before


def test_reopen_with_other_index_or_params_is_an_error(spark, tmp_path):
    uri = str(tmp_path / "t")
    open_table(uri, "simple-bucket", {"num_buckets": 4})
    with pytest.raises(TableConfigError, match="index 'simple-bucket'"):
        open_table(uri, "bloom")
    with pytest.raises(TableConfigError, match="num.buckets"):
        open_table(uri, "simple-bucket", {"num_buckets": 8})
    _, idx = open_table(uri, "simple-bucket")  # stored parameters are reused
    assert idx.params["num_buckets"] == 4


CRASH_SCRIPT = textwrap.dedent("""
    import sys, pandas as pd
    from indexbench.spark import get_session
    from indexbench.driver import open_table, upsert
    spark = get_session("local[1]", shuffle_partitions=2)
    table, index = open_table(sys.argv[1], sys.argv[2])
    pdf = pd.DataFrame({"key": ["a", "z"], "dt": ["p", "p"], "ts": [9, 9],
                        "payload": ["crashed", "crashed"]})
    with table:
        upsert(spark, table, index, spark.createDataFrame(pdf))
""")


# A real kill -9 here; tests/test_oracle.py kills writers at both points, in-process, for
# every index (writeclient.faults.simulated_crash).
@pytest.mark.parametrize(("index_name", "point"), [("simple-bucket", "before_commit")])
def test_crash_between_write_and_commit(spark, tmp_path, index_name, point):
    uri = str(tmp_path / "t")
    table, index = table_with_two_records(spark, uri, index_name)
    before_snapshot = read_snapshot(uri)
    proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, uri, index_name],
                          env={**os.environ, "INDEXBENCH_CRASH_AT": point},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 137, proc.stderr[-2000:]
    t = Table(uri)
    pending = t.pending_instants()
    assert len(pending) == 1
    leftovers = [f for f in table_files(uri) if f.endswith(f"_{pending[0]}.parquet")]
    assert leftovers, "the crashed writer had written its files"
    pd.testing.assert_frame_equal(read_snapshot(uri), before_snapshot)  # invisible
    with t:  # the next writer rolls back
        pass
    assert not [f for f in table_files(uri) if f.endswith(f"_{pending[0]}.parquet")]
    assert t.pending_instants() == []
    pd.testing.assert_frame_equal(read_snapshot(uri), before_snapshot)
    assert verify_table(spark, uri) == []


def test_phases_are_materialized_before_tagging(spark, tmp_path, monkeypatch):
    """tag_s times the index alone: the batch reaches tag_location generated, validated
    and pre-combined (cached), each earlier phase has its own column, and the driver
    releases what it cached (a caller's cached batch stays cached)."""
    table, index = open_table(str(tmp_path / "t"), "simple-bucket", PARAMS["simple-bucket"])
    seen = {}
    real_tag = type(index.spark).tag_location

    def spy(self, batch, ctx):
        seen["cached"] = batch.is_cached
        seen["rows"] = batch.count()
        return real_tag(self, batch, ctx)

    monkeypatch.setattr(type(index.spark), "tag_location", spy)
    pdf = make_batch(np.random.default_rng(3), 100, 200, 0)
    mine = spark.createDataFrame(pdf).cache()
    with table:
        m = upsert(spark, table, index, mine, batch_no=0).metrics
    assert seen["cached"] and seen["rows"] == pdf.drop_duplicates(["dt", "key"]).shape[0]
    for col in ("generate_s", "validate_s", "precombine_s", "tag_s", "write_s", "commit_s"):
        assert m[col] > 0, col
    phases = sum(m[c] for c in ("generate_s", "validate_s", "precombine_s", "tag_s",
                                "write_s", "commit_s"))
    assert phases <= m["total_s"]
    assert mine.is_cached  # the caller's cache is the caller's
    mine.unpersist()


@pytest.mark.parametrize(("index_name", "table_type"),
                         [("bloom", "COPY_ON_WRITE"), ("simple-bucket", "MERGE_ON_READ"),
                          ("partition-bucket", "COPY_ON_WRITE")])
def test_throughput_mode_counts_what_the_phases_count(spark, tmp_path, monkeypatch,
                                                      index_name, table_type):
    """timing="total" fuses the phases (no phase is materialized on its own; a batch
    without duplicate keys skips the pre-combine) and empties the phase timers; every
    counter, the snapshot and the files are the same as with a timer per phase. The
    batches mix duplicates (many tied on ts: the later arrival wins), deletes and
    inserts; bloom plans inserts (its own job); the bucket indexes, which place each key
    by its hash, skip the pre-combine and combine in each file group's write."""
    combines = []
    real_precombine = driver_module.precombine_batch
    monkeypatch.setattr(driver_module, "precombine_batch",
                        lambda *a: combines.append(1) or real_precombine(*a))
    bucket = index_name != "bloom"
    rows, snaps = {}, {}
    for timing in ("phases", "total"):
        combines.clear()
        uri = str(tmp_path / timing / "t")  # one table name: it is in the log schema
        table, index = open_table(uri, index_name,
                                  {**PARAMS[index_name], "hoodie.table.type": table_type})
        rng = np.random.default_rng(11)
        out = []
        with table:
            for b, (pool, n) in enumerate([(300, 300), (500, 200), (500, 200)]):
                pdf = make_batch(rng, pool, n, b)
                pdf["ts"] //= 250  # 0..3: duplicates tie on ts
                if b == 2:  # no duplicate key: the fused path skips the pre-combine
                    pdf = pdf.drop_duplicates(["dt", "key"])
                pdf["_hoodie_is_deleted"] = (np.arange(len(pdf)) % 7 == 3) & (b > 0)
                out.append(upsert(spark, table, index, spark.createDataFrame(pdf),
                                  batch_no=b, timing=timing).metrics)
        # phases pre-combine every batch; fused, bloom those with duplicates (0 and 1)
        assert len(combines) == (3 if timing == "phases" else 0 if bucket else 2)
        rows[timing], snaps[timing] = pd.DataFrame(out), read_snapshot(uri)
        assert verify_table(spark, uri) == []
    phases, fused = rows["phases"], rows["total"]
    assert (phases["timing"] == "phases").all() and (fused["timing"] == "total").all()
    for col in ("generate_s", "validate_s", "precombine_s", "tag_s", "write_s", "commit_s"):
        assert fused[col].isna().all() and (phases[col] > 0).all(), col
    assert (fused["total_s"] > 0).all()
    assert fused["deletes"].sum() > 0 and (fused["records"] < fused["input_records"]).any()
    measured = [c for c in phases.columns  # seconds: *_s (write_task_max_s too), *_ms
                if c.endswith(("_s", "_ms")) or "_s_" in c]
    # fp_theory is a float reference summed by an accumulator in task order: equal to
    # the last bits only up to that order
    summed = ["fp_theory"] if "fp_theory" in phases.columns else []
    counted = [c for c in phases.columns if c not in measured and c not in summed
               and c not in ("instant", "timing")]
    pd.testing.assert_frame_equal(phases[counted], fused[counted], check_exact=True)
    pd.testing.assert_frame_equal(phases[summed], fused[summed], rtol=1e-9)
    cols = ["key", "dt", "ts", "payload", "_hoodie_file_name"]
    pd.testing.assert_frame_equal(
        snaps["phases"][cols].sort_values("key").reset_index(drop=True),
        snaps["total"][cols].sort_values("key").reset_index(drop=True))


def test_an_unknown_timing_is_refused():
    with pytest.raises(ValueError, match="timing must be one of phases, total"):
        upsert(None, None, None, None, timing="fast")
