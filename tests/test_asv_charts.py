"""asv charts (reports.asv_charts) from hand-written results in asv 0.6's format: skipped
series, legend handles, axis ranges and units, and which benchmarks get a chart."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from reports import asv_charts

NAN = math.nan
INDEXES = ["'bloom'", "'simple-bucket'"]
WORKLOADS = ["'uniform'", "'zipf-skewed'"]
FP = "bench_spark_run.FilesReadForFalsePositives.track_files_read_fp_only"
FPR = "bench_spark_run.FalsePositiveRate.track_fp_rate"
BYTES = "bench_spark_run.BytesRead.track_bytes_read"
TIME = "bench_bloom.BloomBuild.time_add_keys"
PEAKMEM = "bench_bloom.BloomBuild.peakmem_add_keys"
BOOT = "bench_dynamic_rli.DynamicRliBootstrap.time_bootstrap"
INDEX_PARAMS = ([INDEXES, WORKLOADS], ["index", "workload"])
KEY_PARAMS = ([["1000", "10000"]], ["keys"])
META = {FP: ("track", "files/batch", *INDEX_PARAMS), FPR: ("track", "FP/negative probe",
                                                            *INDEX_PARAMS),
        BYTES: ("track", "bytes/batch", *INDEX_PARAMS),
        TIME: ("time", "seconds", *KEY_PARAMS), PEAKMEM: ("peakmemory", "bytes", *KEY_PARAMS),
        BOOT: ("time", "seconds", *KEY_PARAMS)}
# per commit, one value per (index, workload) or keys combination; NaN = skipped (asv)
VALUES = {FP: lambda i: [1.5 + i / 10, 1.7, NAN, NAN],
          FPR: lambda i: [0.0, 0.0, NAN, NAN],
          BYTES: lambda i: [2.1e6 + i * 1e5, 2.3e6, 1.0e6, NAN if i == 1 else 1.1e6],
          TIME: lambda i: [1.2e-3 + i * 1e-4, 1.1e-2],
          PEAKMEM: lambda i: [9.1e7, 9.5e7 + i * 1e6],
          BOOT: lambda i: [NAN, NAN]}


def _results(root: Path, commits: int = 3) -> Path:
    """benchmarks.json + one result file per commit, as asv 0.6 writes them."""
    (root / "vm").mkdir(parents=True)
    (root / "benchmarks.json").write_text(json.dumps({
        **{n: {"type": t, "unit": u, "params": p, "param_names": pn}
           for n, (t, u, p, pn) in META.items()}, "version": 2}))
    (root / "vm" / "machine.json").write_text(json.dumps({"machine": "vm", "version": 1}))
    for i in range(commits):
        commit = "abcdef"[i] * 40
        results = {n: [VALUES[n](i), META[n][2], "v1", 0, 1.0] for n in META}
        (root / "vm" / f"{commit[:8]}-virtualenv-py3.11.json").write_text(json.dumps({
            "commit_hash": commit, "env_name": "virtualenv-py3.11",
            "date": 1_700_000_000_000 + i * 86_400_000, "params": {}, "python": "3.11",
            "requirements": {}, "env_vars": {}, "results": results, "durations": {},
            "result_columns": ["result", "params", "version", "started_at", "duration"],
            "version": 2}))
    return root


@pytest.fixture
def results(tmp_path) -> Path:
    return _results(tmp_path / "results")


def _chart(results: Path, name: str):
    df = asv_charts.read_results(results)
    fig = asv_charts.benchmark_chart(df, name, asv_charts.read_benchmarks(results)[name])
    FigureCanvasAgg(fig).draw()
    return fig


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for t in fig.legends[0].get_texts()]


def test_asv_skipped_series_are_not_in_the_legend(results):
    fig = _chart(results, FP)
    ax = fig.axes[0]
    drawn = ["index='bloom', workload='uniform'", "index='bloom', workload='zipf-skewed'"]
    assert [line.get_label() for line in ax.lines] == drawn
    assert _legend_texts(fig) == drawn
    assert all(np.isfinite(line.get_ydata()).any() for line in ax.lines)
    title = fig.legends[0].get_title().get_text()
    assert "skipped at every commit" in title and "simple-bucket" in title
    plt.close(fig)


def test_asv_series_skipped_at_one_commit_is_still_drawn(results):
    fig = _chart(results, BYTES)
    labels = _legend_texts(fig)
    assert "index='simple-bucket', workload='zipf-skewed'" in labels and len(labels) == 4
    plt.close(fig)


def test_asv_chart_of_a_benchmark_skipped_everywhere_says_so(results, tmp_path):
    fig = _chart(results, BOOT)
    ax = fig.axes[0]
    assert not fig.legends and not ax.lines
    assert [t.get_text() for t in ax.texts] == [asv_charts.ALL_SKIPPED]
    assert list(ax.get_yticks()) == []
    plt.close(fig)
    paths = asv_charts.write_asv_charts(results, tmp_path / "out")
    assert f"{BOOT}.png" in [p.name for p in paths]


def _gap_columns(img: np.ndarray, fig, handle) -> int:
    """Near-white pixel columns on the handle's line left of its centre marker."""
    pts = handle.get_transform().transform(np.c_[handle.get_xdata(), handle.get_ydata()])
    (x0, y), (xc, _) = pts[0], pts[len(pts) // 2]
    radius = handle.get_markersize() / 2 * fig.dpi / 72
    row = img.shape[0] - round(y)
    band = img[row - 1:row + 2, round(x0) + 1:round(xc - radius) - 1, :3].min(axis=0)
    return int((band.min(axis=1) > 230).sum())


def test_asv_legend_handles_show_the_line_style(results):
    fig = asv_charts.benchmark_chart(asv_charts.read_results(results), BYTES)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    img = np.asarray(canvas.buffer_rgba())
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    legend = fig.legends[0]
    for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True):
        line = lines[text.get_text()]
        assert (handle.get_linestyle(), handle.get_marker()) == (line.get_linestyle(),
                                                                 line.get_marker())
        gaps = _gap_columns(img, fig, handle)
        assert (gaps > 0) == (line.get_linestyle() != "-"), (text.get_text(), gaps)
    assert {h.get_linestyle() for h in legend.legend_handles} == {"-", "--"}
    plt.close(fig)


