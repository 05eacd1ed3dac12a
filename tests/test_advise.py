"""``indexbench advise`` (issue #42, point 1): a described table, every index's candidate
settings simulated along its growth horizon, ranked, crossovers found, the Hudi
configuration of the recommendation. Small sizes, no Spark."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import indexes
import workloads
from indexbench import api
from indexbench.advise import run as advise_run
from indexbench.advise.answer import _why, chosen_settings, crossovers, horizon_seconds
from indexbench.advise.probes import Probe, carried_to, run_probe
from indexbench.advise.request import AdviceRequest, geometric
from indexbench.cli import main
from indexbench.sim.driver import simulate
from indexes import roles
from reports.advice import advice_text
from tableformat.errors import IndexBenchError

SMALL = dict(initial_records=2_000, batch_size=500, batches_per_day=2, horizon_days=30,
             exact_limit=8_000, points=4, probe_batches=1)


def _request(**kw) -> AdviceRequest:
    args = {**SMALL, **kw}
    w = workloads.load(args.pop("workload", "uniform")).with_overrides(
        initial_records=args.pop("initial_records"), batch_size=args.pop("batch_size"))
    return AdviceRequest(w, **args)


def test_sizes_run_from_now_to_the_horizon_exact_up_to_the_limit():
    req = _request()
    assert req.inserts_per_batch == 250 and req.horizon_batches == 60
    assert req.records_at_horizon == 2_000 + 250 * 60
    assert geometric(10, 1000, 3) == [10, 100, 1000]
    exact = req.exact_sizes()
    assert exact[0] == 800 and exact[-1] == 8_000  # a tenth of the limit up to it
    answer = req.answer_sizes()
    assert [n for n, e in answer if e] == [n for n in exact if n >= 2_000]
    assert [n for n, e in answer if not e][-1] == req.records_at_horizon
    assert all(n > 8_000 for n, e in answer if not e)
    whole = _request(exact_limit=100_000)  # the horizon within the limit: all simulated
    assert all(e for _n, e in whole.answer_sizes())
    assert whole.answer_sizes()[-1] == (whole.records_at_horizon, True)


@pytest.mark.parametrize(("change", "message"), [
    ({"table_type": "xx"}, "--table-type must be one of"),
    ({"horizon_days": 0}, "--horizon-days must be > 0"),
    ({"exact_limit": 10}, "--exact-limit must be >= 1,000"),
    ({"indexes": ("blom",)}, "unknown index 'blom'"),
    ({"storage": "nowhere"}, "nowhere"),
    ({"workload": "deletes"}, "does not model deletes"),
])
def test_bad_input_is_one_clear_error_before_anything_runs(change, message, tmp_path,
                                                           monkeypatch):
    ran = []
    monkeypatch.setattr(advise_run, "run_probes", lambda *a, **k: ran.append(1))
    with pytest.raises((IndexBenchError, ValueError), match=message):
        advise_run.advise(_request(**change), out=tmp_path / "answer")
    assert not ran and not (tmp_path / "answer").exists()


def test_a_probe_is_the_simulator_run_of_that_setting():
    """An exact point's figures come from the simulated rows of that very run."""
    req = _request()
    p = Probe("simple-bucket", "x", {"num_buckets": 2}, 3_000)
    assert p.exact
    got = run_probe(req, p)
    df = simulate("simple-bucket", req.workload.with_overrides(initial_records=3_000,
                                                               batches=1),
                  params={"num_buckets": 2, "hoodie.table.type": "cow"}, write=False,
                  parallelism=2)
    up = df[(df["operation"] == "upsert") & (df["batch"] == 1)].iloc[0]
    assert got["tag_s"] == up["model_tag_s"] and got["write_s"] == up["model_write_s"]
    assert got["commit_s"] == up["model_commit_s"]
    assert got["cost_s"] == up["model_tag_s"] + up["model_write_s"] + up["model_commit_s"]
    assert got["files_in_table"] == up["files_in_table"]


