"""The delta peer: delta-rs MERGE of the identical batches, as one more compare series."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import peers
import reports
from indexbench import api, cli
from metrics import contract as m
from metrics.rows import PEER_UNSEEN
from reports import figures as F
from workloads import generator as G

TINY = {"initial_records": 1500, "batches": 3, "batch_size": 600}
SMALL = ["--initial-records", "800", "--batches", "1", "--batch-size", "200"]
COLUMNS = list(G.COLUMNS)


@pytest.fixture
def deltalake():
    return pytest.importorskip("deltalake")


def expected_state(w) -> pd.DataFrame:
    """The table after every batch, from the generated batches alone (pandas): per
    (dt, key) the record with the largest ts; a tie goes to the later batch, and inside a
    batch to the later row."""
    frames = [G.batch_frame(w, b).assign(_batch=b, _row=np.arange(G.batch_rows(w, b)))
              for b in range(w.batches + 1)]
    rows = pd.concat(frames, ignore_index=True)
    rows = rows.sort_values(["ts", "_batch", "_row"], kind="stable")
    last = rows.drop_duplicates(["dt", "key"], keep="last")
    return _canonical(last[COLUMNS])


def _canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[COLUMNS].astype({"ts": "int64"})
    for c in ("key", "dt", "index_key", "payload"):
        df[c] = df[c].astype(str)
    return df.sort_values(["dt", "key"]).reset_index(drop=True)


def test_precombine_keeps_the_larger_ordering_later_arrival_on_ties():
    from peers.delta import precombine

    t = pa.table({"key": ["a", "b", "a", "a", "b", "c"],
                  "dt": ["d1", "d1", "d1", "d1", "d2", "d1"],
                  "ts": [5, 1, 9, 9, 0, 3],
                  "payload": ["a5", "b1", "a9-first", "a9-second", "b-other-dt", "c3"]})
    out = precombine(t).to_pydict()
    got = dict(zip(zip(out["dt"], out["key"], strict=True), out["payload"], strict=True))
    assert got == {("d1", "a"): "a9-second", ("d1", "b"): "b1", ("d2", "b"): "b-other-dt",
                   ("d1", "c"): "c3"}


def test_delta_table_equals_the_expected_state_row_for_row(deltalake, tmp_path):
    from peers.delta import read_table

    w = api.load_workload("zipf-skewed", **TINY)  # hot keys: many in-batch duplicates
    out = tmp_path / "out"
    df = api.run_peer("delta", w, out=str(out))
    table = out / "tables" / "delta-merge"
    got = _canonical(read_table(str(table)).to_pandas())
    want = expected_state(w)
    pd.testing.assert_frame_equal(got, want)

    assert df["index"].eq("delta-merge").all() and df["run_mode"].eq("peer").all()
    assert df["batch"].tolist() == list(range(w.batches + 1))
    # what it can see: records after pre-combining, inserts + updates, the table
    combined = [len(G.batch_frame(w, b).drop_duplicates(["dt", "key"]))
                for b in range(w.batches + 1)]
    assert df["input_records"].tolist() == [G.batch_rows(w, b) for b in range(w.batches + 1)]
    assert df["records"].tolist() == combined
    assert (df["inserts"] + df["updates"] == df["records"]).all()
    assert df["inserts"].sum() == len(want) == df["table_records"].iloc[-1]
    assert df["inserts"].tolist() == [G.batch_inserts(w, b) for b in range(w.batches + 1)]
    assert (df["records_rewritten"] >= 0).all() and (df["files_written"] > 0).all()
    assert (df["files_in_table"] == df["files_written"].cumsum()).all()  # all versions
    assert (df["bytes_written"] > 0).all() and (df["table_bytes"] > 0).all()
    # timings: the merge is write_s; generation and pre-combining are their own columns
    assert (df["write_s"] > 0).all() and (df["generate_s"] > 0).all()
    total = df["generate_s"] + df["precombine_s"] + df["write_s"]
    assert np.allclose(df["total_s"], total, rtol=1e-6)
    # what it cannot see is empty, not 0 -- also after the round trip through the file
    stored = m.read_metrics(out)
    for frame in (df, stored):
        for col in [c for c in PEER_UNSEEN if c in frame.columns]:
            assert frame[col].isna().all(), col
        for col in m.COUNT_COLUMNS:
            assert frame[col].isna().all(), col

    # resume: the same call commits nothing and adds no rows
    again = api.run_peer("delta", w, out=str(out))
    assert len(again) == len(df) and len(m.read_metrics(out)) == len(df)
    # another workload's batches are refused
    with pytest.raises(api.IndexBenchError, match="another workload"):
        api.run_peer("delta", w.with_overrides(seed=7), out=str(out))


def test_ties_go_to_the_incoming_record_and_updates_count_like_hudi(deltalake, tmp_path,
                                                                     monkeypatch):
    import peers.delta as D

    batches = {
        0: [("a", "d1", 10, "a-old"), ("b", "d1", 10, "b-old")],
        1: [("a", "d1", 10, "a-tie"),       # tie: the incoming record wins
            ("b", "d1", 5, "b-older"),      # older: the stored record stays
            ("c", "d1", 7, "c-first"), ("c", "d1", 7, "c-second")],  # later arrival wins
    }

    def fake_batch_table(w, b):
        k, dt, ts, pl = zip(*batches[b], strict=True)
        return pa.table({"key": list(k), "dt": list(dt), "ts": pa.array(ts, pa.int64()),
                         "index_key": list(k), "payload": list(pl)}, schema=G.ARROW_SCHEMA)

    monkeypatch.setattr(D.G, "batch_table", fake_batch_table)
    w = api.load_workload("uniform", initial_records=2, batches=1, batch_size=4)
    tbl = D.open_table(str(tmp_path / "t"), "fingerprint")
    rows = [tbl.upsert(w, b) for b in (0, 1)]
    got = D.read_table(str(tmp_path / "t")).to_pydict()
    assert dict(zip(got["key"], got["payload"], strict=True)) == {
        "a": "a-tie", "b": "b-old", "c": "c-second"}
    assert (rows[1]["input_records"], rows[1]["records"]) == (4, 3)
    assert (rows[1]["inserts"], rows[1]["updates"]) == (1, 2)  # a and b existed
    assert rows[1]["peer_rows_updated"] == 1  # delta updated only a (b lost on ts)
    assert rows[1]["deletes"] == 0  # no delete column: nothing deleted, as the driver's 0
    assert rows[1]["records_rewritten"] == 0


def test_compare_with_peers_through_the_cli(deltalake, spark, tmp_path):
    pytest.importorskip("pypaimon")
    out = tmp_path / "cmp"
    argv = ["compare", "--indexes", "simple-bucket", "--peers", "delta,paimon", *SMALL,
            "--out", str(out), "--set", "hoodie.bucket.index.num.buckets=2", "--no-query"]
    assert cli.main(argv) == 0
    df = m.read_metrics(out)
    assert set(df["index"]) == {"simple-bucket", "delta-merge", "paimon-fixed",
                                "paimon-dynamic"}
    sb = df[df["index"] == "simple-bucket"].set_index("batch")
    dm = df[df["index"] == "delta-merge"].set_index("batch")
    assert dm.index.tolist() == [0, 1]
    for col in ("input_records", "records", "inserts", "updates", "table_records",
                "partitions_touched"):  # identical batches, same counting
        assert (sb[col] == dm[col]).all(), col
    assert dm["files_read"].isna().all() and (sb["files_read"] == 0).all()
    assert dm["tag_s"].isna().all() and dm["write_s"].notna().all()
    run = json.loads((out / "run.json").read_text())
    assert run["peers"]["delta-merge"]["peer"] == "delta"
    assert "delta-merge" not in run["tables"]  # the Hudi tables only
    for series in ("paimon-fixed", "paimon-dynamic"):  # the same records, read back
        pm = df[df["index"] == series].set_index("batch")
        for col in ("input_records", "table_records", "partitions_touched"):
            assert (sb[col] == pm[col]).all(), (series, col)
        info = run["peers"][series]
        assert info["records_check"] == "equal to the indexes' at batches 0, 1"
        assert info["writer"] == pm["peer_writer"].iloc[-1] and "error" not in info
    # the fixed table mirrors simple-bucket's --set count: 2 buckets in each partition
    assert run["peers"]["paimon-fixed"]["options"]["bucket"] == "2"
    assert (df[df["index"] == "paimon-fixed"]["buckets"] == 2 * sb["partitions_touched"]
            .iloc[0]).all()

    page = (out / "report" / "index.html").read_text()
    assert "delta-merge" in page and "paimon-dynamic" in page
    data = reports.load(out)
    titles = [ax.get_title() for ax in F.latency_figure(data.df).axes]
    assert any(t.startswith("delta-merge\n") for t in titles)
    labels = [ln.get_label() for ax in F.files_read_figure(data.df).axes for ln in ax.lines]
    assert "delta-merge" not in labels  # no index: not drawn as 0 files read
    table = reports.page.comparison(data.df)
    assert "delta-merge" in table.columns and pd.isna(table.loc["tag_s", "delta-merge"])
    # Paimon's tables have buckets: drawn with the bucket index, counted from the table
    assert (out / "report" / "bucket_growth.png").exists()
    growth = [ln.get_label() for ln in F.bucket_growth_figure(data.df).axes[0].lines]
    assert growth == ["simple-bucket", "paimon-fixed", "paimon-dynamic"]
    assert sum(data.bucket_counts["paimon-dynamic"]) == sb["table_records"].iloc[-1]


def test_a_missing_deltalake_is_one_clear_error(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "deltalake", None)  # as if it were not installed
    out = tmp_path / "never"
    assert cli.main(["compare", "--indexes", "simple-bucket", "--peers", "delta", *SMALL,
                     "--out", str(out)]) == 2
    text = capsys.readouterr().err
    assert "deltalake" in text and 'pip install -e ".[peers]"' in " ".join(text.split())
    assert not out.exists()
    with pytest.raises(peers.PeerUnavailableError, match=r"\[peers\]"):
        api.compare(["simple-bucket"], "uniform", out=str(out), master="no-spark-started",
                    peers=("delta",))
    with pytest.raises(peers.PeerUnavailableError, match="unknown peer 'nope'"):
        peers.check(["nope"])
    assert not out.exists()


def _oracle(w) -> tuple[dict, list[dict]]:
    """The table after every batch of a workload with deletes, as a dict (dt, key) → row,
    and per batch what happened: the Hudi rules applied record by record after the
    pre-combine (larger ts, later arrival on ties; the winner keeps its delete flag)."""
    state: dict = {}
    counts = []
    for b in range(w.batches + 1):
        combined: dict = {}
        for row in G.batch_frame(w, b).to_dict("records"):
            k = (row["dt"], row["key"])
            if k not in combined or row["ts"] >= combined[k]["ts"]:
                combined[k] = row
        c = {"records": len(combined), "inserts": 0, "updates": 0, "deletes": 0,
             "delete_records": 0, "missing_deletes": 0}
        for k, row in combined.items():
            deleted = row.pop(G.DELETE_COLUMN)
            stored = state.get(k)
            c["delete_records"] += deleted
            if stored is None:
                if deleted:
                    c["missing_deletes"] += 1  # a no-op
                else:
                    state[k] = row
                    c["inserts"] += 1
            elif deleted:
                if row["ts"] >= stored["ts"]:
                    del state[k]
                    c["deletes"] += 1
            else:
                c["updates"] += 1  # counted as Hudi does, whichever record wins
                if row["ts"] >= stored["ts"]:
                    state[k] = row
        counts.append(c)
    return state, counts


def test_deletes_apply_like_hudi_against_a_dict_oracle(deltalake, tmp_path):
    import peers.delta as D

    # zipfian: hot keys are deleted, then updated again (re-inserted) and deleted again
    w = api.load_workload("deletes", **TINY).with_overrides(distribution="zipfian",
                                                               update_fraction=0.3,
                                                               delete_fraction=0.3)
    state, counts = _oracle(w)
    assert sum(c["deletes"] for c in counts) > 0
    assert sum(c["missing_deletes"] for c in counts) > 0  # deletes of deleted keys
    tbl = D.open_table(str(tmp_path / "t"), "fingerprint")
    rows = [tbl.upsert(w, b) for b in range(w.batches + 1)]
    got = D.read_table(str(tmp_path / "t"))
    assert got.schema == G.ARROW_SCHEMA  # the flag is not stored
    want = pd.DataFrame(list(state.values()), columns=COLUMNS)
    pd.testing.assert_frame_equal(_canonical(got.to_pandas()), _canonical(want))
    for row, c in zip(rows, counts, strict=True):
        assert (row["records"], row["inserts"], row["updates"], row["deletes"]) == (
            c["records"], c["inserts"], c["updates"], c["deletes"]), row["batch"]
        assert row["inserts"] + row["updates"] + c["delete_records"] == row["records"]
    assert rows[-1]["table_records"] == len(state)
    assert sum(r["inserts"] for r in rows) > G.total_keys(w)  # deleted keys came back


def test_deletes_follow_the_ordering_rule(deltalake, tmp_path, monkeypatch):
    import peers.delta as D

    f = G.DELETE_COLUMN
    batches = {
        0: [("a", 10, "a0", False), ("b", 10, "b0", False), ("c", 10, "c0", False),
            ("d", 10, "d0", False), ("e", 10, "e0", False)],
        1: [("a", 10, "a-del-tie", True),      # tie: the delete wins
            ("b", 5, "b-del-older", True),     # older: the stored record stays
            ("c", 12, "c-del", True), ("c", 11, "c-upd-older", False),  # the delete wins
            ("d", 11, "d-del", True), ("d", 12, "d-upd", False),  # pre-combine: update wins
            ("e", 13, "e-upd", False), ("e", 13, "e-del-later", True),  # tie: later wins
            ("x", 20, "x-del-missing", True)],  # a delete of a missing key: a no-op
        2: [("a", 30, "a-back", False),        # deleted, updated again: inserted again
            ("c", 30, "c-del-again", True)],   # deleted twice: a no-op
    }

    def fake_batch_table(w, b):
        k, ts, pl, dl = zip(*batches[b], strict=True)
        return pa.table({"key": list(k), "dt": ["d1"] * len(k), "ts": pa.array(ts, pa.int64()),
                         "index_key": list(k), "payload": list(pl), f: list(dl)},
                        schema=G.arrow_schema(w))

    monkeypatch.setattr(D.G, "batch_table", fake_batch_table)
    w = api.load_workload("deletes", initial_records=5, batches=2, batch_size=9)
    tbl = D.open_table(str(tmp_path / "t"), "fingerprint")
    rows = [tbl.upsert(w, 0), tbl.upsert(w, 1)]
    got = D.read_table(str(tmp_path / "t")).to_pydict()
    assert dict(zip(got["key"], got["payload"], strict=True)) == {"b": "b0", "d": "d-upd"}
    assert f not in got
    assert (rows[1]["records"], rows[1]["inserts"], rows[1]["updates"]) == (6, 0, 1)
    assert rows[1]["deletes"] == 3  # a, c, e; b lost on ts, x was missing
    rows.append(tbl.upsert(w, 2))
    got = D.read_table(str(tmp_path / "t")).to_pydict()
    assert dict(zip(got["key"], got["payload"], strict=True)) == {
        "a": "a-back", "b": "b0", "d": "d-upd"}
    assert (rows[2]["inserts"], rows[2]["updates"], rows[2]["deletes"]) == (1, 0, 0)
    assert D.describe()["delete_when"].startswith("s.ts >= t.ts AND s._hoodie_is_deleted")
