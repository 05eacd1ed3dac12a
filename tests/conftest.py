"""One SparkSession for the whole test session, and small helpers the tests share."""

from __future__ import annotations

import os

import pandas as pd
import pytest
from jvm_archive import JIT

from indexbench.spark import get_session
from tableformat.slice_reader import read_file_group
from tableformat.table import Table

# Every JVM the tests start through spark-submit (the session below, and the CLI runs,
# crash scripts, notebook kernel and cluster driver they start in subprocesses, which
# inherit the environment) compiles with C1 only: the tests run many tiny jobs, where C2
# compiling hot code costs more CPU than it saves (about a third of a small compare's
# wall time on 2 cores). The JIT tier changes no result. Set SPARK_SUBMIT_OPTS to
# override (empty: the JVM's default tiers); .ci/run sets it to also start every JVM from
# a class-data-sharing archive of Spark's classes (tests/jvm_archive.py).
os.environ.setdefault("SPARK_SUBMIT_OPTS", JIT)
# Runs given no --out write under INDEXBENCH_OUT: a temporary folder for the whole test
# session (subprocesses inherit it), never the checkout's out/.
if "INDEXBENCH_OUT" not in os.environ:
    import tempfile

    os.environ["INDEXBENCH_OUT"] = tempfile.mkdtemp(prefix="indexbench-tests-out-")


@pytest.fixture(scope="session")
def spark():
    session = get_session("local[2]", app_name="indexbench-tests", shuffle_partitions=4,
                          conf={"spark.default.parallelism": "2",
                                "spark.driver.memory": "2g"})
    yield session
    session.stop()


# The `spark` marker (`pytest -m "not spark"`: the suite without a JVM, in well under a
# minute). Every test whose fixture closure holds the session `spark` fixture, directly or
# through another fixture, gets it here; tests that start Spark another way (a subprocess
# running the CLI, a notebook kernel, a standalone cluster) carry it explicitly.
FORBID_SPARK = "INDEXBENCH_TESTS_FORBID_SPARK"
_spark_starts: list[str] = []