def test_figures_are_carried_by_the_power_they_grow_by():
    """Between two similar tables a figure of the batch stays, one of the data doubles
    with the table, files stay; seconds are priced again from the carried work."""
    from indexbench.sim import profiles
    from indexbench.sim.time_model import model_seconds

    prof = profiles.profile("local", cores=2)
    base = {"records": 100.0, "keys_hashed": 100.0, "files_written": 4.0,
            "services_s": 0.0, "resizes": 0.0, "files_read": 2.0, "false_positives": 3.0,
            "index_mem_bytes": 0.0, "index_disk_bytes": 0.0, "files_in_table": 8.0,
            "bucket_skew": 1.5, "tag_jobs": 2.0, "tag_rows_persisted": 200.0}
    big = {**base, "simulated_keys": 1000, "model_bytes_written": 2e6, "index_disk_bytes": 20.0}
    small = {**base, "simulated_keys": 500, "model_bytes_written": 1e6, "index_disk_bytes": 10.0}
    out = carried_to(big, small, 100_000, prof, 2)
    assert (out["records"], out["files_written"], out["files_read"], out["false_positives"],
            out["files_in_table"], out["bucket_skew"]) == (100, 4, 2, 3, 8, 1.5)
    assert out["model_bytes_written"] == pytest.approx(2e8)
    assert out["index_disk_bytes"] == pytest.approx(2000)
    # our Spark plan's work is carried too: only a profile of Hudi's writer leaves it out
    assert (out["tag_jobs"], out["tag_rows_persisted"]) == (2, 200)
    want = model_seconds({"records": 100, "keys_hashed": 100, "files_written": 4,
                          "files_read": 2, "model_bytes_written": 2e8, "tag_jobs": 2,
                          "tag_rows_persisted": 200, "operation": "upsert"}, prof, cores=2)
    assert out["cost_s"] == pytest.approx(want["model_tag_s"] + want["model_write_s"]
                                          + want["model_commit_s"])
    assert out["table_size"] == 100_000


def test_horizon_seconds_add_every_batch_between_the_sizes():
    g = pd.DataFrame({"table_size": [1_000, 3_000], "cost_s": [1.0, 3.0]})
    # 2,000 keys at 100 a batch: 20 batches costing 2 s on average
    assert horizon_seconds(g, 100) == pytest.approx(40.0)


def test_a_cost_cell_never_runs_into_the_next():
    from reports.advice import _cell

    assert [_cell(v) for v in (8.51, 1480.2, 5170.0, 1.3e7)] == [
        "    8.51", "   1,480", "   5,170", "     13M"]


def test_crossovers_say_where_the_first_place_changes_and_why():
    sizes = [1_000, 10_000, 100_000]
    best = pd.DataFrame(
        [{"index": "a", "table_size": n, "cost_s": c, "tag_s": c, "write_s": 0.0,
          "services_s": 0.0, "files_read": f, "resizes": 0.0}
         for n, c, f in zip(sizes, [1.0, 2.0, 8.0], [1, 10, 100], strict=True)]
        + [{"index": "b", "table_size": n, "cost_s": 3.0, "tag_s": 1.0, "write_s": 2.0,
            "services_s": 0.0, "files_read": 0, "resizes": 0.0} for n in sizes])
    (c,) = crossovers(best)
    assert (c.before, c.after) == ("a", "b")
    assert 10_000 < c.records < 100_000  # 2→8 against 3: a fifth of the way, in log
    assert c.records == round(np.exp(np.log(1e4) + 1 / 6 * np.log(10)))
    assert "a tags in 8 s a batch, reading 100 files, against 1 s for b" == c.why
    chosen = chosen_settings(best.assign(setting="s"), 100)
    assert list(chosen["index"]) == ["b", "a"] or list(chosen["index"]) == ["a", "b"]
    # an index updated at commit (an RLI's files, a key-value store's puts): that phase
    rli = best.assign(commit_s=np.where(best["index"] == "a", best["cost_s"], 0.0),
                      tag_s=np.where(best["index"] == "a", 0.0, best["tag_s"]))
    (c,) = crossovers(rli)
    assert c.why == "a updates its index at commit in 8 s a batch against 0 s for b"


def test_every_index_proposes_settings_it_accepts():
    shape = roles.TableShape(10_000, 1_000_000, 200.0, 4, 125829120)
    for name in indexes.names():
        cands = roles.advice_candidates(indexes.index_class(name), shape)
        assert cands and len({c.label for c in cands}) == len(cands)
        for c in cands:
            indexes.get(name, **c.params)  # validated like a --set


