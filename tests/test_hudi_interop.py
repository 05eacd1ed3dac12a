"""Hudi tools read the harness's tables as their own: hudi-rs (the ``hudi`` package) reads
the table of every index, a rescaled table (replacecommit) and a table whose latest
instant is an index-only replacecommit, and returns exactly the harness's snapshot —
row for row, in the same files — and ignores a pending instant's files."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import indexes
from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.rescale import rescale_table
from tableformat import basefile as bf
from tableformat import fs as tfs
from tableformat.markers import marked_files
from tableformat.slice_reader import read_file_group
from tableformat.table import Table

hudi = pytest.importorskip("hudi", minversion="0.5.0")

PARAMS = {
    "bloom": {"num_entries": 100, "fpp": 0.01, "scale": 1, "insert_split_size": 40,
              "auto_split": False, "small_file_limit": 0},
    "simple-bucket": {"num_buckets": 4},
    "multiple-rehash": {"num_buckets": 2},
    # compact the RLI after the second batch: an index-only replacecommit, no data files
    "dynamic-rli": {"rli_compact_files": 1},
    # file groups full at 1,600 / 100 = 16 records: several per bucket
    "multi-fg-bucket": {"num_buckets": 2, "scale": 1, "max_file_size": 1600,
                        "record_size_estimate": 100, "estimation_threshold": 10**6,
                        "num_entries": 100, "fpp": 0.01, "max_entries": 200},
    # buckets over 30 records split: the latest instants are split replacecommits
    "extendible-hash": {"num_buckets": 2, "max_records": 30},
}


def make_batch(rng: np.random.Generator, pool: int, n: int, batch: int) -> pd.DataFrame:
    """Keys from a pool (inserts and updates mix), two date partitions."""
    ids = rng.integers(0, pool, n)
    return pd.DataFrame({
        "key": [f"k{i:05d}" for i in ids],
        "dt": [f"2026-01-0{1 + i % 2}" for i in ids],
        "ts": rng.integers(0, 1000, n).astype("int64"),
        "payload": [f"b{batch}-r{j}" for j in range(n)],
    })


def harness_snapshot(uri: str) -> pa.Table:
    """Every record of the harness's snapshot (the latest base file of each file group)."""
    table = Table(uri)
    return pa.concat_tables([bf.read_base_file(table.fs, table.abs_path(s.path))
                             for s in table.snapshot().slices.values()])


def assert_hudi_rs_reads_the_harness_snapshot(uri: str) -> None:
    """hudi-rs's snapshot query equals the harness's: rows (every column, meta columns
    included: keys, ordering values, the file each record is in), files, timeline."""
    ht = hudi.HudiTableBuilder.from_base_uri(uri).build()
    snap = Table(uri).snapshot()
    got = pa.Table.from_batches(ht.read(), schema=ht.get_schema_with_meta_fields())
    want = harness_snapshot(uri)
    assert got.column_names == want.column_names
    assert got.num_rows == want.num_rows == len(set(want.column(bf.RECORD_KEY).to_pylist()))
    assert got.sort_by(bf.RECORD_KEY).to_pylist() == want.sort_by(bf.RECORD_KEY).to_pylist()
    files = sorted(s.base_file_relative_path() for s in ht.get_file_slices())
    assert files == sorted(s.path for s in snap.slices.values())
    timeline = ht.get_timeline()
    completed = timeline.get_completed_commits() + timeline.get_completed_replacecommits()
    assert sorted(i.timestamp for i in completed) == snap.completed
    assert ht.get_schema().names == ["key", "dt", "ts", "payload"]


class _Tables(dict):
    """Index name -> table URI, each table written on first use: a run that selects some
    indexes writes only theirs."""

    def __init__(self, build):
        super().__init__()
        self._build = build

    def __missing__(self, name: str) -> str:
        self[name] = self._build(name)
        return self[name]


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory) -> dict[str, str]:
    """One small table per index: an initial batch, then upserts (a file group gets a
    second file slice), written through the driver as a run writes them."""
    root = tmp_path_factory.mktemp("hudi-interop")

    def build(name: str) -> str:
        uri = str(root / name)
        table, index = open_table(uri, name, PARAMS.get(name, {}))
        rng = np.random.default_rng(11)
        with table:
            for b, (pool, n) in enumerate([(200, 160), (300, 120)]):
                upsert(spark, table, index, spark.createDataFrame(make_batch(rng, pool, n, b)),
                       batch_no=b, timing="total")  # the same files, fewer jobs
                services.run_inline(spark, table, index, batch_no=b)  # as a run does
            services.finish_pending(spark, table, index)
        return uri
    return _Tables(build)


