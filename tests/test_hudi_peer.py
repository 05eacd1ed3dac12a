"""The ``hudi`` peer: Hudi's own Spark writer on the same batches.

Spark-free: the parsers of what Hudi wrote and logged, run on output captured from Hudi
1.2.0's writer (tests/data/hudi: lookup-handle log lines, event-log job lines, a
copy-on-write commit, a merge-on-read delta commit); the counterparts every index
declares; the plan of a compare; the errors before anything runs. With Spark and Hudi
(marked ``hudi``): a tiny ``compare --peers`` whose Hudi rows carry Hudi's counters, our
rows unchanged by Hudi's presence, Hudi's tables read by hudi-rs, the JVM stopped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import indexes
import peers
from indexes import roles
from peers import hudi as H
from peers import hudi_logs as L
from peers import hudi_runtime as R
from tableformat.errors import IndexBenchError, TableConfigError

DATA = Path(__file__).parent / "data" / "hudi"
ROOT = Path(__file__).resolve().parents[1]


# --- parsers on captured output ------------------------------------------------------------

def test_lookup_lines_are_summed_as_hudi_logged_them():
    got = L.lookup_counters(open(DATA / "lookup.log"))
    # three handles: (248, 2/0, 2), (256, 21/0, 21), (264, 15/0, 15) as in the file
    lines = [ln for ln in open(DATA / "lookup.log") if "Total records" in ln]
    sums = [sum(int(L.LOOKUP_LINE.search(ln).group(i)) for ln in lines) for i in (1, 2, 3, 4)]
    assert got["candidate_files"] == len(lines) == 3
    assert got["footers_read"] == 3
    assert (got["bloom_checks"], got["bloom_positives"], got["false_positives"],
            got["true_positives"]) == tuple(sums)
    assert got["bloom_checks"] == 248 + 256 + 264
    assert got["files_read"] == 3


def test_a_handle_without_candidates_reads_no_keys():
    got = L.lookup_counters([
        "HoodieKeyLookupHandle Total records (100), bloom filter candidates (0)/fp(0), "
        "actual matches (0)",
        "HoodieKeyLookupHandle Total records (50), bloom filter candidates (3)/fp(1), "
        "actual matches (2)"])
    assert got == {"candidate_files": 2, "footers_read": 0, "bloom_checks": 150,
                   "bloom_positives": 3, "false_positives": 1, "true_positives": 2,
                   "files_read": 1}


@pytest.mark.parametrize(("description", "phase"), [
    ("HoodieWriteHelper:Tagging: hudi_bloom", "tag"),
    ("org.apache.hudi.index.bloom.HoodieBloomIndex:Obtain key ranges for file slices "
     "(range pruning=on)", "tag"),
    ("SparkHoodieBloomIndexHelper:Compute all comparisons needed between records and files",
     "tag"),
    ("SparkUpsertCommitActionExecutor:Building workload profile:hudi_bloom", "tag"),
    ("SparkRDDWriteClient:Committing stats: hudi_bloom", "write"),
    ("BaseSparkCommitActionExecutor:Doing partition and writing data: hudi_bloom", "write"),
    ("UpsertPartitioner:Getting small files from partitions: hudi_bloom", "write"),
    ("SparkRDDMetadataWriteClient:Committing stats: hudi_bloom_metadata", "commit"),
    ("SparkUpsertPreppedDeltaCommitActionExecutor:Building workload profile:"
     "hudi_bloom_metadata", "commit"),
    ("DirectWriteMarkersV1:Obtaining marker files for all created, merged paths", "commit"),
    ("SparkRDDWriteClient:Compacting file slices: hudi_bloom", "service"),
    (None, "other"),
])
def test_jobs_fall_in_hudis_phases(description, phase):
    assert L.phase_of(description, "hudi_bloom") == phase


def test_event_log_phases_of_a_captured_write():
    lines = open(DATA / "events.jsonl").read().splitlines()
    got = L.job_phases(lines, "hudi_simple")
    events = [json.loads(ln) for ln in lines]
    starts = {e["Job ID"]: e for e in events if e["Event"] == "SparkListenerJobStart"}
    ends = {e["Job ID"]: e for e in events if e["Event"] == "SparkListenerJobEnd"}
    assert got["jobs"] == len(ends) == len(starts)
    total = sum(ends[j]["Completion Time"] - s["Submission Time"] for j, s in starts.items())
    phases = ("tag", "write", "commit", "service", "other")
    assert sum(got[p] for p in phases) == pytest.approx(total / 1000)
    assert got["tag"] > 0 and got["write"] > 0 and got["commit"] > 0


def test_a_partial_event_line_is_skipped():
    assert L.job_phases(['{"Event":"SparkListenerJobStart","Job ID'], "t")["jobs"] == 0


def test_commit_figures_of_a_copy_on_write_commit():
    meta = L.read_instant(str(DATA / "bloom-cow.commit"))
    stats = L.write_stats(meta)
    got = L.commit_figures(stats)
    assert got["files_written"] == len(stats) == got["base_files_written"]
    assert got["log_files_written"] == 0
    assert got["inserts"] == sum(s["numInserts"] for s in stats) == 500
    assert got["updates"] == sum(s["numUpdateWrites"] for s in stats) == 471
    # every record of every file rewritten: 4495 of the table's 4500 (one file untouched)
    assert got["records_written"] == sum(s["numWrites"] for s in stats) == 4495
    assert got["bytes_written"] == sum(s["totalWriteBytes"] for s in stats)
    assert got["file_groups_written"] == len({s["fileId"] for s in stats})
    assert meta["extraMetadata"]["_indexbench.batch"] == "1"


def test_a_commits_merges_and_footer_keys_are_read_from_its_write_stats():
    """Every base file of the copy-on-write commit merged into its group's previous base
    file (``prevCommit``); Hudi's bloom index writes a filter of every key into each new
    base file's footer."""
    stats = L.write_stats(L.read_instant(str(DATA / "bloom-cow.commit")))
    got = L.commit_figures(stats, footers=True)
    assert got["merge_files_read"] == len(stats) == 34
    assert got["footer_keys_written"] == got["records_written"] == 4495
    assert got["footer_filters_written"] == 34  # one filter in each new base file
    assert L.commit_figures(stats)["footer_keys_written"] == 0  # no filters written
    assert L.commit_figures(stats)["footer_filters_written"] == 0