def test_advise_end_to_end(tmp_path):
    out = tmp_path / "answer"
    answer, page = api.advise("zipf-skewed", indexes=["bloom", "simple-bucket"], out=str(out),
                              **{k: v for k, v in SMALL.items()})
    text = advice_text(answer)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Which index for a `zipf-skewed` table" in text
    assert "* above 8,000 keys (the exact limit), seen through two similar tables" in text
    err = answer.errors.set_index("index")
    assert (err["checked_at"] == 8_000).all() and err["extrapolation_error"].notna().all()
    assert (answer.points.loc[~answer.points["exact"], "scale"] < 1).all()
    rec = answer.recommendation
    assert rec.index in ("bloom", "simple-bucket")
    assert rec.hudi_config["hoodie.datasource.write.table.type"] == "COPY_ON_WRITE"
    assert rec.hudi_config["hoodie.index.type"] in ("BLOOM", "BUCKET")
    assert rec.gives_up
    assert {p.name for p in out.iterdir()} == {"index.html", "advice.png", "points.csv",
                                               "extrapolation.csv", "run.json"}
    run = json.loads((out / "run.json").read_text())
    assert run["recommended"]["index"] == rec.index
    assert run["advice"]["records_at_horizon"] == 2_000 + 150 * 60  # 70% updates
    pts = pd.read_csv(out / "points.csv")
    assert set(pts["index"]) == {"bloom", "simple-bucket"}
    assert page.read_text().count("<pre>") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_failed_answer_leaves_no_directory(tmp_path, monkeypatch):
    def broken(a, out):
        out.mkdir(parents=True)
        (out / "index.html").write_text("half")
        raise OSError("disk full")

    monkeypatch.setattr(advise_run, "write_advice_page", broken)
    with pytest.raises(OSError, match="disk full"):
        advise_run.advise(_request(indexes=("simple-bucket",)), out=tmp_path / "answer")
    assert list(tmp_path.iterdir()) == []


