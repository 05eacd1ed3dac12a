"""Reports from a small real run: every figure, the page, the FP theory, column errors."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import reports
from indexbench import api
from indexbench.cli import main
from indexes.bloom_filter import HoodieBloomFilter, theoretical_fpp
from metrics import contract as m
from reports.data import MetricsColumnError, UnknownColumnWarning

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
BASE_FIGURES = ["fp_rate.png", "files_read.png", "latency.png", "bucket_sizes.png",
                "index_bytes.png"]


@pytest.fixture(scope="module")
def run_dir(spark, tmp_path_factory) -> Path:
    """A real compare of bloom and simple-bucket on tiny sizes (shared by this module)."""
    out = tmp_path_factory.mktemp("run")
    api.compare(["bloom", "simple-bucket"], "uniform", out=str(out), spark=spark,
                initial_records=2000, batches=2, batch_size=500)
    return out


@pytest.fixture(scope="module")
def extended_dir(run_dir, tmp_path_factory) -> Path:
    """The real run plus rows of indexes the page has never seen: dynamic-rli with its
    extra columns, an unregistered index, and multiple-rehash rescale rows."""
    out = tmp_path_factory.mktemp("extended")
    df = pd.read_parquet(run_dir / "metrics.parquet")
    sb = df[df["index"] == "simple-bucket"]
    rli = sb.assign(index="dynamic-rli", index_mem_bytes=sb["table_records"] * 6.0,
                    index_disk_bytes=sb["table_records"] * 40.0, resident_partitions=4,
                    keys_bootstrapped=0, hash_collisions=0)
    new = sb.assign(index="my-new-index")
    rescale = pd.DataFrame([
        {**sb.iloc[-1].to_dict(), "index": "multiple-rehash", "operation": "rescale",
         "mode": mode, "batch": 3, "total_s": t, "bytes_read": b, "bytes_written": b,
         "shuffle_bytes": s, "from_buckets": 16, "to_buckets": 32}
        for mode, t, b, s in [("rehash", 2.0, 1e6, 0.0), ("overwrite", 5.0, 1e6, 2e6)]])
    m.write_metrics(out, [r for frame in (df, rli, new, rescale)  # rows, not one concat:
                          for r in frame.to_dict("records")])  # its all-NA dtype rule
    run = json.loads((run_dir / "run.json").read_text())
    run["tables"] = {"simple-bucket": str(run_dir / "tables" / "simple-bucket")}
    (out / "run.json").write_text(json.dumps(run))
    return out


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG_MAGIC


def test_compare_run_report_has_every_figure(run_dir, tmp_path):
    page = api.report([str(run_dir)], out=str(tmp_path / "rep"))
    html = page.read_text()
    for name in BASE_FIGURES:
        assert _is_png(page.parent / name), name
        assert f"src='{name}'" in html
    assert not (page.parent / "rescale.png").exists()  # no rescale rows in this run
    for index in ("bloom", "simple-bucket"):
        assert f"id='index-{index}'" in html  # a summary table per index
    assert "http" not in html.replace("http-equiv", "")  # offline: nothing fetched


def test_new_indexes_extra_columns_and_rescale(extended_dir, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownColumnWarning)  # these extras are known
        page = reports.write_report([extended_dir], tmp_path / "rep")
    html = page.read_text()
    for name in BASE_FIGURES + ["rescale.png"]:
        assert _is_png(page.parent / name), name
        assert f"src='{name}'" in html
    for index in ("dynamic-rli", "my-new-index", "multiple-rehash"):
        assert f"id='index-{index}'" in html
    assert "resident_partitions" in html  # extra metrics appear in the per-index table
    run = reports.load(extended_dir)
    assert len(run.bucket_counts["simple-bucket"]) == 64  # 16 buckets x 4 partitions
    assert reports.index_color("my-new-index") == reports.index_color("my-new-index")


def test_several_dirs_one_page(run_dir, extended_dir, tmp_path):
    page = main(["report", str(run_dir), str(extended_dir), "--out", str(tmp_path / "two")])
    assert page == 0
    html = (tmp_path / "two" / "index.html").read_text()
    assert f"bloom · {run_dir.name}" in html and f"bloom · {extended_dir.name}" in html


@pytest.mark.parametrize("params, sample_n", [
    ({"filter_type": "DYNAMIC_V0", "num_entries": 60000, "fpp": 1e-9, "max_entries": 100000},
     [20000, 45000, 60000]),
    ({"filter_type": "SIMPLE", "num_entries": 1000, "fpp": 0.01, "max_entries": 1000},
     [100, 500, 1000, 3000]),
])
def test_theoretical_curve_is_the_formula(run_dir, params, sample_n):
    f = HoodieBloomFilter.create(params["filter_type"], params["num_entries"], params["fpp"],
                                 params["max_entries"])
    m_bits, k = f.bits_per_row, f.hashes_per_row
    got = reports.theoretical_fp_curve(params, sample_n)
    want = [theoretical_fpp(m_bits, k, n) for n in sample_n]  # one row up to num_entries
    np.testing.assert_allclose(got, want, rtol=1e-12)
    beyond = 2 * params["max_entries"]  # several DYNAMIC_V0 rows: 1 - prod(1 - fp_row)
    assert math.isclose(reports.theoretical_fp_curve(params, [beyond])[0],
                        f.theoretical_fpp(beyond), rel_tol=1e-6)
    # ... and the curve drawn in the figure is that function at its own x values
    fig = reports.fp_rate_figure(pd.read_parquet(run_dir / "metrics.parquet"),
                                 {"bloom": params})
    line = next(ln for ax in fig.axes for ln in ax.lines if ln.get_gid() == "theory:bloom")
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    one_row = xs <= params["num_entries"]
    for x, y in list(zip(xs[one_row], ys[one_row], strict=True))[::10]:
        expected = theoretical_fpp(m_bits, k, x)
        if expected > 0:
            assert math.isclose(y, expected, rel_tol=1e-9)


def test_fp_points_from_the_real_run(run_dir):
    df = pd.read_parquet(run_dir / "metrics.parquet")
    pts = reports.figures.fp_points(df[df["index"] == "bloom"].sort_values("batch"))
    assert len(pts) == 2 and (pts["negatives"] > 0).all()
    assert (pts["records_per_file"] > 0).all()
    # zero false positives → drawn at the 3/negatives upper bound
    zero = pts[pts["false_positives"] == 0]
    np.testing.assert_allclose(zero["upper_bound"], 3 / zero["negatives"])


def _write_csv(run_dir: Path, dest: Path, change) -> Path:
    dest.mkdir()
    df = change(pd.read_csv(run_dir / "metrics.csv"))
    df.to_csv(dest / "metrics.csv", index=False)
    return dest


def test_missing_column_is_a_clear_error(run_dir, tmp_path):
    d = _write_csv(run_dir, tmp_path / "m", lambda df: df.drop(columns=["fp_rate"]))
    with pytest.raises(MetricsColumnError, match="missing column.*fp_rate"):
        reports.write_report([d], tmp_path / "out")
    assert main(["report", str(d), "--out", str(tmp_path / "out2")]) == 2


def test_renamed_column_names_both(run_dir, tmp_path):
    d = _write_csv(run_dir, tmp_path / "r", lambda df: df.rename(columns={"tag_s": "Tag-S"}))
    with pytest.raises(MetricsColumnError, match=r"tag_s.*'Tag-S'.*looks like 'tag_s'"):
        reports.load(d)


@pytest.mark.parametrize("column", ["Tag Seconds", "fpRate"])
def test_non_snake_case_column_is_an_error(run_dir, tmp_path, column):
    d = _write_csv(run_dir, tmp_path / "n", lambda df: df.assign(**{column: 1}))
    with pytest.raises(MetricsColumnError, match=f"unknown column.*{column}"):
        reports.load(d)


def test_unknown_snake_case_column_warns_or_fails_strict(run_dir, tmp_path):
    d = _write_csv(run_dir, tmp_path / "u", lambda df: df.assign(mystery_metric=1.0))
    with pytest.warns(UnknownColumnWarning, match="mystery_metric"):
        reports.load(d)
    with pytest.raises(MetricsColumnError, match="mystery_metric"):
        reports.load(d, strict=True)
    assert main(["report", str(d), "--strict", "--out", str(tmp_path / "o")]) == 2


def test_text_in_a_numeric_column_is_an_error(run_dir, tmp_path):
    d = _write_csv(run_dir, tmp_path / "t",
                   lambda df: df.assign(files_read=df["files_read"].astype(str) + "x"))
    with pytest.raises(MetricsColumnError, match="files_read.*non-numeric"):
        reports.load(d)


def _asv_results(root: Path) -> Path:
    """A results tree in asv 0.6's format: benchmarks.json + one file per commit."""
    name = "bench_spark_run.FilesRead.track_files_read"
    (root / "vm").mkdir(parents=True)
    (root / "benchmarks.json").write_text(json.dumps({
        name: {"type": "track", "unit": "files/batch", "params": [["'bloom'", "'simple-bucket'"],
               ["'uniform'"]], "param_names": ["index", "workload"]},
        "bench_bloom.BloomBuild.time_add_keys": {"type": "time", "unit": "seconds",
                                                 "params": [], "param_names": []},
        "version": 2}))
    (root / "vm" / "machine.json").write_text(json.dumps({"machine": "vm", "version": 1}))
    for i, (commit, vals) in enumerate([("a" * 40, [12, 0]), ("b" * 40, [14, 0]),
                                        ("c" * 40, [30, 0])]):
        (root / "vm" / f"{commit[:8]}-virtualenv-py3.11.json").write_text(json.dumps({
            "commit_hash": commit, "env_name": "virtualenv-py3.11", "date": 1_700_000_000_000
            + i * 86_400_000, "params": {}, "python": "3.11", "requirements": {},
            "env_vars": {}, "result_columns": ["result", "params", "version", "started_at",
                                               "duration"],
            "results": {name: [vals, [["'bloom'", "'simple-bucket'"], ["'uniform'"]], "v1",
                               0, 1.0],
                        "bench_bloom.BloomBuild.time_add_keys": [0.01, [], "v1", 0, 1.0]},
            "durations": {}, "version": 2}))
    return root


def test_asv_regression_chart(tmp_path, run_dir):
    results = _asv_results(tmp_path / "results")
    df = reports.read_asv_results(results)
    tracked = df[df["benchmark"].str.endswith("track_files_read")]
    assert tracked["value"].tolist() == [12, 0, 14, 0, 30, 0]
    assert main(["report", "--asv", str(results), "--out", str(tmp_path / "asv")]) == 0
    charts = sorted((tmp_path / "asv" / "asv").glob("*.png"))
    assert [c.name for c in charts] == ["bench_bloom.BloomBuild.time_add_keys.png",
                                        "bench_spark_run.FilesRead.track_files_read.png"]
    assert all(_is_png(c) for c in charts)
    assert all(c.name in (tmp_path / "asv" / "index.html").read_text() for c in charts)
    page = api.report([str(run_dir)], out=str(tmp_path / "both"), asv_results=str(results))
    assert "asv/bench_spark_run.FilesRead.track_files_read.png" in page.read_text()