def test_a_log_append_and_a_new_file_merge_nothing():
    stats = L.write_stats(L.read_instant(str(DATA / "bucket-mor.deltacommit")))
    got = L.commit_figures(stats, footers=True)
    assert got["merge_files_read"] == 0 and got["footer_keys_written"] == 0  # logs only
    assert got["footer_filters_written"] == 0
    new = [{"path": "p/f_0-1-2_1.parquet", "prevCommit": "null", "numWrites": 7}]
    assert L.commit_figures(new, footers=True)["merge_files_read"] == 0
    assert L.commit_figures(new, footers=True)["footer_keys_written"] == 7


def test_the_record_level_index_figures_are_what_the_metadata_table_appended(tmp_path):
    """Hudi keeps its record-level index in the metadata table's record_index partition:
    the delta commit of the batch's instant there (captured from Hudi 1.2.0, a batch of
    10,000 new keys over 4 partitions) says what it appended, under the columns the
    counterpart names; a table without that commit (metadata table off) says nothing."""
    mdt = tmp_path / ".hoodie" / "metadata" / ".hoodie"
    mdt.mkdir(parents=True)
    (mdt / "20261201214811467.deltacommit").write_bytes(
        (DATA / "rli-metadata.deltacommit").read_bytes())
    counterpart = roles.hudi_counterpart(indexes.index_class("dynamic-rli"))
    got = L.metadata_figures(str(tmp_path), "20261201214811467",
                             counterpart.metadata_figures)
    assert got == {"rli_entries_written": 10_000, "rli_files_written": 4,
                   "rli_bytes_written": 291_740}
    assert L.metadata_figures(str(tmp_path), "20261201214811468",
                              counterpart.metadata_figures) == {}


def test_commit_figures_of_a_merge_on_read_delta_commit():
    stats = L.write_stats(L.read_instant(str(DATA / "bucket-mor.deltacommit")))
    got = L.commit_figures(stats)
    assert got["log_files_written"] == got["files_written"] == 64
    assert got["base_files_written"] == 0
    # Hudi counts every record appended to a log as an update write, inserts included
    assert got["inserts"] == 0 and got["updates"] == 971 == got["log_records_written"]


def test_completed_instants_of_both_timeline_layouts(tmp_path):
    v6 = tmp_path / "v6" / ".hoodie"
    v6.mkdir(parents=True)
    for name in ("20260101000000000.commit", "20260101000000000.commit.requested",
                 "20260101000001000.deltacommit.inflight", "20260101000002000.clean",
                 "hoodie.properties"):
        (v6 / name).write_text("{}")
    assert [(i, a) for i, a, _ in L.completed_instants(str(v6.parent))] == [
        ("20260101000000000", "commit"), ("20260101000002000", "clean")]
    v8 = tmp_path / "v8" / ".hoodie" / "timeline"
    v8.mkdir(parents=True)
    (v8 / "20260101000000000_20260101000000500.deltacommit").write_text("{}")
    (v8 / "20260101000001000.deltacommit.inflight").write_text("")
    assert [(i, a) for i, a, _ in L.completed_instants(str(v8.parent.parent))] == [
        ("20260101000000000", "deltacommit")]


