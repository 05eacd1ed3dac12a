"""Files and bytes read to tag each batch as the table grows: what an index reads to
find its records' file groups."""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from reports import style
from reports.figures.common import (
    MIB,
    _before,
    _fill,
    _frame,
    _kilo,
    _line_style,
    _num,
    _series_entries,
    is_peer_series,
    iter_series,
    measured_or_model,
    nested_legend,
    plot_nested,
    room_for_legend,
)


def _files_read_legend(fig, entries: tuple[list[Any], list[str]], never_read: list[str],
                       nested: bool) -> None:
    """One legend under the panels: the series drawn, then (an entry without a mark,
    gid ``never-read``) those that read nothing in any batch; inside a panel a long
    list covered the lines."""
    handles, labels = entries
    if never_read:
        handles = [*handles, Line2D([], [], ls="none")]
        labels = [*labels, _fill("0 in every batch: " + ", ".join(never_read), 40)]
    if not handles:
        return
    legend = nested_legend(fig, handles, labels, nested=nested, loc="outside lower center",
                           ncols=min(4, len(handles)), fontsize=7)
    room_for_legend(fig, legend)
    for text in legend.get_texts():
        if text.get_text().startswith("0 in every batch"):
            text.set_gid("never-read")


def files_read_figure(df: pd.DataFrame) -> Figure:
    """Data files and bytes read to tag each batch, as the table grows, per index."""
    df = _frame(df)
    with style.paper():
        fig, axes = style.figure(1, 2, height=2.9)
        ax_f, ax_b = axes[0]
        any_model, never_read = False, []
        file_lines: list[tuple[Any, Any, dict[str, Any]]] = []
        byte_lines: list[tuple[Any, Any, dict[str, Any]]] = []
        for label, name, g in iter_series(df):
            if is_peer_series(g):  # no index: nothing read to tag (empty, not 0)
                continue
            x = _before(g, "table_records")
            files = _num(g, "files_read").fillna(0)
            read, modelled = measured_or_model(g, "bytes_read")
            # upsert batches only: the initial load tags nothing (table size 0, no point)
            upsert = (g["batch"] >= 1).to_numpy()
            if not upsert.any():
                continue
            if not files[upsert].any() and not read.fillna(0)[upsert].any():
                never_read.append(label)  # one note, not lines stacked on each other at 0
                continue
            kw = {**_line_style(df, name, g), "label": label}
            file_lines.append((x[upsert], files[upsert], kw))
            any_model |= modelled
            byte_lines.append((x[upsert], read.fillna(0)[upsert] / MIB,
                               {**kw, "label": f"{label}: modelled" if modelled else label}))
        nested = plot_nested(ax_f, file_lines)
        nested |= plot_nested(ax_b, byte_lines)
        for ax in (ax_f, ax_b):
            ax.set_xlabel("table size before the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.yaxis.set_major_formatter(FuncFormatter(_kilo))  # 374k, not 374000
            # headroom: the legend sits above the lines, not on them
            ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.25 if ax.lines else None)
        ax_f.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_f.set_ylabel("data files read to tag (files)")
        ax_b.set_ylabel("bytes read to tag (MiB)")
        ax_f.set_title("files read per batch (counted)")
        ax_b.set_title("bytes read per batch" + (" (sim: modelled)" if any_model else ""))
        drawn = [str(kw["label"]) for *_x, kw in file_lines]
        _files_read_legend(fig, _series_entries(drawn, ax_f, ax_b), never_read, nested)
    return fig

