"""``indexbench advise --check`` (issue #42, point 2): the advice's ranking held against
the ranking measured on real Spark (and by Hudi's own writer), pair by pair, with ties
on the model's side and noise on the measured side never read as an order."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from test_advise import SMALL, _request

import indexes
from indexbench import api
from indexbench.advise import run as advise_run
from indexbench.advise.check import (
    CheckRequest,
    compare_params,
    hudi_measured,
    measured_batches,
    measured_costs,
    pairs,
    read_side,
)
from indexbench.cli import main
from reports.advice import CheckResult, advice_text, check_lines, read_lines
from tableformat.errors import IndexBenchError


def _rows(series: dict[str, list[tuple[float, float]]], hudi_services: float = 0.0
          ) -> pd.DataFrame:
    """Compare rows: per series a load and then (tag_s, write_s) per batch; a Hudi series
    beside one of our indexes names it in ``peer_of``, as peers/hudi.py writes it."""
    rows = []
    for name, batches in series.items():
        hudi = name.startswith("hudi-")
        mirrors = name[5:] if hudi and name[5:] in indexes.names() else None
        rows.append({"index": name, "batch": 0, "operation": "upsert", "tag_s": 50.0,
                     "write_s": 50.0, "peer_of": mirrors})
        for b, (tag, write) in enumerate(batches, start=1):
            rows.append({"index": name, "batch": b, "operation": "upsert", "tag_s": tag,
                         "write_s": write, "hudi_service_s": hudi_services if hudi else None,
                         "peer_of": mirrors})
    return pd.DataFrame(rows)


def test_measured_seconds_are_tag_write_and_the_services_of_each_batch():
    rows = _rows({"bloom": [(1.0, 2.0), (1.5, 2.0)], "hudi-bloom": [(2.0, 3.0), (2.0, 4.0)]},
                 hudi_services=0.5)
    rescale = {"index": "bloom", "batch": 2, "operation": "rescale", "total_s": 4.0}
    query = {"index": "bloom", "batch": 2, "operation": "query", "total_s": 99.0}
    b = measured_batches(pd.concat([rows, pd.DataFrame([rescale, query])]))
    got = b.set_index(["series", "batch"])["measured_s"]
    assert got[("bloom", 1)] == 3.0 and got[("bloom", 2)] == 7.5  # the load left out
    assert got[("hudi-bloom", 1)] == 5.5 and got[("hudi-bloom", 2)] == 6.5
    c = measured_costs(pd.concat([rows, pd.DataFrame([rescale])]))
    assert c.loc["bloom"].to_dict() == {"measured_s": 5.25, "measured_min_s": 3.0,
                                        "measured_max_s": 7.5, "batches": 2}


def test_a_pair_is_ordered_only_when_both_sides_part_it():
    modelled = pd.Series({"a": 1.00, "b": 1.01, "c": 2.0, "d": 3.0})
    measured = measured_costs(_rows({
        "a": [(1.0, 0.0), (1.2, 0.0), (1.1, 0.0)],
        "b": [(1.3, 0.0), (1.4, 0.0), (1.5, 0.0)],  # apart from a, but modelled 1% away
        "c": [(1.45, 0.0), (3.0, 0.0), (3.1, 0.0)],  # overlaps b: noise, not an order
        "d": [(0.5, 0.0), (0.6, 0.0), (0.7, 0.0)],  # faster than all: the model is wrong
    }))
    p = pairs(modelled, measured, tie=0.02).set_index(["a", "b"])
    assert p.loc[("a", "b"), "modelled_first"] == "tie"
    assert p.loc[("a", "b"), "measured_first"] == "a" and p.loc[("a", "b"), "verdict"] == "tied"
    assert p.loc[("a", "c"), "verdict"] == "agree"
    assert p.loc[("b", "c"), "measured_first"] == "tie"
    assert (p.xs("d", level="b")["verdict"] == "conflict").all()
    assert list(p.index[:3]) == [("a", "b"), ("a", "c"), ("a", "d")]  # the advice's order


def test_hudis_writer_is_ranked_among_its_own_series():
    h = hudi_measured(_rows({
        "bloom": [(1.0, 1.0), (1.0, 1.0)], "hudi-bloom": [(5.0, 1.0), (5.0, 1.0)],
        "hudi-simple-bucket": [(1.0, 1.0), (1.2, 1.0)], "hudi-simple": [(0.1, 0.1)] * 2}))
    assert list(h.index) == ["bloom", "simple-bucket"]  # hudi-simple: no index of ours
    p = pairs(pd.Series({"simple-bucket": 1.0, "bloom": 2.0}), h, tie=0.02)
    assert p[["a", "b", "verdict"]].values.tolist() == [["simple-bucket", "bloom", "agree"]]


def test_the_read_side_is_what_the_query_phase_counted():
    q = [{"index": "bloom", "operation": "query", "query": "lookup", "files_read_per_key": 0.08,
          "latency_p50_s": 0.5},
         {"index": "bloom", "operation": "query", "query": "join", "plan": "default",
          "shuffle_bytes": 84_530, "total_s": 0.3},
         {"index": "simple-bucket", "operation": "query", "query": "lookup",
          "files_read_per_key": 0.65, "latency_p50_s": 0.3},
         {"index": "simple-bucket", "operation": "query", "query": "join", "plan": "default",
          "shuffle_bytes": 85_069, "total_s": 1.1},
         {"index": "simple-bucket", "operation": "query", "query": "join",
          "plan": "bucket-aware", "shuffle_bytes": 0, "total_s": 0.27},
         {"index": "simple-bucket", "operation": "query", "query": "groupby",
          "plan": "bucket-aware", "shuffle_bytes": 0, "total_s": 0.6}]
    r = read_side(pd.concat([_rows({"bloom": [(1, 1)]}), pd.DataFrame(q)]))
    assert r.loc["bloom", "lookup_files_per_key"] == 0.08
    assert r.loc["bloom", "join_plan"] == "default"
    assert r.loc["simple-bucket"].to_dict() == {
        "lookup_files_per_key": 0.65, "lookup_p50_s": 0.3, "join_shuffle_bytes": 0.0,
        "join_s": 0.27, "join_plan": "bucket-aware"}
    text = " ".join(read_lines(r))
    assert "bloom 0.08 0.5 s 82.5 KiB default" in " ".join(text.split())
    assert read_side(_rows({"bloom": [(1, 1)]})).empty  # no query phase: nothing to say


def test_the_check_runs_each_index_at_the_setting_the_advice_chose():
    req = _request(table_type="mor")
    chosen = pd.DataFrame({"index": ["simple-bucket", "bloom"],
                           "setting": ["1 bucket, for now", "Hudi's file sizing"]})
    params = compare_params(req, chosen)
    assert params["simple-bucket"]["num_buckets"] == 1
    assert params["bloom"]["scale"] == 1.0
    assert {p["hoodie.table.type"] for p in params.values()} == {"mor"}
    for name, p in params.items():  # every index accepts what the check gives it
        indexes.get(name, **{k: v for k, v in p.items() if k != "hoodie.table.type"})
    bad = chosen.assign(setting=["9 buckets", "x"])
    with pytest.raises(IndexBenchError, match="not among its candidates"):
        compare_params(req, bad)


@pytest.mark.parametrize(("creq", "kw", "message"), [
    (CheckRequest(batches=1), {}, "--check-batches must be >= 2"),
    (CheckRequest(), {"initial_records": 9_000}, "at most that large"),
])
def test_a_check_is_refused_before_anything_runs(creq, kw, message, tmp_path):
    def measure(*args):
        raise AssertionError("nothing may run")

    with pytest.raises(IndexBenchError, match=message):
        advise_run.advise(_request(**kw), out=tmp_path / "a", check=creq, measure=measure)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_check_leaves_no_answer(tmp_path):
    def measure(names, w, params, where, peer_params):
        (tmp_path / "measured").write_text(where)
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError, match="executor lost"):
        advise_run.advise(_request(indexes=("simple-bucket",)), out=tmp_path / "a",
                          check=CheckRequest(), measure=measure)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["measured"]


def test_the_cli_refuses_check_flags_without_check(tmp_path, capsys):
    rc = main(["advise", "--check-peers", "hudi", "--out", str(tmp_path / "a")])
    assert rc == 2 and "add --check" in capsys.readouterr().err


def test_the_answer_says_each_conflict_and_hudis_counters():
    table = pd.DataFrame({"modelled_s": [1.0, 2.0], "measured_s": [3.0, 1.0],
                          "measured_min_s": [2.9, 0.9], "measured_max_s": [3.1, 1.1],
                          "hudi_measured_s": [4.0, float("nan")]},
                         index=pd.Index(["simple-bucket", "bloom"], name="index"))
    measured = table[["measured_s", "measured_min_s", "measured_max_s"]]
    ours = pairs(table["modelled_s"], measured, tie=0.02)
    fid = pd.DataFrame([{"index": "bloom", "table_type": "cow", "batch": 1,
                         "check": "files_read", "ours": 3, "hudi": 4, "status": "fail"},
                        {"index": "bloom", "table_type": "cow", "batch": 1,
                         "check": "bytes_written", "ours": 3, "hudi": 3, "status": "pass"}])
    c = CheckResult(size=1000, batches=3, table=table, ours=ours, hudi=ours.iloc[:0],
                    run_dir="out/a/check", tie=0.02, fidelity=fid)
    assert c.conflicts == 1 and not c.agrees
    text = "\n".join(check_lines(c))
    assert max(len(line) for line in text.splitlines()) <= 80
    flat = " ".join(text.split())
    assert "0 agree, 1 conflict, 0 tied" in flat
    assert "conflict (ours): modelled simple-bucket 1 s, bloom 2 s; measured 3 s, 1 s." in flat
    assert "2 checks, 1 pass, 0 explained, 1 fail" in flat
    assert "bloom (cow) batch 1 files_read: ours 3, Hudi's 4" in flat


def test_advise_check_on_real_spark(tmp_path, spark):
    out = tmp_path / "a"
    answer, page = api.advise("uniform", indexes=["bloom", "simple-bucket"], out=str(out),
                              check=True, check_batches=2, **SMALL)
    c = answer.check
    assert c is not None and c.size == 2_000 and c.batches == 2
    assert list(c.table.index) == list(c.table["modelled_s"].sort_values().index)
    assert (c.table["measured_s"] > 0).all() and (c.table["modelled_s"] > 0).all()
    assert len(c.ours) == 1 and c.hudi.empty
    # bloom reads every file's footer and keys to tag, the bucket index none: no order
    # the measurement sees may be the opposite of the advice's
    assert c.agrees, c.ours.to_dict("records")
    assert {p.name for p in (out / "check").iterdir()} >= {"metrics.parquet", "check.csv",
                                                           "pairs.csv", "run.json"}
    assert not (out / "check" / "tables").exists()  # read, then removed
    assert set(c.reads.index) == {"bloom", "simple-bucket"}
    assert (c.reads["lookup_files_per_key"] > 0).all()
    rows_all = pd.read_parquet(out / "check" / "metrics.parquet")
    joins = rows_all[(rows_all["operation"] == "query") & (rows_all["query"] == "join")]
    for name, r in c.reads.iterrows():  # the join at the plan that shuffled least
        mine = joins[joins["index"] == name]
        assert r["join_shuffle_bytes"] == mine["shuffle_bytes"].min()
        assert r["join_plan"] in set(mine["plan"])
    rows = pd.read_parquet(out / "check" / "metrics.parquet")
    rows = rows[rows["operation"] == "upsert"]
    assert set(rows["index"]) == {"bloom", "simple-bucket"}
    assert rows["batch"].max() == 2 and (rows["input_records"][rows["batch"] == 0] == 2_000).all()
    run = json.loads((out / "run.json").read_text())
    assert run["check"] == {"size": 2_000, "batches": 2, "conflicts": c.conflicts,
                            "peers": []}
    text = advice_text(answer)
    assert "Checked on real Spark at 2,000 records, 2 upsert batches" in text
    assert page.read_text().count("Checked on real Spark") == 1


def test_hudis_series_are_held_to_the_model_of_hudis_writer():
    """With ``--hudi-storage`` the check ranks Hudi's series against Hudi's own model
    (at the settings Hudi's writer ran), not ours: here ours puts simple-bucket first,
    Hudi's model and Hudi's writer both put bloom first, so the pair agrees."""
    from indexbench.advise.check import check_result

    rows = _rows({"simple-bucket": [(1.0, 1.0)] * 3, "bloom": [(2.0, 2.0)] * 3,
                  "hudi-simple-bucket": [(5.0, 20.0), (5.0, 21.0), (5.0, 22.0)],
                  "hudi-bloom": [(3.0, 4.0), (3.0, 4.5), (3.0, 5.0)]})
    now = pd.DataFrame({"cost_s": [2.0, 4.0]}, index=["simple-bucket", "bloom"])
    hudi_now = pd.DataFrame({"cost_s": [2.0, 4.0], "hudi_cost_s": [24.0, 8.0]},
                            index=["simple-bucket", "bloom"])
    plain = check_result(now, 1000, rows, 0.02, "out/check", 3)
    assert plain.hudi["verdict"].tolist() == ["conflict"]
    held = check_result(now, 1000, rows, 0.02, "out/check", 3, hudi_now=hudi_now)
    assert held.hudi[["a", "b", "verdict"]].values.tolist() == [["bloom", "simple-bucket",
                                                                  "agree"]]
    assert held.ours["verdict"].tolist() == ["agree"]
    assert held.table.loc["simple-bucket", "hudi_modelled_s"] == 24.0
    text = "\n".join(check_lines(held))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Hudi model" in text and "Hudi's writer, its indexes: 1 agree" in " ".join(
        text.split())


def test_hudis_series_are_held_to_our_table_only_at_the_same_settings():
    """``compare(peer_index_params=...)`` marks a Hudi series ``same_params`` by the
    index's resolved parameters: a default spelled out is the same setting, another
    bucket count is not."""
    from indexbench.api import _same_settings

    table = {"hoodie.table.type": "cow"}
    assert _same_settings("simple-bucket", {**table, "num_buckets": 16}, table)
    assert _same_settings("simple-bucket", {**table, "hoodie.bucket.index.num.buckets": 4},
                          {**table, "num_buckets": 4})
    assert not _same_settings("simple-bucket", {**table, "num_buckets": 61},
                              {**table, "num_buckets": 1})
    assert not _same_settings("simple-bucket", {"hoodie.table.type": "mor"}, table)
