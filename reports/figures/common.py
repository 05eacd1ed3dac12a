"""What every figure family shares: the series of a frame and their looks, nested
lines and their legends, axis labels a reader can read. No figure here."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from reports import style
from reports.data import is_peer, is_sim, normalise

MIB = 1024 * 1024


def _frame(df: pd.DataFrame) -> pd.DataFrame:
    return normalise(df) if "series" not in df.columns or "operation" not in df.columns else df


def _index_of(g: pd.DataFrame) -> str:
    return str(g["index"].iloc[0])


def _upserts(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["operation"].astype(str) == "upsert"]


def iter_series(df: pd.DataFrame) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(series label, index name, upsert rows sorted by batch), in first-seen order."""
    up = _upserts(df)
    for label in pd.unique(up["series"]):
        g = up[up["series"] == label].sort_values("batch")
        yield str(label), _index_of(g), g


def is_sim_series(g: pd.DataFrame) -> bool:
    """Whether a series' rows are simulated (``run_mode == "sim"``)."""
    return bool(len(g)) and bool(is_sim(g).all())


def is_peer_series(g: pd.DataFrame) -> bool:
    """Whether a series is a peer's (``run_mode == "peer"``: no index, no counters)."""
    return bool(len(g)) and bool(is_peer(g).all())


def is_mor_series(g: pd.DataFrame) -> bool:
    """Whether a series ran on a merge-on-read table (drawn hollow)."""
    if not len(g) or "table_type" not in g.columns:
        return False
    return bool(g["table_type"].astype("string").str.lower()
                .isin(["mor", "merge_on_read"]).fillna(False).all())


def series_look(df: pd.DataFrame, name: str, g: pd.DataFrame) -> style.SeriesLook:
    """The look of a series (``reports.style.series_look``): the index's colour and
    marker, its run's line style (the n-th measured or simulated run of the frame),
    hollow on a merge-on-read table."""
    sim = is_sim_series(g)
    same_kind = df[is_sim(df) == sim] if len(df) else df
    runs = list(pd.unique(same_kind["run"])) if "run" in df.columns else []
    run = g["run"].iloc[0] if "run" in g.columns else None
    return style.series_look(name, mor=is_mor_series(g), sim=sim,
                             run=runs.index(run) if run in runs else 0)


def _line_style(df: pd.DataFrame, name: str, g: pd.DataFrame) -> dict[str, Any]:
    """``Axes.plot`` keywords of a series (:func:`series_look`)."""
    return {**series_look(df, name, g).line(), "ms": 4}


def _key(values: Any, digits: int = 9) -> tuple[float | None, ...]:
    """A line's points to ``digits`` significant digits, comparable (NaN as None: NaN
    equals nothing)."""
    return tuple(None if math.isnan(x) else float(f"{x:.{digits}g}")
                 for x in np.asarray(values, dtype=float).tolist())


NESTED_NOTE = "lines on each other are drawn nested, the first widest"


def plot_nested(ax, lines: Sequence[tuple[Any, Any, dict[str, Any]]],
                digits: int = 9) -> bool:
    """Plot ``(x, y, plot keywords)`` lines; lines through the same points (to
    ``digits`` significant digits) are drawn nested, widest first, each a little
    narrower (and its markers smaller) than the one under it, so every series of a
    group that coincides stays visible (the band stays within 5 pt however many).
    Returns whether some lines were nested (the figure says so: :data:`NESTED_NOTE`)."""
    groups: dict[tuple, list[int]] = {}
    for i, (x, y, _kw) in enumerate(lines):
        groups.setdefault((_key(x, digits), _key(y, digits)), []).append(i)
    depth = {i: (len(idx) - 1 - k, min(1.8, 5 / len(idx)))
             for idx in groups.values() for k, i in enumerate(idx)}
    for i, (x, y, kw) in enumerate(lines):
        d, step = depth[i]
        ax.plot(x, y, **{**kw, "lw": kw.get("lw", 1.5) + step * d,
                         "ms": kw.get("ms", 4) + 1.3 * step * d, "zorder": 2 + 0.01 * i})
    return any(len(idx) > 1 for idx in groups.values())


def even_legend(legend, lw: float = 1.5, ms: float = 5.0) -> None:
    """One width and marker size for every entry of a legend of nested lines (its
    handles are copies: the lines keep their widths)."""
    for h in legend.legend_handles:
        if isinstance(h, Line2D):
            h.set_linewidth(lw)
            h.set_markersize(ms)