# Copy-on-write: the default run (CI) reads four indexes' tables (the other tests here use
# them too); merge-on-read below reads every index's, whose base files are these files'
# kind. `pytest -m ''` reads every copy-on-write table too.
COW_DEFAULT = ("bloom", "simple-bucket", "multiple-rehash", "dynamic-rli")


@pytest.mark.parametrize("index_name", [
    n if n in COW_DEFAULT else pytest.param(n, marks=pytest.mark.exhaustive)
    for n in indexes.names()])
def test_hudi_rs_reads_every_index_table_as_the_harness_snapshot(tables, index_name):
    uri = tables[index_name]
    assert_hudi_rs_reads_the_harness_snapshot(uri)
    snap = Table(uri).snapshot()
    assert snap.physical_files > len(snap.slices)  # hudi-rs chose among file slices


def test_an_index_only_replacecommit_keeps_the_table_readable(tables):
    """dynamic-rli's RLI compaction writes no data file; hudi-rs takes the schema from the
    latest completed instant, so the commit repeats the table's schema."""
    table = Table(tables["dynamic-rli"])
    instant, action = table.completed_instants()[-1]
    assert action == "replacecommit"
    meta = table.read_commit(instant, action)
    assert meta["operationType"] == "INDEX" and meta["partitionToWriteStats"] == {}
    assert meta["extraMetadata"]["schema"].startswith('{"type":"record"')


def test_hudi_rs_reads_a_rescaled_table_and_upserts_after_it(spark, tables, tmp_path):
    uri = str(tmp_path / "rescaled")
    shutil.copytree(tables["multiple-rehash"], uri)
    before = {s.file_id for s in Table(uri).snapshot().slices.values()}
    rescale_table(uri, mode="rehash", factor=2, spark=spark)
    table = Table(uri)
    instant, action = table.completed_instants()[-1]
    assert action == "replacecommit"
    replaced = table.read_commit(instant, action)["partitionToReplaceFileIds"]
    assert {f for ids in replaced.values() for f in ids} == before
    assert_hudi_rs_reads_the_harness_snapshot(uri)
    # a commit after the replacecommit: the replaced file groups stay out of the snapshot
    table, index = open_table(uri, "multiple-rehash")
    with table:
        upsert(spark, table, index, spark.createDataFrame(
            make_batch(np.random.default_rng(5), 300, 80, 2)), batch_no=2)
    assert_hudi_rs_reads_the_harness_snapshot(uri)


def test_a_pending_instant_is_invisible_to_hudi_rs_and_rolled_back(tables, tmp_path):
    """A writer that died after writing a file: the requested and inflight files are on
    the timeline, the base file is in its partition; neither reader sees it."""
    uri = str(tmp_path / "pending")
    shutil.copytree(tables["simple-bucket"], uri)
    table = Table(uri)
    victim = next(iter(table.snapshot().slices.values()))
    with table:
        instant = table.start_instant()
        name = bf.BaseFileName(victim.file_id, "0-1-0", instant).name
        stray = table.abs_path(f"{victim.partition}/{name}")
        table.fs.copy_file(table.abs_path(victim.path), stray)
        table.release_writer_lock()  # the writer died: no commit, no rollback
        assert tfs.exists(table.fs, tfs.join(table.meta, f"{instant}.commit.requested"))
        assert table.pending_instants() == [instant]
        assert_hudi_rs_reads_the_harness_snapshot(uri)
    with Table(uri) as t2:  # the next writer rolls it back
        assert t2.rolled_back[0] == [instant]
    assert not tfs.exists(table.fs, stray)
    assert not [n for n in table._timeline_files() if n.startswith(instant)]
    assert_hudi_rs_reads_the_harness_snapshot(uri)


