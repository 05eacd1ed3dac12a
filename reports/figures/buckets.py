"""Buckets: records per file group at the end of a run (spread), and buckets,
spread, index bytes and seconds as the table grows (indexes that open buckets online)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from reports import style
from reports.figures.common import (
    _fill,
    _frame,
    _headroom,
    _kilo,
    _line_style,
    _num,
    iter_series,
    measured_or_model,
    nested_legend,
    plot_nested,
    room_for_legend,
)


# ---- bucket sizes -----------------------------------------------------------------------
def bucket_stats(counts: Sequence[float]) -> dict[str, float]:
    """max/mean and coefficient of variation of bucket (file group) record counts."""
    c = np.asarray(counts, dtype=float)
    if c.size == 0 or c.mean() == 0:
        return {"buckets": int(c.size), "max": 0.0, "mean": 0.0, "max_over_mean": float("nan"),
                "cov": float("nan")}
    return {"buckets": int(c.size), "max": float(c.max()), "mean": float(c.mean()),
            "max_over_mean": float(c.max() / c.mean()), "cov": float(c.std() / c.mean())}


def bucket_series(df: pd.DataFrame,
                  bucket_counts: Mapping[str, Sequence[int]] | None = None) -> list[str]:
    """Series of bucket indexes: those reporting a ``buckets`` metric (bloom does not)."""
    out = []
    for label, _name, g in iter_series(df):
        if _num(g, "buckets").fillna(0).gt(0).any():
            out.append(label)
    return out


def counted_groups(file_groups: int, buckets: float) -> str:
    """What a panel of per-file-group counts holds: "910 file groups in 16 buckets"
    when buckets hold several file groups, "64 buckets, one file group each" when each
    holds one (the run's own ``buckets`` after its last batch)."""
    if not math.isfinite(buckets) or buckets <= 0:
        return f"{file_groups:,} file groups"
    if int(buckets) == file_groups:
        return f"{file_groups:,} buckets, one file group each"
    return f"{file_groups:,} file groups in {int(buckets):,} buckets"


def bucket_size_figure(df: pd.DataFrame,
                       bucket_counts: Mapping[str, Sequence[int]] | None = None
                       ) -> Figure | None:
    """Records per file group, sorted, per bucket index, with max/mean and CoV; the
    title says how many file groups and buckets (:func:`counted_groups`).

    ``bucket_counts`` maps a series (index) to the record count of every file group of
    its latest snapshot (``reports.load`` reads them from the tables); without it the
    figure falls back to the last batch's ``bucket_records_max/mean/cov`` metrics.
    """
    df = _frame(df)
    bucket_counts = dict(bucket_counts or {})
    labels = bucket_series(df, bucket_counts)
    if not labels:  # no bucket index in these runs: not applicable, the report omits it
        return None
    ncols = min(2, len(labels))
    nrows = math.ceil(len(labels) / ncols)
    by_label = {label: (name, g) for label, name, g in iter_series(df)}
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.7)
        flat = axes.ravel()
        for ax, label in zip(flat, labels, strict=False):
            name, g = by_label[label]
            color = style.index_color(name)
            if label in bucket_counts:
                counts = np.sort(np.asarray(bucket_counts[label], dtype=float))[::-1]
                s = bucket_stats(counts)
                ax.bar(np.arange(len(counts)), counts, width=1.0, color=color,
                       edgecolor=color, linewidth=0.2)
                ax.axhline(s["mean"], color="black", lw=0.8, ls="--",
                           label=f"mean: {s['mean']:,.0f} records")
                ax.legend(fontsize=7, loc="upper right")
                ax.set_ylim(0, 1.25 * float(counts.max()) if len(counts) else 1)  # legend room
                ax.set_xlabel("file groups, sorted by size (rank)")
                ax.set_ylabel("records per file group (records)")
                what = counted_groups(len(counts), _num(g, "buckets").iloc[-1])
                src = "latest snapshot"
            else:
                last = g.iloc[-1]
                mx, mean = float(last.get("bucket_records_max", np.nan)), float(
                    last.get("bucket_records_mean", np.nan))
                cov = float(last.get("bucket_records_cov", np.nan)) \
                    if "bucket_records_cov" in g.columns else float("nan")
                s = {"buckets": float(last.get("buckets", np.nan)), "max": mx, "mean": mean,
                     "max_over_mean": mx / mean if mean else float("nan"), "cov": cov}
                ax.bar([0, 1], [mx, mean], color=color, alpha=0.8)
                ax.set_xticks([0, 1], ["largest bucket", "mean bucket"])
                ax.set_ylabel("records per bucket (records)")
                groups = float(last.get("file_groups", np.nan))
                what = counted_groups(int(groups), s["buckets"]) if math.isfinite(groups) \
                    else f"{int(s['buckets']):,} buckets" if math.isfinite(s["buckets"]) \
                    else "buckets"
                src = "last batch metrics"
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(_kilo))  # 1.5M, not 1e6 offsets
            # three short lines: a long series label and "(last batch metrics)" on one
            # line ran past both edges of a two-column figure
            ax.set_title(f"{label}\n{what} ({src})\n"
                         f"max/mean = {s['max_over_mean']:.2f}, CoV = {s['cov']:.3f}",
                         color=color, fontsize=8.5)
        for ax in flat[len(labels):]:
            ax.set_axis_off()
    return fig



