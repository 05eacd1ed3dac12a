"""Hostile input (issue #14): every bad batch is refused with one line and leaves the
table byte-identical; a write that fails inside a Spark task is undone on the spot.

The corpus lists each input a hostile user tried and what must happen to it; every
index in ``indexes.names()`` gets it, so a new index is covered automatically.
"""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import read_snapshot, table_digest

import indexes
from indexbench import cli, failed_write
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from tableformat import partition_path
from tableformat.abort import abort_instant
from tableformat.errors import IndexBenchError, InvalidBatchError, WriteFailedError
from writeclient.faults import FAIL_TASK_PROPERTY

OK = pd.DataFrame({"key": ["a", "c"], "dt": ["p", "p"], "ts": [3, 3], "payload": ["x", "z"]})

# (what was tried, the batch, the words the one-line refusal must contain)
CORPUS = [
    ("two spellings of one folder: q/r and q//r", OK.assign(dt=["q/r", "q//r"]),
     "empty path segment"),
    ("pp and ./pp", OK.assign(dt=["pp", "./pp"]), "'.' or '..' path segment"),
    ("pp and pp/", OK.assign(dt=["pp", "pp/"]), "empty path segment"),
    ("a leading slash", OK.assign(dt=["/abs", "p"]), "empty path segment"),
    ("the timeline folder", OK.assign(dt=[".hoodie", "p"]), "starting with '.' or '_'"),
    ("under the timeline", OK.assign(dt=[".hoodie/x", "p"]), "starting with '.' or '_'"),
    ("a partition metafile's name", OK.assign(dt=["p/.hoodie_partition_metadata", "p"]),
     "starting with '.' or '_'"),
    ("a folder Spark skips", OK.assign(dt=["_tmp", "p"]), "starting with '.' or '_'"),
    ("the current folder", OK.assign(dt=[".", "p"]), "'.' or '..' path segment"),
    ("a parent folder", OK.assign(dt=["a/../b", "p"]), "'.' or '..' path segment"),
    ("a partition inside another", OK.assign(dt=["p/x", "p"]), "'p' holds 'p/x'"),
    ("a colon", OK.assign(dt=["a:b", "p"]), "a ':'"),
    ("a NUL character", OK.assign(dt=["p\x00q", "p"]), "control character"),
    ("a newline", OK.assign(dt=["p\nq", "p"]), "control character"),
    ("a 300-byte segment", OK.assign(dt=["x" * 300, "p"]), "path segment over 255 bytes"),
    ("a 1100-byte value", OK.assign(dt=["/".join(["y" * 100] * 11), "p"]),
     "over 1024 bytes"),
    ("an empty partition", OK.assign(dt=["", "p"]), "null or empty partition value"),
    ("a null partition", OK.assign(dt=[None, "p"]), "null or empty partition value"),
    ("a null key", OK.assign(key=["a", None]), "null record key"),
    ("an empty key", OK.assign(key=["a", ""]), "empty record key"),
    ("a null ordering value", OK.assign(ts=[3, None]), "null ordering value"),
    ("a NaN ordering value", OK.assign(ts=[7.0, float("nan")]), "NaN ordering value"),
    ("a delete marker that is not a boolean", OK.assign(_hoodie_is_deleted=["yes", "no"]),
     "must be a boolean"),
    ("another _hoodie column", OK.assign(_hoodie_commit_time=["1", "2"]), "reserved"),
]


def _frame(spark, pdf: pd.DataFrame, ts: str = "bigint"):
    """The batch with the table's types, from Python rows: pandas would make a null int
    column double, and Spark's pandas conversion turns NaN into null."""
    ddl = ", ".join(f"{c} {ts if c == 'ts' else 'string'}" for c in pdf.columns)
    conv = [(int if ts == "bigint" else float) if c == "ts" else str for c in pdf.columns]
    return spark.createDataFrame(
        [tuple(None if v is None or (c is not float and pd.isna(v)) else c(v)
               for c, v in zip(conv, r, strict=True)) for r in pdf.itertuples(index=False)],
        ddl)


