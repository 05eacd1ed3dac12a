"""partition-bucket (Hudi RFC-89): the rule engine and its versions without Spark, then
upserts, the offline rescale, a rescale killed mid-way and refusals on real files."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from conftest import read_snapshot, table_files

import indexes
from indexbench.cli import main
from indexbench.driver import open_table, upsert
from indexbench.rescale import rescale_table
from indexbench.verify import verify_table
from indexes.bucket.rescale import BUCKET_COUNTS_KEY, RescaleError
from indexes.hashing import bucket_ids
from indexes.partition_bucket.core import (
    HASHING_CONFIG_KEY,
    HASHING_INSTANT_KEY,
    INITIAL_INSTANT,
    HashingConfig,
    checked_config,
    config_in_force,
    history_problems,
    load_hashing_config,
    parse_expressions,
    stored_config_problems,
    write_hashing_config,
)
from tableformat import basefile as bf
from tableformat.errors import IndexBenchError, InvariantViolation, TableConfigError
from tableformat.table import Snapshot, Table
from writeclient.faults import SimulatedCrash, simulated_crash

EXPR_KEY = "hoodie.bucket.index.partition.expressions"
PARTS = ["2026-01-01", "2026-01-02", "2026-01-03"]
# the newest partition gets 8 buckets, the middle one 4, the rest the default 2
PARAMS = {EXPR_KEY: "01-03$,8;2026-01-0[23],4", "num_buckets": 2}
WANT = {"2026-01-01": 2, "2026-01-02": 4, "2026-01-03": 8}


# ---------------------------------------------------------------- Spark-free
def test_first_matching_rule_wins_found_anywhere_else_the_default():
    cfg = HashingConfig("01-03$,8;2026-01-0[23],4;2026,3", 2)
    assert cfg.counts(PARTS + ["2025-12-31", "x/2026-01-03"]) == {
        **WANT, "2026-01-01": 3, "2025-12-31": 2,
        "x/2026-01-03": 8}  # Matcher.find(): a match anywhere in the path counts
    # order is priority: the same rules the other way round give 01-03 the 4
    assert HashingConfig("2026-01-0[23],4;01-03$,8", 2).counts(["2026-01-03"]) == {
        "2026-01-03": 4}
    assert HashingConfig("^01,5", 2).counts(["2026-01-01"]) == {"2026-01-01": 2}
    assert HashingConfig("", 7).counts(PARTS) == dict.fromkeys(PARTS, 7)  # no rules
    # Hudi's split: spaces trimmed, trailing ';' dropped, RFC-89's own example parses
    assert parse_expressions(" a ,2 ; b,+3;;") == (("a", 2), ("b", 3))
    assert parse_expressions(r"\d{4}-(06-(01|17|18)|11-(01|10|11)),256") == (
        (r"\d{4}-(06-(01|17|18)|11-(01|10|11))", 256),)


@pytest.mark.parametrize(("expressions", "words"), [
    ("a,2;(b,3", "rule 2 ('(b,3'): bad regex"),
    ("a", "exactly one ','"),
    (r"\d{1,2},4", "exactly one ','"),
    ("a,x", "must be an integer >= 1, not 'x'"),
    ("a,1.5", "must be an integer >= 1"),
    ("a,0", "must be >= 1, not 0"),
    ("a,-3", "must be >= 1, not -3"),
    ("a,2;;b,3", "rule 2 is empty"),
    (",3", "empty regex"),
    ("a,100000000", "8-digit bucket id"),
])
def test_bad_expressions_are_refused_naming_the_key(expressions, words):
    with pytest.raises(IndexBenchError) as err:
        indexes.get("partition-bucket", **{EXPR_KEY: expressions})
    assert str(err.value).startswith(EXPR_KEY) and words in str(err.value)


def test_rule_type_and_default_count_are_checked():
    with pytest.raises(IndexBenchError, match="partition.rule.type must be one of regex"):
        indexes.get("partition-bucket", partition_rule_type="glob")
    assert indexes.get("partition-bucket", partition_rule_type="REGEX").params[
        "partition_rule_type"] == "regex"  # Hudi: valueOf(ruleType.toUpperCase())
    with pytest.raises(IndexBenchError, match="num.buckets must be >= 1"):
        indexes.get("partition-bucket", num_buckets=0)
    props = indexes.get("partition-bucket", **PARAMS).table_params()
    assert props[EXPR_KEY] == PARAMS[EXPR_KEY] and props["hoodie.index.bucket.engine"] == "SIMPLE"


def _snapshot(completed: list[str], extra: dict[str, dict]) -> Snapshot:
    return Snapshot({}, completed, 0, None, extra)


def test_versions_load_only_from_completed_instants(tmp_path):
    base = HashingConfig("a,4", 2)
    v1 = HashingConfig("b,8", 3, instant="20260101000000005")
    v2 = HashingConfig("c,9", 3, instant="20260101000000009")  # its rescale never completed
    commit = {HASHING_INSTANT_KEY: INITIAL_INSTANT}
    snap = _snapshot(["20260101000000001", v1.instant, "20260101000000007"], {
        "20260101000000001": commit,
        v1.instant: {HASHING_INSTANT_KEY: v1.instant, HASHING_CONFIG_KEY: v1.to_json()},
        "20260101000000007": {HASHING_INSTANT_KEY: v1.instant}})
    assert config_in_force(snap, base) == v1
    assert config_in_force(snap, base, at="20260101000000001") == base
    assert config_in_force(_snapshot([], {}), base) == base
    table = Table(str(tmp_path / "t"))
    assert load_hashing_config(table, snap.completed) is None  # nothing stored yet
    for cfg in (base, v1, v2):
        assert write_hashing_config(table, cfg)
    assert not write_hashing_config(table, v1)  # idempotent
    with pytest.raises(InvariantViolation, match="another hashing config"):
        write_hashing_config(table, HashingConfig("b,9", 3, instant=v1.instant))
    assert load_hashing_config(table, snap.completed) == v1  # v2's instant is not completed
    assert load_hashing_config(table, []) == base
    assert checked_config(table, snap, base) == v1
    # v2's file belongs to no instant of the timeline: Hudi would take it, verify says so
    assert stored_config_problems(table, snap, base) == [
        ".hoodie/.bucket_index/partition_bucket_index_meta/configs/"
        "20260101000000009.hashing_config belongs to no completed rescale (Hudi would load it)"]
    os.remove(table.abs_path(f".hoodie/.bucket_index/partition_bucket_index_meta/configs/"
                             f"{v1.instant}.hashing_config"))
    with pytest.raises(InvariantViolation, match="version 20260101000000005"):
        checked_config(table, snap, base)  # the writer refuses to route on a lost version


def test_history_checks_recorded_versions_and_counts():
    base = HashingConfig("x,4", 2)
    good = {HASHING_INSTANT_KEY: INITIAL_INSTANT, BUCKET_COUNTS_KEY: json.dumps({"x": 4, "y": 2})}
    v1 = HashingConfig("x,8", 2, instant="20260101000000002")
    snap = _snapshot(["20260101000000001", v1.instant, "20260101000000003"], {
        "20260101000000001": good,
        v1.instant: {HASHING_INSTANT_KEY: v1.instant, HASHING_CONFIG_KEY: v1.to_json(),
                     BUCKET_COUNTS_KEY: json.dumps({"x": 8})},
        "20260101000000003": {**good, BUCKET_COUNTS_KEY: json.dumps({"x": 4})}})
    assert history_problems(snap, base) == [
        f"instant 20260101000000003 routed with hashing config {INITIAL_INSTANT}, but "
        f"{v1.instant} was in force"]
    snap.extra["20260101000000003"] = {HASHING_INSTANT_KEY: v1.instant,
                                       BUCKET_COUNTS_KEY: json.dumps({"x": 4})}
    assert history_problems(snap, base) == [
        "instant 20260101000000003 recorded 4 buckets for 'x'; hashing config "
        f"{v1.instant} gives 8"]
    # a commit of Hudi's own writer (a table of ours it continued) records no version: it
    # routes by the one in force; one of ours without it is a problem
    snap.extra["20260101000000003"] = {"_indexbench.batch": "3", "schema": "{}"}
    assert history_problems(snap, base) == []
    snap.extra["20260101000000003"] = {"indexbench.spark.schema": "{}"}
    assert history_problems(snap, base) == [
        "instant 20260101000000003 records no hashing config version"]


def test_the_simulator_routes_by_the_rules_and_records_them():
    from indexbench.sim.driver import simulate

    params = {EXPR_KEY: "2026-01-06,12;2026-01-05,3", "num_buckets": 1}
    df = simulate("partition-bucket", "partition-sizes", params=params, write=False,
                  initial_records=3000, batches=1, batch_size=500)
    assert df["bucket_count_total"].tolist() == [12 + 3 + 4 * 1] * 2
    assert df["buckets"].iloc[-1] == 19


# ---------------------------------------------------------------- on Spark
def make_batch(rng: np.random.Generator, pool: int, n: int, batch: int) -> pd.DataFrame:
    """Keys from a pool; the newest partition holds most of them (10:3:1)."""
    ids = rng.choice(pool, n, replace=False)
    part = np.where(ids % 14 < 10, 2, np.where(ids % 14 < 13, 1, 0))
    return pd.DataFrame({"key": [f"k{i:05d}" for i in ids], "dt": [PARTS[p] for p in part],
                         "ts": np.full(n, batch, dtype="int64"),
                         "payload": [f"b{batch}-{i}" for i in ids]})


@pytest.fixture(scope="module")
def loaded(spark, tmp_path_factory) -> str:
    """A partition-bucket table after two upserts (copied by each test that writes)."""
    uri = str(tmp_path_factory.mktemp("pb") / "t")
    table, index = open_table(uri, "partition-bucket", PARAMS)
    rng = np.random.default_rng(5)
    with table:
        for b, (pool, n) in enumerate([(700, 500), (900, 300)]):
            upsert(spark, table, index, spark.createDataFrame(make_batch(rng, pool, n, b)),
                   batch_no=b)
    return uri


def copy_of(uri: str, tmp_path) -> str:
    dst = str(tmp_path / "t")
    shutil.copytree(uri, dst)
    return dst


def groups(uri: str) -> dict[str, set[tuple[int, str]]]:
    """(bucket, file id) of every file group, per partition."""
    out: dict[str, set] = {}
    for s in Table(uri).snapshot().slices.values():
        out.setdefault(s.partition, set()).add((bf.bucket_of_file_id(s.file_id), s.file_id))
    return out


def assert_routed(uri: str, counts: dict[str, int]) -> None:
    """Every record in bucket hash % its partition's count, one file group per bucket."""
    data = read_snapshot(uri)
    file_bucket = data["_hoodie_file_name"].map(
        lambda n: bf.bucket_of_file_id(bf.BaseFileName.parse(n).file_id)).to_numpy()
    want = bucket_ids([data["key"]], data["dt"].map(counts).to_numpy(dtype=np.int64))
    assert (want == file_bucket).all()
    for p, g in groups(uri).items():
        buckets = [b for b, _ in g]
        assert len(buckets) == len(set(buckets)) and max(buckets) < counts[p]


