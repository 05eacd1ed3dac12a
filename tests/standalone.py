"""A real Spark standalone cluster (one master, one worker) from the pip pyspark, on 127.0.0.1.

The cluster test and CI's cluster check use it: ``local[*]`` hides what a cluster costs
(task launches over the network, executors in their own JVMs, Python workers per
executor), so the cluster path is run for real. Both daemons run in the foreground of
their own process groups and are stopped by PID, whatever happens to the command, and
when this process is told to stop (SIGTERM, SIGHUP: asv's timeout).

    python tests/standalone.py 'indexbench compare --master {master} ...' ['...']

runs each shell command with ``{master}`` replaced by the cluster's URL, stops at the
first failure and exits with its code. ``INDEXBENCH_STANDALONE_WORKERS`` and
``INDEXBENCH_STANDALONE_CORES`` (default 1 worker of 2 cores) shape the cluster: ``2`` and
``1`` give two 1-core workers.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pyspark

START_TIMEOUT_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class(cls: str, args: list[str], log: str, env: dict[str, str]) -> subprocess.Popen:
    spark_home = os.path.dirname(pyspark.__file__)
    with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([os.path.join(spark_home, "bin", "spark-class"), cls, *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _wait_for(log: str, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, errors="replace") as f:
            if text in f.read():
                return
        if proc.poll() is not None:
            raise RuntimeError(f"{log}: exited with {proc.returncode} before {text!r}")
        time.sleep(0.2)
    raise RuntimeError(f"{log}: no {text!r} within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group of a daemon or command (each starts a session of its
    own), SIGKILL if its leader lingers, then SIGKILL to what is left of the group: a
    child forked as the SIGTERM came outlives its leader."""
    try:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is gone already
    proc.wait()


@contextmanager
def standalone_cluster(cores: int = 2, memory: str = "4g",
                       workdir: str | None = None, workers: int = 1) -> Iterator[str]:
    """Start a master and ``workers`` workers with ``cores`` cores each; yield the
    master's URL."""
    own_root = workdir is None
    root = workdir or tempfile.mkdtemp(prefix="indexbench-standalone-")
    os.makedirs(root, exist_ok=True)
    env = dict(os.environ, SPARK_HOME=os.path.dirname(pyspark.__file__),
               SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=root, SPARK_WORKER_DIR=root)
    # the executors compile as the driver does: C1 only when its SPARK_SUBMIT_OPTS say so
    # (tests, CI's quick asv pass: short runs), through the worker's environment, which
    # every executor JVM it starts inherits; a real run's options leave them as they are
    jit = [o for o in os.environ.get("SPARK_SUBMIT_OPTS", "").split()
           if o.startswith("-XX:TieredStopAtLevel=")]
    if jit:
        env["JAVA_TOOL_OPTIONS"] = " ".join([os.environ.get("JAVA_TOOL_OPTIONS", ""), *jit]
                                            ).strip()
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    daemons: list[subprocess.Popen] = []
    try:
        master_log = os.path.join(root, "master.log")
        daemons.append(_spark_class(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
            master_log, env))
        _wait_for(master_log, "New state: ALIVE", daemons[0], START_TIMEOUT_S)
        for i in range(workers):
            worker_log = os.path.join(root, "worker.log" if i == 0 else f"worker-{i}.log")
            work_dir = os.path.join(root, f"worker-{i}") if i else root
            os.makedirs(work_dir, exist_ok=True)
            daemons.append(_spark_class(
                "org.apache.spark.deploy.worker.Worker",
                ["--host", "127.0.0.1", "--cores", str(cores), "--memory", memory,
                 "--webui-port", str(_free_port()), "--work-dir", work_dir, url],
                worker_log, dict(env, SPARK_WORKER_DIR=work_dir)))
            _wait_for(worker_log, "Successfully registered with master", daemons[-1],
                      START_TIMEOUT_S)
        yield url
    finally:
        for proc in reversed(daemons):
            _stop(proc)
        if own_root:
            shutil.rmtree(root, ignore_errors=True)


# A stop signal that arrives while a command is being started waits here until the
# command exists: raised inside ``Popen`` (after its fork), it left the shell running with
# nobody to stop it (seen under load in CI).
_held: list[int] = []  # the signals that came while ``_starting``
_starting = False


def _exit_on_signal(signum: int, _frame) -> None:
    """SIGTERM or SIGHUP (asv's timeout, a closed terminal) unwinds like Ctrl-C: the
    running command is stopped and the cluster's ``finally`` stops both daemons."""
    if _starting:
        _held.append(signum)
        return
    raise SystemExit(128 + signum)


def _call(cmd: str) -> int:
    """Run one shell command; stop it too when this process is told to stop. The
    command gets its own process group: stopping it stops what the shell started too."""
    global _starting
    _starting = True
    try:
        proc = subprocess.Popen(cmd, shell=True, start_new_session=True)
    finally:
        _starting = False
    try:
        if _held:
            raise SystemExit(128 + _held[0])
        return proc.wait()
    except BaseException:
        _stop(proc)
        raise


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    # INDEXBENCH_STANDALONE_WORKERS=2 INDEXBENCH_STANDALONE_CORES=1: two 1-core workers
    workers = int(os.environ.get("INDEXBENCH_STANDALONE_WORKERS", "1"))
    cores = int(os.environ.get("INDEXBENCH_STANDALONE_CORES", "2"))
    with standalone_cluster(cores=cores, workers=workers) as url:
        print(f"standalone cluster: {url} ({workers} worker(s) x {cores} core(s))",
              flush=True)
        for command in argv:
            cmd = command.replace("{master}", url)
            print(f"$ {cmd}", flush=True)
            started = time.monotonic()
            code = _call(cmd)
            print(f"exit {code} after {time.monotonic() - started:.1f} s", flush=True)
            if code:
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