def test_a_tables_data_files_leave_out_hadoops_checksums(tmp_path):
    """Hadoop's local file system writes ``.<name>.crc`` beside each file Hudi writes: a
    log file's checksum holds ``.log.`` in its name (batch 1 of a 1M merge-on-read
    ``hudi-bloom`` wrote 9 base and 812 log files, and ``files_in_table`` grew by 1,633:
    the 812 logs' checksums too)."""
    fid = "0f0e0d0c-0000-4000-8000-000000000000-0"
    part = tmp_path / "2026-01-01"
    part.mkdir()
    files = {f"{fid}_1-0-1_20260101000000000.parquet": 100,
             f".{fid}_20260101000000000.log.1_1-0-1": 40,
             f".{fid}_20260101000000000.log.2_1-0-1": 60}
    for name, size in files.items():
        (part / name).write_bytes(b"x" * size)
        (part / f".{name}.crc").write_bytes(b"c" * 12)
    (tmp_path / ".hoodie").mkdir()
    (tmp_path / ".hoodie" / "20260101000000000.deltacommit").write_text("{}")
    assert H._table_files(str(tmp_path)) == (3, 200)


# --- counterparts, plan, settings ----------------------------------------------------------

@pytest.mark.parametrize("name", indexes.names())
def test_a_counterpart_gives_hudi_an_index_type(name):
    cp = roles.hudi_counterpart(indexes.index_class(name))
    if cp is None:
        assert f"hudi-{name}" not in peers.PEERS["hudi"].all_series()
        return
    opts = cp.options(indexes.get(name))
    assert opts["hoodie.index.type"] in ("BLOOM", "BUCKET", "RECORD_LEVEL_INDEX", "SIMPLE")
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in opts.items())
    assert f"hudi-{name}" in peers.PEERS["hudi"].all_series()


def test_bloom_counterpart_takes_the_sizes_the_run_used():
    idx = indexes.get("bloom", **{"indexbench.scale": "1/100"})
    opts = idx.HUDI.options(idx)
    d = idx.describe()
    assert opts["hoodie.parquet.max.file.size"] == str(d["effective_max_file_size"])
    assert opts["hoodie.index.bloom.num_entries"] == str(d["effective_num_entries"])
    assert opts["hoodie.parquet.small.file.limit"] == str(d["effective_small_file_limit"])


def test_bucket_counterparts_take_the_count_and_rules():
    sb = indexes.get("simple-bucket", **{"hoodie.bucket.index.num.buckets": "8"})
    assert sb.HUDI.options(sb)["hoodie.bucket.index.num.buckets"] == "8"
    pb = indexes.get("partition-bucket",
                     **{"hoodie.bucket.index.partition.expressions": "2026-01-0[12],4"})
    opts = pb.HUDI.options(pb)
    assert opts["hoodie.bucket.index.partition.expressions"] == "2026-01-0[12],4"
    assert opts["hoodie.bucket.index.partition.rule.type"] == "regex"


def test_plan_follows_the_run_and_leaves_out_what_hudi_refuses():
    plan = peers.planned(["hudi"], ["bloom", "consistent-hashing", "multiple-rehash"],
                         ["cow", "mor"])
    got = [(p.label, bool(p.absent)) for p in plan]
    assert got == [("hudi-simple", False), ("hudi-simple (mor)", False),
                   ("hudi-bloom", False), ("hudi-bloom (mor)", False),
                   ("hudi-consistent-hashing", True), ("hudi-consistent-hashing (mor)", False)]
    # a series named alone runs whatever the indexes
    assert [p.label for p in peers.planned(["hudi-bloom"], ["simple-bucket"])] == ["hudi-bloom"]


def test_settings_are_hudi_keys_and_a_table_version_hudi_writes():
    H.check_settings({"hoodie.metadata.enable": "false", "hoodie.write.table.version": "9"})
    with pytest.raises(IndexBenchError, match="hoodie"):
        H.check_settings({"metadata.enable": "false"})
    with pytest.raises(IndexBenchError, match="table version"):
        H.check_settings({"hoodie.write.table.version": "5"})


