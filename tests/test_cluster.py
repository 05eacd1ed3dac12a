"""The cluster path for real: a standalone master + worker, a run and a verify against it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pandas as pd
import pytest
from standalone import standalone_cluster

import indexes
from tableformat.table import LOCK

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "indexbench", *args], capture_output=True,
                          text=True, timeout=600, cwd=cwd)


# The default run (CI) sends four indexes through the cluster, one of each way an index
# keeps its state: footers read in executor tasks (bloom), a hash alone (simple-bucket),
# caches that live in executor tasks (dynamic-rli), a server the executors call
# (external-kv). `pytest -m ''` runs every index there.
ON_CLUSTER = ("bloom", "simple-bucket", "dynamic-rli", "external-kv")


@pytest.mark.parametrize("names", [
    ON_CLUSTER, pytest.param(tuple(indexes.names()), marks=pytest.mark.exhaustive, id="all")])
def test_compare_and_verify_on_a_standalone_cluster(tmp_path, names):
    out = tmp_path / "out"
    with standalone_cluster(cores=2, memory="2g", workdir=str(tmp_path / "spark")) as url:
        # a relative --out: executors must get the table's absolute path, not resolve it
        # against their own working directory. Throughput mode: fewer jobs (CI time), and
        # the bucket indexes' writes combine and count in executor tasks
        run = _cli("compare", "--indexes", ",".join(names), "--initial-records", "2000",
                   "--batches", "1",
                   "--batch-size", "500", "--master", url, "--out", "out", "--throughput",
                   cwd=tmp_path)
        assert run.returncode == 0, run.stderr[-2000:]
        assert "Traceback" not in run.stderr
        facts = json.load(open(out / "run.json"))
        # the plan follows the executors' cores, not Spark's 200 default partitions
        assert facts["master"] == url
        assert facts["cores"] == 2 and facts["shuffle_partitions"] == 4
        metrics = pd.read_parquet(out / "metrics.parquet")
        assert sorted(metrics["index"].unique()) == sorted(names)
        # compare's query phase ran on the cluster too: lookups through every index in
        # executor tasks found their keys; the bucket-aware scans shuffled nothing
        lookups = metrics[metrics["query"] == "lookup"]
        assert sorted(lookups["index"]) == sorted(names)
        assert (lookups["keys_found"] == 50).all()
        aware = metrics[metrics["plan"] == "bucket-aware"]
        # a group-by and a self-join per index whose records sit in hash % N (RFC-29;
        # multi-fg-bucket: several file groups per bucket, all of a key's in one;
        # extendible-hash: no split at these sizes, so every local depth is d: h % 2^d)
        hashed = {"simple-bucket", "multiple-rehash", "partition-bucket", "multi-fg-bucket",
                  "extendible-hash"} & set(names)
        assert sorted(aware["index"]) == sorted([*hashed, *hashed])
        assert (aware["shuffle_bytes"] == 0).all()
        metrics = metrics[metrics["operation"] == "upsert"]
        assert (metrics.groupby("index")["input_records"].apply(list)
                .map(lambda v: v == [2000, 500]).all())
        tables = sorted(str(p) for p in (out / "tables").iterdir())
        check = _cli("verify", *tables, "--master", url, cwd=tmp_path)
        assert check.returncode == 0, check.stdout + check.stderr[-2000:]
        assert check.stdout.count("every invariant holds") == len(names)
    # the daemons are gone: nothing listens on the master's port any more
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0
    for table in tables:  # every writer released its lock
        assert not os.path.exists(os.path.join(table, ".hoodie", LOCK))


def test_sigterm_stops_the_command_and_both_daemons(tmp_path):
    """What asv does at a benchmark's timeout: SIGTERM to tests/standalone.py stops the
    command it runs and the master and worker it started; none is left running."""
    import signal
    import time

    script = os.path.join(os.path.dirname(__file__), "standalone.py")
    marker = f"indexbench-sigterm-{os.getpid()}"
    proc = subprocess.Popen([sys.executable, script, f"sleep 300 # {marker}"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, SPARK_WORKER_DIR=str(tmp_path)))
    for line in proc.stdout:  # the cluster is up once the command starts
        if line.startswith("$ sleep"):
            break
    url = next(a for a in _daemon_args() if "spark://127.0.0.1" in a).split()[-1]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _running(url, marker):
        time.sleep(0.2)
    assert not _running(url, marker)


def _daemon_args() -> list[str]:
    """Command lines of running Spark standalone daemons (master and workers)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "org.apache.spark.deploy.worker.Worker" in cmd or \
                "org.apache.spark.deploy.master.Master" in cmd or "sleep 300 #" in cmd:
            out.append(cmd.strip())
    return out


def _running(url: str, marker: str) -> list[str]:
    port = url.rsplit(":", 1)[1]
    return [c for c in _daemon_args() if url in c or f"--port {port}" in c or marker in c]