def test_hudi_rs_parses_the_avro_schema_of_every_spark_type(tmp_path):
    """The Avro schema in extraMetadata, from each Spark type a batch may carry (no Spark
    needed). ``timestamp_ntz`` is left out: its Avro (``local-timestamp-micros``, as Hudi
    writes it) is not implemented in hudi-rs 0.5 (a panic in its Avro-to-Arrow code)."""
    import json

    from tableformat.table import TableConfig

    def f(name, type_, nullable=True):
        return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}

    fields = [f("key", "string"), f("dt", "string"), f("ts", "long", False),
              f("i", "integer"), f("s", "short"), f("b", "byte"), f("fl", "float"),
              f("d", "double"), f("ok", "boolean"), f("bin", "binary"), f("day", "date"),
              f("at", "timestamp"), f("amount", "decimal(10,2)"), f("big", "decimal(38,4)"),
              f("tags", {"type": "array", "elementType": "string", "containsNull": True}),
              f("attrs", {"type": "map", "keyType": "string", "valueType": "long",
                          "valueContainsNull": False}),
              f("inner", {"type": "struct", "fields": [f("x", "integer"),
                                                       f("price", "decimal(5,1)")]})]
    uri = str(tmp_path / "types")
    table = Table.create_or_open(uri, TableConfig("types", "key", "dt", "ts", "bloom", "BLOOM"))
    with table:
        table.complete_instant(table.start_instant(), {"operationType": "UPSERT", "extraMetadata": {
            "schema": json.dumps({"type": "struct", "fields": fields})}})
    got = hudi.HudiTableBuilder.from_base_uri(uri).build().get_schema()
    want = pa.schema([
        ("key", pa.string()), ("dt", pa.string()), pa.field("ts", pa.int64(), False),
        ("i", pa.int32()), ("s", pa.int32()), ("b", pa.int32()), ("fl", pa.float32()),
        ("d", pa.float64()), ("ok", pa.bool_()), ("bin", pa.binary()), ("day", pa.date32()),
        ("at", pa.timestamp("us", "UTC")), ("amount", pa.decimal128(10, 2)),
        ("big", pa.decimal128(38, 4))])
    assert got.names == [x["name"] for x in fields]
    assert pa.schema(list(got)[:len(want)]) == want
    assert got.field("inner").type == pa.struct([("x", pa.int32()),
                                                 ("price", pa.decimal128(5, 1))])


# ---------------------------------------------------------------- merge-on-read
MOR = {"hoodie.table.type": "mor", "hoodie.compact.inline.max.delta.commits": "3"}


