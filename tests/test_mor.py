"""Merge-on-read (issue #27): every index writes log files, compacts, and reads merged.

The oracle of tests/test_oracle.py on merge-on-read tables: random upserts and deletes
(with killed writers) through every index in ``indexes.names()``, with inline compaction
every second delta commit, must leave exactly the dict oracle's records in the merged
snapshot; the timeline holds delta commits and compactions as Hudi names them, and
``verify`` passes. Spark-free tests pin the snapshot's assembly and the merge fold.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import table_files
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_oracle import DDL, apply_batch, committed, step

import indexes
from indexbench import services
from indexbench.compaction import HANG_IN_COMPACTION
from indexbench.driver import open_table, upsert
from indexbench.log_writer import HANG_IN_LOG_APPEND
from indexbench.verify import verify_table
from tableformat.errors import IndexBenchError, TableConfigError
from tableformat.hudi_log.names import LogFileName, is_log_file
from tableformat.merge import fold
from tableformat.table import Table
from tableformat.table_type import MERGE_ON_READ, check_table_type
from tableformat.write_config import WriteConfig
from writeclient.faults import CRASH_ENV, SimulatedCrash, simulated_crash

MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline.max.delta.commits": "2"}


# ---------------------------------------------------------------- Spark-free
def test_log_file_names_round_trip_as_hudi_writes_them():
    name = LogFileName("00000003-0000-4035-a392-22a91eafd130-0", "20260101000000123", 2,
                       "1-5-0")
    assert name.name == ".00000003-0000-4035-a392-22a91eafd130-0_20260101000000123.log.2_1-5-0"
    assert LogFileName.parse(f"dt=1/{name.name}") == name
    assert is_log_file(name.name)
    assert not is_log_file("00000003-0000-4035-a392-22a91eafd130-0_1-5-0_20260101000000123.parquet")


def test_write_configs_refuse_bad_values_in_one_line():
    assert WriteConfig.parse({"hoodie.table.type": "mor"}).table_type == MERGE_ON_READ
    assert check_table_type("merge_on_read") == MERGE_ON_READ
    for given_ in ({"hoodie.table.type": "HYBRID"},
                   {"hoodie.logfile.data.block.format": "orc"},
                   {"hoodie.compact.inline.max.delta.commits": "0"},
                   {"hoodie.compact.inline": "yes"}):
        with pytest.raises(TableConfigError) as e:
            WriteConfig.parse(given_)
        assert "\n" not in str(e.value) and next(iter(given_)) in str(e.value)


def _cow(state: dict, batch: list[tuple]) -> None:
    """One pre-combined batch on a dict: (key, ts, delete) under the merge rule."""
    for key, ts, delete in batch:
        stored = state.get(key)
        if stored is not None and ts is not None and ts < stored:
            continue
        if delete:
            state.pop(key, None)
        else:
            state[key] = ts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"),
                                st.tuples(st.one_of(st.none(), st.integers(0, 3)),
                                          st.booleans()), max_size=8),
                min_size=1, max_size=5))
def test_folding_logs_over_a_base_equals_merging_batch_by_batch(layers):
    """The reader's fold over a slice's layers = the copy-on-write merge applied per batch."""
    want: dict = {}
    state = pa.table({"_hoodie_record_key": pa.array([], pa.string()),
                      "ts": pa.array([], pa.int64())})
    for layer in layers:
        rows = [(k, ts if ts is not None or d else 0, d) for k, (ts, d) in sorted(layer.items())]
        _cow(want, rows)
        ups = [(k, ts) for k, ts, d in rows if not d]
        dels = [(k, ts) for k, ts, d in rows if d]
        upserts = pa.table({"_hoodie_record_key": pa.array([k for k, _ in ups], pa.string()),
                            "ts": pa.array([t for _, t in ups], pa.int64())})
        state = fold(state, upserts, pa.array([k for k, _ in dels], pa.string()),
                     pa.array([t for _, t in dels], pa.int64()), "_hoodie_record_key", "ts")
    got = dict(zip(state.column(0).to_pylist(), state.column(1).to_pylist(), strict=True))
    assert got == want
    assert len(np.unique(state.column(0).to_numpy(zero_copy_only=False))) == state.num_rows


def test_the_compaction_plan_is_hudis_avro_hoodie_compaction_plan():
    """``.compaction.requested`` as Hudi 0.14/0.15 write it: an Avro data file (no codec)
    of one ``org.apache.hudi.avro.model.HoodieCompactionPlan``, Hudi's fields in Hudi's
    order, version 2 (file names), each operation's metrics as Hudi's strategy captures
    them; read back, it names the same slices; a plan the table no longer matches is
    refused."""
    import io

    import fastavro

    from tableformat.compaction_plan import CompactionPlan
    from tableformat.table import FileSlice, LogFile, Snapshot

    mb = 1024 * 1024
    base = FileSlice("d", "f1", "d/f1_0-0-0_20260101000000001.parquet", "20260101000000001",
                     10, 3 * mb + 5)
    for v, size in ((1, mb), (2, mb // 2)):
        base = base.with_log(LogFile(f"d/.f1_20260101000000001.log.{v}_0-0-0",
                                     f"2026010100000000{v + 1}", 4, 0, size))
    log_only = FileSlice("", "f2", None, "20260101000000002", 0, 0).with_log(
        LogFile(".f2_20260101000000002.log.1_1-0-0", "20260101000000002", 3, 1, 700))
    plan = CompactionPlan((base, log_only))
    raw = plan.request(max_file_size=120 * mb)
    assert raw[:4] == b"Obj\x01"  # an Avro object container file
    reader = fastavro.reader(io.BytesIO(raw))
    assert reader.metadata["avro.codec"] == "null"
    schema = reader.writer_schema
    assert (schema["name"], [f["name"] for f in schema["fields"]]) == (
        "org.apache.hudi.avro.model.HoodieCompactionPlan",
        ["operations", "extraMetadata", "version", "strategy", "preserveHoodieMetadata"])
    [record] = list(reader)
    assert (record["version"], record["extraMetadata"], record["strategy"]) == (2, None, None)
    assert record["operations"] == [
        {"baseInstantTime": "20260101000000001",
         "deltaFilePaths": [".f1_20260101000000001.log.1_0-0-0",
                            ".f1_20260101000000001.log.2_0-0-0"],
         "dataFilePath": "f1_0-0-0_20260101000000001.parquet", "fileId": "f1",
         "partitionPath": "d", "bootstrapFilePath": None,
         "metrics": {"TOTAL_IO_READ_MB": 4.0, "TOTAL_IO_WRITE_MB": 3.0, "TOTAL_IO_MB": 7.0,
                     "TOTAL_LOG_FILES_SIZE": 1.5 * mb, "TOTAL_LOG_FILES": 2.0}},
        {"baseInstantTime": "20260101000000002",
         "deltaFilePaths": [".f2_20260101000000002.log.1_1-0-0"], "dataFilePath": None,
         "fileId": "f2", "partitionPath": "", "bootstrapFilePath": None,
         "metrics": {"TOTAL_IO_READ_MB": 0.0, "TOTAL_IO_WRITE_MB": 120.0, "TOTAL_IO_MB": 120.0,
                     "TOTAL_LOG_FILES_SIZE": 700.0, "TOTAL_LOG_FILES": 1.0}}]
    snap = Snapshot({("d", "f1"): base, ("", "f2"): log_only}, [], 0, None)
    assert CompactionPlan.from_request(raw, snap) == plan
    snap.slices[("d", "f1")] = base.with_log(LogFile(
        "d/.f1_20260101000000001.log.3_0-0-0", "20260101000000004", 1, 0, 9))
    with pytest.raises(IndexBenchError, match="compaction plan names file slice f1"):
        CompactionPlan.from_request(raw, snap)


# ---------------------------------------------------------------- on Spark
@pytest.mark.parametrize("index_name", indexes.names())
def test_mor_upserts_deletes_crashes_and_compactions_equal_a_dict_oracle(spark, index_name):
    @settings(max_examples=2, deadline=None, phases=(Phase.explicit, Phase.generate))
    @given(st.lists(step, min_size=2, max_size=4))
    def run(steps):
        root = tempfile.mkdtemp(prefix="mor-oracle-")
        try:
            check_mor(spark, f"{root}/t", index_name, steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    run()


def check_mor(spark, uri: str, index_name: str, steps: list) -> None:
    oracle: dict = {}
    table, index = open_table(uri, index_name, MOR)
    assert table.config.table_type == MERGE_ON_READ
    for n, (records, crash_at) in enumerate(steps):
        rows = [(k, p, 0 if ts is None and not d else ts, d, f"s{n}-{i}")
                for i, (k, p, ts, d) in enumerate(records)]
        batch = spark.createDataFrame([(k, p, ts, pl, d) for k, p, ts, d, pl in rows], DDL)
        if crash_at is None:
            with table:
                upsert(spark, table, index, batch, batch_no=n)
                services.run_inline(spark, table, index, n)
            apply_batch(oracle, rows)
        else:
            with simulated_crash(crash_at), pytest.raises(SimulatedCrash), table:
                upsert(spark, table, index, batch, batch_no=n)
            table, index = open_table(uri, index_name, MOR)
        assert committed(uri) == oracle, (n, crash_at)
    with table:
        assert not table.pending_instants()
    actions = {a for _, a in table.completed_instants()}
    if any(crash is None for _, crash in steps):  # something committed: as delta commits
        assert "deltacommit" in actions and "commit" not in actions or \
            any(table.read_commit(i).get("operationType") == "COMPACT"
                for i, a in table.completed_instants() if a == "commit")
    assert verify_table(spark, uri) == []


def test_write_read_figure_puts_each_table_type_of_an_index_side_by_side():
    """The report's write-vs-read points: per series, write cost per batch with its
    compactions spread over the batches, and the lookups' cost per key."""
    from metrics.contract import to_frame
    from reports.figures import write_read_figure, write_read_points

    rows = []
    for tt, write_s, compact_s, read in (("cow", 4.0, 0.0, 100.0), ("mor", 1.0, 2.0, 300.0)):
        for b in range(3):
            rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt,
                         "operation": "upsert",
                         "batch": b, "write_s": write_s, "bytes_written": 1000.0 * write_s})
        if compact_s:
            rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt, "batch": 2,
                         "operation": "compaction", "write_s": compact_s,
                         "bytes_written": 500.0})
        rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt,
                     "operation": "query",
                     "query": "lookup", "keys": 10, "bytes_read": read * 10,
                     "latency_p50_s": read / 1000})
    rows = [{"run_id": "r1", **r} for r in rows]
    pts = write_read_points(to_frame(rows)).set_index("series")
    assert pts.loc["simple-bucket", "write_s"] == 4.0
    assert pts.loc["simple-bucket (mor)", "write_s"] == (2 * 1.0 + 2.0) / 2
    assert pts.loc["simple-bucket (mor)", "bytes_read_per_key"] == 300.0
    assert write_read_figure(to_frame(rows)) is not None
    assert write_read_figure(to_frame(rows[:3])) is None  # no lookups: no figure