def test_table_options_mirror_the_index_and_the_table(tmp_path):
    t = H.HudiPeerTable(str(tmp_path / "t"), "fp", series="hudi-simple-bucket",
                        index_params={"simple-bucket": {
                            "hoodie.bucket.index.num.buckets": "4",
                            "hoodie.compact.inline.max.delta.commits": "2"}},
                        table_type="MERGE_ON_READ",
                        settings={"hoodie.metadata.enable": "false"})
    o = t.options
    assert o["hoodie.datasource.write.table.type"] == "MERGE_ON_READ"
    assert o["hoodie.bucket.index.num.buckets"] == "4"
    assert o["hoodie.compact.inline.max.delta.commits"] == "2"
    assert o["hoodie.metadata.enable"] == "false"
    assert o["hoodie.write.table.version"] == "6"
    assert (o["hoodie.datasource.write.recordkey.field"],
            o["hoodie.datasource.write.partitionpath.field"],
            o["hoodie.datasource.write.precombine.field"]) == ("key", "dt", "ts")
    with pytest.raises(TableConfigError, match="does not work with COW table"):
        H.HudiPeerTable(str(tmp_path / "c"), "fp", series="hudi-consistent-hashing",
                        table_type="COPY_ON_WRITE")
    simple = H.HudiPeerTable(str(tmp_path / "s"), "fp", series="hudi-simple",
                             index_params={"bloom": {"indexbench.scale": "1/100"}})
    bloom = indexes.get("bloom", **{"indexbench.scale": "1/100"})
    assert simple.options["hoodie.index.type"] == "SIMPLE"
    assert simple.options["hoodie.parquet.max.file.size"] == \
        bloom.HUDI.options(bloom)["hoodie.parquet.max.file.size"]


# --- errors before anything runs -------------------------------------------------------------