def _visible_ticks(ax) -> list[float]:
    lo, hi = ax.get_ylim()
    return [t for t in ax.get_yticks() if lo <= t <= hi]


def test_asv_all_zero_counts_axis_runs_from_zero_to_one(results):
    fig = _chart(results, FPR)
    ax = fig.axes[0]
    assert ax.get_ylim() == (0.0, 1.0)
    assert min(_visible_ticks(ax)) == 0.0
    plt.close(fig)


@pytest.mark.parametrize("name", [FP, BYTES, TIME, PEAKMEM])
def test_asv_non_negative_values_axis_starts_at_zero(results, name):
    fig = _chart(results, name)
    ax = fig.axes[0]
    assert ax.get_ylim()[0] == 0.0 and ax.get_ylim()[1] > 0
    assert min(_visible_ticks(ax)) >= 0.0
    plt.close(fig)


@pytest.mark.parametrize("name, label, divisor", [
    (BYTES, "MiB/batch", 2**20), (PEAKMEM, "peak memory (MiB)", 2**20),
    (TIME, "time (ms)", 1e-3)])
def test_asv_bytes_and_time_axes_in_binary_and_time_units(results, name, label, divisor):
    fig = _chart(results, name)
    ax = fig.axes[0]
    assert ax.get_ylabel() == label
    assert ax.yaxis.get_offset_text().get_text() == ""  # no ×1e6 above the axis
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert ticks and not any("e" in t for t in ticks)
    raw = asv_charts.read_results(results).query("benchmark == @name")["value"].max()
    assert max(np.nanmax(line.get_ydata()) for line in ax.lines) == pytest.approx(raw / divisor)
    plt.close(fig)


@pytest.mark.parametrize("kind, unit, peak, expected", [
    ("track", "bytes/key", 40.0, (1.0, "bytes/key")),
    ("track", "bytes", 5e4, (2.0**10, "KiB")),
    ("peakmemory", "bytes", 3e9, (2.0**30, "peak memory (GiB)")),
    ("track", "unit", 5e6, (2.0**20, "MiB")),  # unit-less, "bytes" in the name
    ("time", "seconds", 3e-7, (1e-9, "time (ns)")),
    ("time", "seconds", 2.5, (1.0, "time (s)")),
    ("track", "seconds", 0.02, (1e-3, "ms")),
    ("track", "files/batch", 3e6, (1.0, "files/batch")),
])
def test_asv_axis_unit_by_magnitude(kind, unit, peak, expected):
    assert asv_charts.axis_unit("b.C.track_cache_bytes", kind, unit, [peak / 2, peak, NAN]) \
        == expected


def test_asv_time_and_peakmem_benchmarks_get_a_chart_each(results, tmp_path):
    paths = asv_charts.write_asv_charts(results, tmp_path / "all")
    assert sorted(p.name for p in paths) == sorted(f"{n}.png" for n in META)
    assert all(p.stat().st_size > 1000 for p in paths)
    only = asv_charts.write_asv_charts(results, tmp_path / "mem", kinds=["peakmem"])
    assert [p.name for p in only] == [f"{PEAKMEM}.png"]
