"""``indexbench query``: lookups equal a plain read of the snapshot on every index, and
RFC-29's group-by and join run bucket-aware with no shuffle and Spark's default results."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import indexes
from indexbench import api
from indexbench.cli import main
from indexbench.query import spark_query as sq
from indexbench.query.bucketed import aligned_groups, join_count
from indexbench.query.keys import PRESENT_COL, lookup_keys
from indexbench.rescale import rescale_table
from indexes import roles
from metrics import contract as m
from tableformat import basefile as bf
from tableformat.table import Table
from workloads import generator

SIZES = {"initial_records": 3000, "batches": 1, "batch_size": 1000}
KEYS = 60


@pytest.fixture(scope="module")
def run_dir(spark, tmp_path_factory) -> str:
    """Every registered index's table of one small uniform run (plus run.json)."""
    out = str(tmp_path_factory.mktemp("query-run"))
    api.compare(indexes.names(), "uniform", out=out, spark=spark, query_phase=False,
                params={"multiple-rehash": {"hoodie.bucket.index.num.buckets": 8}},
                timing="total", **SIZES)  # the same tables in fewer jobs
    return out


def table_of(run_dir: str, name: str) -> str:
    return os.path.join(run_dir, "tables", name)


def snapshot_rows(spark, uri: str, keys: pa.Table):
    """The stored rows of ``keys`` by a plain Spark read of the snapshot's base files."""
    scan = sq.ScanTable.of(Table(uri), indexes.from_table_config(Table(uri).config))
    wanted = spark.createDataFrame(keys.select(["key", "dt"]).to_pandas())
    got = spark.read.parquet(*scan.paths()).join(wanted, on=["key", "dt"], how="inner")
    return got.toPandas()


def _sorted(df):
    return df[sorted(df.columns)].sort_values(["dt", "key"]).reset_index(drop=True)


@pytest.mark.parametrize("name", indexes.names())
def test_lookup_equals_a_plain_read_of_the_snapshot(spark, run_dir, name):
    uri = table_of(run_dir, name)
    table = Table(uri)
    index = indexes.from_table_config(table.config)
    w = api.load_workload("uniform", **SIZES)
    keys = lookup_keys(w, 2, KEYS)
    with roles.resources(index, table):  # what the index needs running (external-kv's server)
        figures, found = sq.run_lookups(spark, table, index, keys, batch_keys=25)
    expected = snapshot_rows(spark, uri, keys)
    assert len(expected) == int(pc.sum(keys.column(PRESENT_COL)).as_py()) == KEYS // 2
    got = found.to_pandas()
    assert _sorted(got[expected.columns]).equals(_sorted(expected))
    assert figures["keys"] == KEYS and figures["keys_found"] == len(expected)
    assert figures["lookup_batches"] == 3  # 60 keys, 25 per Spark job
    assert figures["latency_p99_s"] >= figures["latency_p50_s"] > 0
    # every (key, file) pair the index pointed to was either held or a miss
    assert figures["files_read"] >= 1 and figures["bytes_read"] > 0
    assert figures["fp_file_reads"] <= figures["files_read"]
    if name in ("bloom", "multi-fg-bucket"):
        # footers and bloom filters (multi-fg-bucket: those of the key's bucket only);
        # each positive probe: the key's own file, or a false positive
        assert figures["bloom_positives"] == figures["keys_found"] + figures["false_positives"]
        assert figures["footers_read"] > 0 and figures["index_files_read"] == 0
    elif name == "dynamic-rli":  # RLI → file group: absent keys have no entry, no read
        assert figures["index_files_read"] > 0 and figures["false_positives"] == 0
        assert figures["files_read"] <= figures["keys_found"]
    elif name == "external-kv":  # key → file group from the server: no file for a miss
        assert figures["footers_read"] == figures["index_files_read"] == 0
        assert figures["false_positives"] == 0 and figures["files_read"] <= figures["keys_found"]
    else:  # hash → bucket: no footer, no index file; an absent key costs its bucket's read
        assert figures["footers_read"] == figures["index_files_read"] == 0
        assert figures["false_positives"] == KEYS - len(expected)


def _collect(df, fields):
    return df.toPandas().sort_values(fields).reset_index(drop=True)