def _cli(*args: str, env: dict[str, str] | None = None, cwd: str | None = None):
    return subprocess.run([sys.executable, "-m", "indexbench", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, cwd=cwd or ROOT,
                          timeout=300, check=False)


def test_a_missing_bundle_is_one_error_line_before_spark(tmp_path):
    out = tmp_path / "out"
    done = _cli("compare", "--indexes", "simple-bucket", "--peers", "hudi", "--out", str(out),
                "--initial-records", "100", "--batches", "1", "--batch-size", "10",
                env={R.BUNDLE_ENV: str(tmp_path / "no-such.jar")})
    assert done.returncode == 2
    errors = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and errors[0].startswith("error:")
    assert R.BUNDLE_ENV in errors[0] and "no such file" in errors[0]
    assert not (out / "tables").exists()


def test_without_maven_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.delenv(R.BUNDLE_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.m2 jar here
    monkeypatch.setenv("PATH", str(tmp_path))  # and no mvn
    with pytest.raises(R.HudiUnavailableError, match="install Maven"):
        R.bundle_jar()


def test_hudi_settings_need_the_hudi_peer(tmp_path):
    done = _cli("compare", "--indexes", "simple-bucket", "--set",
                "hudi:hoodie.metadata.enable=false", "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and "--peers hudi" in done.stderr
    done = _cli("run", "--index", "simple-bucket", "--set",
                "hudi:hoodie.metadata.enable=false", "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "compare --peers hudi" in done.stderr


# --- Hudi's writer on the same batches (Spark, Hudi's bundle) --------------------------------

SIZES = {"initial_records": 2000, "batches": 1, "batch_size": 500}
# bloom's filters at Hudi's bit positions (as `indexbench fidelity` runs it): Hudi's
# writer probes them when it continues the table
PARAMS = {"bloom": {"indexbench.bloom.hash": "hudi"}}


@pytest.fixture(scope="module")
def hudi_compare(tmp_path_factory, spark):
    """bloom and simple-bucket, both table types, beside Hudi's writer for each; and
    dynamic-rli's tables (the record-level family) for Hudi's reader."""
    from indexbench import api

    out = str(tmp_path_factory.mktemp("hudi") / "out")
    df = api.compare(["bloom", "simple-bucket", "dynamic-rli"], "uniform", out=out,
                     spark=spark, params=PARAMS,
                     peers=["hudi-bloom", "hudi-simple-bucket"], table_types=("cow", "mor"),
                     query_phase=False, run_id="with-hudi", **SIZES)
    return out, df


@pytest.mark.hudi
def test_hudi_rows_carry_hudis_own_counters(hudi_compare):
    out, df = hudi_compare
    up = df[df["operation"] == "upsert"]
    theirs = up[up["run_mode"] == "peer"]
    assert sorted(set(zip(theirs["index"], theirs["table_type"], strict=True))) == [
        ("hudi-bloom", "cow"), ("hudi-bloom", "mor"), ("hudi-simple-bucket", "cow"),
        ("hudi-simple-bucket", "mor")]
    assert set(theirs["peer_of"]) == {"bloom", "simple-bucket"}
    for _, row in theirs.iterrows():
        assert row["total_s"] > 0 and row["write_s"] > 0 and row["commit_s"] > 0
        assert row["tag_s"] + row["write_s"] + row["commit_s"] <= row["total_s"] + 1e-6
        assert row["hudi_table_version"] == 6
        assert row["table_records"] == SIZES["initial_records"] + \
            (row["batch"] >= 1) * up[(up["index"] == "bloom") & (up["batch"] == 1)][
                "inserts"].iloc[0]
    bloom1 = theirs[(theirs["index"] == "hudi-bloom") & (theirs["batch"] == 1)]
    for _, row in bloom1.iterrows():  # the lookup handle's lines: every update found
        assert row["candidate_files"] > 0 and row["bloom_checks"] > 0
        assert row["true_positives"] == row["updates"]
        assert row["bloom_positives"] == row["true_positives"] + row["false_positives"]
    bucket = theirs[theirs["index"] == "hudi-simple-bucket"]
    assert bucket["candidate_files"].isna().all()  # no bloom lookup: empty, not 0
    run = json.load(open(os.path.join(out, "run.json")))
    for label in ("hudi-bloom", "hudi-bloom (mor)", "hudi-simple-bucket",
                  "hudi-simple-bucket (mor)"):
        info = run["peers"][label]
        assert info["hudi"] == R.HUDI_VERSION and info["table_version"] == "6"
        assert info["records_check"].startswith("equal")
    assert not H.running()  # compare stopped the JVM it started
    with open(os.path.join(out, "tables", "hudi", "hudi-bloom-mor", ".hoodie",
                           "hoodie.properties")) as f:
        props = f.read()
    assert "hoodie.table.version=6" in props and "hoodie.table.type=MERGE_ON_READ" in props


@pytest.mark.hudi
def test_our_rows_do_not_change_with_hudi_beside_them(hudi_compare, tmp_path, spark):
    from indexbench import api

    _out, with_hudi = hudi_compare
    alone = api.compare(["bloom", "simple-bucket"], "uniform", out=str(tmp_path / "o"),
                        spark=spark, params=PARAMS, table_types=("cow", "mor"), query_phase=False,
                        run_id="alone", **SIZES)
    cols = ["index", "table_type", "batch", "records", "inserts", "updates",
            "candidate_files", "files_read", "bloom_checks", "false_positives",
            "files_written", "bytes_written", "table_records", "file_groups"]

    def ours(df: pd.DataFrame) -> pd.DataFrame:
        mode = df["run_mode"] if "run_mode" in df.columns else pd.Series("", index=df.index)
        up = df[(df["operation"] == "upsert") & (mode.fillna("") != "peer")
                & df["index"].isin(["bloom", "simple-bucket"])]
        return up[cols].sort_values(["index", "table_type", "batch"]).reset_index(drop=True)

    # with Hudi's rows beside them a count column holds NaN (theirs) and turns float
    pd.testing.assert_frame_equal(ours(with_hudi), ours(alone), check_dtype=False)


@pytest.mark.hudi
def test_hudi_rs_reads_hudis_tables(hudi_compare):
    hudi = pytest.importorskip("hudi")
    out, df = hudi_compare
    for name in ("hudi-bloom-cow", "hudi-simple-bucket-mor"):
        ht = hudi.HudiTableBuilder.from_base_uri(
            os.path.join(out, "tables", "hudi", name)).build()
        assert sum(b.num_rows for b in ht.read()) == \
            df[(df["index"] == "bloom") & (df["batch"] == 1)]["table_records"].iloc[0]


@pytest.mark.hudi
def test_verify_checks_hudis_tables(hudi_compare, spark):
    """Version 6, as Hudi 1.2 writes it (ordering under hoodie.table.ordering.fields, no
    index in the properties): this project's reader opens every table Hudi wrote, and
    verify finds every table-format invariant holding (committed files, footer ranges,
    partition metadata, unique keys, merged logs on merge-on-read)."""
    import indexes
    from indexbench import api
    from tableformat.errors import TableConfigError
    from tableformat.table import Table

    out, _df = hudi_compare
    for name in ("hudi-bloom-cow", "hudi-bloom-mor", "hudi-simple-bucket-cow",
                 "hudi-simple-bucket-mor"):
        uri = os.path.join(out, "tables", "hudi", name)
        config = Table(uri).config
        assert config.written_by_hudi and config.ordering_field == "ts"
        assert api.verify(uri, spark=spark) == [], name
    with pytest.raises(TableConfigError, match="written by Hudi's own writer"):
        indexes.from_table_config(config)


@pytest.mark.hudi
def test_the_report_puts_hudi_beside_each_index(hudi_compare):
    from reports.page import write_report
    from reports.peer_pairs import pairs

    out, df = hudi_compare
    p = pairs(df)
    assert sorted(zip(p["index"], p["table_type"], strict=True)) == [
        ("bloom", "cow"), ("bloom", "mor"), ("simple-bucket", "cow"), ("simple-bucket", "mor")]
    assert (p["files_read (hudi-bloom)"].dropna() > 0).all()
    page = write_report([out])
    assert (page.parent / "hudi_side_by_side.png").is_file()
    assert "Beside Hudi&#x27;s own writer" in page.read_text() or \
        "Beside Hudi's own writer" in page.read_text()


@pytest.mark.hudi
def test_the_hudi_jvm_ends_with_the_process_that_started_it(tmp_path):
    """kill -9 of the harness: Hudi's writer sees its pipe close and stops (its JVM and
    Python both gone), so no JVM outlives a killed run."""
    import signal
    import time

    script = ("import sys, time\nfrom peers import hudi\n"
              f"j = hudi.job({str(tmp_path)!r})\n"
              "print(j.proc.pid, flush=True)\ntime.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    def alive(pid: int) -> bool:  # a zombie (no init reaping it here) counts as gone
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def jvms() -> str:  # Hudi's JVM: its command line names this log folder
        return subprocess.run(["pgrep", "-f", f"log4j2.configurationFile={tmp_path}"],
                              capture_output=True, text=True).stdout.strip()

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (alive(child) or jvms()):
        time.sleep(0.5)
    if alive(child) or jvms():
        for pid in [child, *map(int, jvms().split())]:
            os.kill(pid, signal.SIGKILL)
        pytest.fail("Hudi's writer outlived the killed harness")


def test_hudis_writer_ends_mid_request_when_its_parent_is_killed(tmp_path):
    """The writer reads its pipe only between requests; a parent killed during a long
    write must still not leave it running: its watchdog sees the parent gone and ends
    it (its main thread here busy for ten minutes, as in a write)."""
    import signal
    import time

    child_code = ("import threading, os, time, sys\n"
                  f"sys.path.insert(0, {os.path.join(ROOT, 'peers')!r})\n"
                  "import hudi_job\n"
                  "threading.Thread(target=hudi_job._exit_when_orphaned,"
                  " args=(os.getppid(),), daemon=True).start()\n"
                  "print(os.getpid(), flush=True)\ntime.sleep(600)\n")
    script = ("import subprocess, sys, time\n"
              f"c = subprocess.Popen([sys.executable, '-c', {child_code!r}], "
              "stdout=subprocess.PIPE, text=True)\n"
              "print(c.stdout.readline().strip(), flush=True)\ntime.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                              text=True)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and os.path.exists(f"/proc/{child}"):
        with open(f"/proc/{child}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                break
        time.sleep(0.2)
    else:
        if os.path.exists(f"/proc/{child}"):
            os.kill(child, signal.SIGKILL)
            pytest.fail("the writer's process outlived its killed parent mid-request")


@pytest.mark.hudi
def test_fidelity_checks_ours_against_hudis_tables(hudi_compare, capsys):
    """indexbench fidelity on the run: simple-bucket meets every tolerance on both table
    types (same records in the same file groups, base files and logs alike, bytes within
    15%), and bloom's checks carry our, Hudi's and the simulator's figures."""
    from indexbench import cli
    from reports import fidelity as F

    out, df = hudi_compare
    assert cli.main(["fidelity", out, "--no-reads"]) == 0  # reads: the test below
    printed = capsys.readouterr().out
    assert "simple-bucket (cow)" in printed and "fidelity.md" in printed
    checks = pd.read_csv(os.path.join(out, F.FIDELITY_CSV))
    assert sorted(set(zip(checks["index"], checks["table_type"], strict=True))) == [
        ("bloom", "cow"), ("bloom", "mor"), ("simple-bucket", "cow"), ("simple-bucket", "mor")]
    bucket = checks[checks["index"] == "simple-bucket"]
    assert (bucket["status"] == F.PASS).all(), bucket[bucket["status"] != F.PASS]
    placed = bucket[bucket["check"] == F.PLACED.name]
    assert (placed["ours"] == 1.0).all() and len(placed) == 2
    mor = bucket[(bucket["table_type"] == "mor") & (bucket["check"] == "log files written")]
    assert mor.set_index("batch")["ours"].to_dict() == {0: 0, 1: 64}  # first write: base files
    bloom = checks[(checks["index"] == "bloom") & (checks["batch"] == 1)]
    fp = bloom[bloom["check"] == "false positives"]
    assert len(fp) == 2 and fp["sim"].notna().all()  # the simulator's column
    ours = df[(df["index"] == "bloom") & (df["batch"] == 1) & (df["table_type"] == "cow")]
    assert fp[fp["table_type"] == "cow"]["ours"].iloc[0] == ours["false_positives"].iloc[0]
    assert set(checks["status"]) <= {F.PASS, F.FAIL, F.EXPLAINED, F.INFO}
    text = open(os.path.join(out, F.FIDELITY_MD)).read()
    assert "### simple-bucket (mor)" in text and "| batch | check | ours | Hudi's |" in text
    strict = cli.main(["fidelity", out, "--strict", "--no-sim", "--no-reads"])
    assert strict == (1 if (pd.read_csv(os.path.join(out, F.FIDELITY_CSV))["status"]
                            == F.FAIL).any() else 0)


@pytest.mark.hudi
def test_hudi_reads_our_tables_as_the_oracle_says(hudi_compare, capsys):
    """Hudi's datasource reads one table of each family on both table types: snapshot,
    read-optimized, incremental from batch 0 and time travel to it, record for record
    (commit times too) what the workload's oracle holds."""
    from indexbench import cli
    from indexbench import hudi_reads as HR

    out, df = hudi_compare
    assert cli.main(["hudi-read", out]) == 0
    checks = pd.read_csv(os.path.join(out, HR.READS_CSV))
    assert sorted(set(zip(checks["index"], checks["table_type"], strict=True))) == [
        (i, t) for i in ("bloom", "dynamic-rli", "simple-bucket") for t in ("cow", "mor")]
    assert checks.groupby(["index", "table_type"])["query"].apply(set).map(
        lambda q: q == set(H.QUERIES)).all()
    assert (checks["status"] == "pass").all(), checks[checks["status"] != "pass"]
    snap = checks[checks["query"] == "snapshot"]
    # copy-on-write's table_records are the live records (merge-on-read's count log
    # records too, before they merge)
    final = df[(df["operation"] == "upsert") & (df["batch"] == 1) &
               df["index"].isin(["bloom", "simple-bucket", "dynamic-rli"]) &
               (df["table_type"] == "cow")]["table_records"]
    assert set(snap["read"]) == set(final) == {2250}  # 2000 + 500 rows, half updates
    incr = checks[checks["query"] == "incremental"]
    batch1 = df[(df["operation"] == "upsert") & (df["batch"] == 1) &
                (df["index"] == "bloom")]["records"]  # 500 rows, 488 distinct keys
    assert set(incr["read"]) == set(batch1) == {488} and (incr["batch"] == 0).all()
    assert "24 of 24 queries equal the oracle" in capsys.readouterr().out


def test_hudi_read_options_name_each_query():
    assert H.read_options("read_optimized") == {
        "hoodie.datasource.query.type": "read_optimized"}
    assert H.read_options("incremental", "20260101000000000")[
        "hoodie.datasource.read.begin.instanttime"] == "20260101000000000"
    assert H.read_options("time_travel", "1")["as.of.instant"] == "1"
    with pytest.raises(IndexBenchError, match="needs an instant"):
        H.read_options("time_travel")
    with pytest.raises(IndexBenchError, match="one of snapshot"):
        H.read_options("cdc")


@pytest.mark.hudi
def test_hudi_continues_our_tables(hudi_compare, tmp_path, spark):
    """Hudi's writer upserts batch 2 into copies of our simple-bucket (both table types)
    and bloom (copy-on-write) tables with their index settings: it finds every existing
    key through our bucket file names and footer filters (updates as ours count them),
    and afterwards hudi-rs, verify and the oracle agree on every record."""
    import shutil

    import hudi
    from conftest import read_snapshot

    import workloads
    from indexbench import api
    from indexbench.hudi_continue import continue_with_hudi
    from workloads.oracle import Oracle, difference

    out, df = hudi_compare
    run = json.load(open(os.path.join(out, "run.json")))
    w = workloads.Workload(**{**run["workload"], "batches": 2})
    want = Oracle(w).state(2)
    for name in ("simple-bucket-cow", "simple-bucket-mor", "bloom-cow"):
        uri = str(tmp_path / name)
        shutil.copytree(run["tables"][name], uri)
        (row,) = continue_with_hudi(uri, w, logs_dir=str(tmp_path / "_jvm"))
        assert row["batch"] == 2 and row["peer_writer"].startswith("hudi ")
        assert row["table_records"] == want.num_rows
        assert api.verify(uri, spark=spark) == [], name
        ours = pa.Table.from_pandas(read_snapshot(uri), preserve_index=False)
        ht = hudi.HudiTableBuilder.from_base_uri(uri).build()
        theirs = pa.Table.from_batches(ht.read(), schema=ht.get_schema_with_meta_fields())
        for got in (ours, theirs):
            d = difference(want, got)
            assert d["read"] == d["expected"] and d["missing"] == d["unexpected"] == \
                d["differ"] == d["duplicates"] == 0, (name, d)
        if name == "bloom-cow":  # Hudi's lookup found batch 2's existing keys in our files
            assert row["true_positives"] == row["updates"] > 0


@pytest.mark.parametrize(("name", "index_type", "why"), [
    ("bloom", "BLOOM", "indexbench.bloom.hash=hudi"),
    ("dynamic-rli", "BUCKET", "its own partitioned RLI")])
def test_hudi_refuses_to_continue_a_table_it_cannot_probe(tmp_path, name, index_type, why):
    """bloom with pybloom-live's bit positions (the default), and dynamic-rli (its map
    lives where Hudi's writer does not look): one line, nothing run."""
    import workloads
    from indexbench.hudi_continue import continue_with_hudi
    from tableformat.table import Table, TableConfig

    uri = str(tmp_path / "t")
    Table.create_or_open(uri, TableConfig(name="t", record_key_field="key",
                                          partition_field="dt", ordering_field="ts",
                                          index_name=name, index_type=index_type))
    before = sorted(os.listdir(os.path.join(uri, ".hoodie")))
    with pytest.raises(TableConfigError, match=why):
        continue_with_hudi(uri, workloads.Workload(initial_records=10, batches=1,
                                                   batch_size=5))
    assert sorted(os.listdir(os.path.join(uri, ".hoodie"))) == before  # nothing written


def test_our_writer_refuses_a_table_hudis_writer_made_in_one_line(tmp_path, capsys):
    from indexbench import cli

    uri = tmp_path / "h" / ".hoodie"
    uri.mkdir(parents=True)
    (uri / "hoodie.properties").write_text(
        "hoodie.table.name=h\nhoodie.table.version=6\nhoodie.table.recordkey.fields=key\n"
        "hoodie.table.partition.fields=dt\nhoodie.table.ordering.fields=ts\n")
    before = sorted(p.name for p in uri.iterdir())
    rc = cli.main(["run", "--index", "simple-bucket", "--table", str(tmp_path / "h"),
                   "--initial-records", "10", "--batches", "1", "--batch-size", "5",
                   "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "written by Hudi's own writer" in err
    assert sorted(p.name for p in uri.iterdir()) == before  # nothing written



@pytest.mark.hudi
def test_hudi_time_travels_to_before_a_compaction_of_ours(tmp_path, spark):
    """Merge-on-read, a compaction after batch 1 (two delta commits), batch 2 on top:
    Hudi's time travel to batch 1 merges the logs of that point. Hudi 1.x takes a
    version-6 instant's completion time from its file's modification time, so each
    completed instant of ours carries its own instant as that time (benchmark clock):
    with the wall clock's, Hudi put the logs after the compaction and read base files
    alone."""
    from indexbench import api
    from indexbench import hudi_reads as HR
    from tableformat.table import Table, parse_instant

    out = str(tmp_path / "out")
    api.compare(["simple-bucket"], "uniform", out=out, spark=spark, table_types=("mor",),
                params={"simple-bucket": {"hoodie.compact.inline.max.delta.commits": "2"}},
                query_phase=False, initial_records=1000, batches=2, batch_size=300)
    run = json.load(open(os.path.join(out, "run.json")))
    (path,) = run["tables"].values()
    snap = Table(path).snapshot()
    instants = HR.batch_instants(Table(path).snapshot())
    compactions = [i for i, op in snap.operations.items() if op == "COMPACT"]
    assert compactions and instants[1] < compactions[0] < instants[2]
    checks = HR.check(out)
    travel = checks[checks["query"] == "time_travel"]
    assert travel["batch"].tolist() == [1]
    assert (checks["status"] == "pass").all(), checks[checks["status"] != "pass"]
    meta = os.path.join(path, ".hoodie")
    done = [n for n in os.listdir(meta) if n.endswith((".deltacommit", ".commit"))]
    for name in done:  # each completed instant "completed" at its own instant
        assert os.path.getmtime(os.path.join(meta, name)) == parse_instant(name[:17]) / 1000
