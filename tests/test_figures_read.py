"""The report's figures read at a glance (issue #32): latency on one scale in human
units (issue #43), log axes with more than one labelled tick, legends off the bars,
labels that do not run together, a legend entry for every line drawn (synthetic rows, no
Spark)."""

from __future__ import annotations

import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import indexes
from metrics import contract as m
from reports import figures as F
from reports import page
from reports.query import query_figure


def _upserts(bloom_tag_s: float = 100_000.0, names: list[str] | None = None) -> pd.DataFrame:
    """Five batches of every registered index (or ``names``); bloom's batches take
    ``bloom_tag_s`` to tag (a sim at 100M keys), the bucket indexes' a fraction of a
    second."""
    rows = []
    for name in names or indexes.names():
        bloom = name == "bloom"
        for b in range(5):
            tag = (bloom_tag_s if b else 1.0) if bloom else 0.25
            rows.append({
                "run_id": "r", "index": name, "workload": "uniform", "batch": b,
                "operation": "upsert", "records": 20_000, "tag_s": tag, "write_s": 0.4,
                "commit_s": 0.05, "generate_s": 0.1, "validate_s": 0.1, "precombine_s": 0.1,
                "total_s": tag + 0.9, "table_records": 100_000 + 20_000 * b,
                "file_groups": 800 + b, "files_read": 821 if bloom and b else 0,
                "bloom_checks": 2_000_000 * b if bloom else 0,
                "bloom_positives": 160_000 * b + 1_000 if bloom else 0,
                "false_positives": 160_000 * b if bloom else 0,
                "fp_rate": 0.08 * b if bloom and b else np.nan,
                "probed_keys_per_file": 120.0 + 20 * b if bloom else np.nan,
                "buckets": np.nan if bloom else 64, "bucket_records_max": np.nan if bloom
                else 2_000.0, "bucket_records_mean": np.nan if bloom else 1_600.0})
    return m.to_frame(rows)


def _visible_tick_labels(axis) -> list[str]:
    lo, hi = sorted(axis.get_view_interval())
    y = axis.axis_name == "y"
    return [t.get_text() for t in axis.get_ticklabels()
            if t.get_text() and lo <= t.get_position()[int(y)] <= hi]


def test_latency_panels_share_one_scale_in_human_units():
    """Issue #43: one y scale for every panel (bloom's bars as tall as its seconds), in
    the unit of the slowest batch; the totals above the bars keep short ones readable."""
    fig = F.latency_figure(_upserts(names=["bloom", "simple-bucket"]))
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_title()]
    by_name = {ax.get_title().split("\n")[0]: ax for ax in panels}
    bloom, bucket = by_name["bloom"], by_name["simple-bucket"]
    assert bloom.get_ylim() == bucket.get_ylim() and bucket.get_ylim()[1] > 27
    assert bloom.get_ylabel() == bucket.get_ylabel() == "seconds per batch (h)"
    labels = {t.get_text() for t in bloom.texts} | {t.get_text() for t in bucket.texts}
    assert "28 h" in labels and "1.1 s" in labels  # not 1e+05s
    (legend,) = fig.legends
    fig_box = fig.get_window_extent()
    box = legend.get_window_extent()
    assert fig_box.x0 <= box.x0 and box.x1 <= fig_box.x1  # not cut at either edge
    plt.close(fig)


def test_human_seconds():
    assert F.human_seconds(0.25) == "0.25 s" and F.human_seconds(160) == "2.7 min"
    assert F.human_seconds(100_807.8) == "28 h" and F.human_seconds(5e5) == "5.8 days"


def test_fp_rate_axes_are_labelled_and_plain():
    params = {"bloom": indexes.get("bloom").describe()}
    fig = F.fp_rate_figure(_upserts(), params)
    fig.canvas.draw()
    ax_n, ax_t = fig.axes[:2]
    assert len(_visible_tick_labels(ax_n.xaxis)) >= 3
    assert "a batch:" not in ax_n.get_xlabel() and len(ax_n.texts) == 0  # no annotations
    fig_box, (legend,) = fig.get_window_extent(), fig.legends
    box = legend.get_window_extent()
    assert fig_box.x0 <= box.x0 and box.x1 <= fig_box.x1  # its long entries not cut off
    plt.close(fig)


