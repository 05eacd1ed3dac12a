"""Seconds per batch stacked by phase, and seconds in the units a reader says them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from reports import style
from reports.figures.common import (
    _empty,
    _frame,
    is_peer_series,
    iter_series,
    measured_or_model,
)

# Every phase the driver times on its own (rows from before a phase had its column
# show it inside "other"), bottom to top in the order they run.
PHASES = [("generate_s", "generate", 0.2, "..."), ("validate_s", "validate", 0.3, "xx"),
          ("precombine_s", "precombine", 0.45, "\\\\"), ("tag_s", "tag", 1.0, None),
          ("write_s", "write", 0.6, None), ("commit_s", "commit", 0.35, None),
          ("other_s", "other (plan, index update, ...)", 0.12, "///")]


def seconds_unit(seconds: float) -> tuple[str, float]:
    """The unit a panel of seconds reads best in: (name, seconds per unit)."""
    for unit, div, upto in (("s", 1.0, 120), ("min", 60.0, 7200), ("h", 3600.0, 172800)):
        if seconds < upto:
            return unit, div
    return "days", 86400.0


def human_seconds(seconds: float) -> str:
    """``8.6 s``, ``2.7 min``, ``28 h``: a duration as a reader says it."""
    unit, div = seconds_unit(seconds)
    v = seconds / div
    return f"{v:.2g} {unit}" if v < 10 else f"{v:,.0f} {unit}"


def _phase_parts(g: pd.DataFrame) -> tuple[dict[str, np.ndarray], np.ndarray, bool]:
    """(seconds of each phase per batch, total seconds, modelled?) of one series; the
    rest of ``total_s`` is "other"."""
    parts = {c: measured_or_model(g, c)[0].fillna(0).to_numpy() for c, *_ in PHASES[:-1]}
    total, modelled = measured_or_model(g, "total_s")
    known = sum(parts.values())
    parts["other_s"] = np.clip(np.nan_to_num(total.to_numpy() - known, nan=0.0), 0, None)
    return parts, total.to_numpy(dtype=float), modelled


def latency_figure(df: pd.DataFrame) -> Figure:
    """Seconds per batch stacked by phase: generate, validate, precombine, tag, write,
    commit (and the rest of total_s), one panel per series. Every panel has the same
    y scale, in the unit that reads best for the slowest batch (s, min, h), so bar
    heights compare across series; the total above each bar keeps a short one
    readable."""
    df = _frame(df)
    series = list(iter_series(df))
    if not series:
        with style.paper():
            fig, axes = style.figure(1, 1)
            return _empty(fig, axes[0][0], "no upsert batches")
    ncols = min(2, len(series))
    nrows = math.ceil(len(series) / ncols)
    drawn = [(label, name, g, *_phase_parts(g)) for label, name, g in series]
    # the tallest stack (its phases may add up past a total_s that was not counted)
    top = max(float(np.max(sum(p.values()), initial=0.0)) for *_x, p, _t, _m in drawn)
    unit, div = seconds_unit(top if np.isfinite(top) else 0.0)
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.3, sharey=True)
        flat = axes.ravel()
        any_model = False
        for ax, (label, name, g, parts, total, modelled) in zip(flat, drawn, strict=False):
            color = style.index_color(name)
            any_model |= modelled
            x = np.arange(len(g))
            bottom = np.zeros(len(g))
            for col, _name, alpha, hatch in PHASES:
                ax.bar(x, parts[col] / div, bottom=bottom, color=color, alpha=alpha,
                       hatch=hatch, edgecolor=color, linewidth=0.8 if modelled else 0.5,
                       width=0.75, linestyle="--" if modelled else "-")
                bottom += parts[col] / div
            stack = sum(parts.values())
            if len(g) <= 12:  # each bar's total, in human units
                for xi, t in zip(x, total, strict=True):
                    if np.isfinite(t):
                        ax.text(xi, max(t, stack[xi]) / div, human_seconds(t),
                                ha="center", va="bottom", fontsize=6.5, color=color)
            ax.set_xticks(x, [str(int(b)) for b in g["batch"]])
            ax.yaxis.set_tick_params(labelleft=True)  # each panel reads on its own
            ax.set_xlabel("batch (0 = initial load)")
            ax.set_ylabel(f"seconds per batch ({unit})")
            kind = "modelled seconds (model_*)" if modelled else \
                "measured seconds; its own upsert drawn as write" if is_peer_series(g) else \
                "measured seconds"
            ax.set_title(f"{label}\n{kind}", color=color, fontsize=8.5)
        flat[0].set_ylim(0, 1.15 * top / div if top > 0 else 1)  # shared: room for totals
        for ax in flat[len(series):]:
            ax.set_axis_off()
        handles = [Patch(facecolor="grey", alpha=a, hatch=h, edgecolor="grey", label=n)
                   for _c, n, a, h in PHASES]
        if any_model:
            handles.append(Patch(facecolor="none", edgecolor="grey", linestyle="--",
                                 label="(sim): modelled seconds, not measured"))
        # four to a row: a longer (sim) legend wraps instead of running off both edges
        fig.legend(handles=handles, loc="outside upper center", ncols=min(4, len(handles)),
                   fontsize=7, title=f"every panel on one scale ({unit}); the number on a "
                   "bar is its total", title_fontsize=7)
    return fig