# Validation runs before any index code, so the whole corpus is checked on one index and
# every index gets the spellings that broke one (dynamic-rli: ".", "./p", "a//b", "p/").
SPELLINGS = [
    ("'.'", OK.assign(dt=[".", "p"]), "'.' or '..' path segment"),
    ("'./p'", OK.assign(dt=["./p", "p"]), "'.' or '..' path segment"),
    ("'a//b'", OK.assign(dt=["a//b", "p"]), "empty path segment"),
    ("'p/'", OK.assign(dt=["p/", "p"]), "empty path segment"),
]


@pytest.mark.parametrize("index_name", indexes.names())
def test_every_hostile_input_is_refused_and_the_table_is_byte_identical(spark, tmp_path,
                                                                        index_name):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, index_name)
    with table:
        upsert(spark, table, index, spark.createDataFrame(OK.assign(ts=[1, 1])))
    before = table_digest(uri)
    corpus = CORPUS if index_name == "simple-bucket" else SPELLINGS
    for tried, pdf, words in corpus:
        if "NaN" in tried:  # a double ordering field needs a table of its own
            continue
        with table, pytest.raises(InvalidBatchError) as err:
            upsert(spark, table, index, _frame(spark, pdf))
        message = str(err.value)
        assert words in message and "\n" not in message, (tried, message)
        assert table_digest(uri) == before, tried
    assert verify_table(spark, uri) == []


def test_a_nan_ordering_value_is_refused(spark, tmp_path):
    """NaN has no place in an order (the merge kept NaN over 7.0 and 9.0): refused."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "simple-bucket")
    with table:
        upsert(spark, table, index, _frame(spark, OK.assign(ts=[1.0, 1.0]), "double"))
    before = table_digest(uri)
    pdf = next(p for tried, p, _ in CORPUS if "NaN" in tried)
    with table, pytest.raises(InvalidBatchError, match="1 record.*NaN ordering value"):
        upsert(spark, table, index, _frame(spark, pdf, "double"))
    assert table_digest(uri) == before


def test_partition_rules_name_each_problem_once_per_value():
    """The rules run on the batch's distinct values (Spark-free), one phrase per rule."""
    assert partition_path.problems("2026-01-01") == []
    for ok in ("a/b/c", "a b", "ü/ö", "x" * 255, "k=v", "a.b", "a_b", "-"):
        assert partition_path.problems(ok) == [], ok
    assert partition_path.problems("x" * 300) == ["segment_too_long"]
    assert partition_path.problems("/.hoodie//") == ["empty_segment", "hidden_segment"]
    assert partition_path.problems("") == ["empty_partition"]
    out = partition_path.refusals(["a//b", "c/", "/d", "e//", "ok", ".hoodie"])
    assert out == [
        "partition value(s) with an empty path segment (a leading, trailing or doubled "
        "'/'): '/d', 'a//b', 'c/' and 1 more",
        "partition value(s) with a path segment starting with '.' or '_' (reserved: "
        ".hoodie, .hoodie_partition_metadata; skipped by Hadoop and Spark readers): "
        "'.hoodie'"]