# The heaviest files first. CI runs `-n 2 --dist loadfile`: xdist hands each worker a
# whole file as it frees up, in collection order (`--no-loadscope-reorder` in
# pyproject.toml keeps ours, not "most tests first"). Starting the long files first and
# letting the short ones fill the tail (longest processing time first) keeps one worker
# from running a 5-minute file alone at the end. Worker seconds of each file in a
# clean-clone .ci/run, 2026-11-28, this 2-core machine; a file not named runs after these.
HEAVIEST_FIRST = (
    "test_hudi_peer.py",  # 339 s
    "test_presets_e2e.py",  # 217 s
    "test_cluster.py",  # 153 s
    "test_mor.py",  # 134 s
    "test_cli.py",  # 133 s
    "test_query.py",  # 103 s
    "test_deletes.py",  # 87 s
    "test_figures_series.py",  # 87 s
    "test_oracle.py",  # 87 s
    "test_driver.py",  # 83 s
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep theirs
    for item in items:
        # a test of Hudi's own writer starts Hudi's JVM, whatever fixtures it uses
        if "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("hudi"):
            item.add_marker(pytest.mark.spark)


def pytest_configure(config):
    """With INDEXBENCH_TESTS_FORBID_SPARK=1 any JVM start fails: in this process (the
    py4j gateway launch raises and is remembered, so a test that swallows the error still
    fails the session) and in child processes (JAVA_HOME points nowhere, so spark-submit
    cannot start). Proves `-m "not spark"` selects every test that starts Spark."""
    if not os.environ.get(FORBID_SPARK):
        return
    import sys

    import pyspark.java_gateway
    from pyspark import SparkContext

    def refuse(*args, **kwargs):
        _spark_starts.append(os.environ.get("PYTEST_CURRENT_TEST", "?"))
        raise RuntimeError(f"{FORBID_SPARK} is set, yet this test starts Spark: mark it "
                           "@pytest.mark.spark")

    # both names: SparkContext's own and the module's (indexbench.spark launches the JVM
    # itself, through pyspark.java_gateway)
    sys.modules[SparkContext.__module__].launch_gateway = refuse
    pyspark.java_gateway.launch_gateway = refuse
    os.environ["JAVA_HOME"] = "/nonexistent/forbidden-by-" + FORBID_SPARK


def pytest_runtest_teardown(item, nextitem):
    if _spark_starts:  # the test's own error may have been caught: fail it here
        started = ", ".join(_spark_starts)
        _spark_starts.clear()
        pytest.fail(f"{FORBID_SPARK}: Spark was started by {started}", pytrace=False)


_servers_at_start: set[int] = set()
# Under pytest-xdist each worker sees only the servers running under its own base temp
# folder (a server's working folder is its table's data folder): the other worker's
# servers are not this one's to account for. The controller, which runs no test, sees all.
_server_scope: list[str] = []


def pytest_sessionstart(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        _server_scope.append(str(session.config._tmp_path_factory.getbasetemp().resolve()))
    _servers_at_start.update(redis_server_pids())


def pytest_sessionfinish(session, exitstatus):
    import time

    deadline = time.monotonic() + 15  # a server told to stop may take a moment
    while redis_server_pids() - _servers_at_start and time.monotonic() < deadline:
        time.sleep(0.1)
    left = redis_server_pids() - _servers_at_start
    if left:  # a server the tests (or the harness under test) started and never stopped
        print(f"\nredis-server processes left running by the tests: {sorted(left)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _spark_starts:  # outside any test (at import, say)
        print(f"\n{FORBID_SPARK}: Spark was started by " + ", ".join(_spark_starts))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def read_snapshot(uri: str) -> pd.DataFrame:
    """Every record of the committed snapshot (tests only: small tables); a
    merge-on-read slice is read merged with its log files."""
    table = Table(uri)
    frames = [read_file_group(table, s).to_pandas() for s in table.snapshot().slices.values()]
    frames = [f for f in frames if len(f.columns)]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def redis_server_pids() -> set[int]:
    """PIDs of the redis-server processes running on this machine (exited ones not yet
    reaped are not running); in a pytest-xdist worker, only those working under its own
    temp folder. Tests that start servers check none of theirs is left."""
    out = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmd = open(f"/proc/{entry.name}/cmdline", "rb").read()
            stat = open(f"/proc/{entry.name}/stat").read()
            cwd = os.readlink(f"/proc/{entry.name}/cwd") if _server_scope else ""
        except OSError:
            continue
        if _server_scope and not cwd.startswith(_server_scope[0]):
            continue
        if b"redis-server" in cmd and stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X"):
            out.add(int(entry.name))
    return out


@pytest.fixture
def no_stray_redis_servers():
    """The test leaves no redis-server running that was not running before it."""
    import time

    before = redis_server_pids()
    yield
    deadline = time.monotonic() + 15
    while redis_server_pids() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not redis_server_pids() - before, "a redis-server started here is still running"


def table_files(uri: str) -> set[str]:
    """Every file under the table root (relative paths), to prove nothing was written."""
    table = Table(uri)
    from tableformat.fs import list_files

    return {i.path[len(table.root):] for i in list_files(table.fs, table.root, recursive=True)}


def table_digest(uri: str) -> dict[str, str]:
    """sha256 of every file under the table root and every folder (as "dir"): equal
    digests = a byte-identical table."""
    import hashlib
    import os

    root = Table(uri).root
    out = {}
    for folder, _dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        out[rel + "/"] = "dir"
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.join(rel, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


# Hypothesis profiles: "ci" (loaded here) keeps the Spark oracle suite to a fixed, small
# number of examples; `pytest --hypothesis-profile=long` runs it deeper. Tests with their
# own @settings(max_examples=...) keep theirs under both.
def _hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    slow = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=3, deadline=None,
                              suppress_health_check=slow)
    settings.register_profile("long", max_examples=60, deadline=None,
                              suppress_health_check=slow)
    settings.load_profile("ci")


_hypothesis_profiles()
