"""Figures an index declares (``DeclaredFigures.FIGURES``): its own columns drawn by one
generic function, so a new index adds a figure without code here."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from metrics.contract import series_of
from reports import style
from reports.data import SIM_SUFFIX, is_sim
from reports.figures.common import (
    _frame,
    _num,
    _upserts,
    label_log_axis,
)


def _column_or_ratio(g: pd.DataFrame, expr: str) -> pd.Series:
    """A column, or ``"a/b"``: the ratio of two (empty where ``b`` is 0)."""
    if "/" not in expr:
        return _num(g, expr)
    a, b = expr.split("/", 1)
    den = _num(g, b)
    return _num(g, a) / den.where(den != 0)


def _percentile_marker(marker: str, i: int) -> str:
    """The marker of a declared figure's ``i``-th y column: the index's own for the
    first, then shapes it does not use (p50 and p99 stay apart without a line)."""
    if i == 0:
        return marker
    others = [m for m in ("^", "v", "s", "D") if m != marker]
    return others[(i - 1) % len(others)]


def declared_figure(df: pd.DataFrame, decl) -> Figure | None:
    """An index's declared figure (:class:`indexes.base.IndexFigure`): ``decl.y`` against
    ``decl.x`` over the upsert rows of every index that has them, per index, table type
    and kind of run; a faint point per row and the median at each ``x`` (within a tenth
    of a decade on a log axis), joined into a line only where there are several ``x``
    (several runs at different settings): a single median is drawn as a point and its
    legend entry says so, so the legend never shows a line the axes do not. Each y
    column has a marker of its own; merge-on-read hollow; simulated runs (``model_<y>``)
    dotted. None when no row has the columns."""
    df = _frame(df)
    up = _upserts(df)
    if not len(up):
        return None
    kinds = {False: ["-", "--", (0, (5, 1, 1, 1))], True: [":", "-.", (0, (1, 3))]}
    drawn = False
    with style.paper():
        fig, axes = style.figure(1, 1, height=3.0)
        ax = axes[0][0]
        up = up.assign(_sim=is_sim(up), _mor=series_of(up).str.endswith(" (mor)"))
        for (name, sim, mor), g in up.groupby(["index", "_sim", "_mor"], sort=False):
            x = _column_or_ratio(g, decl.x)
            look = style.series_look(str(name), mor=bool(mor), sim=bool(sim))
            for i, col in enumerate(decl.y):
                y = _num(g, f"model_{col}") if sim else _num(g, col)
                ok = x.notna() & y.notna() & (x > 0) & (y > 0)
                if not ok.any():
                    continue
                drawn = True
                kw = {**look.line(), "marker": _percentile_marker(look.marker, i)}
                ax.plot(x[ok], y[ok], **{**kw, "ls": "none", "ms": 3, "alpha": 0.45})
                # the median of the points whose x is within ~12% (a tenth of a decade):
                # a batch's partial requests make x wander a little around its setting
                xs = x[ok].to_numpy(float)
                bins = np.round(np.log10(xs), 1) if decl.log_x else np.round(xs, 6)
                med = pd.DataFrame({"b": bins, "x": xs, "y": y[ok].to_numpy(float)}) \
                    .groupby("b")[["x", "y"]].median().sort_values("x")
                style_ = kinds[bool(sim)]
                one = len(med) == 1
                label = f"{name}{' (mor)' if mor else ''}{SIM_SUFFIX if sim else ''} " \
                        f"{decl.y_names[i] if i < len(decl.y_names) else col}" \
                        + (": median (one request size)" if one else "")
                ax.plot(med["x"], med["y"], **{**kw, "ms": 6 if one else 4,
                                                "ls": "none" if one else
                                                style_[i % len(style_)]}, label=label)
        if not drawn:
            import matplotlib.pyplot as plt

            plt.close(fig)
            return None
        if decl.log_x:
            ax.set_xscale("log")
        if decl.log_y:
            ax.set_yscale("log")
        ax.autoscale_view()
        if decl.log_x:
            label_log_axis(ax.xaxis)
        if decl.log_y:
            label_log_axis(ax.yaxis)
        ax.set_xlabel(decl.x_label)
        ax.set_ylabel(decl.y_label)
        ax.set_title(decl.title + ("; sim: modelled" if is_sim(up).any() else ""))
        ax.legend(fontsize=7)
    return fig

