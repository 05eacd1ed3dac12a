"""Write cost against read cost per index and table type (copy-on-write vs
merge-on-read)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from reports import style
from reports.data import is_sim
from reports.figures.common import (
    _frame,
    _index_of,
    _kilo,
    _num,
    label_log_axis,
    nested_legend,
    plot_nested,
    series_look,
)


def write_read_points(df: pd.DataFrame) -> pd.DataFrame:
    """Per real series with lookups: write seconds and bytes per upsert batch (≥ 1) with
    its compactions spread over the batches, and the lookups' seconds and bytes per key."""
    df = _frame(df)
    real = df[~is_sim(df) & ~df["run_mode"].astype("string").eq("peer").fillna(False)] \
        if "run_mode" in df.columns else df
    op = real["operation"].astype(str)
    out = []
    for label in pd.unique(real.loc[op == "upsert", "series"]):
        g = real[real["series"] == label]
        ups = g[(g["operation"] == "upsert") & (_num(g, "batch") >= 1)]
        look = g[(g["operation"] == "query") & (g.get("query", "") == "lookup")] \
            if "query" in g.columns else g.iloc[:0]
        if ups.empty or look.empty:
            continue
        services = g[g["operation"] == "compaction"]
        n = len(ups)
        keys = _num(look, "keys").sum()
        tt = g["table_type"].dropna().astype(str) if "table_type" in g.columns else pd.Series()
        out.append({
            "series": label, "index": _index_of(g),
            "table_type": tt.iloc[0] if len(tt) else "cow",
            "write_s": (_num(ups, "write_s").sum() + _num(services, "write_s").sum()) / n,
            "bytes_written": (_num(ups, "bytes_written").sum()
                              + _num(services, "bytes_written").sum()) / n,
            "lookup_s": float(_num(look, "latency_p50_s").median()),
            "bytes_read_per_key": _num(look, "bytes_read").sum() / keys if keys else np.nan,
        })
    return pd.DataFrame(out)


WRITE_READ_PANELS = (
    ("write_s", "lookup_s", "write per upsert batch, with compactions (s)",
     "lookup p50 per key batch (s)"),
    ("bytes_written", "bytes_read_per_key", "bytes written per upsert batch (B)",
     "bytes read per key looked up (B)"))


def _write_read_axis(ax, which: str, values: pd.Series) -> None:
    """Log when the values span more than 30× (indexes differ by orders of magnitude),
    plain numbers (1.5k, 20M) either way."""
    v = values[values > 0]
    axis = ax.xaxis if which == "x" else ax.yaxis
    if len(v) and float(v.max()) > 30 * float(v.min()):
        (ax.set_xscale if which == "x" else ax.set_yscale)("log")
        label_log_axis(axis)
    else:
        axis.set_major_formatter(FuncFormatter(_kilo))


def write_read_figure(df: pd.DataFrame) -> Figure | None:
    """Write cost (x) against read cost (y) per index and table type: (a) seconds,
    (b) bytes; a point per series in its look (the index's colour and marker,
    copy-on-write filled, merge-on-read hollow), named in the legend; an arrow leads
    from an index's copy-on-write point to its merge-on-read one. None when no series
    has both upserts and lookups."""
    pts = write_read_points(df)
    if pts.empty:
        return None
    df = _frame(df)
    looks = {s: series_look(df, str(i), df[df["series"] == s])
             for s, i in zip(pts["series"], pts["index"], strict=True)}
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.4)
        nested = False
        for ax, (xc, yc, xl, yl) in zip(axes.ravel(), WRITE_READ_PANELS, strict=True):
            # points within about 2% of each other are drawn nested: each one shows
            nested |= plot_nested(ax, [([p[xc]], [p[yc]],
                                        {**looks[p["series"]].points(), "ms": 6,
                                         "label": p["series"]})
                                       for _, p in pts.iterrows()], digits=2)
            for name, g in pts.groupby("index"):
                cow, mor = g[g["table_type"] == "cow"], g[g["table_type"] == "mor"]
                if len(cow) and len(mor):
                    ax.annotate("", xy=(mor[xc].iloc[0], mor[yc].iloc[0]),
                                xytext=(cow[xc].iloc[0], cow[yc].iloc[0]),
                                arrowprops={"arrowstyle": "->", "color":
                                            style.index_color(str(name)), "lw": 0.8})
            _write_read_axis(ax, "x", pts[xc])
            _write_read_axis(ax, "y", pts[yc])
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
        axes[0][0].set_title("(a) seconds", fontsize=9)
        axes[0][1].set_title("(b) bytes", fontsize=9)
        nested_legend(fig, *axes[0][0].get_legend_handles_labels(), nested=nested,
                      loc="outside lower center", ncols=min(4, len(pts)), fontsize=7,
                      title="filled: copy-on-write; hollow: merge-on-read; arrow: "
                            "copy-on-write → merge-on-read", title_fontsize=7)
    return fig

