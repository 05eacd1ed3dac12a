"""The simulator: runs without pyspark, modelled bloom false positives agree with exact
filters, chunking does not change a result (the layers: tests/test_architecture.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import indexes
from indexbench.sim.driver import simulate, simulate_compare
from indexes import roles
from metrics import contract as m

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = "import sys; sys.modules['pyspark'] = None\n"
SIM_SIZES = {"initial_records": 6000, "batches": 3, "batch_size": 1500}


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKED + code, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_cores_reports_and_sim_import_without_pyspark():
    code = (
        "import indexes, peers, peers.delta, reports, indexbench.sim.driver, indexbench.api\n"
        "import indexbench.cli\n"
        "for n in indexes.names():\n"
        "    i = indexes.get(n)\n"
        "    i.simulator.__call__  # the adapter loads on use\n"
        "import indexes.bloom.core, indexes.multiple_rehash.core\n"
        "import indexes.bucket.routing, indexes.bucket.files, indexes.bucket.rescale\n"
        "import indexes.bucket.index, indexes.bucket.sim\n"
        "import indexes.dynamic_rli.core, indexes.bloom.sim, indexes.simple_bucket.sim\n"
        "import indexes.multiple_rehash.sim, indexes.dynamic_rli.sim\n"
        "print('ok')\n")
    r = _run(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_indexbench_sim_command_runs_without_pyspark(tmp_path):
    out = tmp_path / "sim"
    r = _run("from indexbench.cli import main; sys.exit(main(sys.argv[1:]))", "sim",
             "--workload", "zipf-skewed", "--initial-records", "3000", "--batches", "2",
             "--batch-size", "1000", "--out", str(out), "--storage", "s3")
    assert r.returncode == 0, r.stdout + r.stderr
    df = m.read_metrics(out)
    assert sorted(df["index"].unique()) == sorted(indexes.names())
    assert (df["run_mode"] == "sim").all() and (df["storage"] == "s3").all()
    # measured columns stay empty in a simulated run; the model fills model_*
    assert df["tag_s"].isna().all() and df["bytes_written"].isna().all()
    assert (df["model_tag_s"] > 0).all() and (df["model_bytes_written"] > 0).all()
    assert (out / "report" / "index.html").exists()


def test_sim_refuses_spark_options_and_unknown_indexes(tmp_path, capsys):
    from indexbench import cli

    assert cli.main(["sim", "--master", "local[1]", "--out", str(tmp_path / "a")]) == 2
    assert "--master does not apply" in capsys.readouterr().err
    assert cli.main(["sim", "--indexes", "bloom,nope", "--out", str(tmp_path / "b")]) == 2
    assert "unknown index 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_modelled_false_positives_agree_with_exact_filters():
    """Above the exact threshold false positives are drawn at each filter's theoretical
    rate: on a mid-size case with thousands of them, within 10% of real filters."""
    params = {"hoodie.index.bloom.num_entries": 2000, "hoodie.index.bloom.fpp": 0.001,
              "hoodie.bloom.index.filter.dynamic.max.entries": 4000,
              "hoodie.copyonwrite.insert.split.size": 10000, "indexbench.scale": 1,
              "hoodie.copyonwrite.insert.auto.split": "false",
              "hoodie.parquet.small.file.limit": 0}
    sizes = {"initial_records": 60000, "batches": 4, "batch_size": 10000}
    exact = simulate("bloom", "uniform", params=params, write=False, **sizes)
    model = simulate("bloom", "uniform", params=params, write=False, exact_bloom_keys=0,
                     **sizes)
    assert (exact["bloom_mode"] == "exact").all() and (model["bloom_mode"] == "modelled").all()
    fp_exact, fp_model = exact["false_positives"].sum(), model["false_positives"].sum()
    assert fp_exact > 1000
    assert abs(fp_model - fp_exact) / fp_exact < 0.10
    # pruning, candidates and true matches are exact in both modes
    for col in ("bloom_checks", "candidate_files", "updates", "file_groups"):
        assert exact[col].tolist() == model[col].tolist()


def test_chunking_does_not_change_the_result():
    a = simulate_compare(None, "partition-skewed", write=False, parallelism=2, **SIM_SIZES)
    b = simulate_compare(None, "partition-skewed", write=False, parallelism=2, chunk_rows=700,
                         **SIM_SIZES)
    cols = ["index", "batch", "records", "inserts", "updates", "file_groups", "files_read",
            "bloom_checks", "false_positives", "buckets", "bucket_records_max",
            "index_mem_bytes", "model_tag_s"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


def test_sim_rows_follow_the_contract(tmp_path):
    simulate_compare(None, "uniform", out=str(tmp_path), parallelism=2, **SIM_SIZES)
    df = m.read_metrics(tmp_path)
    assert len(df) == len(indexes.names()) * (SIM_SIZES["batches"] + 1)
    assert not (set(df.columns) & {c.removeprefix("model_") for c in df.columns
                                   if c.startswith("model_")} - set(m.CONTRACT_COLUMNS)
                - {"records_written", "merge_files_read"})
    bucket = df[df["index"] == "simple-bucket"]
    assert (bucket["files_read"] == 0).all() and (bucket["bloom_checks"] == 0).all()


def test_measured_false_positives_meet_the_theory():
    """Bloom at its default sizing (``indexbench.scale`` 1/1000), exact filters (the
    Spark tasks' ``check_keys``): false positives rise with the table as inserts top up
    small files, and wherever ≥ 100 were counted they are within 10% of ``fp_theory``."""
    df = simulate("bloom", "uniform", write=False, initial_records=20000, batches=3,
                  batch_size=5000)
    up = df[df["batch"] >= 1]
    assert up["false_positives"].is_monotonic_increasing
    assert up["false_positives"].iloc[-1] > up["false_positives"].iloc[0]
    counted = up[up["false_positives"] >= 100]
    assert len(counted) >= 2
    gap = (counted["false_positives"] - counted["fp_theory"]).abs()
    assert (gap <= 0.10 * counted["fp_theory"]).all()
    assert (up["small_file_inserts"] == up["inserts"]).all()  # every insert tops up a file


def test_sim_refuses_a_workload_with_deletes(tmp_path, capsys):
    from indexbench import cli
    from tableformat.errors import IndexBenchError

    msg = r"the simulator does not model deletes \(delete_fraction=0.1\); run this workload"
    with pytest.raises(IndexBenchError, match=msg):
        simulate_compare(None, "deletes", out=str(tmp_path / "a"), **SIM_SIZES)
    with pytest.raises(IndexBenchError, match=msg):
        simulate("bloom", "deletes", out=str(tmp_path / "b"), **SIM_SIZES)
    assert cli.main(["sim", "--workload", "deletes", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "does not model deletes" in err and "Traceback" not in err
    assert not any((tmp_path / d).exists() for d in "abc")  # nothing ran


def test_a_scale_that_makes_a_table_of_tiny_files_is_named():
    """At the default 1/1000, a 100M-key bloom table has hundreds of thousands of files:
    one line says so, with the --set that gives Hudi's true sizing; a table that is not
    (the default comparison's, or Hudi's sizing) gets none."""
    bloom = indexes.get("bloom")
    (note,) = bloom.size_notes(100_000_000, 250)
    assert "indexbench.scale 1/1000" in note and "at least 198,682 files" in note
    assert "--set bloom:indexbench.scale=1 gives Hudi's true sizing (120 MiB files)" in note
    assert bloom.size_notes(200_000, 250) == []
    assert indexes.get("bloom", **{"indexbench.scale": "1"}).size_notes(10**9, 250) == []
    assert all(roles.size_notes(indexes.get(n), 10**9, 250) == [] for n in indexes.names()
               if n != "bloom")


def test_sim_prints_the_note_and_keeps_it_in_run_json(tmp_path, capsys, monkeypatch):
    import json

    import indexes.bloom
    from indexbench import cli

    monkeypatch.setattr(indexes.bloom, "MANY_FILES", 10)  # a small table stands in
    out = tmp_path / "o"
    assert cli.main(["sim", "--indexes", "bloom,simple-bucket", "--initial-records", "20000",
                     "--batches", "1", "--batch-size", "1000", "--out", str(out),
                     "--no-report"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("note:")]
    assert len(lines) == 1 and lines[0].startswith("note: bloom: at indexbench.scale 1/1000")
    notes = json.loads((out / "run.json").read_text())["notes"]
    assert notes == [lines[0].removeprefix("note: ")]