# ---------------------------------------------------------------- kill -9
KILL_UPSERT = textwrap.dedent("""
    import sys
    import pandas as pd
    from indexbench.driver import open_table, upsert
    from indexbench.spark import get_session
    spark = get_session("local[1]", shuffle_partitions=2)
    table, index = open_table(sys.argv[1], "simple-bucket")
    batch = pd.DataFrame({"key": [f"k{i:04d}" for i in range(0, 400, 3)], "dt": "d",
                          "ts": 9, "payload": "killed"})
    with table:
        upsert(spark, table, index, spark.createDataFrame(batch), batch_no=9)
""")
KILL_COMPACT = textwrap.dedent("""
    import sys
    from indexbench.compact import compact_table
    from indexbench.spark import get_session
    compact_table(sys.argv[1], spark=get_session("local[1]", shuffle_partitions=2))
""")


def _load_mor(spark, uri: str) -> dict:
    """A MOR simple-bucket table with base files and logs (no inline compaction)."""
    table, index = open_table(uri, "simple-bucket", {"num_buckets": 4, **MOR,
                                                    "hoodie.compact.inline": "false"})
    oracle: dict = {}
    for b in range(3):
        keys = [f"k{i:04d}" for i in range(b * 100, b * 100 + 200)]
        batch = pd.DataFrame({"key": keys, "dt": "d", "ts": b, "payload": f"b{b}"})
        with table:
            upsert(spark, table, index, spark.createDataFrame(batch), batch_no=b)
        oracle.update({("d", k): (b, f"b{b}") for k in keys})
    return oracle