# ---- buckets as the table grows ---------------------------------------------------------
def has_bucket_growth(df: pd.DataFrame) -> bool:
    """Whether a series opens buckets online (reports ``buckets_created``): the figure of
    buckets, spread and index bytes as the table grows is drawn only then."""
    df = _frame(df)
    return any(_num(g, "buckets_created").notna().any() for _l, _n, g in iter_series(df))


def bucket_growth_figure(df: pd.DataFrame) -> Figure | None:
    """Every series with buckets (bucket indexes, Paimon tables) as the table grows:
    (a) buckets, (b) spread of records per bucket (CoV), (c) index bytes per key on disk
    (solid) and in memory (dashed, where counted), (d) seconds per upsert batch (the
    initial load left out). None unless a series opens buckets online
    (``has_bucket_growth``)."""
    df = _frame(df)
    if not has_bucket_growth(df):
        return None
    series = [(label, name, g) for label, name, g in iter_series(df)
              if _num(g, "buckets").fillna(0).gt(0).any()]
    with style.paper():
        fig, axes = style.figure(2, 2, height=2.6)
        (ax_b, ax_c), (ax_i, ax_t) = axes
        any_model, no_mem = False, []
        drawn: dict[str, list[tuple[Any, Any, dict[str, Any]]]] = {
            "b": [], "c": [], "i": [], "t": []}
        for label, name, g in series:
            kw = {**_line_style(df, name, g), "label": label}
            keys = _num(g, "table_records")
            drawn["b"].append((keys, _num(g, "buckets"), kw))
            drawn["c"].append((keys, _num(g, "bucket_records_cov"), kw))
            disk, modelled = measured_or_model(g, "index_disk_bytes")
            any_model |= modelled
            ok = keys > 0
            drawn["i"].append((keys[ok], (disk / keys)[ok], kw))
            mem = _num(g, "index_mem_bytes")
            if mem.fillna(0).gt(0).any():
                drawn["i"].append((keys[ok], (mem / keys)[ok],
                                   {**kw, "ls": "--", "label": None,
                                    "markerfacecolor": "none"}))
            elif mem.isna().all():
                no_mem.append(label)
            total, modelled = measured_or_model(g, "total_s")
            any_model |= modelled
            later = (g["batch"] >= 1).to_numpy() if (g["batch"] >= 1).any() else \
                np.ones(len(g), dtype=bool)  # upserts, not the initial load
            drawn["t"].append((g["batch"][later], total[later], kw))
        nested = [plot_nested(ax, drawn[key])
                  for key, ax in (("b", ax_b), ("c", ax_c), ("i", ax_i), ("t", ax_t))]
        ax_b.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_t.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in (ax_b, ax_c, ax_i):
            ax.set_xlabel("keys in the table after the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.set_ylim(bottom=0, top=_headroom(ax))
        ax_b.set_ylabel("buckets (all partitions)")
        ax_b.set_title("(a) buckets")
        ax_c.set_ylabel("bucket size CoV (std/mean)")
        ax_c.set_title("(b) bucket size spread (std/mean)")
        ax_i.set_ylabel("index bytes per key (B)")
        ax_i.set_title("(c) index on disk (solid), in memory (dashed)")
        if no_mem:
            ax_i.text(0.98, 0.6, _fill("memory not counted: " + ", ".join(no_mem),
                                               40), transform=ax_i.transAxes, ha="right",
                      va="center", fontsize=6.5, color="0.3")
        ax_t.set_xlabel("upsert batch (batches; the initial load left out)")
        ax_t.set_ylabel("seconds per batch (s)")
        ax_t.set_ylim(bottom=0)
        ax_t.set_title("(d) total_s per upsert batch" + (" (sim: modelled)" if any_model
                                                          else ""))
        room_for_legend(fig, nested_legend(fig, *ax_b.get_legend_handles_labels(),
                                           nested=any(nested), loc="outside lower center",
                                           ncols=min(4, len(series)), fontsize=7))
    return fig