def test_the_cli_prints_the_answer(tmp_path, capsys):
    rc = main(["advise", "--indexes", "simple-bucket", "--initial-records", "2000",
               "--batch-size", "500", "--batches-per-day", "2", "--horizon-days", "30",
               "--exact-limit", "8000", "--points", "4", "--probe-batches", "1",
               "--out", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert rc == 0 and "Recommended: simple-bucket" in out
    assert "hoodie.index.type=BUCKET" in out and f"answer: {tmp_path / 'a'}" in out
    rc = main(["advise", "--indexes", "simple-bucket", "--out", str(tmp_path / "a")])
    assert rc == 2 and "not empty" in capsys.readouterr().err


def test_a_tie_at_the_top_is_no_crossover_until_one_pulls_ahead():
    sizes = [1_000, 10_000, 100_000]

    def rows(name, costs):
        return [{"index": name, "table_size": n, "cost_s": c, "tag_s": 0.0, "write_s": c,
                 "services_s": 0.0, "files_read": 0, "resizes": 0.0}
                for n, c in zip(sizes, costs, strict=True)]

    # a and c tie at first; b passes both at 100,000 keys; a and c stay within 2%
    best = pd.DataFrame(rows("a", [1.0, 2.0, 10.0]) + rows("c", [1.01, 2.02, 10.1])
                        + rows("b", [1.5, 2.5, 5.0]))
    (c,) = crossovers(best)
    assert (c.before, c.after) == ("a, c", "b") and 10_000 < c.records < 100_000
    assert c.why.startswith("a writes in 10 s a batch")
    tied = pd.DataFrame(rows("a", [1.0, 2.0, 3.0]) + rows("b", [1.5, 2.5, 2.99]))
    assert crossovers(tied) == []  # 2.99 against 3.0: a tie, not a change


def test_the_answer_says_what_it_cannot_vouch_for():
    from indexbench.advise.answer import caveats

    assert caveats(_request()) == []  # uniform updates, constant growth
    skewed = caveats(_request(workload="zipf-skewed"))
    assert len(skewed) == 1 and "scrambled_zipfian keys" in skewed[0]
    assert "upper bounds" in skewed[0]
    assert caveats(_request(workload="zipf-skewed", exact_limit=100_000)) == []  # all exact
    growing = caveats(_request(workload="growing"))
    assert any("accelerating growth is not followed" in c for c in growing)


def test_a_similar_table_is_never_larger_than_the_one_it_stands_for():
    from indexbench.advise.probes import probes, similar_sizes

    req = _request(exact_limit=1_000, batch_size=400)  # four batches: 1,600 keys
    assert similar_sizes(req, 1_200) == (1_200, 600)
    assert similar_sizes(req, 50_000) == (1_600, 800)
    for p in probes(req):
        assert p.scale <= 1.0 and (p.exact or p.table_size > 1_000 or p.scale < 1)


def test_crossover_reasons_write_seconds_whole_from_a_thousand():
    """A crossing at a billion keys is thousands of seconds a batch: written 2,061, not
    2.06e+03 (as the cost table's cells)."""
    row = {"tag_s": 1.0, "commit_s": 0.0, "services_s": 0.0, "files_read": 0, "resizes": 0}
    line = _why(pd.Series({**row, "index": "multiple-rehash", "write_s": 1893.4}),
                pd.Series({**row, "index": "simple-bucket", "write_s": 2061.2}))
    assert "2,061 s a batch" in line and "1,893 s for multiple-rehash" in line
    assert "e+" not in line


def _hudi_profile(tmp_path, **constants) -> str:
    """A cost profile of Hudi's writer as ``calibrate --writer hudi`` writes one."""
    from dataclasses import replace

    from indexbench.sim.profiles import PROFILES

    path = tmp_path / "hudi.json"
    replace(PROFILES["local"], name="hudi-fit", writer="hudi 1.2.0", **constants).save(path)
    return str(path)


def test_hudi_storage_must_be_a_profile_of_hudis_writer(tmp_path, monkeypatch):
    from dataclasses import replace

    from indexbench.sim.profiles import PROFILES

    ours = tmp_path / "ours.json"
    replace(PROFILES["local"], writer="indexbench").save(ours)
    ran = []
    monkeypatch.setattr(advise_run, "run_probes", lambda *a, **k: ran.append(1))
    for storage, why in ((str(ours), "not to indexbench's writer"),
                         ("local", "not to published figures")):
        with pytest.raises(IndexBenchError, match=why):
            advise_run.advise(_request(hudi_storage=storage), out=tmp_path / "answer")
    with pytest.raises(IndexBenchError, match="give it as --hudi-storage"):
        advise_run.advise(_request(storage=_hudi_profile(tmp_path)), out=tmp_path / "answer")
    with pytest.raises(IndexBenchError, match="Hudi has none of the indexes"):
        advise_run.advise(_request(hudi_storage=_hudi_profile(tmp_path),
                                   indexes=("extendible-hash",)), out=tmp_path / "answer")
    assert not ran and not (tmp_path / "answer").exists()


def test_hudis_writer_ranks_the_indexes_hudi_has_by_its_own_profile(tmp_path):
    """The same counted work priced by a profile of Hudi's writer: a file costing Hudi
    far more than ours turns its ranking to the index that writes fewer files, and the
    best index Hudi has is its own first; an index Hudi lacks has no such figures."""
    from indexbench.advise.probes import HUDI
    from indexbench.sim import profiles
    from indexbench.sim.time_model import model_frame

    hudi = _hudi_profile(tmp_path, write_latency_s=2.0, commit_file_s=0.5)
    req = _request(indexes=("bloom", "simple-bucket", "extendible-hash"), hudi_storage=hudi)
    answer, _ = advise_run.advise(req, out=tmp_path / "answer")
    assert set(req.hudi_names) == {"bloom", "simple-bucket"}
    pts = answer.points
    assert pts.loc[pts["index"] == "extendible-hash", HUDI + "cost_s"].isna().all()
    assert pts.loc[pts["index"] != "extendible-hash", HUDI + "cost_s"].notna().all()
    h = answer.hudi
    assert set(h.chosen["index"]) == {"bloom", "simple-bucket"}
    # Hudi's seconds of a probe: its simulated rows priced by Hudi's profile
    p = Probe("bloom", "x", {"indexbench.scale": 1}, 2_000)
    got = run_probe(req, p)
    df = simulate("bloom", req.workload.with_overrides(initial_records=2_000, batches=1),
                  params={"indexbench.scale": 1, "hoodie.table.type": "cow"}, write=False,
                  parallelism=2)
    priced = model_frame(df, profiles.profile(hudi, cores=2), cores=2)
    up = priced[(priced["operation"] == "upsert") & (priced["batch"] == 1)].iloc[0]
    assert got[HUDI + "cost_s"] == pytest.approx(
        up["model_tag_s"] + up["model_write_s"] + up["model_commit_s"])
    assert got[HUDI + "cost_s"] > got["cost_s"]  # every file costs Hudi seconds
    # ranked by Hudi's seconds over the horizon, not ours
    assert list(h.chosen["horizon_s"]) == sorted(h.chosen["horizon_s"])
    ours = answer.chosen.set_index("index")["horizon_s"]
    assert (h.chosen.set_index("index")["horizon_s"] > ours.loc[list(h.chosen["index"])]).all()
    assert h.config["hoodie.index.type"] == {"bloom": "BLOOM",
                                             "simple-bucket": "BUCKET"}[h.index]
    text = advice_text(answer)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "With Apache Hudi's own writer (hudi 1.2.0" in text
    assert f"Best with Hudi's writer: {h.index} ({h.setting})" in text
    if answer.recommendation.index == "extendible-hash":  # Hudi lacks it: Hudi's own first
        assert answer.recommendation.hudi_fallback[0] == h.index
        assert "The best index Hudi has here with Hudi's own writer (below)" in text
    run = json.loads((tmp_path / "answer" / "run.json").read_text())
    assert run["advice"]["hudi_storage"] == hudi