def test_upserts_use_the_rule_counts_and_record_them(spark, loaded):
    table = Table(loaded)
    snap = table.snapshot()
    _, index = open_table(loaded, "partition-bucket")
    assert index.bucket_counts(snap, snap.partitions()) == WANT
    assert_routed(loaded, WANT)
    assert {p: len(g) for p, g in groups(loaded).items()} == WANT  # every bucket filled
    for instant in snap.completed:
        extra = snap.extra[instant]
        assert extra[HASHING_INSTANT_KEY] == INITIAL_INSTANT
        assert json.loads(extra[BUCKET_COUNTS_KEY]) == WANT
    stored = load_hashing_config(table, snap.completed)
    assert stored == HashingConfig(PARAMS[EXPR_KEY], 2)
    meta = json.loads(open(table.abs_path(
        f".hoodie/.bucket_index/partition_bucket_index_meta/configs/{INITIAL_INSTANT}.hashing_config")).read())
    assert meta == {"expressions": PARAMS[EXPR_KEY], "defaultBucketNumber": 2,
                    "rule": "regex", "version": 1, "instant": INITIAL_INSTANT}
    assert verify_table(spark, loaded) == []


def test_offline_rescale_overwrites_only_the_partitions_whose_count_changes(
        spark, loaded, tmp_path):
    uri = copy_of(loaded, tmp_path)
    before, before_groups = read_snapshot(uri), groups(uri)
    dry = rescale_table(uri, expressions="01-03$,16;2026-01-02,4", dry_run=True)
    assert [(p["partition"], p["from_buckets"], p["to_buckets"], p["files"])
            for p in dry["partitions"]] == [("2026-01-03", 8, 16, 8)]
    assert groups(uri) == before_groups and Table(uri).pending_instants() == []
    row = rescale_table(uri, expressions="01-03$,16;2026-01-02,4", spark=spark)
    new = {**WANT, "2026-01-03": 16}
    after = groups(uri)
    assert after["2026-01-01"] == before_groups["2026-01-01"]  # untouched
    assert after["2026-01-02"] == before_groups["2026-01-02"]
    assert len(after["2026-01-03"]) == 16 and not after["2026-01-03"] & before_groups[
        "2026-01-03"]
    cols = ["key", "dt", "ts", "payload", "_hoodie_commit_time"]
    pd.testing.assert_frame_equal(  # the same records, commit times kept
        read_snapshot(uri)[cols].sort_values("key").reset_index(drop=True),
        before[cols].sort_values("key").reset_index(drop=True))
    assert_routed(uri, new)
    assert (row["from_buckets"], row["to_buckets"], row["partitions_touched"]) == (8, 16, 1)
    table = Table(uri)
    meta = table.read_commit(row["instant"], "replacecommit")
    assert meta["operationType"] == "INSERT_OVERWRITE"
    assert list(meta["partitionToReplaceFileIds"]) == ["2026-01-03"]
    extra = meta["extraMetadata"]
    assert extra[HASHING_INSTANT_KEY] == row["instant"]
    assert json.loads(extra[BUCKET_COUNTS_KEY]) == {"2026-01-03": 16}
    assert load_hashing_config(table, table.snapshot().completed) == HashingConfig(
        "01-03$,16;2026-01-02,4", 2, instant=row["instant"])
    # an upsert after it routes with, and records, the new version
    _, index = open_table(uri, "partition-bucket")
    with table:
        upsert(spark, table, index, spark.createDataFrame(
            make_batch(np.random.default_rng(9), 1000, 200, 2)), batch_no=2)
    last = table.snapshot()
    assert last.extra[last.completed[-1]][HASHING_INSTANT_KEY] == row["instant"]
    assert_routed(uri, new)
    # a rescale that changes no count still makes its version effective, replacing nothing
    row2 = rescale_table(uri, expressions="01-03$,16;01-02$,4;01-01$,2", spark=spark)
    meta2 = table.read_commit(row2["instant"], "replacecommit")
    assert meta2["partitionToReplaceFileIds"] == {} and meta2["partitionToWriteStats"] == {}
    assert index.config_in_force(table.snapshot()).instant == row2["instant"]
    assert verify_table(spark, uri) == []