def test_a_write_task_failure_is_undone_and_reported_in_one_line(spark, tmp_path,
                                                                 monkeypatch):
    """A Spark task raises mid-write (as a disk error would) while other tasks have
    written their file groups, in partitions old and new: the driver undoes the instant
    and the table is byte-identical; the next write succeeds."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "simple-bucket", {"num_buckets": 8})
    first = pd.DataFrame({"key": [f"k{i}" for i in range(40)], "dt": ["p", "q"] * 20,
                          "ts": [1] * 40, "payload": ["x"] * 40})
    with table:
        upsert(spark, table, index, spark.createDataFrame(first))
    before = table_digest(uri)
    second = first.assign(ts=2, payload="y", dt=["p", "new/part"] * 20)
    undone: list[str] = []

    def abort(table, instant):
        undone.extend(abort_instant(table, instant))
        return undone

    monkeypatch.setattr(failed_write, "abort_instant", abort)
    sc = spark.sparkContext
    sc.setLocalProperty(FAIL_TASK_PROPERTY, "1")
    try:
        with table, pytest.raises(WriteFailedError) as err:
            upsert(spark, table, index, spark.createDataFrame(second), batch_no=1)
    finally:
        sc.setLocalProperty(FAIL_TASK_PROPERTY, None)
    message = str(err.value)
    assert "\n" not in message and "rolled back" in message
    assert "OSError: injected write failure in task 1" in message
    assert table_digest(uri) == before
    assert any(f.endswith(".parquet") for f in undone)  # other tasks had written files
    with table:
        upsert(spark, table, index, spark.createDataFrame(second), batch_no=1)
    snap = read_snapshot(uri)  # p's 20 keys updated, q's kept, 20 new in new/part
    assert sorted(zip(snap["dt"], snap["payload"], strict=True)) == sorted(
        [("p", "y")] * 20 + [("q", "x")] * 20 + [("new/part", "y")] * 20)
    assert verify_table(spark, uri) == []


def test_global_index_settings_are_refused_by_name():
    with pytest.raises(IndexBenchError, match="global indexes are not supported"):
        indexes.get("bloom", **{"hoodie.bloom.index.update.partition.path": "true"})
    with pytest.raises(IndexBenchError, match="GLOBAL_BLOOM: global indexes"):
        cli.parse_sets(["hoodie.index.type=GLOBAL_BLOOM"])
    with pytest.raises(IndexBenchError, match="no index has this parameter"):
        cli.parse_sets(["hoodie.bloom.index.update.partition.path=false"])


def test_key_scope_is_in_hoodie_properties_and_one_key_may_live_in_two_partitions(
        spark, tmp_path):
    """Non-global: (partition, key) is a record. One key sent to two partitions (in one
    batch, and again later) is two records, and ``verify`` checks that rule."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "bloom")
    with table:
        upsert(spark, table, index, spark.createDataFrame(
            pd.DataFrame({"key": ["a", "a"], "dt": ["p", "q"], "ts": [1, 1],
                          "payload": ["p1", "q1"]})))
        upsert(spark, table, index, spark.createDataFrame(
            pd.DataFrame({"key": ["a"], "dt": ["r"], "ts": [2], "payload": ["r1"]})))
    props = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert "indexbench.record.key.scope=partition" in props
    snap = read_snapshot(uri)
    assert sorted(zip(snap["dt"], snap["payload"], strict=True)) == [
        ("p", "p1"), ("q", "q1"), ("r", "r1")]
    assert verify_table(spark, uri) == []


def test_a_rescale_task_failure_is_undone_too(spark, tmp_path):
    """The same undo wraps every writer: a rescale whose write task fails leaves the table
    byte-identical and says so in one line."""
    from indexbench.rescale import rescale_table

    uri = str(tmp_path / "t")
    table, index = open_table(uri, "multiple-rehash", {"num_buckets": 8})
    with table:
        upsert(spark, table, index, spark.createDataFrame(pd.DataFrame(
            {"key": [f"k{i}" for i in range(200)], "dt": "p", "ts": 1, "payload": "x"})))
    before = table_digest(uri)
    sc = spark.sparkContext
    sc.setLocalProperty(FAIL_TASK_PROPERTY, "1")
    try:
        with pytest.raises(WriteFailedError, match="rescale failed and was rolled back"):
            rescale_table(uri, "rehash", 2, spark=spark)
    finally:
        sc.setLocalProperty(FAIL_TASK_PROPERTY, None)
    assert table_digest(uri) == before
    rescale_table(uri, "rehash", 2, spark=spark)
    assert verify_table(spark, uri) == [] and len(read_snapshot(uri)) == 200
