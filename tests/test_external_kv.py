"""external-kv on Spark: a run from the command line that leaves no server behind, the
consistency hazard of Hudi's HBase index measured (a writer killed between its index
writes and its commit, in-process and with a real kill -9), rollback.sync, a server that
dies mid-batch, an existing server by URL, and verify.

Every test starts and stops its servers through the harness (or, for the URL, itself)
and leaves none running (``no_stray_redis_servers``). Tables are tiny.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from conftest import read_snapshot, redis_server_pids, table_digest

from indexbench import api, cli
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from indexes.external_kv import server
from indexes.external_kv.spark import ExternalKvSpark
from indexes.external_kv.store import KvStore
from tableformat.errors import WriteFailedError
from tableformat.table import Table
from writeclient.faults import CRASH_ENV, SimulatedCrash, simulated_crash

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("no_stray_redis_servers")]

INDEX = "external-kv"
FIRST = [(f"k{i}", "p" if i % 2 else "q/r", 1, "first") for i in range(10)]
NEW = [(f"n{i}", "p" if i % 2 else "q/r", 2, "crashed") for i in range(5)]


def frame(spark, rows):
    return spark.createDataFrame(pd.DataFrame(rows, columns=["key", "dt", "ts", "payload"]))


def committed(uri: str) -> dict:
    snap = read_snapshot(uri)
    keys = list(zip(snap["dt"], snap["key"], strict=True))
    assert len(keys) == len(set(keys)), "a record is in the table twice"
    return {k: p for k, p in zip(keys, snap["payload"], strict=True)}


def entries(table, index) -> dict[bytes, bytes]:
    """Every key of the table's store and its value (through the harness's server)."""
    with index.resources(table):
        store = KvStore(index.store_url())
        try:
            return {k: store.client.get(k)
                    for k in store.client.scan_iter(count=1000, _type="string")}
        finally:
            store.close()


def data_digest(uri: str) -> dict:
    """The table's files but its server's own (``.hoodie/.aux/kv``)."""
    return {k: v for k, v in table_digest(uri).items() if "/.aux/kv" not in f"/{k}"}


@pytest.mark.parametrize("sync", [False, True], ids=["rollback.sync=false", "rollback.sync=true"])
def test_a_writer_killed_after_its_index_writes_leaves_stale_entries_never_routed_to(
        spark, tmp_path, sync):
    uri = str(tmp_path / "t")
    params = {"hoodie.index.hbase.rollback.sync": str(sync).lower()}
    table, index = open_table(uri, INDEX, params)
    with table:
        upsert(spark, table, index, frame(spark, FIRST), batch_no=0)
    with pytest.raises(SimulatedCrash), simulated_crash("before_commit"), table:
        upsert(spark, table, index, frame(spark, NEW + [("k1", "p", 2, "crashed")]),
               batch_no=1)
    (crashed,) = Table(uri).pending_instants()
    table, index = open_table(uri, INDEX)  # the next writer
    naming = [k for k, v in entries(table, index).items() if v.startswith(crashed.encode())]
    assert len(naming) == len(NEW)  # updateLocation ran: the new keys' entries are there
    again = [(k, d, 3, "again") for k, d, _, _ in NEW] + [("n9", "p", 3, "again")]
    with table:  # rolls the crashed instant back, then upserts
        row = upsert(spark, table, index, frame(spark, again), batch_no=2).metrics
    assert row["inserts"] == len(again) and row["updates"] == 0
    if sync:  # the rollback deleted them before the lookup
        assert (row["kv_rollback_deletes"], row["kv_stale_entries"]) == (len(NEW), 0)
    else:  # found, ignored as stale, counted; the records go in as inserts
        assert (row["kv_rollback_deletes"], row["kv_stale_entries"]) == (0, len(NEW))
    assert not [k for k, v in entries(table, index).items()
                if v.startswith(crashed.encode())]  # re-put by this commit (or deleted)
    want = {(d, k): "first" for k, d, _, _ in FIRST} | {(d, k): "again" for k, d, _, _ in again}
    assert committed(uri) == want  # nothing lost, nothing twice
    assert verify_table(spark, uri) == []


KILLED_WRITER = textwrap.dedent("""
    import sys
    import pandas as pd
    from indexbench.driver import open_table, upsert
    from indexbench.spark import get_session
    spark = get_session("local[1]", shuffle_partitions=2)
    table, index = open_table(sys.argv[1], "external-kv")
    batch = pd.DataFrame({"key": [f"n{i}" for i in range(5)], "dt": "p", "ts": 2,
                          "payload": "killed"})
    with table:
        upsert(spark, table, index, spark.createDataFrame(batch), batch_no=1)