@pytest.mark.parametrize("point", ["rescale_after_write", "rescale_before_commit"])
def test_a_killed_rescale_leaves_the_old_snapshot_and_is_rolled_back(spark, loaded, tmp_path,
                                                                     point):
    uri = copy_of(loaded, tmp_path)
    before, files = read_snapshot(uri), table_files(uri)
    with simulated_crash(point), pytest.raises(SimulatedCrash):
        rescale_table(uri, expressions="01-0[23],3", spark=spark)
    t = Table(uri)
    (instant,) = t.pending_instants()
    pd.testing.assert_frame_equal(read_snapshot(uri), before)  # the old snapshot is read
    config = f"/.hoodie/.bucket_index/partition_bucket_index_meta/configs/{instant}.hashing_config"
    assert (config in table_files(uri)) == (point == "rescale_before_commit")
    _, index = open_table(uri, "partition-bucket")
    assert index.config_in_force(t.snapshot()).instant == INITIAL_INSTANT
    assert load_hashing_config(t, t.snapshot().completed).instant == INITIAL_INSTANT
    with t:  # the next writer rolls the rescale back: its files and its config are gone
        pass
    assert t.pending_instants() == []
    assert not {f for f in table_files(uri) - files if instant in f and ".rollback" not in f}
    assert_routed(uri, WANT)
    assert verify_table(spark, uri) == []


