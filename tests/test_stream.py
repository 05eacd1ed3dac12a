"""`indexbench stream` (docs/streaming.md): the producer, Hudi's streaming checkpoint and
skip rule, and exactly once under a real ``kill -9``.

Sizes are tiny (300 + 2 × 100 records; the kill tests 300 + 100). The kill tests start
one subprocess each (the one that is killed) and rerun the same command in this
process, on the session's Spark.
Between them the four (index, table type) cases cover both kill points for each index
and each table type: after the table commit but before Spark's commit log (the replayed
micro-batch must be skipped), and while a write is inflight (rolled back, then redone).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import read_snapshot
from test_oracle import apply_batch

from indexbench import api, cli, landing
from indexbench import stream as st
from indexbench.driver import HANG_BEFORE_COMMIT
from indexbench.interrupt import MESSAGE
from indexbench.workload_args import load_workload
from tableformat.table import Snapshot, Table
from workloads import generator as G
from writeclient.faults import CRASH_ENV

SIZES = {"batches": 2, "initial_records": 300, "batch_size": 100}
# throughput mode: fewer Spark jobs per micro-batch (the same counters and commits)
ARGS = ["--initial-records", "300", "--batches", "2", "--batch-size", "100", "--throughput",
        "--master", "local[2]"]
# the kill tests: micro-batches 0 and 1, killed in 1
KILL_ARGS = [a if i != ARGS.index("--batches") + 1 else "1" for i, a in enumerate(ARGS)]


def expected(w) -> dict:
    """The records the workload's batches leave, by Hudi's upsert rules (no Spark)."""
    oracle: dict = {}
    for b in range(w.batches + 1):
        t = G.batch_table(w, b).to_pydict()
        apply_batch(oracle, list(zip(t["key"], t["dt"], t["ts"], [False] * len(t["key"]),
                                     t["payload"], strict=True)))
    return oracle


def snapshot_records(uri: str) -> dict:
    snap = read_snapshot(uri)
    return {(d, k): (int(t), p) for k, d, t, p in
            zip(snap["key"], snap["dt"], snap["ts"], snap["payload"], strict=True)}


def checkpoint_ids(uri: str) -> list[int]:
    """The streaming batch id of every completed commit that holds one."""
    snap = Table(uri).snapshot()
    return sorted(int(next(iter(json.loads(e[st.SINK_CHECKPOINT_KEY]))))
                  for e in snap.extra.values() if st.SINK_CHECKPOINT_KEY in e)


def assert_exactly_once(uri: str, w) -> None:
    ids = checkpoint_ids(uri)
    assert ids == list(range(w.batches + 1)), ids  # each micro-batch in one commit
    assert snapshot_records(uri) == expected(w)


def no_stream_left(spark) -> None:
    assert spark.streams.active == []
    assert not [t for t in threading.enumerate() if t.name == "indexbench-producer"]


# ---- Spark-free --------------------------------------------------------------------------
def test_checkpoint_value_and_skip_rule_are_hudis():
    value = st.checkpoint_value(7, "local-123", "q-1")
    assert json.loads(value) == {"7": "local-123-q-1"}
    snap = Snapshot({}, ["001", "002", "003"], 0, None,
                    {"001": {st.SINK_CHECKPOINT_KEY: st.checkpoint_value(6, "a", "q")},
                     "002": {st.SINK_CHECKPOINT_KEY: value},
                     "003": {}},  # a table service's commit carries none: passed over
                    [], {})
    assert st.latest_committed_batch_id(snap) == 7
    assert st.can_skip_batch(snap, 7) and st.can_skip_batch(snap, 3)
    assert not st.can_skip_batch(snap, 8)
    empty = Snapshot({}, [], 0, None, {}, [], {})
    assert st.latest_committed_batch_id(empty) is None and not st.can_skip_batch(empty, 0)


def test_files_of_a_micro_batch_come_from_sparks_logs(tmp_path):
    ck = tmp_path / "ck"
    (ck / "offsets").mkdir(parents=True)
    (ck / "sources" / "0").mkdir(parents=True)
    for batch, log_offset in ((0, 0), (1, 2)):
        (ck / "offsets" / str(batch)).write_text(f'v1\n{{}}\n{{"logOffset":{log_offset}}}')
    for n in range(3):
        (ck / "sources" / "0" / str(n)).write_text(
            f'v1\n{{"path":"file:///l/batch-{n:06d}.parquet","timestamp":1,"batchId":{n}}}')
    assert st.files_of_micro_batch(str(ck), 0) == ["file:///l/batch-000000.parquet"]
    assert [landing.batch_of(p) for p in st.files_of_micro_batch(str(ck), 1)] == [1, 2]


def test_landing_is_atomic_idempotent_and_ordered(tmp_path):
    w = load_workload("uniform", **SIZES, seed=None)
    folder = str(tmp_path / "landing")
    first = landing.land(w, 0, folder)
    assert first is not None and landing.land(w, 0, folder) is None  # not landed twice
    assert landing.land(w, 1, folder) is not None
    names = sorted(os.listdir(folder))
    assert [n for n in names if not n.startswith(("_", "."))] == [
        "batch-000000.parquet", "batch-000001.parquet"]  # what Spark's file source reads
    mtimes = [os.stat(os.path.join(folder, landing.file_name(b))).st_mtime_ns for b in (0, 1)]
    assert mtimes[1] - mtimes[0] >= 1_000_000  # strictly later, by Hadoop's milliseconds
    got = landing.landed(folder)
    assert sorted(got) == [0, 1] and got[0]["landed_at"] == first and got[0]["rows"] == 300


def test_the_producer_lands_in_a_closed_loop_and_ends(tmp_path):
    w = load_workload("uniform", **SIZES, seed=None)
    folder = str(tmp_path / "landing")
    p = landing.Producer(w, folder, 0, 2, None, 0)
    p.start()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(folder, landing.file_name(0))):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.2)
    assert sorted(landing.landed(folder)) == [0]  # batch 1 waits for batch 0's commit
    p.committed(0)
    p.committed(1)
    p.join(30)
    assert not p.is_alive() and p.error is None and p.landed_here == [0, 1, 2]
    stopped = landing.Producer(w, str(tmp_path / "other"), 0, 2, None, 0)
    stopped.start()
    stopped.stop()
    stopped.join(30)
    assert not stopped.is_alive() and len(stopped.landed_here) <= 1


@pytest.mark.parametrize("argv, says", [
    (["--rate", "0"], "--rate: must be > 0"),
    (["--rate", "-2"], "--rate: must be > 0"),
    (["--trigger-interval", "soon"], "--trigger-interval"),
    (["--batches", "-1"], "--batches"),
])
def test_bad_input_is_one_error_before_anything_runs(tmp_path, capsys, argv, says):
    out = tmp_path / "o"
    assert cli.main(["stream", "--index", "simple-bucket", "--out", str(out), *argv]) == 2
    got = capsys.readouterr()
    assert got.out == "" and says in got.err and len(got.err.strip().splitlines()) == 1
    assert not out.exists()


def test_an_unknown_index_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["stream", "--index", "bloomm"])
    assert exc.value.code == 2 and "did you mean" in capsys.readouterr().err


# ---- Spark, in process -------------------------------------------------------------------
def test_stream_writes_every_batch_once_with_its_metrics(spark, tmp_path):
    out = str(tmp_path / "o")
    w = load_workload("uniform", **SIZES, seed=None)
    df = api.stream("simple-bucket", w, out=out, spark=spark)
    no_stream_left(spark)
    uri = str(tmp_path / "o" / "tables" / "simple-bucket")
    assert_exactly_once(uri, w)
    up = df[df["operation"] == "upsert"]
    assert list(up["batch"]) == [0, 1, 2] and list(up["stream_batch_id"]) == [0, 1, 2]
    assert list(up["input_records"]) == [300, 100, 100]
    assert (up["processing_s"] > 0).all() and (up["freshness_s"] > 0).all()
    assert (up["freshness_s"] >= up["processing_s"] - 1e-3).all()  # landed before it began
    assert list(up["backlog_batches"]) == [0, 0, 0]  # closed loop: nothing waits
    assert (up["input_rows_per_s"] == up["input_records"] / up["processing_s"]).all()
    # a checkpoint directory under .hoodie/ is no timeline file, for us or for hudi-rs
    assert os.path.isdir(os.path.join(uri, ".hoodie", st.CHECKPOINT_DIR))
    assert len(Table(uri).completed_instants()) == 3 and not Table(uri).pending_instants()
    hudi = pytest.importorskip("hudi")
    ht = hudi.HudiTableBuilder.from_base_uri(uri).build()
    assert sum(b.num_rows for b in ht.read()) == len(expected(w))
    assert sorted(i.timestamp for i in ht.get_timeline().get_completed_commits()) == \
        Table(uri).snapshot().completed
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert run["command"] == "stream" and run["stream"]["rate"] is None

    # Spark's commit log lost micro-batch 2 (a crash between the table commit and it):
    # the same stream again replays micro-batch 2, which the table's checkpoint skips
    for name in ("2", ".2.crc"):  # Hadoop's checksum file goes with it
        os.remove(os.path.join(uri, ".hoodie", st.CHECKPOINT_DIR, "commits", name))
    said: list[str] = []
    api.stream("simple-bucket", w, out=out, spark=spark, notify=said.append)
    no_stream_left(spark)
    assert any("resuming at batch 3" in s for s in said), said
    assert any("micro-batch 2 skipped" in s for s in said), said
    assert os.path.exists(os.path.join(uri, ".hoodie", st.CHECKPOINT_DIR, "commits", "2"))
    assert_exactly_once(uri, w)


def test_a_trigger_interval_gathers_landed_batches_and_a_checkpoint_keeps_its_folder(
        spark, tmp_path):
    """--rate lands faster than the interval triggers: a micro-batch holds several landed
    batches, each committed once; the checkpoint then refuses another landing folder."""
    out = str(tmp_path / "o")
    w = load_workload("uniform", **SIZES, seed=None)
    df = api.stream("simple-bucket", w, out=out, spark=spark, rate=50.0,
                    trigger_interval="1 second", timing="total")
    no_stream_left(spark)
    uri = str(tmp_path / "o" / "tables" / "simple-bucket")
    up = df[df["operation"] == "upsert"]
    ids = checkpoint_ids(uri)
    assert ids == sorted(set(ids)) == list(up["stream_batch_id"])  # each id committed once
    assert up["landed_batches"].sum() == 3 and list(up["batch"])[-1] == 2
    assert snapshot_records(uri) == expected(w)
    with pytest.raises(st.IndexBenchError, match="checkpoint"):
        api.stream("simple-bucket", w, out=out, spark=spark,
                   landing=str(tmp_path / "elsewhere"))
    no_stream_left(spark)


def test_ctrl_c_stops_the_stream_in_one_line(spark, tmp_path, capfd):
    out = tmp_path / "o"
    argv = ["stream", "--index", "simple-bucket", *ARGS[:7], "--out", str(out),
            "--rate", "1"]
    hoodie = out / "tables" / "simple-bucket" / ".hoodie"
    main = threading.main_thread().ident

    def interrupt_after_first_commit() -> None:
        deadline = time.monotonic() + 300
        while not list(hoodie.glob("*.commit")) and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(main, signal.SIGINT)

    threading.Thread(target=interrupt_after_first_commit, daemon=True).start()
    assert cli.main(argv) == 130
    time.sleep(0.5)
    assert capfd.readouterr().err.strip().splitlines() == [MESSAGE]
    no_stream_left(spark)
    assert cli.main(argv) == 0  # the same command finishes the stream
    assert_exactly_once(str(out / "tables" / "simple-bucket"),
                        load_workload("uniform", **SIZES, seed=None))


# ---- kill -9 -----------------------------------------------------------------------------
def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = open(f"/proc/{entry.name}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.spark
# The default run (CI) kills both indexes once each, before and after a commit, on
# merge-on-read; `pytest -m ''` adds copy-on-write.
@pytest.mark.parametrize("index_name, table_type, point", [
    pytest.param("simple-bucket", "cow", st.HANG_AFTER_COMMIT, marks=pytest.mark.exhaustive),
    ("simple-bucket", "mor", HANG_BEFORE_COMMIT),
    pytest.param("dynamic-rli", "cow", HANG_BEFORE_COMMIT, marks=pytest.mark.exhaustive),
    ("dynamic-rli", "mor", st.HANG_AFTER_COMMIT),
])
def test_kill_9_then_the_same_command_commits_every_micro_batch_once(
        spark, tmp_path, capsys, index_name, table_type, point):
    out = tmp_path / "o"
    argv = ["stream", "--index", index_name, "--table-type", table_type, *KILL_ARGS,
            "--out", str(out)]
    uri = out / "tables" / index_name
    env = {**{k: v for k, v in os.environ.items() if k != "INDEXBENCH_VERBOSE"},
           CRASH_ENV: f"{point}#2"}  # micro-batch 1, after batch 0 is committed
    proc = subprocess.Popen([sys.executable, "-m", "indexbench", *argv], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while True:  # until the writer waits at the point
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline
            table = Table(str(uri))
            if table.exists():
                ids = checkpoint_ids(str(uri))
                if point == st.HANG_AFTER_COMMIT and ids == [0, 1]:
                    break
                if point == HANG_BEFORE_COMMIT and ids == [0] and table.pending_instants():
                    break
            time.sleep(0.1)
        kids = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)  # a real kill -9
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
        proc.stderr.close()
    deadline = time.monotonic() + 60
    while any(_alive(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)  # its JVM ends once its driver's pipe closes
    capsys.readouterr()
    assert cli.main(argv) == 0
    said = capsys.readouterr().out
    if point == st.HANG_AFTER_COMMIT:
        assert "micro-batch 1 skipped" in said, said
    else:
        assert "rolled back unfinished instant" in said, said
    no_stream_left(spark)
    assert_exactly_once(str(uri), load_workload("uniform", **{**SIZES, "batches": 1}, seed=None))


# ---- report ------------------------------------------------------------------------------
def test_degradation_rate_is_lst_benchs():
    from reports.stream import degradation_rate

    assert degradation_rate([1.0, 1.1, 1.21]) == pytest.approx(0.1)
    assert degradation_rate([2.0, 1.0, 2.0]) == pytest.approx((-0.5 + 1.0) / 2)
    with pytest.raises(ValueError):
        degradation_rate([1.0])
    from reports.stream import trend_per_batch

    assert trend_per_batch([1.0, 1.1, 1.2]) == pytest.approx(0.1 / 1.1)
    assert trend_per_batch([1.0, 2.0, 1.0, 2.0, 1.0]) == pytest.approx(0.0, abs=1e-12)


def test_report_of_a_stream_run_draws_its_timeline(tmp_path):
    import pandas as pd

    from metrics import contract as m
    from reports import write_report
    from reports.stream import stream_timeline_figure

    rows = [{"run_id": "r", "index": "dynamic-rli", "workload": "uniform", "batch": b,
             "operation": "upsert", "records": 100, "stream_batch_id": b,
             "processing_s": 1.0 + b / 10, "freshness_s": 1.5 + b / 10, "total_s": 1.0,
             "index_mem_bytes": 1000 * (b + 1), "evictions": int(b == 2),
             "partitions_bootstrapped": int(b == 0), "table_records": 100 * (b + 1)}
            for b in range(4)]
    fig = stream_timeline_figure(pd.DataFrame(rows))
    lat, mem = fig.axes[:2]
    assert [len(ln.get_xdata()) for ln in lat.lines] == [4, 4]  # processing, freshness
    assert len(mem.lines) == 1 and len(mem.collections) == 2  # cache; evictions, bootstraps
    assert stream_timeline_figure(pd.DataFrame(rows).drop(columns="stream_batch_id")) is None
    m.write_metrics(tmp_path, rows)
    write_report([str(tmp_path)], str(tmp_path / "report"))
    assert (tmp_path / "report" / "stream_timeline.png").exists()