""")


def test_kill_9_between_the_index_writes_and_the_commit(spark, tmp_path):
    """A real writer process dies (kill -9 at ``before_commit``): its server dies with
    it, its entries are stale for the next writer, the table holds every record once."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, INDEX)
    with table:
        upsert(spark, table, index, frame(spark, FIRST), batch_no=0)
    before = redis_server_pids()
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITER, uri],
                          env={**os.environ, CRASH_ENV: "before_commit"},
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 137, proc.stderr[-2000:]
    assert not redis_server_pids() - before  # died with its writer (parent-death signal)
    table, index = open_table(uri, INDEX)
    again = [(f"n{i}", "p", 3, "again") for i in range(5)]
    with table:
        row = upsert(spark, table, index, frame(spark, again), batch_no=2).metrics
    assert row["kv_stale_entries"] == 5 and row["inserts"] == 5
    want = {(d, k): "first" for k, d, _, _ in FIRST} | {("p", k): "again" for k, *_ in again}
    assert committed(uri) == want
    assert verify_table(spark, uri) == []


def test_a_server_that_dies_mid_batch_fails_the_write_in_one_line(spark, tmp_path,
                                                                  monkeypatch):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, INDEX)
    with table:
        upsert(spark, table, index, frame(spark, FIRST), batch_no=0)
    before = data_digest(uri)
    put = ExternalKvSpark.update_location

    def dies_first(self, ctx):  # the server is killed between the lookups and the puts
        os.kill(self.index.server_pid, signal.SIGKILL)
        return put(self, ctx)

    monkeypatch.setattr(ExternalKvSpark, "update_location", dies_first)
    with pytest.raises(WriteFailedError) as err, table:
        upsert(spark, table, index, frame(spark, NEW), batch_no=1)
    message = str(err.value)
    assert "\n" not in message and "rolled back, the table is unchanged" in message
    assert "Connection" in message or "connect" in message
    assert data_digest(uri) == before  # data files and timeline byte for byte
    assert index.server_pid is None  # the harness let go of the dead server
    monkeypatch.undo()
    with table:  # the next batch restarts the server from its append-only file
        row = upsert(spark, table, index, frame(spark, NEW), batch_no=1).metrics
    assert row["inserts"] == len(NEW) and row["kv_entries"] == len(FIRST) + len(NEW)
    assert verify_table(spark, uri) == []


def test_an_existing_server_by_url_is_used_and_left_running(spark, tmp_path):
    srv = server.RedisServer(tmp_path / "own")
    url = srv.start()
    try:
        uri = str(tmp_path / "t")
        params = {"indexbench.kv.url": url, "hoodie.index.hbase.table": "t1"}
        table, index = open_table(uri, INDEX, params)
        with table:
            upsert(spark, table, index, frame(spark, FIRST), batch_no=0)
        assert srv.pid in redis_server_pids()  # not the harness's to stop
        assert not os.path.exists(os.path.join(uri, ".hoodie", ".aux", "kv"))
        store = KvStore(url)
        keys = sorted(store.client.scan_iter())
        store.close()
        assert len(keys) == len(FIRST) and all(k.startswith(b"t1:") for k in keys)
        table, index = open_table(uri, INDEX)  # the URL is the table's, stored
        assert index.params["url"] == url
        assert verify_table(spark, uri) == []
    finally:
        srv.stop()


def test_run_verify_and_query_from_the_command_line(spark, tmp_path):
    out = tmp_path / "o"
    tiny = ["--initial-records", "300", "--batches", "2", "--batch-size", "80"]
    sets = ["--set", "hoodie.index.hbase.get.batch.size=16",
            "--set", "hoodie.index.hbase.put.batch.size=10"]
    assert cli.main(["run", "--index", INDEX, *tiny, *sets, "--out", str(out)]) == 0
    df = pd.read_parquet(out / "metrics.parquet")
    assert (df["kv_gets"] == df["records"]).all()
    assert (df["kv_puts"] == df["inserts"]).all()
    assert (df["kv_round_trips"] == df["kv_get_round_trips"] + df["kv_put_round_trips"]).all()
    assert (df["kv_get_round_trips"] >= -(-df["records"] // 16)).all()
    assert df["kv_entries"].tolist() == df["inserts"].cumsum().tolist()
    assert (df["kv_get_p50_ms"] > 0).all() and (df["kv_get_p99_ms"] >= df["kv_get_p50_ms"]).all()
    assert (df["kv_server_bytes"] > 0).all() and (df["kv_stale_entries"] == 0).all()
    uri = str(out / "tables" / INDEX)
    assert cli.main(["verify", uri]) == 0
    q = api.query([uri], ["lookup"], keys=40, batch_keys=20, spark=spark)
    assert q["fp_file_reads"].iloc[0] == 0  # the store names the one file of each key
    assert 0 < q["files_read_per_key"].iloc[0] <= 1


def test_verify_finds_a_record_the_store_lost(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, INDEX)
    with table:
        upsert(spark, table, index, frame(spark, FIRST), batch_no=0)
    with index.resources(table):
        store = KvStore(index.store_url())
        store.client.delete(b"p:k1")
        store.close()
    problems = verify_table(spark, uri)
    assert len(problems) == 1 and "1 record(s) of p/" in problems[0]
    assert "'k1'" in problems[0] and "duplicate" in problems[0]