def test_scale_on_a_comparison_reads_its_sizes():
    """A comparison's batches span 100k-180k records: a linear x with a label per tick,
    and the page's caption does not promise a growth the line does not show."""
    fig = F.scale_figure(_upserts(bloom_tag_s=7.7))
    fig.canvas.draw()
    ax_f, ax_t = fig.axes[:2]
    assert ax_f.get_xscale() == "linear" and len(_visible_tick_labels(ax_f.xaxis)) >= 3
    assert len(_visible_tick_labels(ax_f.yaxis)) >= 2
    caption = next(s.caption for s in page.FIGURES if s.file == "scale.png")
    assert "follows the table's file count" in caption and "flat" in caption
    plt.close(fig)


def test_bucket_sizes_legend_names_the_mean_line():
    counts = {n: list(range(100, 164)) for n in indexes.names() if n != "bloom"}
    fig = F.bucket_size_figure(_upserts(), counts)
    for ax in (a for a in fig.axes if a.get_title()):
        dashed = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
        legend = ax.get_legend()
        assert dashed and legend is not None
        assert [t.get_text() for t in legend.get_texts()] == ["mean: 132 records"]
    plt.close(fig)


def test_a_figure_with_nothing_to_draw_is_left_out_of_the_report(tmp_path):
    """A one-index run: no bloom → no fp_rate.png; bloom alone → no bucket_sizes.png."""
    assert F.fp_rate_figure(_upserts(names=["simple-bucket"]), {}) is None
    assert F.bucket_size_figure(_upserts(names=["bloom"]), {}) is None
    assert F.fp_rate_figure(_upserts(names=["bloom"]), {}) is not None
    plt.close("all")


def _queries() -> pd.DataFrame:
    rows = []
    for name in indexes.names():
        bloom = name == "bloom"
        rows.append({"run_id": "q", "index": name, "workload": "uniform",
                     "operation": "query", "query": "lookup", "plan": "index", "keys": 100,
                     "files_read": 26 if bloom else 69, "files_read_per_key": 0.26 if bloom
                     else 0.69, "fp_file_reads": 0 if bloom else 31,
                     "latency_p50_s": 0.37 if bloom else 0.18,
                     "latency_p99_s": 0.42 if bloom else 0.2, "total_s": 0.7})
        for q, plan in itertools.product(("groupby", "join"), ("bucket-aware", "default")):
            rows.append({"run_id": "q", "index": name, "workload": "uniform",
                         "operation": "query", "query": q, "plan": plan,
                         "shuffle_bytes": 0 if plan == "bucket-aware" else 149_000,
                         "has_exchange": float(plan == "default"), "total_s": 0.3})
    return m.to_frame(rows)


def test_query_panels_are_distinct_and_nothing_overlaps():
    fig = query_figure(_queries())
    fig.canvas.draw()
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert [t[:3] for t in titles] == ["(a)", "(b)", "(c)", "(d)"]
    assert "dots" not in fig._suptitle.get_text()  # one row per bar: no dots drawn
    ax_f, ax_l = fig.axes[:2]
    notes = [t for t in ax_f.texts if t.get_text()]
    boxes = [t.get_window_extent() for t in notes]
    for a, b in itertools.combinations(boxes, 2):  # "31 FP" labels never run together
        assert not a.overlaps(b)
    legend = ax_l.get_legend().get_window_extent()
    for bar in ax_l.patches:  # the p50/p99 legend sits above the bars, on none of them
        assert not legend.overlaps(bar.get_window_extent())
    plt.close(fig)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_a_log_axis_under_a_decade_still_has_labels():
    """A one-index run's tag seconds span 7 s to 15 s: 7, 8, 9 and 10 are labelled."""
    df = _upserts(bloom_tag_s=7.5, names=["bloom"])
    df.loc[df["batch"] == 1, "tag_s"] = 14.5
    fig = F.scale_figure(df)
    fig.canvas.draw()
    assert len(_visible_tick_labels(fig.axes[1].yaxis)) >= 3
    plt.close(fig)
