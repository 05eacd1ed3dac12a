"""Bytes the index holds in memory and on disk as the table grows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter

from reports import style
from reports.data import is_sim
from reports.figures.common import (
    MIB,
    _fill,
    _frame,
    _kilo,
    _line_style,
    _num,
    is_peer_series,
    iter_series,
    measured_or_model,
    nested_legend,
    plot_nested,
)


def server_held(g: pd.DataFrame) -> list[str]:
    """The ``*_server_bytes`` columns a series filled: its index lives in a server of its
    own (counted there), so 0 bytes in the table's memory and disk is not "no index"."""
    return [c for c in g.columns if str(c).endswith("_server_bytes")
            and _num(g, c).fillna(0).gt(0).any()]


def _bytes_notes(zero: list[str], served: list[str]) -> list[str]:
    """The series not drawn, as legend lines: held in a server, or 0 B."""
    return [_fill(p, 60) for p in
            ([f"in its server, not the table: {', '.join(served)}"] if served else [])
            + ([f"0 B: {', '.join(zero)}"] if zero else [])]


def _bytes_legend(ax, below, nested: bool, notes: list[str]) -> None:
    """The panel's series, then its notes (entries without a mark), in the empty axes
    ``below`` it: inside the panel they covered the lines."""
    handles, labels = ax.get_legend_handles_labels()
    handles += [Line2D([], [], ls="none") for _ in notes]
    below.set_axis_off()
    if handles:
        nested_legend(below, handles, labels + notes, nested=nested, fontsize=6.5,
                      loc="upper center", handlelength=1.5)


def index_bytes_figure(df: pd.DataFrame) -> Figure:
    """Bytes the index holds in memory and on disk vs keys in the table, per index.
    An index with none in either but bytes in a server of its own (``*_server_bytes``)
    is named "in its server", not drawn as 0 B; lines that coincide are drawn nested."""
    df = _frame(df)
    with style.paper():
        fig, axes = style.figure(2, 2, height=2.2, gridspec_kw={"height_ratios": [3, 2]})
        zero: dict[str, list[str]] = {"index_mem_bytes": [], "index_disk_bytes": []}
        for ax, below, col in zip(axes[0], axes[1], zero, strict=True):
            lines: list[tuple[Any, Any, dict[str, Any]]] = []
            served: list[str] = []
            for label, name, g in iter_series(df):
                keys = _num(g, "table_records")
                # memory is counted in both; disk bytes of a simulated run are modelled
                y, modelled = measured_or_model(g, col) if col == "index_disk_bytes" \
                    else (_num(g, col), False)
                if is_peer_series(g) and y.isna().all():  # not seen: empty, not 0
                    continue
                ok = (y > 0) & (keys > 0)
                if not ok.any():
                    (served if server_held(g) else zero[col]).append(label)
                    continue
                lines.append((keys[ok], y[ok] / MIB, {
                    **_line_style(df, name, g),
                    "label": f"{label}{': modelled' if modelled else ''} "
                             f"({y[ok].iloc[-1] / keys[ok].iloc[-1]:.1f} B/key)"}))
            nested = plot_nested(ax, lines)
            ax.set_xlabel("keys in the table (records)")
            if ax.lines:
                ys = np.concatenate([ln.get_ydata() for ln in ax.lines])
                if ys.max() / ys.min() > 50:  # indexes differ by orders of magnitude
                    ax.set_yscale("log")
                    ax.yaxis.set_minor_formatter(NullFormatter())
                    ax.yaxis.set_major_formatter(lambda v, _p: f"{v:g}")
                else:
                    ax.set_ylim(bottom=0)
                ax.xaxis.set_major_formatter(_kilo)  # the keys' own range, not from 0
            else:
                ax.text(0.5, 0.5, "no index holds bytes here", transform=ax.transAxes,
                        ha="center", fontsize=8, color="grey")
            _bytes_legend(ax, below, nested, _bytes_notes(zero[col], served))
        axes[0][0].set_ylabel("index memory (MiB)")
        axes[0][0].set_title("memory (caches)")
        axes[0][1].set_ylabel("index on disk (MiB)")
        axes[0][1].set_title("disk (bloom footers, RLI)"
                             + ("; sim: modelled" if is_sim(df).any() else ""))
    return fig

