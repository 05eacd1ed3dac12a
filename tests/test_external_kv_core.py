"""external-kv without Spark: its core (entries, Hudi's validity check, request batches),
its parameters and refusals, the redis-server it starts and stops, the store's requests
(journals, rollback), the simulator's counts and the report figure it declares.

Every test that needs a server starts its own on a free port and stops it; the module
ends with no redis-server it started still running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import redis_server_pids

import indexes
from indexes.external_kv import ExternalKvIndex, core, server
from indexes.external_kv.store import KvStore, journal_key
from tableformat.errors import IndexBenchError

I1, I2, I3 = "20260101000000001", "20260101000000002", "20260101000000003"


pytestmark = pytest.mark.usefixtures("no_stray_redis_servers")


@pytest.fixture
def store(tmp_path):
    srv = server.RedisServer(tmp_path / "kv")
    url = srv.start()
    s = KvStore(url, core.key_prefix("t"))
    yield s
    s.close()
    srv.stop()


# ---- the core -----------------------------------------------------------------------
def test_entry_keys_and_values_round_trip():
    keys = core.entry_keys(pa.array(["2026/01/01", "q/r"]), pa.array(["a:b", "k"]), "t:")
    assert keys.to_pylist() == [b"t:2026/01/01:a:b", b"t:q/r:k"]
    values = core.entry_values(I1, pa.array(["f-1", "0000-2"]))
    codes, fids = core.decode_values(pa.array([values[0].as_py(), None, values[1].as_py()],
                                              pa.binary()))
    assert codes.tolist() == [int(I1), core.NO_ENTRY, int(I1)]
    assert fids.to_pylist() == ["f-1", None, "0000-2"]
    with pytest.raises(ValueError):
        core.entry_values("2026", pa.array(["f"]))


def test_valid_commits_is_hudis_check_if_valid_commit():
    completed = core.instant_codes([I1, I3])
    codes = np.array([int(I1), int(I2), int(I3), core.NO_ENTRY])
    assert core.valid_commits(codes, completed).tolist() == [True, False, True, False]
    # an empty timeline trusts nothing, as Hudi's
    assert not core.valid_commits(codes, core.instant_codes([])).any()
    # Hudi also trusts instants older than the (archived) timeline's start
    assert core.valid_commits(np.array([int(I1) - 5]), completed,
                              archived_before=int(I1)).tolist() == [True]


def test_tag_values_counts_found_and_stale():
    v = core.entry_values(I2, pa.array(["f1", "f2"]))
    values = pa.array([v[0].as_py(), None, v[1].as_py()], pa.binary())
    tagged = core.tag_values(values, core.instant_codes([I1, I2]))
    assert tagged.file_ids.to_pylist() == ["f1", None, "f2"]
    assert (tagged.found, tagged.stale) == (2, 0)
    tagged = core.tag_values(values, core.instant_codes([I1]))  # I2 never completed
    assert tagged.file_ids.to_pylist() == [None, None, None]
    assert (tagged.found, tagged.stale) == (0, 2)


def test_request_batches():
    assert core.round_trips([250, 100, 1, 0], 100) == 3 + 1 + 1
    assert core.batch_bounds(250, 100) == [(0, 100), (100, 200), (200, 250)]
    assert core.batch_bounds(0, 100) == []


def test_percentiles_are_measured_values():
    got = core.percentiles_ms([0.001 * i for i in range(1, 101)])
    assert got == {"p50": pytest.approx(50.0), "p99": pytest.approx(99.0)}
    assert core.percentiles_ms([]) == {"p50": None, "p99": None}
    model = core.RequestModel(1e-4, 1e-6, 3.0)
    assert model.p50_ms(100) == pytest.approx(0.2)
    assert model.p99_ms(100) == pytest.approx(0.6)


# ---- parameters and refusals ----------------------------------------------------------
def test_parameters_use_hudis_keys_and_defaults():
    idx = indexes.get("external-kv")
    props = idx.table_params()
    assert props["hoodie.index.hbase.get.batch.size"] == "100"
    assert props["hoodie.index.hbase.put.batch.size"] == "100"
    assert props["hoodie.index.hbase.rollback.sync"] == "false"
    assert idx.index_type == "HBASE" and idx.CAN_INDEX_LOG_FILES


@pytest.mark.parametrize("params, words", [
    ({"hoodie.index.hbase.get.batch.size": "0"}, "must be >= 1"),
    ({"indexbench.kv.url": "http://x:1"}, "expected redis://HOST:PORT"),
    ({"indexbench.kv.url": "redis://127.0.0.1:6399"}, "set hoodie.index.hbase.table"),
    ({"hoodie.index.hbase.table": "a:b"}, "no ':'"),
])
def test_bad_parameters_are_refused_in_one_line(params, words):
    with pytest.raises(IndexBenchError) as err:
        indexes.get("external-kv", **params)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_no_server_program_and_no_url_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(server, "binary", lambda: None)
    with pytest.raises(IndexBenchError, match="apt-get install redis-server"):
        indexes.get("external-kv").check_resources(str(tmp_path / "t"))
    with pytest.raises(IndexBenchError, match="does not answer"):
        indexes.get("external-kv", **{"indexbench.kv.url": f"redis://127.0.0.1:{server.free_port()}",
                                      "hoodie.index.hbase.table": "t"}
                    ).check_resources(str(tmp_path / "t"))


def test_a_table_elsewhere_needs_a_url(tmp_path):
    with pytest.raises(IndexBenchError, match="must be local"):
        indexes.get("external-kv").check_resources("s3://bucket/t")


def test_the_cli_refuses_before_spark_starts_when_redis_is_missing(tmp_path):
    """No redis-server on PATH, no URL: one error line, exit 2, stdout empty, and no
    JVM (JAVA_HOME points nowhere, so a Spark start would fail differently)."""
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": str(bindir), "JAVA_HOME": "/nonexistent"}
    out = subprocess.run([str(bindir / "indexbench"), "run", "--index", "external-kv",
                          "--initial-records", "10", "--batches", "1", "--batch-size", "5",
                          "--out", str(tmp_path / "o")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "redis-server" in lines[0]
    assert not (tmp_path / "o").exists()


# ---- the server ------------------------------------------------------------------------
def test_the_server_starts_keeps_its_data_and_stops_by_pid(tmp_path):
    srv = server.RedisServer(tmp_path / "kv")
    url = srv.start()
    pid = srv.pid
    assert pid in redis_server_pids()
    assert (tmp_path / "kv" / server.PID_FILE).read_text().strip() == str(pid)
    s = KvStore(url)
    keys = core.entry_keys(pa.array(["p"]), pa.array(["a"]))
    s.put(keys, core.entry_values(I1, pa.array(["f"])))
    s.close()
    srv.stop()
    assert pid not in redis_server_pids()
    assert not (tmp_path / "kv" / server.PID_FILE).exists()
    srv.stop()  # twice is fine
    srv = server.RedisServer(tmp_path / "kv")  # the append-only file is read back
    s = KvStore(srv.start())
    assert s.get(keys).to_pylist() == [(I1 + "f").encode()]
    s.close()
    srv.stop()


def test_a_server_dies_with_the_process_that_started_it(tmp_path):
    """kill -9 of the starting process: the parent-death signal stops the server."""
    code = ("import sys, time; from indexes.external_kv.server import RedisServer; "
            "s = RedisServer(sys.argv[1]); s.start(); print(s.pid, flush=True); "
            "time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "kv")],
                            stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    assert pid in redis_server_pids()
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    deadline = time.monotonic() + 15
    while pid in redis_server_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid not in redis_server_pids()


def test_a_leftover_server_on_the_same_files_is_stopped_first(tmp_path):
    first = server.RedisServer(tmp_path / "kv")
    first.start()
    old, proc = first.pid, first.proc
    first.proc = None  # as if its process had died without stopping it
    second = server.RedisServer(tmp_path / "kv")
    second.start()
    assert old not in redis_server_pids() and second.pid in redis_server_pids()
    second.stop()
    proc.wait(10)  # this process started the first: it reaps it


def test_resources_start_on_first_use_and_stop_at_the_outermost_exit(tmp_path):
    from tableformat.table import Table

    table = Table(str(tmp_path / "t"))
    idx = indexes.get("external-kv")
    with idx.resources(table):
        assert idx.server_pid is None  # nothing started until it is needed
        url = idx.store_url()
        pid = idx.server_pid
        with idx.resources(table):  # a run's upsert enters again: the same server
            assert idx.store_url() == url
        assert pid in redis_server_pids()
    assert pid not in redis_server_pids() and idx.server_pid is None
    assert (tmp_path / "t" / ".hoodie" / ".aux" / "kv").is_dir()
    with pytest.raises(IndexBenchError, match="outside"):
        idx.store_url()
    with pytest.raises(KeyboardInterrupt), idx.resources(table):  # Ctrl-C
        idx.store_url()
        pid = idx.server_pid
        raise KeyboardInterrupt
    assert pid not in redis_server_pids()


# ---- the store's requests ----------------------------------------------------------------
def test_puts_gets_and_counted_round_trips(store):
    keys = core.entry_keys(pa.array(["p"] * 5), pa.array(list("abcde")), store.prefix)
    values = core.entry_values(I1, pa.array(["f"] * 5))
    for lo, hi in core.batch_bounds(5, 2):
        store.put(keys.slice(lo, hi - lo), values.slice(lo, hi - lo))
    got = store.get(keys)
    assert got.to_pylist() == [(I1 + "f").encode()] * 5
    c = store.counts
    assert (c.puts, c.put_round_trips, c.gets, c.get_round_trips) == (5, 3, 5, 1)
    assert len(c.get_seconds) == 1 and store.entries() == 5
    assert store.memory_bytes() > 0


def test_rollback_deletes_only_entries_still_naming_the_instant(store):
    keys = core.entry_keys(pa.array(["p"] * 3), pa.array(list("abc")), store.prefix)
    journal = store.open_journal(I2)
    assert journal == journal_key(store.prefix, I2)
    store.put(keys, core.entry_values(I2, pa.array(["f"] * 3)), journal)
    # a later instant found b's entry stale and put its own
    store.put(keys.slice(1, 1), core.entry_values(I3, pa.array(["g"])))
    assert store.journaled() == [I2]
    assert store.rollback(I2) == 2
    assert store.get(keys).to_pylist() == [None, (I3 + "g").encode(), None]
    assert store.journaled() == [] and store.entries() == 1  # journals are gone
    assert store.counts.rollback_deletes == 2


# ---- the simulator and the report --------------------------------------------------------
def test_the_simulator_counts_requests_as_the_spark_adapter_sends_them():
    from indexbench.sim.driver import simulate

    params = {"hoodie.index.hbase.get.batch.size": "7", "hoodie.index.hbase.put.batch.size": "5"}
    df = simulate("external-kv", "uniform", initial_records=300, batches=2, batch_size=60,
                  params=params, write=False)
    assert (df["kv_gets"] == df["records"]).all()
    assert (df["kv_puts"] == df["inserts"]).all()
    assert (df["kv_round_trips"] == df["kv_get_round_trips"] + df["kv_put_round_trips"]).all()
    assert (df["kv_get_round_trips"] >= np.ceil(df["records"] / 7)).all()
    assert df["kv_entries"].tolist() == df["inserts"].cumsum().tolist()
    assert (df["kv_stale_entries"] == 0).all()
    # measured figures are modelled in the simulator, under their model_ names
    assert "kv_get_p50_ms" not in df.columns and (df["model_kv_get_p50_ms"] > 0).all()
    assert (df["model_kv_server_bytes"] > 0).all()


def test_calibrate_fits_the_request_model_and_server_memory():
    from indexbench.sim.cost import PROFILES, fit_kv

    rows = pd.DataFrame({"kv_gets": [1000, 1000, 1000], "kv_get_round_trips": [100, 10, 1],
                         "kv_get_p50_ms": [0.1 + 0.001 * 10, 0.1 + 0.001 * 100,
                                           0.1 + 0.001 * 1000],
                         "kv_get_p99_ms": [0.33, 0.6, 3.3],
                         "kv_server_bytes": [2e6, 3e6, 4e6], "kv_entries": [1e4, 2e4, 3e4]})
    fitted, why = fit_kv(rows, PROFILES["local"])
    assert fitted["kv_round_trip_s"] == pytest.approx(1e-4)
    assert fitted["kv_key_s"] == pytest.approx(1e-6)
    assert fitted["kv_tail_ratio"] == pytest.approx(3.0)
    assert fitted["kv_entry_bytes"] == pytest.approx(100.0)
    assert fitted["kv_base_bytes"] == pytest.approx(1e6)
    assert not why
    # a run without the index fits nothing and says nothing of it
    assert fit_kv(pd.DataFrame({"records": [1]}), PROFILES["local"]) == ({}, {})
    # one request size: the per-key cost stays the base profile's
    fitted, why = fit_kv(rows.iloc[:1], PROFILES["local"])
    assert why["kv_key_s"] == "one request size only" and "kv_key_s" not in fitted


def test_the_declared_figure_is_drawn_from_its_columns_only():
    from reports.figures import declared_figure

    decl = indexes.index_class("external-kv").FIGURES[0]
    base = {"index": "external-kv", "workload": "w", "run_id": "r", "operation": "upsert",
            "inserts": 10, "table_records": 100}
    rows = pd.DataFrame([{**base, "batch": b, "kv_gets": 1000, "kv_get_round_trips": n,
                          "kv_get_p50_ms": 0.1 * b + 0.1, "kv_get_p99_ms": 0.5}
                         for b, n in enumerate((100, 10, 1))])
    assert declared_figure(rows, decl) is not None
    assert declared_figure(rows.drop(columns=["kv_get_p50_ms", "kv_get_p99_ms"]), decl) is None


def test_the_index_is_in_the_default_comparison():
    from indexbench.api import default_compare_indexes

    assert "external-kv" in default_compare_indexes()
    assert isinstance(indexes.get("external-kv"), ExternalKvIndex)
