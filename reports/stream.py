"""The stream timeline (`indexbench stream`, docs/streaming.md): latency and cache bytes
over micro-batches, with the index's evictions and bootstraps marked.

A module of its own: only stream runs have these columns, and the figure reads any
index's: the contract's ``index_mem_bytes``, and the cache bytes and events an index
declares (:class:`indexes.roles.StreamPanels`; dynamic-rli's assigners, evictions and
bootstraps).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

import indexes
from indexes.roles import StreamPanels
from reports import style
from reports.figures import is_mor_series

MIB = 1024 * 1024
# cache bytes drawn when present: (column, label suffix, line style); indexes add theirs
CACHE_COLUMNS = (("index_mem_bytes", "index memory", "-"),)
_ARROWS = {"v": "▼", "^": "▲"}


def cache_columns() -> list[tuple[str, str, str]]:
    """Cache bytes drawn when present: the contract's, then the indexes' own."""
    return [*CACHE_COLUMNS, *indexes.declared_panels(StreamPanels, "STREAM_CACHE")]


def event_columns() -> list[tuple[str, str, str]]:
    """Events marked when present and > 0: (column, label, marker), as indexes declare."""
    return indexes.declared_panels(StreamPanels, "STREAM_EVENTS")


def _markers_title(events: list[tuple[str, str, str]]) -> str:
    """"index cache bytes; markers: eviction ▼, bootstrap ▲, …" from the events declared."""
    if not events:
        return "index cache bytes"
    marks = ", ".join(f"{what} {_ARROWS.get(m, m)}" for _c, what, m in events)
    return f"index cache bytes; markers: {marks}"


def stream_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The upsert rows of stream runs (those with a ``stream_batch_id``)."""
    if "stream_batch_id" not in df.columns:
        return df.iloc[0:0]
    rows = df[df["stream_batch_id"].notna()]
    if "operation" in rows.columns:
        rows = rows[rows["operation"].astype(str) == "upsert"]
    return rows


def has_stream(df: pd.DataFrame) -> bool:
    return len(stream_rows(df)) > 0


def _label(g: pd.DataFrame) -> str:
    if "series" in g.columns:
        return str(g["series"].iloc[0])
    return str(g["index"].iloc[0])


def _look(g: pd.DataFrame) -> style.SeriesLook:
    """A stream series' look: its index's colour and marker, hollow on merge-on-read
    (the line style says which measure: processing or freshness, which cache)."""
    return style.series_look(str(g["index"].iloc[0]), mor=is_mor_series(g))


def stream_timeline_figure(df: pd.DataFrame) -> Figure | None:
    """(a) processing and freshness seconds per micro-batch; (b) cache bytes per
    micro-batch, evictions and bootstraps marked. None: no stream rows."""
    rows = stream_rows(df)
    if rows.empty:
        return None
    key = "series" if "series" in rows.columns else "index"
    with style.paper():
        fig, axes = style.figure(2, 1, height=2.2, sharex=True)
        lat, mem = axes[0][0], axes[1][0]
        drawn_mem = False
        caches, events = cache_columns(), event_columns()
        for _, g in rows.groupby(key, sort=False):
            g = g.sort_values("stream_batch_id")
            x = g["stream_batch_id"].astype(float)
            name, look = _label(g), _look(g)
            color = look.color
            kw = {**look.line(), "ms": 4}
            for col, ls, what in (("processing_s", "-", "processing"),
                                  ("freshness_s", "--", "freshness")):
                if col in g.columns and g[col].notna().any():
                    lat.plot(x, g[col].astype(float), **{**kw, "ls": ls},
                             label=f"{name}: {what}")
            top = 0.0
            for col, what, ls in caches:
                if col in g.columns and g[col].notna().any() and (g[col] > 0).any():
                    y = g[col].astype(float) / MIB
                    mem.plot(x, y, **{**kw, "ls": ls}, label=f"{name}: {what}")
                    top = max(top, float(y.max()))
                    drawn_mem = True
            for col, what, marker in events:
                if col in g.columns:
                    hit = g[pd.to_numeric(g[col], errors="coerce").fillna(0) > 0]
                    if len(hit):
                        mem.scatter(hit["stream_batch_id"].astype(float), [top * 1.05] * len(hit),
                                    marker=marker, color=color, edgecolor="black", zorder=3,
                                    label=f"{name}: {what}")
                        drawn_mem = True
        mem.xaxis.set_major_locator(MaxNLocator(integer=True))  # batch ids: whole
        lat.set_ylabel("seconds per micro-batch (s)")
        lat.set_title("latency per micro-batch (freshness: landed → commit visible)")
        lat.set_ylim(bottom=0)
        lat.legend(fontsize=7)
        mem.set_ylabel("cache (MiB)")
        mem.set_xlabel("micro-batch (Spark batch id)")
        mem.set_title(_markers_title(events))
        if drawn_mem:
            mem.set_ylim(bottom=0)
            mem.legend(fontsize=7)
        else:
            mem.text(0.5, 0.5, "the index holds no cache", transform=mem.transAxes,
                     ha="center", fontsize=8, color="grey")
    return fig


def degradation_rate(seconds: list[float] | pd.Series) -> float:
    """LST-Bench's degradation rate of per-batch measures M₁..Mₙ:
    Σᵢ₌₂..ₙ (Mᵢ − Mᵢ₋₁) / Mᵢ₋₁ ÷ (n − 1); 0 when latency holds, 0.05 = 5% worse per batch
    on average."""
    m = [float(x) for x in seconds]
    if len(m) < 2:
        raise ValueError("the degradation rate needs at least two batches")
    return sum((b - a) / a for a, b in zip(m, m[1:], strict=False)) / (len(m) - 1)


def trend_per_batch(seconds: list[float] | pd.Series) -> float:
    """The least-squares slope of per-batch seconds over the batch number, over their
    median: the drift per batch without the noise the degradation rate adds (the mean of
    ratios of noisy neighbours is above 0 even when nothing drifts)."""
    y = np.asarray([float(x) for x in seconds])
    if len(y) < 2:
        raise ValueError("a trend needs at least two batches")
    slope = np.polyfit(np.arange(len(y), dtype=float), y, 1)[0]
    return float(slope / np.median(y))
