"""The command line: list, run, compare, verify (in-process, sharing the test session)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from indexbench import cli
from metrics.contract import CONTRACT_COLUMNS
from tableformat.table import Table

SMALL = ["--initial-records", "1500", "--batches", "2", "--batch-size", "400"]


def test_list_names_indexes_and_presets():
    proc = subprocess.run([sys.executable, "-m", "indexbench", "list"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    for word in ("bloom", "simple-bucket", "hoodie.bucket.index.num.buckets", "uniform",
                 "zipf-skewed", "growing", "hot-index-key"):
        assert word in proc.stdout


def test_list_at_80_columns_keeps_every_key_whole():
    import indexes

    proc = subprocess.run([sys.executable, "-m", "indexbench", "list"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = {ln.strip().split("=")[0] for ln in proc.stdout.splitlines()}
    for n in indexes.names():
        for p in indexes.index_class(n).PARAMS:
            assert p.key in lines, p.key
    assert "…" not in proc.stdout


def test_run_writes_the_metrics_contract_and_verify_passes(spark, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["run", "--index", "simple-bucket", *SMALL, "--out", str(out),
                   "--set", "hoodie.bucket.index.num.buckets=4"])
    assert rc == 0
    df = pd.read_parquet(out / "metrics.parquet")
    assert list(df.columns[: len(CONTRACT_COLUMNS)]) == CONTRACT_COLUMNS
    assert len(df) == 3 and df["batch"].tolist() == [0, 1, 2]
    assert (df["files_read"] == 0).all() and df["fp_rate"].isna().all()
    assert df["buckets"].iloc[-1] == 4 * 4  # 4 partitions x 4 buckets
    csv = pd.read_csv(out / "metrics.csv")
    assert len(csv) == 3
    run = json.loads((out / "run.json").read_text())
    assert run["workload"]["seed"] == 42 and "git_commit" in run
    assert run["indexes"]["simple-bucket"]["num_buckets"] == 4
    props = (out / "tables" / "simple-bucket" / ".hoodie" / "hoodie.properties").read_text()
    assert "indexbench.param.hoodie.bucket.index.num.buckets=4" in props
    assert cli.main(["verify", str(out / "tables" / "simple-bucket")]) == 0
    # resume: the same command again commits nothing new, adds no rows and says so
    capsys.readouterr()
    assert cli.main(["run", "--index", "simple-bucket", *SMALL, "--out", str(out)]) == 0
    assert len(pd.read_parquet(out / "metrics.parquet")) == 3
    assert "resuming at batch 3" in capsys.readouterr().out


@pytest.fixture(scope="module")
def compared(spark, tmp_path_factory):
    """One ``compare`` of bloom and simple-bucket (SMALL, the default query phase), shared
    by the tests below: its exit code and output directory."""
    out = tmp_path_factory.mktemp("compare") / "cmp"
    rc = cli.main(["compare", "--indexes", "bloom,simple-bucket", *SMALL, "--out", str(out),
                   "--set", "simple-bucket:hoodie.bucket.index.num.buckets=2"])
    return rc, out


def test_compare_runs_identical_batches(compared):
    rc, out = compared
    assert rc == 0
    df = pd.read_parquet(out / "metrics.parquet")
    # the default query phase: lookups, group-by and self-join after the upserts
    q = df[df["operation"] == "query"]
    assert sorted(q.groupby("index")["query"].apply(set).map(len)) == [3, 3]
    assert (q[q["plan"] == "bucket-aware"]["shuffle_bytes"] == 0).all()
    df = df[df["operation"] == "upsert"]
    per_index = df.pivot(index="batch", columns="index", values="records")
    assert (per_index["bloom"] == per_index["simple-bucket"]).all()
    tables = {i: df[df["index"] == i]["table_records"].tolist() for i in ("bloom", "simple-bucket")}
    assert tables["bloom"] == tables["simple-bucket"]


def test_verify_fails_on_a_missing_file(compared, tmp_path):
    import shutil

    rc, out = compared  # its bloom table is the one `run --index bloom` SMALL writes
    assert rc == 0
    table = tmp_path / "bloom"
    shutil.copytree(out / "tables" / "bloom", table)
    latest = sorted(s.path for s in Table(str(table)).snapshot().slices.values())
    (table / latest[0]).unlink()
    assert cli.main(["verify", str(table)]) == 1


def test_bad_parameters_are_clear_errors(tmp_path, capsys):
    from tableformat.errors import IndexBenchError

    with pytest.raises(IndexBenchError, match="no index has this parameter"):
        cli.parse_sets(["hoodie.nope=1"])
    rc = cli.main(["run", "--index", "bloom", "--workload", "no-such-preset",
                   "--out", str(tmp_path)])
    assert rc == 2
    out = capsys.readouterr()
    assert out.err.startswith("error:") and "no-such-preset" in out.err and not out.out


@pytest.fixture
def no_spark(monkeypatch):
    """Any Spark start-up fails the test: these mistakes must be caught before it."""
    import indexbench.spark

    def boom(*a, **k):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(indexbench.spark, "get_session", boom)


@pytest.mark.parametrize("argv, message", [
    (["compare", "--indexes", "bloom,nope"], "nope"),
    (["run", "--index", "bloom", "--set", "hoodie.index.bloom.fpp=abc"],
     "hoodie.index.bloom.fpp"),
    (["run", "--index", "bloom", "--set", "indexbench.scale=0"], "indexbench.scale"),
    (["compare", "--set", "no.such.key=1"], "no index has this parameter"),
    (["compare", "--set", "novalue"], "key=value"),
    (["verify", "/nonexistent/table"], "no table here"),
    (["rescale", "/nonexistent/table"], "no table at"),
    # where the run writes: a file given as a directory, a path below a file, a URI whose
    # file system cannot be reached (FILE: a file that exists)
    (["run", "--index", "bloom", "--out", "FILE"], "--out FILE: a file, not a directory"),
    (["compare", "--indexes", "bloom", "--out", "FILE"], "--out FILE: a file"),
    (["sim", "--index", "bloom", "--out", "FILE"], "--out FILE: a file"),
    (["run", "--index", "bloom", "--table", "FILE"], "--table FILE: a file"),
    (["run", "--index", "bloom", "--table", "FILE/t"], "FILE is a file"),
    (["run", "--index", "bloom", "--table", "nofs://x/t"], "cannot reach its file system"),
    (["report", "FILE"], "FILE: a file, not a metrics directory; a metrics directory holds "
                         "metrics.parquet"),
    (["report", "/nonexistent/run"], "no such directory"),
    # a typo gets the closest names
    (["compare", "--indexes", "bloom,simple-buckt"], "(did you mean simple-bucket?)"),
    (["run", "--index", "bloom", "--set", "hoodie.index.bloom.fp=0.1"],
     "did you mean hoodie.index.bloom.fpp"),
    (["run", "--index", "bloom", "--set", "blom:hoodie.index.bloom.fpp=0.1"],
     "unknown index 'blom' (did you mean bloom?)"),
    (["run", "--index", "bloom", "--workload", "unifrom"], "(did you mean uniform?)"),
    (["run", "--index", "bloom", "--workload", "FILE"], "workload file FILE: not TOML"),
    # a refused size names the flag typed
    (["run", "--index", "bloom", "--batch-size", "-5"], "--batch-size: must be >= 0"),
    (["compare", "--initial-records", "-1"], "--initial-records: must be >= 0"),
])
def test_bad_input_is_refused_before_spark_starts(no_spark, capsys, tmp_path, argv, message):
    file = tmp_path / "README.md"
    file.write_text("# A README\nnot a metrics directory, nor TOML\n")
    argv = [a.replace("FILE", str(file)) for a in argv]
    message = message.replace("FILE", str(file))
    extra = [] if argv[0] in ("verify", "report") or "--out" in argv else \
        ["--out", str(tmp_path / "o")]
    rc = cli.main([*argv, *extra])
    out = capsys.readouterr()
    assert rc == 2
    # one line on stderr, nothing on stdout
    assert out.err.startswith("error:") and message in out.err and not out.out
    assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err


def test_usage_errors_and_foreign_tables_are_one_line_and_exit_2(no_spark, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--index", "nope"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: indexbench run: argument --index") and err.count("\n") == 1
    with pytest.raises(SystemExit):
        cli.main(["run", "--index", "blom"])
    err = capsys.readouterr().err
    assert "(did you mean bloom?)" in err and "indexbench list" in err and err.count("\n") == 1
    foreign = tmp_path / "hudi_table" / ".hoodie"  # written by Hudi, not by indexbench
    foreign.mkdir(parents=True)
    (foreign / "hoodie.properties").write_text("hoodie.table.name=t\nhoodie.table.version=6\n")
    assert cli.main(["verify", str(foreign.parent)]) == 2
    out = capsys.readouterr()
    assert out.err.startswith("error: hoodie.properties lacks") and not out.out


def test_a_table_of_another_index_is_refused_before_spark_starts(no_spark, capsys, tmp_path):
    """``run`` into an output directory whose table another index created (or the same
    index with other parameters): refused before Spark, naming the property."""
    from indexbench.driver import open_table

    open_table(str(tmp_path / "tables" / "bloom"), "simple-bucket")
    assert cli.main(["run", "--index", "bloom", "--out", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert "created with index 'simple-bucket', not 'bloom'" in out.err and not out.out
    open_table(str(tmp_path / "t2"), "bloom")
    assert cli.main(["run", "--index", "bloom", "--table", str(tmp_path / "t2"), "--out",
                     str(tmp_path / "o2"), "--set", "hoodie.index.bloom.fpp=0.5"]) == 2
    assert "hoodie.index.bloom.fpp" in capsys.readouterr().err


def test_a_failure_that_is_not_an_input_error_is_one_line_and_exits_1(monkeypatch, capsys):
    def broken(args):
        raise RuntimeError("executor lost\n\tat org.apache.spark.Something")

    monkeypatch.setattr(cli, "cmd_list", broken)
    assert cli.main(["list"]) == 1
    out = capsys.readouterr()
    assert out.err.strip().splitlines() == [
        "error: RuntimeError: executor lost (--verbose for the rest)"]


def test_an_error_raised_while_ctrl_c_unwinds_is_the_interrupt(monkeypatch, capsys):
    """py4j calls in ``finally`` blocks may fail on the connection the interrupt broke."""
    import indexbench.spark as session

    def interrupted_then_broken(args):
        session.interrupted.set()
        try:
            raise KeyboardInterrupt
        finally:
            raise RuntimeError("Answer from Java side is empty")

    monkeypatch.setattr(cli, "cmd_list", interrupted_then_broken)
    try:
        assert cli.main(["list"]) == 130
    finally:
        session.interrupted.clear()
    assert capsys.readouterr().err.strip().splitlines() == [
        "interrupted; the unfinished instant will be rolled back by the next run"]


def test_interrupt_prints_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_list", interrupted)
    assert cli.main(["list"]) == 130
    out = capsys.readouterr()
    lines = [ln for ln in (out.out + out.err).splitlines() if ln.strip()]
    assert lines == ["interrupted; the unfinished instant will be rolled back by the next run"]


@pytest.mark.slow
@pytest.mark.spark
def test_ctrl_c_during_a_run_prints_one_line_and_exits_130(tmp_path):
    """A real SIGINT while Spark jobs run: one line on stderr, no JVM or py4j output."""
    import signal
    import time

    env = {k: v for k, v in os.environ.items() if k != "INDEXBENCH_VERBOSE"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "indexbench", "run", "--index", "simple-bucket",
         "--initial-records", "200000", "--batches", "20", "--batch-size", "50000",
         "--out", str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env)
    table = tmp_path / "o" / "tables" / "simple-bucket" / ".hoodie"
    deadline = time.monotonic() + 120
    while not list(table.glob("*.inflight")) and time.monotonic() < deadline:
        time.sleep(0.2)  # until a batch is being written
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    # the running job is cancelled, not waited for (the load alone takes longer than this)
    assert time.monotonic() - sent < 15
    assert proc.returncode == 130, err.decode()[-2000:]
    assert err.decode().strip().splitlines() == [
        "interrupted; the unfinished instant will be rolled back by the next run"]
    assert not list(table.glob("*.commit"))  # nothing became visible


def test_default_output_directory_names_the_run_id(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INDEXBENCH_OUT", raising=False)  # out/ in the working folder
    assert cli.main(["run", "--index", "simple-bucket", *SMALL]) == 0
    (out,) = (tmp_path / "out").iterdir()
    run_id = json.loads((out / "run.json").read_text())["run_id"]
    assert out.name == f"uniform-{run_id}"
    assert set(pd.read_parquet(out / "metrics.parquet")["run_id"]) == {run_id}


def test_compare_can_drop_its_tables(spark, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["compare", "--indexes", "simple-bucket", *SMALL, "--out", str(out),
                     "--no-keep-tables", "--no-query"]) == 0
    assert not (out / "tables").exists()
    assert (out / "metrics.parquet").exists() and (out / "report" / "index.html").exists()
    printed = capsys.readouterr().out
    # the command's own time and disk line closes the output
    last = printed.strip().splitlines()[-1]
    assert last.startswith("took ") and "MiB (removed" in last and "tables:" in last


def test_run_json_records_what_the_run_resolved(spark, tmp_path):
    """Parameters resolved while running (dynamic-rli's assigners) and the session's
    partitioning are in run.json, as the table's commits record them."""
    from indexbench import api
    from indexes.dynamic_rli import ASSIGNERS_KEY

    out = tmp_path / "o"
    api.compare(["dynamic-rli"], "uniform", out=str(out), spark=spark, batches=1,
                initial_records=1500, batch_size=400, query_phase=False)
    run = json.loads((out / "run.json").read_text())
    snap = Table(str(out / "tables" / "dynamic-rli")).snapshot()
    recorded = int(snap.extra[snap.completed[-1]][ASSIGNERS_KEY])
    assert run["indexes"]["dynamic-rli"]["resolved_num_assigners"] == recorded
    assert run["cores"] == spark.sparkContext.defaultParallelism
    assert run["shuffle_partitions"] == int(spark.conf.get("spark.sql.shuffle.partitions"))


def test_a_resumed_run_says_what_it_rolled_back_and_skipped(spark, tmp_path):
    from indexbench import api

    out, sizes = tmp_path / "o", {"initial_records": 1500, "batch_size": 400}
    api.run("simple-bucket", "uniform", out=str(out), spark=spark, batches=1, **sizes)
    table = Table(str(out / "tables" / "simple-bucket"))
    with table:
        instant = table.start_instant()  # a writer that died before its commit
    said: list[str] = []
    api.run("simple-bucket", "uniform", out=str(out), spark=spark, batches=2, notify=said.append,
            **sizes)
    assert any("rolled back" in m and instant in m for m in said), said
    assert any("resuming at batch 2" in m for m in said), said


@pytest.mark.spark
def test_spark_logging_is_quiet_by_default(tmp_path):
    """A command prints its own lines, not Spark's start-up chatter (INDEXBENCH_VERBOSE=1
    brings it back)."""
    env = {k: v for k, v in os.environ.items() if k != "INDEXBENCH_VERBOSE"}
    proc = subprocess.run(
        [sys.executable, "-m", "indexbench", "run", "--index", "simple-bucket",
         "--initial-records", "500", "--batches", "1", "--batch-size", "100",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for noise in ("log4j profile", "Setting default log level", "NativeCodeLoader",
                  "loopback address", " WARN "):
        assert noise not in proc.stderr, noise
    # not even the JVM's line for the module Spark 4's launcher always adds
    assert proc.stderr.strip() == ""


def test_a_failed_command_leaves_no_progress_bar_on_stdout(capsys):
    """A run refused while the bar shows (another writer holds the table) prints its one
    error line and nothing of the bar: stdout stays empty."""
    progress, _on_batch, _done = cli._progress_bar(6, ["simple-bucket"])
    with pytest.raises(RuntimeError), progress:
        raise RuntimeError("refused")
    assert "batches" not in capsys.readouterr().out
    progress, _on_batch, done = cli._progress_bar(1, ["simple-bucket"])
    with progress:
        done()
    assert "batches" in capsys.readouterr().out  # a finished run keeps its bar