@pytest.mark.parametrize("name", ["simple-bucket", "multiple-rehash"])
def test_groupby_and_self_join_run_bucket_aware_without_a_shuffle(spark, run_dir, name):
    t = sq.ScanTable.of(Table(table_of(run_dir, name)),
                        indexes.from_table_config(Table(table_of(run_dir, name)).config))
    groups = aligned_groups([t.layout])
    assert groups == (16 if name == "simple-bucket" else 8)
    aware = sq.groupby_frame(spark, t, sq.BUCKET_AWARE, groups)
    default = sq.groupby_frame(spark, t, sq.DEFAULT)
    assert _collect(aware, t.fields).equals(_collect(default, t.fields)[aware.columns])
    a = sq.run_groupby(spark, t, sq.BUCKET_AWARE, groups)
    d = sq.run_groupby(spark, t, sq.DEFAULT, groups)
    assert (a["shuffle_bytes"], a["shuffle_read_bytes"], a["has_exchange"]) == (0, 0, 0)
    assert d["shuffle_bytes"] > 0 and d["has_exchange"] == 1
    # Spark's reader counts its own bytes (its own column); this project counted none
    assert d["bytes_read"] is None and d["spark_input_bytes"] >= 0 and a["bytes_read"] > 0
    assert a["result_rows"] == d["result_rows"] == t.records
    assert a["files_read"] == sum(len(f) for f in t.view.files.values())
    j = sq.run_join(spark, t, t, sq.BUCKET_AWARE, groups)
    jd = sq.run_join(spark, t, t, sq.DEFAULT, groups)
    assert (j["shuffle_bytes"], j["has_exchange"]) == (0, 0)
    assert jd["shuffle_bytes"] > 0 and jd["has_exchange"] == 1
    assert j["result_rows"] == jd["result_rows"] == t.records  # unique keys: 1 row each


def test_rfc29_join_of_tables_bucketed_8_and_4_ways(spark, run_dir, tmp_path):
    """RFC-29's example: 8 and 4 buckets join bucket-to-bucket (4 groups, no Exchange),
    with the count Spark's own plan gives; 8 and 5 do not align (gcd 1: default plan
    only; other gcds are in test_alignment_and_join_count_cores)."""
    w = api.load_workload("uniform", **SIZES)
    for n in (4, 5):
        api.run("simple-bucket", w, table=str(tmp_path / f"b{n}"), out=str(tmp_path / "m"),
                spark=spark, params={"hoodie.bucket.index.num.buckets": n})
    eight = table_of(run_dir, "multiple-rehash")  # 8 buckets, same workload
    rows = api.query([eight], "join", join_with=str(tmp_path / "b4"), spark=spark)
    by_plan = rows.set_index("plan")
    assert list(by_plan.index) == ["bucket-aware", "default"]
    assert by_plan.loc["bucket-aware", "bucket_groups"] == 4
    assert by_plan.loc["bucket-aware", "shuffle_bytes"] == 0
    assert by_plan.loc["default", "shuffle_bytes"] > 0
    assert by_plan.loc["bucket-aware", "result_rows"] == by_plan.loc["default", "result_rows"]
    assert by_plan.loc["default", "result_rows"] == by_plan.loc["default", "table_records"]
    assert pd.isna(by_plan.loc["default", "bucket_groups"])
    five = api.query([eight], "join", join_with=str(tmp_path / "b5"), spark=spark)
    assert list(five["plan"]) == ["default"]


def test_after_a_rescale_the_scans_stay_bucket_aware(spark, run_dir, tmp_path):
    """A rehash of one partition (8 → 16) leaves counts that divide one another: still
    aligned on 8, no shuffle, the same groups as Spark's plan."""
    import shutil

    uri = str(tmp_path / "mr")
    shutil.copytree(table_of(run_dir, "multiple-rehash"), uri)
    part = Table(uri).snapshot().partitions()[0]
    rescale_table(uri, "rehash", 2, [part], spark=spark)
    t = sq.ScanTable.of(Table(uri), indexes.from_table_config(Table(uri).config))
    assert t.layout[part] == 16 and aligned_groups([t.layout]) == 8
    aware = sq.groupby_frame(spark, t, sq.BUCKET_AWARE, 8)
    default = sq.groupby_frame(spark, t, sq.DEFAULT)
    assert _collect(aware, t.fields).equals(_collect(default, t.fields)[aware.columns])
    j = sq.run_join(spark, t, t, sq.BUCKET_AWARE, 8)
    assert j["shuffle_bytes"] == 0 and j["result_rows"] == t.records