def _headroom(ax, share: float = 0.12) -> float | None:
    """A top for a panel whose lowest value is 0: the largest value drawn and
    ``share`` more, so nested lines at the top are not cut by the frame."""
    ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines]
    ys = [y[np.isfinite(y)] for y in ys if np.isfinite(y).any()]
    top = max((float(y.max()) for y in ys), default=0.0)
    return top * (1 + share) if top > 0 else None


def nested_legend(owner, *args: Any, nested: bool = False, **kw: Any):
    """``owner.legend(*args, **kw)`` (a Figure or Axes) with even entries
    (:func:`even_legend`), titled :data:`NESTED_NOTE` when lines were nested (a title
    given is kept, the note added under it)."""
    if nested:
        kw["title"] = "\n".join(t for t in (kw.get("title"), NESTED_NOTE) if t)
        kw.setdefault("title_fontsize", 6.5)
    legend = owner.legend(*args, **kw)
    even_legend(legend)
    return legend


def room_for_legend(fig: Figure, legend) -> None:
    """Make the figure taller by the legend's height: a long legend outside the panels
    no longer squeezes them (the panels keep the height the figure was made with)."""
    height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
    fig.set_figheight(fig.get_figheight() + height)


def _series_entries(labels: Sequence[str], *axes) -> tuple[list[Any], list[str]]:
    """A legend entry per series drawn on any of ``axes``, named by the series alone:
    its first line (labelled ``<series>`` or ``<series>: <what>``)."""
    handles, names = [], []
    for label in labels:
        line = next((ln for ax in axes for ln in ax.lines
                     if ln.get_label() == label or ln.get_label().startswith(f"{label}: ")),
                    None)
        if line is not None:
            handles.append(line)
            names.append(label)
    return handles, names


def measured_or_model(g: pd.DataFrame, col: str) -> tuple[pd.Series, bool]:
    """(values, modelled?): ``col`` for a real series, ``model_<col>`` for a simulated one
    (whose measured byte/second columns are empty)."""
    if is_sim_series(g):
        return _num(g, f"model_{col}"), True
    return _num(g, col), False


def _num(g: pd.DataFrame, col: str) -> pd.Series:
    if col not in g.columns:
        return pd.Series(np.nan, index=g.index, dtype=float)
    return pd.to_numeric(g[col], errors="coerce").astype(float)


def _before(g: pd.DataFrame, col: str, first: float = 0.0) -> pd.Series:
    """The value of ``col`` before each batch (after the previous one)."""
    return _num(g, col).shift(1).fillna(first)


def _fill(text: str, width: int) -> str:
    """``text`` wrapped at ``width``, never inside a hyphenated name (simple-bucket)."""
    return textwrap.fill(text, width, break_on_hyphens=False)


def _empty(fig: Figure, ax, text: str) -> Figure:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9)
    ax.set_axis_off()
    return fig


def _log_label(x: float, _pos=None) -> str:
    """A log axis' major tick as a plain number (1k, 10k, 0.1)."""
    return _kilo(x) if x >= 1000 else f"{x:g}"


def label_log_axis(axis) -> None:
    """Ticks a reader can read on a log axis: at every 1..9 multiple under a decade, at 1,
    2 and 5 of each decade over a few, at each decade otherwise, as plain numbers (20,
    500, 10k, 1M), never a lone ``10^2``. Call it after the axis' limits are set."""
    lo, hi = sorted(axis.get_view_interval())
    decades = math.log10(hi / lo) if lo > 0 and hi > 0 else 0.0
    # under a decade (7 s to 15 s): every 1..9 multiple, or one label would be all
    subs = tuple(map(float, range(1, 10))) if decades <= 1 else \
        (1.0, 2.0, 5.0) if decades <= 3 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    axis.set_major_formatter(FuncFormatter(_log_label))
    axis.set_minor_locator(LogLocator(base=10, subs=np.arange(2, 10), numticks=12))
    axis.set_minor_formatter(NullFormatter())


def _kilo(x: float, _pos=None) -> str:
    """1.5k, 20M, 1B: thousands, millions and billions as a reader says them."""
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:g}{unit}"
    return f"{x:g}"



def legend_handles(names: Sequence[str]) -> list[Line2D]:
    """Legend entries of the index colours (for composite figures in notebooks)."""
    return [Line2D([], [], color=style.index_color(n), marker=style.index_marker(n), label=n)
            for n in names]

