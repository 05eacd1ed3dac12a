"""Cost vs table size (the RFC-29 curve): how files read and tag seconds grow with the
table."""

from __future__ import annotations

from typing import Any

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter

from reports import style
from reports.figures.common import (
    _fill,
    _frame,
    _kilo,
    _line_style,
    _log_label,
    _num,
    _series_entries,
    is_peer_series,
    iter_series,
    label_log_axis,
    measured_or_model,
    nested_legend,
    plot_nested,
    room_for_legend,
)

SCALE_ZERO_FILES = 0.5  # where 0 files read is drawn on the log axis


def scale_points(g: pd.DataFrame) -> pd.DataFrame:
    """Per upsert batch ≥ 1 of one series: table size before the batch, files read
    (counted) and tag seconds (``model_tag_s`` when simulated, measured ``tag_s``)."""
    tag, modelled = measured_or_model(g, "tag_s")
    # before an upsert the table held its records after it less its inserts: no shift over
    # rows, so several runs of one series (a ``sim --sweep``) still give one curve
    before = _num(g, "table_records") - _num(g, "inserts").fillna(0)
    out = pd.DataFrame({"batch": _num(g, "batch"), "table_records": before,
                        "files_read": _num(g, "files_read"), "tag_s": tag,
                        "modelled": modelled}, index=g.index)
    out = out[(out["batch"] >= 1) & (out["table_records"] > 0)]
    return out.sort_values("table_records", kind="stable")


def has_scale(df: pd.DataFrame) -> bool:
    """Whether some series has ≥ 2 upsert batches (≥ 1) of known table size and files
    read: a cost-vs-table-size curve (``scale.png`` is drawn only then)."""
    df = _frame(df)
    return any(scale_points(g)["files_read"].notna().sum() >= 2
               for _label, _name, g in iter_series(df))


def scale_figure(df: pd.DataFrame) -> Figure | None:
    """Cost vs table size (the RFC-29 curve): files read and tag seconds per upsert batch.

    x: records in the table before the batch (log when they span a decade). Left: data
    files read to tag the batch (counted in real and simulated runs; bloom reads every
    candidate file, so it follows the table's file count; bucket indexes read none: 0 is
    drawn on the dotted floor line). Right: tag seconds, measured
    (``tag_s``) for real series, modelled (``model_tag_s``) for simulated ones. Upsert
    batches ≥ 1 only (the initial load tags nothing). None without such a curve.
    """
    df = _frame(df)
    if not has_scale(df):
        return None
    series = [(label, name, g, scale_points(g)) for label, name, g in iter_series(df)]
    # a peer's rows have neither files read nor tag seconds: nothing to draw
    series = [s for s in series if len(s[3]) and not is_peer_series(s[2])]
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.1)
        ax_f, ax_t = axes[0]
        zeros, never, any_model, any_real = [], [], False, False
        file_lines: list[tuple[Any, Any, dict[str, Any]]] = []
        for label, name, g, pts in series:
            kw = {**_line_style(df, name, g), "label": label}
            files = pts["files_read"]
            if files.fillna(0).le(0).all():
                never.append(label)  # one note, not a stack of lines on the floor
            else:
                file_lines.append((pts["table_records"],
                                   files.where(files > 0, SCALE_ZERO_FILES),
                                   {**kw, "gid": f"files_read:{label}"}))
                if (files.fillna(0) <= 0).any():
                    zeros.append(label)
            tag = pts["tag_s"].where(pts["tag_s"] > 0)
            modelled = bool(pts["modelled"].iloc[0])
            any_model |= modelled
            any_real |= not modelled
            if tag.notna().any():
                what = "modelled" if modelled else "measured"
                ax_t.plot(pts["table_records"], tag, **{**kw, "label": f"{label}: {what}"},
                          gid=f"tag_s:{label}")
        nested = plot_nested(ax_f, file_lines)
        sizes = pd.concat([p["table_records"] for *_x, p in series])
        wide = bool(len(sizes)) and float(sizes.max()) >= 10 * float(sizes.min())
        top = max([SCALE_ZERO_FILES * 20]
                  + [float(p["files_read"].max()) * 2 for *_x, p in series
                     if p["files_read"].notna().any()])
        ax_f.set_ylim(SCALE_ZERO_FILES * 0.3, top)
        for ax in (ax_f, ax_t):
            ax.set_yscale("log")
            label_log_axis(ax.yaxis)
        # a count of files has no ticks under 1 (0 is the dotted line, labelled)
        ax_f.yaxis.set_major_formatter(FuncFormatter(
            lambda v, _pos=None: _log_label(v) if v >= 1 else ""))
        for ax in (ax_f, ax_t):
            # a log x only when the sizes span a decade or more (a sweep); a comparison's
            # few batches (100k to 180k) get a linear axis with a label at every tick
            if wide:
                ax.set_xscale("log")
                label_log_axis(ax.xaxis)
            else:
                ax.xaxis.set_major_formatter(_kilo)
            ax.set_xlabel("table size before the batch (records" + (", log)" if wide else ")"))
        ax_f.axhline(SCALE_ZERO_FILES, color="grey", lw=0.6, ls=":")
        if zeros:
            ax_f.text(0.99, SCALE_ZERO_FILES * 0.9, "0 files read (drawn on the dotted line)",
                      fontsize=6.5, va="top", ha="right", color="grey",
                      transform=ax_f.get_yaxis_transform())
        ax_f.set_ylabel("files read to tag (files)")
        ax_f.set_title("files read per upsert batch (counted)", fontsize=9)
        kinds = " / ".join(k for k, on in (("measured (real)", any_real),
                                           ("modelled (sim)", any_model)) if on)
        ax_t.set_ylabel("tag seconds per batch (s)")
        ax_t.set_title(f"tag seconds: {kinds}", fontsize=9)
        if not ax_t.lines:
            ax_t.text(0.5, 0.5, "no tag seconds in these runs", transform=ax_t.transAxes,
                      ha="center", fontsize=8, color="grey")
        handles, labels = _series_entries([label for label, *_x in series], ax_f, ax_t)
        if never:  # an entry without a mark: inside the panel the list covered lines
            handles.append(Line2D([], [], ls="none"))
            labels.append(_fill("0 files read in every batch (not on the left): "
                                        + ", ".join(never), 40))
        room_for_legend(fig, nested_legend(fig, handles, labels, nested=nested,
                                           loc="outside lower center",
                                           ncols=min(4, len(series)), fontsize=7))
        fig.suptitle("cost vs table size (upsert batches ≥ 1"
                     + ("; dashed = simulated" if any_model else "") + ")", fontsize=9)
    return fig