def with_deletes(frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """Every fifth row of the batch deletes its key (``_hoodie_is_deleted``)."""
    frame = frame.copy()
    frame["_hoodie_is_deleted"] = np.arange(len(frame)) % 5 == 0
    return frame


def merged_snapshot(uri: str) -> pa.Table:
    """The harness's snapshot read: every file slice merged with its log files."""
    table = Table(uri)
    return pa.concat_tables([read_file_group(table, s)
                             for s in table.snapshot().slices.values()])


def assert_hudi_rs_reads_the_merged_snapshot(uri: str, pending_logs: set[str] = frozenset()
                                             ) -> None:
    """hudi-rs's snapshot query of a merge-on-read table equals the harness's merged
    read row for row (meta columns included), over the same file slices (base and log
    files) and the same completed timeline. ``pending_logs``: log files of a pending
    delta commit, which hudi-rs lists in its file slices (its view lists storage) and
    then skips block by block (their instant is not completed)."""
    ht = hudi.HudiTableBuilder.from_base_uri(uri).build()
    assert ht.is_mor
    snap = Table(uri).snapshot()
    got = pa.Table.from_batches(ht.read(), schema=ht.get_schema_with_meta_fields())
    want = merged_snapshot(uri)
    assert got.num_rows == want.num_rows == len(set(want.column(bf.RECORD_KEY).to_pylist()))
    assert got.sort_by(bf.RECORD_KEY).to_pylist() == \
        want.select(got.column_names).sort_by(bf.RECORD_KEY).to_pylist()
    theirs = {(s.partition_path, s.file_id): (s.base_file_relative_path() or None,
                                               sorted(set(s.log_files_relative_paths())
                                                      - pending_logs))
              for s in ht.get_file_slices()}
    ours = {k: (s.path, sorted(lf.path for lf in s.logs)) for k, s in snap.slices.items()}
    assert theirs == ours
    timeline = ht.get_timeline()
    completed = (timeline.get_completed_commits() + timeline.get_completed_deltacommits()
                 + timeline.get_completed_replacecommits())
    assert sorted(i.timestamp for i in completed) == snap.completed


@pytest.fixture(scope="module")
def mor_tables(spark, tmp_path_factory) -> dict[str, str]:
    """One merge-on-read table per index: three delta commits with deletes, the inline
    compaction they trigger, then a delta commit on top of the compacted base files."""
    root = tmp_path_factory.mktemp("hudi-interop-mor")

    def build(name: str) -> str:
        uri = str(root / name)
        table, index = open_table(uri, name, {**PARAMS.get(name, {}), **MOR})
        rng = np.random.default_rng(13)
        with table:
            for b, (pool, n) in enumerate([(200, 160), (300, 120), (300, 100), (400, 90)]):
                batch = make_batch(rng, pool, n, b)
                batch = with_deletes(batch, rng) if b else batch
                upsert(spark, table, index, spark.createDataFrame(batch), batch_no=b,
                       timing="total")  # the same files, fewer jobs
                services.run_inline(spark, table, index, batch_no=b)
            services.finish_pending(spark, table, index)
        return uri
    return _Tables(build)


# Merge-on-read: the default run (CI) reads one table of each way an index puts records
# in logs: beside base files (bloom), in a fixed bucket's group (simple-bucket), in
# log-only groups (dynamic-rli), in groups a resize clusters (consistent-hashing).
# `pytest -m ''` reads every index's.
MOR_DEFAULT = ("bloom", "simple-bucket", "dynamic-rli", "consistent-hashing")


@pytest.mark.parametrize("index_name", [
    n if n in MOR_DEFAULT else pytest.param(n, marks=pytest.mark.exhaustive)
    for n in indexes.names()])
def test_hudi_rs_reads_every_mor_table_as_the_harness_merged_snapshot(mor_tables, index_name):
    uri = mor_tables[index_name]
    table = Table(uri)
    assert table.config.table_type == "MERGE_ON_READ"
    snap = table.snapshot()
    assert "COMPACT" in snap.operations.values()  # a compaction happened
    assert any(s.logs for s in snap.slices.values())  # and logs were written after it
    assert_hudi_rs_reads_the_merged_snapshot(uri)


def test_a_pending_delta_commit_is_invisible_to_hudi_rs_and_rolled_back(spark, mor_tables,
                                                                      tmp_path):
    """A writer that died after writing its log files: hudi-rs skips their blocks (their
    instant is not completed), the next writer deletes them (its markers name them)."""
    uri = str(tmp_path / "pending-mor")
    shutil.copytree(mor_tables["simple-bucket"], uri)
    before = merged_snapshot(uri).sort_by(bf.RECORD_KEY).to_pylist()
    table, index = open_table(uri, "simple-bucket")
    batch = spark.createDataFrame(make_batch(np.random.default_rng(9), 400, 60, 9))
    from writeclient.faults import SimulatedCrash, simulated_crash

    with simulated_crash("before_commit"), pytest.raises(SimulatedCrash), table:
        upsert(spark, table, index, batch, batch_no=9)
    pending = Table(uri).pending_instants()
    assert len(pending) == 1
    marked = marked_files(Table(uri).fs, Table(uri).root, pending[0])
    assert marked and all(tfs.exists(table.fs, table.abs_path(p)) for p in marked)
    assert_hudi_rs_reads_the_merged_snapshot(uri, set(marked))
    assert merged_snapshot(uri).sort_by(bf.RECORD_KEY).to_pylist() == before
    with Table(uri) as t:
        assert t.rolled_back[0] == pending
    assert not any(tfs.exists(table.fs, table.abs_path(p)) for p in marked)
    assert_hudi_rs_reads_the_merged_snapshot(uri)
