"""Reports of simulated runs, alone and beside a real run (no Spark anywhere here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

import reports
import workloads
from indexbench.cli import main
from indexbench.sim.driver import simulate_compare
from metrics import contract as m
from reports import figures as F
from reports.page import TOTAL_COL, comparison, index_summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SIZES = {"batches": 3, "batch_size": 2000}
# Updates over every key existing before each batch, so bloom's files read grow with the
# table (the RFC-29 curve the scale figure shows). With the default keyspace="ycsb",
# uniform updates stay on the initial load's keys (YCSB's UniformLongGenerator over
# insertcount) and bloom reads the same files every batch.
UNIFORM = workloads.load("uniform", keyspace="existing-per-batch")
# Bloom's new file groups of 1,000 records and no top-up: every batch adds files, so the
# files read rise with the table in every batch (with Hudi's top-up the count steps up
# only when a file fills).
BLOOM = {"bloom": {"indexbench.scale": 1, "hoodie.parquet.small.file.limit": 0,
                   "hoodie.copyonwrite.insert.auto.split": "false",
                   "hoodie.copyonwrite.insert.split.size": 1000}}


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG_MAGIC


@pytest.fixture(scope="module")
def sim_small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim_small")
    simulate_compare(None, UNIFORM, out=str(out), initial_records=5000, params=BLOOM, **SIZES)
    return out


@pytest.fixture(scope="module")
def sim_large(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim_large")
    simulate_compare(None, UNIFORM, out=str(out), initial_records=20000, params=BLOOM,
                     **SIZES)
    return out


def real_rows(initial: int = 5000, batches: int = 3, batch_size: int = 2000,
              run_mode: str | None = None) -> list[dict]:
    """Rows shaped like a real Spark compare of bloom and simple-bucket (made by hand)."""
    rows = []
    for index in ("bloom", "simple-bucket"):
        table = 0
        for b in range(batches + 1):
            inserts = initial if b == 0 else batch_size // 2
            updates = 0 if b == 0 else batch_size - inserts
            before, table = table, table + inserts
            bloom = index == "bloom"
            files = 4 * b if bloom else 0
            row = {
                "run_id": "real-1", "index": index, "workload": "uniform", "batch": b,
                "operation": "upsert", "records": inserts + updates, "inserts": inserts,
                "updates": updates, "tag_s": 0.5 + 0.1 * b, "write_s": 1.0, "commit_s": 0.2,
                "total_s": 2.0 + 0.1 * b, "partitions_touched": 4, "files_in_table": 4 + b,
                "file_groups": 4 + b, "candidate_files": files, "files_read": files,
                "bytes_read": files * 40_000.0, "bloom_checks": 900 * b if bloom else 0,
                "bloom_positives": 400 * b if bloom else 0, "false_positives": 0,
                "fp_rate": (0.0 if b else np.nan) if bloom else np.nan,
                "files_written": 4, "bytes_written": 1e6, "records_rewritten": updates,
                "buckets": np.nan if bloom else 16, "bucket_records_max":
                    np.nan if bloom else table / 16 * 1.2,
                "bucket_records_mean": np.nan if bloom else table / 16,
                "index_mem_bytes": 0, "index_disk_bytes": 300.0 * table if bloom else 0,
                "table_records": table, "input_records": inserts + updates,
            }
            if run_mode is not None:
                row["run_mode"] = run_mode
            assert before < table
            rows.append(row)
    return rows


@pytest.fixture(scope="module")
def real_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("real")
    m.write_metrics(out, real_rows())
    return out


def test_real_and_sim_runs_on_one_page(real_dir, sim_small, sim_large, tmp_path):
    # strict: every column the simulator writes is a known one
    page = reports.write_report([real_dir, sim_small, sim_large], tmp_path / "rep",
                                strict=True)
    html = page.read_text()
    for name in ("files_read.png", "latency.png", "index_bytes.png", "scale.png",
                 "fp_rate.png", "bucket_sizes.png"):
        assert _is_png(page.parent / name), name
        assert f"src='{name}'" in html
    assert f"bloom · {real_dir.name}" in html
    for d in (sim_small, sim_large):
        for index in ("bloom", "simple-bucket", "dynamic-rli"):
            assert f"{index} (sim) · {d.name}" in html
    assert f"bloom (sim) · {real_dir.name}" not in html
    assert "model_total_s" in html  # the comparison shows the modelled seconds
    assert "simulated (no Spark)" in html  # run info of the simulated runs


def test_cli_report_real_and_sim(real_dir, sim_small, tmp_path):
    assert main(["report", str(real_dir), str(sim_small), "--out", str(tmp_path / "r")]) == 0
    html = (tmp_path / "r" / "index.html").read_text()
    assert f"bloom (sim) · {sim_small.name}" in html and f"bloom · {real_dir.name}" in html
    assert _is_png(tmp_path / "r" / "scale.png")


def test_sim_alone_labels_and_page(sim_small, tmp_path):
    run = reports.load(sim_small)
    assert set(run.df["series"]) == {f"{n} (sim)" for n in run.df["index"].unique()}
    assert "fpp" in run.index_params["bloom (sim)"]  # run.json params under the sim label
    page = reports.write_report(sim_small, tmp_path / "rep")
    assert "bloom (sim)" in page.read_text()
    assert _is_png(page.parent / "scale.png")
    # a DataFrame straight from the simulator is labelled the same way
    df = F._frame(pd.read_parquet(sim_small / "metrics.parquet"))
    assert "bloom (sim)" in set(df["series"])


def _lines(fig, label: str):
    return [ln for ax in fig.axes for ln in ax.lines if ln.get_label().startswith(label)]


def test_sim_series_dashed_in_index_colour(real_dir, sim_small):
    run = reports.load([real_dir, sim_small])
    sim_label, real_label = f"bloom (sim) · {sim_small.name}", f"bloom · {real_dir.name}"
    blue = reports.index_color("bloom")
    for fig in (F.files_read_figure(run.df), F.index_bytes_figure(run.df),
                F.scale_figure(run.df)):
        sim, real = _lines(fig, sim_label), _lines(fig, real_label)
        assert sim and real
        assert all(ln.get_linestyle() == "--" for ln in sim)
        assert all(ln.get_linestyle() == "-" for ln in real)
        assert {to_hex(ln.get_color()) for ln in sim + real} == {blue.lower()}


def test_measured_columns_of_sim_rows_are_modelled_not_zero(real_dir, sim_small):
    run = reports.load([real_dir, sim_small])
    sim = run.df[reports.is_sim(run.df)]
    assert len(sim) and sim[["tag_s", "total_s", "bytes_read", "index_disk_bytes"]] \
        .isna().all().all()
    assert sim["model_total_s"].notna().all() and sim["files_read"].notna().all()
    # an older writer's 0-filled measured bytes are masked too
    raw = pd.read_parquet(sim_small / "metrics.parquet").assign(bytes_read=0.0)
    assert F._frame(raw).loc[lambda d: d["index"] == "bloom", "bytes_read"].isna().all()
    # files_read: bytes of a sim series come from model_bytes_read, labelled modelled
    fig = F.files_read_figure(run.df)
    label = f"bloom (sim) · {sim_small.name}: modelled"
    line = next(ln for ln in fig.axes[1].lines if ln.get_label() == label)
    g = sim[(sim["index"] == "bloom") & (sim["operation"] == "upsert")
            & (sim["batch"] >= 1)].sort_values("batch")
    np.testing.assert_allclose(line.get_ydata(), g["model_bytes_read"] / F.MIB)
    assert line.get_xdata().min() > 0  # no point at table size 0 (the initial load)
    note = next(t for t in fig.legends[0].get_texts() if t.get_gid() == "never-read")
    # bucket indexes: one legend entry, not lines on each other at 0
    assert f"simple-bucket (sim) · {sim_small.name}" in note.get_text().replace("\n", " ")


def test_latency_draws_modelled_seconds_for_sim(real_dir, sim_small):
    run = reports.load([real_dir, sim_small])
    fig = F.latency_figure(run.df)
    titles = {ax.get_title(): ax for ax in fig.axes if ax.get_title()}
    sim_title = f"bloom (sim) · {sim_small.name}\nmodelled seconds (model_*)"
    assert sim_title in titles and f"bloom · {real_dir.name}\nmeasured seconds" in titles
    ax = titles[sim_title]
    g = run.df[(run.df["series"] == f"bloom (sim) · {sim_small.name}")].sort_values("batch")
    heights = np.zeros(len(g))
    for patch in ax.patches:
        heights[int(round(patch.get_x() + patch.get_width() / 2))] += patch.get_height()
    np.testing.assert_allclose(heights, g["model_total_s"], rtol=1e-9)
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any("modelled" in t for t in legend)


def test_scale_figure_is_the_rfc29_curve(real_dir, sim_small, sim_large):
    run = reports.load([real_dir, sim_small, sim_large])
    fig = F.scale_figure(run.df)
    ax_f, ax_t = fig.axes[:2]
    assert ax_f.get_yscale() == "log" == ax_t.get_yscale()
    sizes = run.df.loc[run.df["batch"] >= 1, "table_records"]  # (of the rows drawn)
    wide = sizes.max() >= 10 * sizes[sizes > 0].min()
    assert ax_f.get_xscale() == ("log" if wide else "linear")
    fig.canvas.draw()
    for axis in (ax_f.xaxis, ax_f.yaxis, ax_t.xaxis, ax_t.yaxis):  # never one lone label
        lo, hi = sorted(axis.get_view_interval())
        shown = [t for t in axis.get_ticklabels() if t.get_text()
                 and lo <= t.get_position()[axis is ax_f.yaxis or axis is ax_t.yaxis] <= hi]
        assert len(shown) >= 2, [t.get_text() for t in axis.get_ticklabels()]
    lines = {ln.get_gid(): ln for ax in (ax_f, ax_t) for ln in ax.lines if ln.get_gid()}
    for d in (sim_small, sim_large):
        bloom = lines[f"files_read:bloom (sim) · {d.name}"]
        assert len(bloom.get_xdata()) == SIZES["batches"]  # upsert batches ≥ 1 only
        assert np.all(np.diff(bloom.get_ydata()) > 0)  # bloom reads more as it grows
        # 0 files in every batch: named in one legend entry, not a stack at the floor
        assert f"files_read:simple-bucket (sim) · {d.name}" not in lines
        (note,) = [t.get_text().replace("\n", " ") for t in fig.legends[0].get_texts()
                   if t.get_text().startswith("0 files read")]
        assert f"simple-bucket (sim) · {d.name}" in note
        tag = lines[f"tag_s:bloom (sim) · {d.name}"]
        g = run.df[run.df["series"] == f"bloom (sim) · {d.name}"].sort_values("batch")
        np.testing.assert_allclose(tag.get_ydata(), g["model_tag_s"].iloc[1:])
        np.testing.assert_allclose(bloom.get_xdata(), g["table_records"].iloc[:-1])
    # larger tables sit further right: the two sim runs extend one curve
    small = lines[f"files_read:bloom (sim) · {sim_small.name}"].get_xdata()
    large = lines[f"files_read:bloom (sim) · {sim_large.name}"].get_xdata()
    assert max(small) < min(large)
    real = lines[f"tag_s:bloom · {real_dir.name}"]
    np.testing.assert_allclose(real.get_ydata(), [0.6, 0.7, 0.8])  # measured tag_s
    assert "measured (real)" in ax_t.get_title() and "modelled (sim)" in ax_t.get_title()
    assert ax_t.get_legend() is None or all(  # each tag line says what it is
        t.get_text().endswith((": measured", ": modelled"))
        for t in ax_t.get_legend().get_texts())
    assert {ln.get_label().rsplit(": ", 1)[-1] for ln in ax_t.lines} == {"measured",
                                                                         "modelled"}


def test_no_scale_figure_without_a_curve(tmp_path):
    out = tmp_path / "one"
    m.write_metrics(out, real_rows(batches=1, run_mode="run"))
    run = reports.load(out)
    assert not reports.has_scale(run.df) and F.scale_figure(run.df) is None
    page = reports.write_report(out, tmp_path / "rep")
    assert not (page.parent / "scale.png").exists()
    assert "scale.png" not in page.read_text()
    assert not reports.is_sim(run.df).any()  # run_mode "run" is a real run
    assert set(run.df["series"]) == {"bloom", "simple-bucket"}


def test_tables_do_not_crash_on_sim_rows(real_dir, sim_small):
    run = reports.load([real_dir, sim_small])
    table = comparison(run.df)
    sim_col, real_col = f"bloom (sim) · {sim_small.name}", f"bloom · {real_dir.name}"
    assert np.isnan(table.loc["tag_s", sim_col]) and table.loc["tag_s", real_col] == 0.7
    g = run.df[run.df["series"] == sim_col]
    later = g[(g["operation"] == "upsert") & (g["batch"] >= 1)]
    assert table.loc["model_total_s", sim_col] == pytest.approx(later["model_total_s"]
                                                                .median())
    summary = index_summary(g)
    assert "model_total_s" in summary.index and "tag_s" not in summary.index
    assert summary.loc["model_total_s", TOTAL_COL] == pytest.approx(
        g.loc[g["operation"] == "upsert", "model_total_s"].sum())


def test_reports_import_without_pyspark():
    code = ("import sys; sys.modules['pyspark'] = None\n"
            "import reports, reports.figures, reports.page, reports.data\n"
            "assert reports.scale_figure and reports.write_report\n"
            "assert 'pyspark' not in {k for k, v in sys.modules.items() if v is not None}\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
