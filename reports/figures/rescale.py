"""The cost of rescales and resizes per index and mode. The modes, and so their
hatches, come from the indexes' service declarations, so the report names none."""

from __future__ import annotations

import math

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

import indexes
from indexes.roles import RescalePanels, services
from reports import style
from reports.figures.common import (
    MIB,
    _frame,
    _index_of,
    is_sim_series,
    measured_or_model,
    series_look,
)

RESCALE_METRICS = [("total_s", "time (s)", 1.0), ("bytes_read", "bytes read (MiB)", MIB),
                   ("bytes_written", "bytes written (MiB)", MIB),
                   ("shuffle_bytes", "shuffle bytes (MiB)", MIB),
                   ("records_rewritten", "records rewritten (records)", 1.0),
                   ("files_written", "files written (files)", 1.0)]
RESCALE = "rescale"  # the operation of a rescale's (or resize's, split's) metrics rows
# a mode's hatch, in the order the registry declares the modes; a mode none declares: ".."
MODE_HATCHES: tuple[str | None, ...] = (None, "///", "xx", "..", "\\\\", "++", "oo", "--")
UNKNOWN_HATCH = ".."


def rescale_modes() -> list[str]:
    """The modes a rescale row can carry, as the registered indexes declare them: in
    registry order, for each service whose rows are rescales, the choices of its ``mode``
    option, else the service's own name (a resize, a split) unless it is named after the
    operation (a plain "rescale" names no mode of its own). Each mode once."""
    modes: list[str] = []
    for name in indexes.names():
        for service in services(indexes.index_class(name)):
            if service.operation != RESCALE:
                continue
            choices = [c for o in service.options if o.dest == "mode" for c in o.choices or ()]
            own = [service.name] if service.name != service.operation else []
            modes += [m for m in choices or own if m not in modes]
    return modes


def rescale_panels() -> list[tuple[str, str, float]]:
    """The rescale figure's panels: :data:`RESCALE_METRICS`, then the cost columns the
    registered indexes declare for their rescale rows (:class:`RescalePanels`)."""
    own = {c for c, *_ in RESCALE_METRICS}
    return [*RESCALE_METRICS, *(p for p in indexes.declared_panels(RescalePanels, "RESCALE_PANELS")
                                if p[0] not in own)]


def mode_hatch(mode: str, modes: list[str]) -> str | None:
    """The hatch of ``mode``: :data:`MODE_HATCHES` in the order of ``modes``
    (:func:`rescale_modes`), :data:`UNKNOWN_HATCH` for a mode not among them."""
    i = modes.index(mode) if mode in modes else len(MODE_HATCHES)
    return MODE_HATCHES[i] if i < len(MODE_HATCHES) else UNKNOWN_HATCH


def has_rescale(df: pd.DataFrame) -> bool:
    """Whether any row is a rescale (the rescale figure is drawn only then)."""
    return "operation" in df.columns and (df["operation"].astype(str) == RESCALE).any()


def rescale_figure(df: pd.DataFrame) -> Figure | None:
    """Cost of each rescale, resize or split per series and mode (a bar per pair, hatched
    by mode: :func:`mode_hatch`), in every cost its rows carry (time, bytes read and
    written, shuffle, records and files rewritten, the bytes dual writes cost); None when
    there are no rescale rows."""
    df = _frame(df)
    if not has_rescale(df):
        return None
    rs = df[df["operation"] == RESCALE].copy()
    mode = rs["mode"].astype(str) if "mode" in rs.columns else pd.Series(RESCALE, rs.index)
    rs["_mode"] = mode.fillna(RESCALE)
    modes = rescale_modes()
    metrics = [(c, lab, s) for c, lab, s in rescale_panels()
               if any(measured_or_model(g, c)[0].notna().any()
                      for _k, g in rs.groupby(["series", "_mode"], sort=False))]
    if not metrics:
        metrics = [("total_s", "time (s)", 1.0)]
    groups = list(rs.groupby(["series", "_mode"], sort=False))
    ncols = min(3, len(metrics))
    nrows = math.ceil(len(metrics) / ncols)
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.5)
        flat = axes.ravel()
        for ax, (col, ylab, scale) in zip(flat, metrics, strict=False):
            for i, ((_label, mode_), g) in enumerate(groups):
                vals = measured_or_model(g, col)[0] / scale
                ax.bar(i, vals.median(), **{**series_look(df, _index_of(g), g).bar(),
                                            "hatch": mode_hatch(mode_, modes)})
                if len(vals) > 1:
                    ax.scatter([i] * len(vals), vals, color="black", s=6, zorder=3)
            ax.set_xticks(range(len(groups)),
                          [f"{m} (sim, modelled)" if is_sim_series(g) else m
                           for (_lab, m), g in groups], fontsize=7, rotation=30, ha="right")
            if scale == 1.0 and col != "total_s":  # a count: whole ticks
                ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylabel(ylab)
            ax.set_title(ylab.split(" (")[0])
        for ax in flat[len(metrics):]:
            ax.set_axis_off()
        seen = {lab: g for (lab, _m), g in groups}
        fig.legend(handles=[Patch(**{**series_look(df, _index_of(g), g).bar(),
                                     "hatch": None}, label=lab) for lab, g in seen.items()],
                   loc="outside lower center", ncols=min(4, len(seen)), fontsize=7)
        several = any(len(g) > 1 for _k, g in groups)
        fig.suptitle("rescale and resize cost per index and mode"
                     + (" (bars: median; dots: each run)" if several else ""), fontsize=9)
    return fig

