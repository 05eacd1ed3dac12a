"""The paimon peer: the identical batches written to Paimon fixed- and dynamic-bucket
tables (pypaimon), driven directly, no Spark. The compare through the CLI is in
tests/test_peers.py (one Spark test for every peer)."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from test_peers import COLUMNS, _canonical, _oracle, expected_state

import peers
from indexbench import api
from metrics import contract as m
from workloads import generator as G

pytest.importorskip("pypaimon")
import peers.paimon as P  # noqa: E402 - after the skip

TINY = {"initial_records": 600, "batches": 2, "batch_size": 300}
# the tables mirror these: 2 fixed buckets per partition, dynamic buckets of 50 keys
MIRRORED = {"simple-bucket": {"hoodie.bucket.index.num.buckets": "2"},
            "dynamic-rli": {"hoodie.bucket.index.dynamic.max.records": "50"}}


def _write(tmp_path, w, series, native=None, fingerprint="fp"):
    tbl = P.open_table(str(tmp_path / "wh"), fingerprint, series=series,
                       index_params=MIRRORED, native=native)
    try:
        rows = [tbl.upsert(w, b) for b in range(tbl.committed_batches(), w.batches + 1)]
    finally:
        tbl.close()
    return tbl, pd.DataFrame(rows)


def test_registry_names_both_series_and_the_indexes_they_mirror():
    assert peers.runs(["paimon"]) == [("paimon", "paimon-fixed"), ("paimon", "paimon-dynamic")]
    assert peers.runs(["paimon-dynamic", "delta", "paimon"]) == [
        ("paimon", "paimon-dynamic"), ("delta", "delta-merge"), ("paimon", "paimon-fixed")]
    assert peers.mirrored_indexes(["paimon-fixed"]) == ["simple-bucket", "dynamic-rli"]
    assert peers.mirrored_indexes(["delta"]) == []
    with pytest.raises(peers.PeerUnavailableError, match="known peers: delta, paimon, "):
        peers.check(["paimon-typo"])
    # Paimon's own option names; the mirrored values as the run resolves them
    fixed = P.table_options("paimon-fixed", MIRRORED, native=True)
    dynamic = P.table_options("paimon-dynamic", MIRRORED, deletes=True, native=False)
    assert fixed["bucket"] == "2" and "dynamic-bucket.target-row-num" not in fixed
    assert (dynamic["bucket"], dynamic["dynamic-bucket.target-row-num"]) == ("-1", "50")
    assert fixed["sequence.field"] == dynamic["sequence.field"] == "ts"
    assert "rowkind.field" not in fixed and dynamic["rowkind.field"] == P.ROW_KIND
    assert (fixed["write.native.enabled"], dynamic["write.native.enabled"]) == ("true", "false")
    # defaults: simple-bucket's 16 buckets, dynamic-rli's 2,000 keys per bucket
    assert P.table_options("paimon-fixed")["bucket"] == "16"
    assert P.table_options("paimon-dynamic")["dynamic-bucket.target-row-num"] == "2000"


@pytest.mark.parametrize("series", P.SERIES)
def test_tables_equal_the_expected_state_and_rows_count_what_paimon_wrote(tmp_path, series):
    w = api.load_workload("zipf-skewed", **TINY)  # hot keys: duplicates inside a batch
    tbl, df = _write(tmp_path, w, series)
    got = _canonical(P.read_table(str(tmp_path / "wh"), series).to_pandas())
    pd.testing.assert_frame_equal(got, expected_state(w))  # larger ts wins, later on ties

    n = w.batches + 1
    keys = np.cumsum([G.batch_inserts(w, b) for b in range(n)])
    assert df["table_records"].tolist() == keys.tolist()  # read back, merged
    # what Paimon wrote: the batch after its writer merged the duplicates; no rewrites
    distinct = [len(G.batch_frame(w, b).drop_duplicates(["dt", "key"])) for b in range(n)]
    assert df["records"].tolist() == df["records_written"].tolist() == distinct
    assert df["input_records"].tolist() == [G.batch_rows(w, b) for b in range(n)]
    assert (df["records_rewritten"] == 0).all() and df["inserts"].isna().all()
    assert df["updates"].isna().all() and df["deletes"].isna().all()
    assert (df["files_in_table"] == df["files_written"].cumsum()).all()  # LSM: appended
    assert (df["bytes_written"] > 0).all()
    assert df["table_bytes"].tolist() == df["bytes_written"].cumsum().tolist()
    assert (df["partitions_touched"] == w.partitions).all()
    # buckets and their fill, from the read-back
    assert np.allclose(df["bucket_records_mean"] * df["buckets"], df["table_records"])
    assert df["buckets_created"].sum() == df["buckets"].iloc[-1]
    assert (df["peer_snapshot_id"] == np.arange(1, n + 1)).all()
    assert (df["peer_files_per_bucket_max"] <= df["peer_snapshot_id"]).all()
    if series == "paimon-fixed":  # a hash modulo 2 in each partition; no index files
        assert (df["buckets"] == 2 * w.partitions).all()
        assert (df["index_disk_bytes"] == 0).all() and (df["peer_index_entries"] == 0).all()
    else:  # new buckets once all are full; one HASH file per bucket, 4 bytes per key
        assert (df["bucket_records_max"] <= 50).all()
        assert df["buckets"].iloc[-1] >= math.ceil(keys[-1] / 50)
        assert (df["peer_index_entries"] == df["table_records"]).all()
        assert (df["index_disk_bytes"] == 4 * df["peer_index_entries"]).all()
        assert (df["peer_index_files_written"] > 0).all()
        assert (df["peer_index_bytes_written"] <= df["index_disk_bytes"]).all()
    if series == "paimon-fixed":  # no map: 0; the dynamic one lives in Rust's heap
        assert (df["index_mem_bytes"] == 0).all()
    else:
        assert df["index_mem_bytes"].isna().all()
    # timings: generation, write, commit; the read-back is not in total_s
    total = df["generate_s"] + df["write_s"] + df["commit_s"]
    assert np.allclose(df["total_s"], total) and (df["peer_read_s"] > 0).all()
    assert df["tag_s"].isna().all() and df["files_read"].isna().all()
    writer = "native" if P.native_available() else "python"
    assert (df["peer_writer"] == writer).all() and tbl.describe()["writer"] == writer
    assert tbl.describe()["options"]["bucket"] == ("2" if series == "paimon-fixed" else "-1")

    # resume: nothing more to write; another workload's batches are refused
    again = P.open_table(str(tmp_path / "wh"), "fp", series=series, index_params=MIRRORED)
    assert again.committed_batches() == n
    with pytest.raises(api.IndexBenchError, match="another workload"):
        P.open_table(str(tmp_path / "wh"), "other", series=series).committed_batches()


def test_the_python_writer_writes_the_same_table(tmp_path):
    w = api.load_workload("zipf-skewed", initial_records=200, batches=1, batch_size=100)
    _tbl, df = _write(tmp_path, w, "paimon-dynamic", native=False)
    got = _canonical(P.read_table(str(tmp_path / "wh"), "paimon-dynamic").to_pandas())
    pd.testing.assert_frame_equal(got, expected_state(w))
    assert (df["peer_writer"] == "python").all()
    assert (df["index_disk_bytes"] == 4 * df["table_records"]).all()


def test_deletes_through_the_row_kind_against_a_dict_oracle(tmp_path):
    w = api.load_workload("deletes", **TINY).with_overrides(
        distribution="zipfian", update_fraction=0.3, delete_fraction=0.3)
    state, counts = _oracle(w)
    assert sum(c["deletes"] for c in counts) and sum(c["missing_deletes"] for c in counts)
    _tbl, df = _write(tmp_path, w, "paimon-fixed")
    got = P.read_table(str(tmp_path / "wh"), "paimon-fixed")
    assert got.schema.names == G.ARROW_SCHEMA.names  # the row kind column is not user data
    assert got.schema.types == G.ARROW_SCHEMA.types
    want = pd.DataFrame(list(state.values()), columns=COLUMNS)
    pd.testing.assert_frame_equal(_canonical(got.to_pandas()), _canonical(want))
    assert df["table_records"].iloc[-1] == len(state)
    if P.native_available():  # pypaimon's Python writer does not count delete rows
        delete_rows = [G.batch_frame(w, b).pipe(
            lambda f: f[f[G.DELETE_COLUMN]]).drop_duplicates(["dt", "key"]).shape[0]
            for b in range(w.batches + 1)]
        assert df["peer_delete_rows_written"].sum() <= sum(delete_rows)
        assert df["peer_delete_rows_written"].iloc[1:].gt(0).all()


def test_a_delete_stays_in_the_lsm_unlike_hudi(tmp_path, monkeypatch):
    """Where Paimon and Hudi differ: a deleted key's -D stays in the LSM (pypaimon never
    compacts it away), so a later write of the key with a smaller ts loses to it, while
    Hudi has forgotten the record and inserts it; a delete of a missing key is a no-op in
    both, but takes a slot in the dynamic bucket index."""
    f = G.DELETE_COLUMN
    batches = {0: [("a", 10, "a0", False), ("b", 10, "b0", False)],
               1: [("a", 20, "a-del", True), ("x", 5, "x-del-missing", True)],
               2: [("a", 15, "a-back-older", False), ("b", 30, "b-new", False)]}

    def fake(w, b):
        k, ts, pl, dl = zip(*batches[b], strict=True)
        return pa.table({"key": list(k), "dt": ["d1"] * len(k), "ts": pa.array(ts, pa.int64()),
                         "index_key": list(k), "payload": list(pl), f: list(dl)},
                        schema=G.arrow_schema(w))

    monkeypatch.setattr(P.G, "batch_table", fake)
    w = api.load_workload("deletes", initial_records=2, batches=2, batch_size=2)
    _tbl, df = _write(tmp_path, w, "paimon-dynamic")
    got = P.read_table(str(tmp_path / "wh"), "paimon-dynamic").to_pydict()
    assert got["payload"] == ["b-new"]  # Hudi: a-back-older and b-new
    assert df["table_records"].tolist() == [2, 1, 1]
    assert df["peer_index_entries"].tolist() == [2, 3, 3]  # x got a bucket


def test_a_peer_failure_is_one_line_and_the_records_are_checked(tmp_path, monkeypatch,
                                                                caplog):
    w = api.load_workload("uniform", **TINY)
    lines = []

    def broken(self, w, b):
        raise RuntimeError("pypaimon broke\nwith a long traceback")

    monkeypatch.setattr(P.PaimonTable, "upsert", broken)
    frame, info = api._compare_peer("paimon", "paimon-fixed", w, out=str(tmp_path),
                                    params=None, progress=None, run_id="r", notify=lines.append,
                                    indexes_rows=[])
    assert frame.empty and info["error"] == "RuntimeError: pypaimon broke"
    assert lines == ["peer paimon-fixed failed, the indexes' results stand: "
                     "RuntimeError: pypaimon broke"]
    assert info["peer"] == "paimon" and info["table"] == str(tmp_path / "tables" / "paimon")
    with caplog.at_level(logging.WARNING, logger="indexbench"):  # no notify: a warning
        api._compare_peer("paimon", "paimon-dynamic", w, out=str(tmp_path), params=None,
                          progress=None, run_id="r", notify=None, indexes_rows=[])
    assert [r.getMessage()[:28] for r in caplog.records] == ["peer paimon-dynamic failed, "]

    ours = pd.DataFrame({"index": ["simple-bucket"] * 2, "batch": [0, 1],
                         "operation": ["upsert"] * 2, "table_records": [600, 900]})
    same = pd.DataFrame({"batch": [0, 1], "table_records": [600, 900]})
    assert api.peer_records_check(same, [ours]) == "equal to the indexes' at batches 0, 1"
    rerun = pd.concat([same.assign(table_records=[1, 2]), same])  # the last row counts
    assert api.peer_records_check(rerun, [ours]) == "equal to the indexes' at batches 0, 1"
    other = same.assign(table_records=[600, 899])
    assert api.peer_records_check(other, [ours]) == (
        "table_records differ from the indexes' at batch 1: 899 vs 900")
    assert api.peer_records_check(same, []) is None


def test_rows_survive_the_metrics_file(tmp_path):
    w = api.load_workload("uniform", initial_records=200, batches=1, batch_size=100)
    df = api.run_peer("paimon-dynamic", w, out=str(tmp_path), index_params=MIRRORED)
    stored = m.read_metrics(tmp_path)
    assert stored["index"].tolist() == ["paimon-dynamic"] * 2
    assert stored["peer_writer"].tolist() == df["peer_writer"].tolist()  # a string column
    assert stored["run_mode"].eq("peer").all() and stored["files_read"].isna().all()
    assert (stored["index_disk_bytes"] > 0).all() and stored["index_mem_bytes"].isna().all()
    with pytest.raises(api.IndexBenchError, match="writes 2 series"):
        api.run_peer("paimon", w, out=str(tmp_path), table=str(tmp_path / "x"))