def test_bad_rescales_are_refused_before_anything_is_written(spark, loaded, tmp_path):
    uri = copy_of(loaded, tmp_path)
    files = table_files(uri)
    for kwargs, match in [
        ({"expressions": "a,0"}, f"{EXPR_KEY} \\(--expressions\\): rule 1"),
        ({"expressions": "(,2"}, "bad regex"),
        ({"expressions": "a,2", "num_buckets": 0}, "num.buckets \\(--buckets\\)"),
        ({}, "needs --expressions"),
        ({"expressions": "a,2", "factor": 2}, "--factor: only for multiple-rehash"),
        ({"expressions": "a,2", "mode": "rehash"}, "--mode rehash: only for"),
        ({"expressions": "a,2", "partitions": ["2026-01-01"]}, "--partition: only for"),
    ]:
        with pytest.raises(IndexBenchError, match=match):
            rescale_table(uri, spark=spark, **kwargs)
        assert table_files(uri) == files, kwargs
    assert main(["rescale", uri, "--expressions", "a,x"]) == 2
    assert main(["rescale", uri, "--factor", "2"]) == 2
    assert main(["rescale", uri, "--expressions", "01-01,5", "--dry-run"]) == 0
    assert table_files(uri) == files
    other = str(tmp_path / "mr")
    mr, mri = open_table(other, "multiple-rehash", {"num_buckets": 2})
    with mr:
        upsert(spark, mr, mri, spark.createDataFrame(make_batch(np.random.default_rng(1),
                                                                100, 40, 0)))
    with pytest.raises(RescaleError, match="--expressions: only for partition-bucket tables"):
        rescale_table(other, "rehash", 2, expressions="a,2", spark=spark)
    with pytest.raises(TableConfigError, match="cannot be changed"):  # a rule is no --set
        open_table(uri, "partition-bucket", {EXPR_KEY: "a,3"})
