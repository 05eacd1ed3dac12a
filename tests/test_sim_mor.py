"""The simulator on merge-on-read tables (Spark-free): the shared routing and compaction
rules, the model table's log files and compactions, and the record-size sample.

The real run's counters are compared with the simulator's in
tests/test_presets_e2e.py (``test_sim_reproduces_a_merge_on_read_run_exactly``).
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import workloads
from indexbench import cli
from indexbench.sim import record_size
from indexbench.sim.driver import simulate, simulate_compaction
from indexes.model_table import LogAppend, ModelTable
from indexes.roles import SimFooterBytes
from metrics.rows import as_modelled, table_figures
from tableformat.commit_metadata import COMMIT, DELTA_COMMIT, REPLACE, CommitTotals
from tableformat.compaction_plan import delta_commits_since_compaction, plan_compaction
from tableformat.table import FileSlice, LogFile, Snapshot
from tableformat.table_type import (
    COPY_ON_WRITE,
    MERGE_ON_READ,
    insert_candidates,
    writes_log_file,
)
from tableformat.write_config import WriteConfig

MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline.max.delta.commits": "2"}
SIZES = {"initial_records": 1200, "batches": 3, "batch_size": 400}


# ---------------------------------------------------------------- the shared rules
@pytest.mark.parametrize("table_type, can_log, exists, planned, pending, log", [
    (COPY_ON_WRITE, True, True, False, False, False),  # copy-on-write: always a base file
    (COPY_ON_WRITE, False, True, False, False, False),
    (MERGE_ON_READ, True, False, False, False, True),  # a bucket's new group: log-only
    (MERGE_ON_READ, True, True, False, False, True),
    (MERGE_ON_READ, False, True, False, False, True),  # bloom: updates only → its log
    (MERGE_ON_READ, False, True, True, False, False),  # bloom: a small file topped up
    (MERGE_ON_READ, False, False, True, False, False),  # bloom: a new file group
    (COPY_ON_WRITE, True, False, False, True, False),  # a dual write: the child's base file
    (MERGE_ON_READ, True, False, False, True, True),  # ... on MOR the child's log (RFC-42)
])
def test_writes_log_file_is_hudis_delta_commit_rule(table_type, can_log, exists, planned,
                                                   pending, log):
    assert writes_log_file(table_type, can_log, exists, planned, pending) is log


def _slice(fid: str, logs: int = 0, records: int = 10) -> FileSlice:
    s = FileSlice("p", fid, f"p/{fid}_0-1-0_20260101000000000.parquet", "20260101000000000",
                  records, 1000)
    for i in range(logs):
        s = s.with_log(LogFile(f"p/.{fid}_20260101000000000.log.{i + 1}_0-0-0",
                               f"2026010100000000{i + 1}", 3, 0, 100))
    return s


def test_insert_candidates_skip_slices_with_logs_only_where_the_index_needs_it():
    slices = [_slice("a", logs=1), _slice("b")]
    assert [s.file_id for s in insert_candidates(slices, MERGE_ON_READ, False)] == ["b"]
    assert [s.file_id for s in insert_candidates(slices, MERGE_ON_READ, True)] == ["a", "b"]
    assert [s.file_id for s in insert_candidates(slices, COPY_ON_WRITE, False)] == ["a", "b"]


def _snapshot(*commits: tuple[str, str]) -> Snapshot:
    """A snapshot of completed instants: (action, operationType) each."""
    snap = Snapshot({}, [], 0, None)
    for i, (action, op) in enumerate(commits):
        instant = f"2026010100000{i:04d}"
        snap.completed.append(instant)
        snap.commits.append(CommitTotals(instant, action, 0, 0))
        snap.operations[instant] = op
    return snap


def test_delta_commits_are_counted_since_the_last_compaction_as_hudi_does():
    assert delta_commits_since_compaction(_snapshot()) == 0
    snap = _snapshot((DELTA_COMMIT, "UPSERT"), (DELTA_COMMIT, "UPSERT"), (COMMIT, "COMPACT"),
                     (DELTA_COMMIT, "UPSERT"), (REPLACE, "CLUSTER"), (DELTA_COMMIT, "UPSERT"))
    assert delta_commits_since_compaction(snap) == 2  # a replacecommit neither counts nor resets
    snap.slices[("p", "a")] = _slice("a", logs=2)
    snap.slices[("p", "b")] = _slice("b")
    due = WriteConfig(table_type=MERGE_ON_READ, max_delta_commits=2)
    plan = plan_compaction(snap, MERGE_ON_READ, due)
    assert [s.file_id for s in plan.slices] == ["a"]
    assert plan.figures() == {"slices_compacted": 1, "log_files_compacted": 2,
                              "log_bytes_compacted": 200}
    assert plan_compaction(snap, MERGE_ON_READ, WriteConfig(max_delta_commits=3)) is None
    assert plan_compaction(snap, MERGE_ON_READ, WriteConfig(compact_inline=False)) is None
    assert plan_compaction(snap, MERGE_ON_READ, WriteConfig(max_delta_commits=9), force=True)
    assert plan_compaction(snap, COPY_ON_WRITE, due, force=True) is None


# ---------------------------------------------------------------- the model table
def test_model_log_files_make_slices_as_the_real_snapshot_assembles_them():
    model = ModelTable(100.0, file_bytes=1000, log_record_bytes=300, log_file_bytes=500,
                       table_type=MERGE_ON_READ)
    t0 = model.new_instant()
    model.commit(t0, [], logs=[LogAppend("p", "g", 10, 10)])  # a new bucket: log-only
    s = model.snapshot.slices[("p", "g")]
    assert (s.path, s.instant, s.num_records, s.base_records) == (None, t0, 10, 0)
    assert s.logs[0].path.endswith(f"/.g_{t0}.log.1_0-0-0") and s.logs[0].size_bytes == 3500
    t1 = model.new_instant()
    model.commit(t1, [], logs=[LogAppend("p", "g", 4, 1)])  # 3 updates, 1 new key
    s = model.snapshot.slices[("p", "g")]
    assert [lf.path.rsplit(".", 1)[-1] for lf in s.logs] == ["1_0-0-0", "2_0-0-0"]
    assert s.instant == t0 and model.merged_records("p", "g") == 11
    figures = table_figures(model.snapshot)
    assert figures == {"files_in_table": 2, "file_groups": 1, "table_records": 14,
                       "records_in_logs": 14, "log_files_in_table": 2}
    assert [c.action for c in model.snapshot.commits] == [DELTA_COMMIT, DELTA_COMMIT]
    assert model.snapshot.commits[-1].bytes_written == 0  # base files only (Hudi's average)

    class Index:  # the core only: no table figures
        pass

    class Adapter(SimFooterBytes):
        def file_index_bytes(self, partition, file_id, n):
            return 7

    config = WriteConfig(table_type=MERGE_ON_READ, max_delta_commits=2)
    [row] = simulate_compaction(Index(), Adapter(), model, config, batch_no=1)
    s = model.snapshot.slices[("p", "g")]
    assert (s.num_records, s.logs, s.index_bytes, s.size_bytes) == (11, (), 7, 1000 + 1100 + 7)
    assert row["operation"] == "compaction" and row["batch"] == 1
    assert (row["slices_compacted"], row["log_files_compacted"], row["files_read"]) == (1, 2, 2)
    assert (row["records"], row["files_written"], row["records_in_logs"]) == (11, 1, 0)
    assert row["files_in_table"] == 3 and row["log_bytes_compacted"] == 3500 + 1700
    modelled = as_modelled(dict(row))
    assert "log_bytes_compacted" not in modelled and modelled["model_log_bytes_compacted"] == 5200
    assert model.snapshot.operations[row["instant"]] == "COMPACT"
    assert simulate_compaction(Index(), Adapter(), model, config, 2) == []  # not due again


def test_model_hides_logs_of_a_pending_slice_until_its_base_instant_completes():
    """A dual write's log (base instant: a pending resize's) is written, counted and
    hidden, as Table.snapshot hides it; the resize's commit shows it after the child's
    base file, numbered in order, its new keys counted for the compaction."""
    model = ModelTable(100.0, log_record_bytes=10, table_type=MERGE_ON_READ)
    t = model.new_instant()  # the resize, planned and pending
    for n, new in ((5, 5), (3, 1)):  # two upserts dual-write the child "c"
        model.commit(model.new_instant(), [],
                     logs=[LogAppend("p", "c", n, new, base_instant=t), LogAppend("p", "g", 1, 0)])
    assert set(model.snapshot.slices) == {("p", "g")}  # the child is not visible
    assert model.snapshot.physical_files == 4  # its two logs are on storage
    model.commit(t, [model.slice_of("p", "c", t, 20)], replaced={"p": ["g"]})
    c = model.snapshot.slices[("p", "c")]
    assert c.instant == t and c.base_records == 20 and c.num_records == 28
    assert [lf.path.rsplit("/", 1)[-1] for lf in c.logs] == [
        f".c_{t}.log.1_0-0-0", f".c_{t}.log.2_0-0-0"]
    assert model.merged_records("p", "c") == 26 and ("p", "g") not in model.snapshot.slices
    assert table_figures(model.snapshot)["records_in_logs"] == 8
    model.commit(model.new_instant(), [], logs=[LogAppend("p", "c", 2, 0, base_instant=t)])
    assert len(model.snapshot.slices[("p", "c")].logs) == 3  # completed: joins at once


def test_a_merge_on_read_simulation_logs_compacts_and_counts_as_the_append_handle():
    df = simulate("simple-bucket", "uniform", params={"hoodie.bucket.index.num.buckets": "4",
                                                      **MOR}, write=False, **SIZES)
    assert (df["table_type"] == "mor").all()
    up, comp = df[df["operation"] == "upsert"], df[df["operation"] == "compaction"]
    assert comp["batch"].tolist() == [1, 3]  # after every second delta commit
    # Hudi's simple bucket index cannot index logs: a bucket's first write is a base
    # file (batch 0), later ones append to its logs, inserts and updates alike
    assert up["log_files_written"].tolist() == [0, 16, 16, 16]
    assert (up["files_written"] == 16).all()
    assert up["inserts"].tolist() == [1200, 0, 0, 0] and (up["updates"].iloc[1:] > 0).all()
    assert up["records_in_logs"].tolist() == [0, 384, 392, 782]
    assert comp["records"].tolist() == [1400, 1800] and (comp["records_in_logs"] == 0).all()
    assert (comp["model_log_bytes_compacted"] > 0).all() and comp["tag_s"].isna().all()
    assert (comp["model_tag_s"].isna()).all() and (comp["model_write_s"] > 0).all()
    assert (up["model_write_amplification"] > 0).all()
    cow = simulate("simple-bucket", "uniform", params={"hoodie.bucket.index.num.buckets": "4"},
                   write=False, **SIZES)
    assert (cow["table_type"] == "cow").all() and (cow["operation"] == "upsert").all()
    assert cow["table_records"].iloc[-1] == up["table_records"].iloc[-1] - 382  # logged twice


# bloom with every file small and a fixed room per file: the estimate stays the average
# record size (no commit reaches the threshold), so room = (max - size) // estimate = 50
# for any file under 250 kB, whatever its real bytes. The files that get no inserts get
# logs, and the next batch must skip them (tests/test_presets_e2e runs it for real).
BLOOM_TOP_UP = {"hoodie.index.bloom.num_entries": "100", "hoodie.index.bloom.fpp": "0.01",
                "hoodie.bloom.index.filter.dynamic.max.entries": "200", "indexbench.scale": "1",
                "hoodie.parquet.small.file.limit": str(10**12),
                "hoodie.parquet.max.file.size": "25250000",
                "hoodie.copyonwrite.record.size.estimate": "500000",
                "hoodie.record.size.estimation.threshold": str(10**6),
                "hoodie.copyonwrite.insert.auto.split": "false",
                "hoodie.copyonwrite.insert.split.size": "100"}


def test_bloom_on_merge_on_read_tops_up_only_base_files_without_logs():
    params = {**BLOOM_TOP_UP, **MOR}
    df = simulate("bloom", "uniform", params=params, write=False, **SIZES)
    up = df[df["operation"] == "upsert"]
    assert (up["log_files_written"].iloc[1:] > 0).all()  # updates of untouched files
    assert (up["small_file_inserts"].iloc[1:] > 0).all()
    assert (up["inserts"] + up["updates"] == up["records"]).all()
    # Hudi's candidates limit: at most one small file per partition and batch, and a
    # limit of 0 tops up none
    assert (up["small_files_topped_up"] <= up["partitions_touched"]).all()
    assert (up["small_files_topped_up"].iloc[1:] > 0).all()
    none = simulate("bloom", "uniform", params={**params, "hoodie.merge.small.file.group."
                                                "candidates.limit": "0"}, write=False, **SIZES)
    assert (none["small_file_inserts"].fillna(0) == 0).all()


def test_sim_table_type_options_reach_the_model(tmp_path):
    out = tmp_path / "sim"
    assert cli.main(["sim", "--indexes", "simple-bucket,dynamic-rli", "--table-type", "mor",
                     "--set", "hoodie.compact.inline.max.delta.commits=3", "--initial-records",
                     "600", "--batches", "3", "--batch-size", "200", "--out", str(out),
                     "--no-report"]) == 0
    df = pd.read_parquet(out / "metrics.parquet")
    assert (df["table_type"] == "mor").all()
    assert df.loc[df["operation"] == "compaction", "batch"].tolist() == [2, 2]
    df = simulate("dynamic-rli", "uniform", params={**MOR, "hoodie.compact.inline": "false"},
                  write=False, **SIZES)
    assert not (df["operation"] == "compaction").any() and df["records_in_logs"].iloc[-1] > 0


# ---------------------------------------------------------------- record bytes
@pytest.mark.parametrize("preset", ["uniform", "ycsb-hotspot", "hot-index-key"])
def test_sampled_record_bytes_fit_encoded_files_of_other_sizes(preset):
    """The line through two sample sizes predicts a file of another size within 3%."""
    w = workloads.load(preset)
    rb = record_size.measure(w)
    for n in (50, 300, 20000):
        base, log, arrow = record_size._sizes(w, n, "avro")
        assert base == pytest.approx(rb.base_file + n * rb.base_record, rel=0.03)
        assert log == pytest.approx(rb.log_file + n * rb.log_record, rel=0.03)
    assert rb.arrow_record == pytest.approx(arrow / 20000, rel=0.03)
    parquet = record_size.measure(w, "parquet")  # gzip Parquet blocks: smaller than Avro
    assert parquet.log_record < rb.log_record and parquet.base_record == rb.base_record


def test_the_sample_is_one_partition_sorted_by_key():
    rows = record_size.sample_records(workloads.load("uniform").with_overrides(
        initial_records=10), 300)
    assert rows.num_rows == 300 and len(rows.column("dt").unique()) == 1
    keys = rows.column("key").to_pylist()
    assert keys == sorted(keys) and rows.schema.field("ts").type == pa.int64()


@pytest.mark.parametrize("params", [{}, {"hoodie.bloom.index.filter.type": "SIMPLE"},
                                    {"hoodie.index.bloom.num_entries": "100",
                                     "hoodie.bloom.index.filter.dynamic.max.entries": "200",
                                     "indexbench.scale": "1"}])
def test_modelled_bloom_footers_are_the_real_footers_bytes(params):
    """A base file's size includes its filter: the simulator's footer length is the
    serialized text's, for any fill, without building the filter."""
    import indexes
    from indexes.bloom.sim import BloomSim

    index = indexes.get("bloom", **params)
    adapter = BloomSim(index, ModelTable(1.0))
    for n in (1, 59, 60, 61, 122, 400, 1000):
        _, real = index.base_file_footer(pa.array([f"key-{i:06d}" for i in range(n)]))
        assert adapter.file_index_bytes("p", "f", n) == real, n