def _kill_mid_task(script: str, uri: str, point: str, written: str) -> str:
    """Run ``script`` on ``uri`` hanging at ``point``; kill -9 its process group once a
    file of the pending instant (``written``: "log" or "base") is on disk."""
    before = table_files(uri)
    proc = subprocess.Popen([sys.executable, "-c", script, uri],
                            env={**os.environ, CRASH_ENV: point},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline, new = time.time() + 150, []
        while time.time() < deadline and not new and proc.poll() is None:
            pending = Table(uri).pending_instants()
            new = [f for f in table_files(uri) - before if pending
                   and (is_log_file(f) if written == "log" else f.endswith(".parquet"))]
            time.sleep(0.2)
        assert new, f"the writer was expected mid-task with a {written} file written"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the writer, its JVM and its Python workers
        proc.wait(timeout=30)
    (instant,) = Table(uri).pending_instants()
    return instant


@pytest.mark.spark
@pytest.mark.parametrize("kind", ["delta commit", "compaction"])
def test_kill_9_mid_write_leaves_nothing_visible_and_the_next_writer_rolls_back(
        spark, tmp_path, kind):
    hudi = pytest.importorskip("hudi", minversion="0.5.0")
    uri = str(tmp_path / "t")
    oracle = _load_mor(spark, uri)
    files = table_files(uri)
    script, point, written = (KILL_UPSERT, HANG_IN_LOG_APPEND, "log") if kind == "delta commit" \
        else (KILL_COMPACT, HANG_IN_COMPACTION, "base")
    instant = _kill_mid_task(script, uri, point, written)
    action = "deltacommit" if kind == "delta commit" else "compaction"
    assert os.path.exists(f"{Table(uri).meta}/{instant}.{action}.inflight")
    if kind == "compaction":  # Hudi's Avro plan, naming every slice with logs
        from tableformat.compaction_plan import CompactionPlan

        snap = Table(uri).snapshot()
        plan = CompactionPlan.from_request(Table(uri).read_requested(instant, action), snap)
        assert {(s.partition, s.file_id) for s in plan.slices} == \
            {k for k, s in snap.slices.items() if s.logs}
    assert committed(uri) == oracle  # the harness's merged read: nothing of the instant
    ht = hudi.HudiTableBuilder.from_base_uri(uri).build()  # nor hudi-rs's
    got = pa.Table.from_batches(ht.read(), schema=ht.get_schema_with_meta_fields())
    assert {("d", k): (t, p) for k, t, p in zip(got.column("key").to_pylist(),
            got.column("ts").to_pylist(), got.column("payload").to_pylist(), strict=True)} \
        == oracle
    with Table(uri) as t:  # the next writer takes the dead writer's lock, rolls back
        assert t.rolled_back[0] == [instant]
    after = table_files(uri)
    assert files <= after and all(f.endswith((".rollback", ".writer.lock"))
                                  for f in after - files), after - files
    assert Table(uri).pending_instants() == []
    assert verify_table(spark, uri) == []