def test_cli_query_appends_rows_to_the_run(run_dir, capsys):
    before = len(m.read_metrics(run_dir))
    rc = main(["query", table_of(run_dir, "bloom"), table_of(run_dir, "simple-bucket"),
               "--keys", "20", "--batch-keys", "10", "--queries", "lookup,groupby",
               "--set", "hoodie.datasource.query.type=read_optimized"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "point lookups" in out and "bucket-aware" in out
    df = m.read_metrics(run_dir)
    q = df[df["operation"] == "query"]
    assert len(df) == before + 5  # bloom: lookup, default; simple-bucket: lookup + 2 plans
    assert set(q["query"]) == {"lookup", "groupby"}
    assert (q[q["query"] == "lookup"]["keys"] == 20).all()
    assert q["index_mem_bytes"].isna().all()  # a query has no index size: empty, not 0
    assert set(q["key_fields"]) == {"key"}
    assert (df["query_type"].iloc[before:] == "read_optimized").all()  # Hudi's option


@pytest.mark.parametrize("argv, words", [
    (["query", "/no/such/table"], "no table here"),
    (["query", "{bloom}", "--queries", "lookup,scan"], "unknown query scan"),
    (["query", "{bloom}", "--keys", "0"], "must be >= 1"),
    (["query", "{bloom}", "--workload", "zipf-skewed"], "another workload"),
    (["query", "{bloom}", "--batches", "3"], "give --workload"),
    (["query", "{bloom}", "--queries", "lookup", "--join-with", "{bloom}"], "add it to"),
    (["query", "{bloom}", "--set", "hoodie.datasource.query.type=incremental"],
     "incremental queries are not supported"),
    (["query", "{bloom}", "--set", "hoodie.datasource.query.type=ro"], "not a query type"),
    (["query", "{bloom}", "--set", "hoodie.table.type=mor"], "not a query option"),
    (["query", "{bloom}", "--query-type", "snapshot", "--set",
      "hoodie.datasource.query.type=read_optimized"], "disagree"),
])
def test_bad_query_arguments_are_one_line_before_spark(run_dir, capsys, argv, words):
    argv = [a.format(bloom=table_of(run_dir, "bloom")) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and words in err[0]


def test_lookup_keys_of_a_table_longer_than_the_workload_given():
    """A table resumed to more batches than the workload names: the never-inserted
    keys are still never inserted (the workload is read as long as the table)."""
    short = api.load_workload("uniform", **{**SIZES, "batches": 1})
    long = short.with_overrides(batches=3)
    keys = lookup_keys(short, 4, 200)
    stored = {k for b in range(4) for k in generator.batch_table(long, b).column("key")
              .to_pylist()}
    for k, present in zip(keys.column("key").to_pylist(),
                          keys.column(PRESENT_COL).to_pylist(), strict=True):
        assert (k in stored) == present


def test_lookup_keys_are_the_workloads_own():
    """Half the keys were inserted by the committed batches (same key, partition and
    index key as their rows), half were never inserted; the draw is reproducible."""
    w = api.load_workload("uniform", **SIZES)
    keys = lookup_keys(w, 1, 40)
    assert keys.equals(lookup_keys(w, 1, 40))
    rows = generator.batch_table(w, 0)
    stored = set(zip(*(rows.column(c).to_pylist() for c in ("key", "dt", "index_key")),
                     strict=True))
    drawn = list(zip(*(keys.column(c).to_pylist() for c in ("key", "dt", "index_key")),
                     strict=True))
    present = keys.column(PRESENT_COL).to_pylist()
    assert sum(present) == 20
    assert all((k in stored) == p for k, p in zip(drawn, present, strict=True))


def test_alignment_and_join_count_cores():
    assert aligned_groups([{"a": 8, "b": 16}, {"x": 4}]) == 4
    assert aligned_groups([{"a": 8}, {"x": 6}]) == 2  # gcd
    assert aligned_groups([{"a": 32, "b": 48}]) == 16  # rehashed ×2 and ×3
    assert aligned_groups([{"a": 8}, {"x": 5}]) is None
    assert aligned_groups([{"a": 8}, None]) is None
    left = pa.table({"k": ["a", "a", "b", "c"]})
    right = pa.table({"k": ["a", "b", "b", "d"]})
    assert join_count(left, right, ["k"]) == 4  # a: 2×1, b: 1×2


def test_bucket_files_hold_only_their_keys(run_dir):
    """What bucket-aware scans rely on: every record of a simple-bucket file hashes to
    the file's bucket (so buckets b ≡ j mod M hold every key with hash % M == j)."""
    uri = table_of(run_dir, "simple-bucket")
    table = Table(uri)
    index = indexes.from_table_config(table.config)
    snap = table.snapshot()
    for s in list(snap.slices.values())[:4]:
        data = bf.read_base_file(table.fs, table.abs_path(s.path))
        buckets = index.row_buckets(data, s.partition, table.config, snap)
        assert np.all(buckets == bf.bucket_of_file_id(s.file_id))


# ---------------------------------------------------------------- query types
QUERY_FIGURES = ["keys_found", "files_read", "bytes_read", "result_rows", "candidate_files",
                 "log_files_read", "log_bytes_read"]


def _by_query(df: pd.DataFrame) -> pd.DataFrame:
    return df.set_index(["query", "plan"]).sort_index()


def test_read_optimized_on_copy_on_write_is_the_snapshot(spark, run_dir):
    """Hudi answers a read_optimized query of a copy-on-write table with its snapshot
    relation: the same rows, the same files read; each row names its query type."""
    uri = table_of(run_dir, "simple-bucket")
    got = {qt: api.query(uri, "lookup,groupby", keys=10, batch_keys=10, spark=spark,
                         query_type=qt) for qt in ("snapshot", "read_optimized")}
    for qt, df in got.items():
        assert (df["query_type"] == qt).all() and (df["log_files_read"] == 0).all()
    a, b = (_by_query(got[qt])[QUERY_FIGURES] for qt in ("snapshot", "read_optimized"))
    pd.testing.assert_frame_equal(a, b)


def test_read_optimized_on_merge_on_read_misses_exactly_the_records_only_in_logs(
        spark, tmp_path):
    """A merge-on-read table with base files (one compaction) and logs since: a snapshot
    query merges them, a read-optimized one reads base files only — its groups and join
    rows are fewer by exactly the keys only logs hold, its lookups miss exactly the
    looked-up keys only logs hold, and it reads no log file."""
    out = str(tmp_path / "mor")
    api.run("simple-bucket", "uniform", initial_records=300, batches=2, batch_size=100,
            params={"hoodie.bucket.index.num.buckets": "4",
                    "hoodie.table.type": "MERGE_ON_READ",
                    "hoodie.compact.inline.max.delta.commits": "2"}, out=out, spark=spark)
    uri = table_of(out, "simple-bucket")
    table = Table(uri)
    snap = table.snapshot()
    assert any(s.logs for s in snap.slices.values()) and any(s.path for s in snap.slices.values())
    base_keys = {k for s in snap.slices.values() if s.path for k in bf.read_base_file(
        table.fs, table.abs_path(s.path)).column(bf.RECORD_KEY).to_pylist()}
    from tableformat.slice_reader import read_file_group

    all_keys = {k for s in snap.slices.values()
                for k in read_file_group(table, s).column(bf.RECORD_KEY).to_pylist()}
    only_in_logs = len(all_keys - base_keys)
    assert only_in_logs > 0 and base_keys <= all_keys  # no deletes: logs only add

    got = {qt: _by_query(api.query(uri, "lookup,groupby,join", keys=40, batch_keys=20,
                                   spark=spark, query_type=qt))
           for qt in ("snapshot", "read_optimized")}
    snap_q, ro = got["snapshot"], got["read_optimized"]
    assert (ro["query_type"] == "read_optimized").all()
    for query in ("groupby", "join"):
        for plan in ("bucket-aware", "default"):
            assert snap_q.loc[(query, plan), "result_rows"] == len(all_keys)
            assert snap_q.loc[(query, plan), "result_rows"] - \
                ro.loc[(query, plan), "result_rows"] == only_in_logs, (query, plan)
    assert (snap_q["log_files_read"] > 0).all() and (snap_q["log_bytes_read"] > 0).all()
    assert (ro["log_files_read"] == 0).all() and (ro["log_bytes_read"] == 0).all()
    assert (ro["files_read"] < snap_q["files_read"]).all()
    # the lookups: the same keys (seeded), found less by those only logs hold
    w = api.load_workload("uniform", initial_records=300, batches=2, batch_size=100)
    keys = lookup_keys(w, 3, 40)
    present = set(pc.filter(keys.column("key"), keys.column(PRESENT_COL)).to_pylist())
    assert snap_q.loc[("lookup", "index"), "keys_found"] == len(present)
    assert len(present) - ro.loc[("lookup", "index"), "keys_found"] == \
        len(present - base_keys) > 0
