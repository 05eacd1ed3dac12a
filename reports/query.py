"""Queries over each index's table (``indexbench query``): what reading it costs.

An index is built to tag upserts; ``indexbench query`` asks what it gives a reader of the
same table. Its rows (``operation == "query"``) sit beside the upsert rows in the metrics
file, one per (index, table, query, plan):

* ``lookup`` (plan ``index``, the index's own lookup path): data files read per key
  looked up (``files_read_per_key``), of which ``fp_file_reads`` held none of the keys
  looked up in them (bloom's false positives), and seconds per key batch
  (``latency_p50_s``/``latency_p99_s``);
* ``groupby`` and ``join`` (plan ``bucket-aware``: bucket-aligned tasks, or ``default``:
  Spark's own plan): shuffle write bytes (``shuffle_bytes``), whether the executed plan
  has an Exchange, seconds (``total_s``).

The figure and the page table draw these columns as the rows hold them (medians over the
rows of a series, dots for single rows when there are several: runs or tables), never a
figure derived from a model. The only arithmetic is scaling ``fp_file_reads`` by the same
row's ``keys`` so that it stacks on ``files_read_per_key``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from reports import style
from reports.asv_charts import BYTE_UNITS, TIME_UNITS
from reports.figures import _frame, _num, is_mor_series, is_sim_series

QUERIES = ("lookup", "groupby", "join")
# Plans in drawing order: the index's lookup path and bucket-aware solid, Spark's default
# plan hatched (an unknown plan gets dots, so it is never mistaken for either).
PLAN_ORDER = ("index", "bucket-aware", "default")
PLAN_HATCH = {"index": None, "bucket-aware": None, "default": "///"}
OTHER_HATCH = ".."
FP_HATCH = "xxx"  # panel (a): files read that held none of the keys looked up in them
# Columns of the page's Queries table, in this order (those the rows have).
TABLE_COLUMNS = ("keys", "keys_found", "files_read_per_key", "fp_file_reads",
                 "latency_p50_s", "latency_p99_s", "shuffle_bytes", "has_exchange",
                 "result_rows", "total_s")


def _text(s: pd.Series) -> pd.Series:
    """A string column as plain str ("" when empty), whatever dtype the file gave it."""
    return s.astype("string").fillna("").str.strip().astype(str)


def query_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The query rows (``operation == "query"``) with ``query`` and ``plan`` as text."""
    if "operation" not in df.columns:
        return df.iloc[0:0]
    q = df[df["operation"].astype("string").fillna("") == "query"].copy()
    for c in ("query", "plan"):
        q[c] = _text(q[c]) if c in q.columns else ""
    return q


def has_queries(df: pd.DataFrame) -> bool:
    """Whether any row is a query (``query.png`` and the Queries table exist only then)."""
    return "operation" in df.columns and bool(
        (df["operation"].astype("string").fillna("") == "query").any())


def _look(g: pd.DataFrame) -> style.SeriesLook:
    """A series' look (``reports.style``): its index's colour, hollow on merge-on-read."""
    return style.series_look(str(g["index"].iloc[0]), mor=is_mor_series(g),
                             sim=is_sim_series(g))


def _plan_key(plan: str) -> int:
    return PLAN_ORDER.index(plan) if plan in PLAN_ORDER else len(PLAN_ORDER)


def _groups(q: pd.DataFrame) -> list[tuple[str, str, str, pd.DataFrame]]:
    """(query, series, plan, rows): queries in QUERIES order, series first-seen, plans in
    PLAN_ORDER. Several rows of one group are several runs or tables of the series."""
    series = list(pd.unique(q["series"]))
    queries = [x for x in QUERIES if (q["query"] == x).any()] + sorted(
        set(q["query"]) - set(QUERIES))
    out = []
    for query in queries:
        qq = q[q["query"] == query]
        for s in series:
            qs = qq[qq["series"] == s]
            for plan in sorted(pd.unique(qs["plan"]), key=lambda p: (_plan_key(p), p)):
                out.append((query, str(s), str(plan), qs[qs["plan"] == plan]))
    return out


def _unit(values: Sequence[float] | np.ndarray,
          units: Sequence[tuple[float, str]]) -> tuple[float, str]:
    """The largest unit the peak value reaches (bytes: KiB/MiB/GiB, seconds: s/ms/µs), as
    ``reports.asv_charts`` picks them; the base unit when there is nothing to go by."""
    v = np.abs(np.asarray(values, dtype=float))
    peak = float(v[np.isfinite(v)].max(initial=0.0))
    base = next(u for u in units if u[0] == 1.0)
    if peak <= 0:
        return base
    return next((u for u in units if peak >= u[0]), units[-1])


def _median(vals: pd.Series) -> float:
    """The median of the values present; NaN (without numpy's warning) when none is."""
    vals = vals.dropna()
    return float(vals.median()) if len(vals) else float("nan")


def _dots(ax: Axes, x: float, vals: pd.Series) -> None:
    """Each row's value when a bar is the median of several (runs, tables)."""
    vals = vals.dropna()
    if len(vals) > 1:
        ax.scatter([x] * len(vals), vals, color="black", s=6, zorder=3)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=8,
            color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _files_per_key(ax: Axes, lookups: pd.DataFrame) -> None:
    """(a) Data files read per key looked up, per series; hatched: the part that held none
    of the keys looked up in it (``fp_file_reads``)."""
    series = list(pd.unique(lookups["series"]))
    drawn = 0
    for i, s in enumerate(series):
        g = lookups[lookups["series"] == s]
        per_key = _num(g, "files_read_per_key")
        if not per_key.notna().any():
            continue
        bar = _look(g).bar()
        total = _median(per_key)
        fp_reads = _num(g, "fp_file_reads")
        fp = _median(fp_reads / _num(g, "keys").replace(0, np.nan))
        fp = min(fp, total) if math.isfinite(fp) else 0.0
        ax.bar(i, total - fp, **bar, gid=f"held:{s}")
        if fp > 0:
            ax.bar(i, fp, bottom=total - fp, **{**bar, "hatch": FP_HATCH}, alpha=0.45,
                   gid=f"fp_file_reads:{s}")
        _dots(ax, i, per_key)
        note = f"{total:.3g}"
        if fp_reads.notna().any():  # short: a neighbour's label must not run into it
            note += f"\n{_median(fp_reads):,.0f} FP"
        ax.text(i, total, note, ha="center", va="bottom", fontsize=6)
        drawn += 1
    if not drawn:
        _empty(ax, "no files_read_per_key in the lookup rows")
        return
    ax.set_xticks(range(len(series)), [str(s) for s in series], fontsize=7, rotation=30,
                  ha="right")
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.4)  # room for the notes and legend
    ax.set_ylabel("data files read per key (files)")
    ax.set_title("(a) lookup: files read per key", fontsize=9)
    ax.legend(handles=[
        Patch(facecolor="white", edgecolor="black", label="held a key looked up"),
        Patch(facecolor="white", edgecolor="black", hatch=FP_HATCH,
              label="held none: FP (fp_file_reads)")], fontsize=6.5, loc="upper right")


def _latency(ax: Axes, lookups: pd.DataFrame) -> None:
    """(b) p50 (solid) and p99 (light) seconds per key batch, per series."""
    series = list(pd.unique(lookups["series"]))
    cols = [("latency_p50_s", "p50", 1.0), ("latency_p99_s", "p99", 0.4)]
    all_vals = np.concatenate([_num(lookups, c).to_numpy() for c, *_ in cols])
    if not np.isfinite(all_vals).any():
        _empty(ax, "no latency_p50_s / latency_p99_s in the lookup rows")
        return
    factor, unit = _unit(all_vals, TIME_UNITS)
    for i, s in enumerate(series):
        g = lookups[lookups["series"] == s]
        bar = _look(g).bar()
        for j, (col, _name, alpha) in enumerate(cols):
            vals = _num(g, col) / factor
            if not vals.notna().any():
                continue
            x = i + (j - 0.5) * 0.4
            ax.bar(x, _median(vals), width=0.38, **bar, alpha=alpha, gid=f"{col}:{s}")
            _dots(ax, x, vals)
    ax.set_xticks(range(len(series)), [str(s) for s in series], fontsize=7, rotation=30,
                  ha="right")
    # headroom above the tallest bar: the legend sits there, never on a bar
    ax.set_ylim(bottom=0, top=float(np.nanmax(all_vals)) / factor * 1.35)
    ax.set_ylabel(f"latency per key batch ({unit})")
    ax.set_title("(b) lookup: seconds per key batch", fontsize=9)
    ax.legend(handles=[Patch(facecolor="grey", edgecolor="black", label="p50"),
                       Patch(facecolor="grey", alpha=0.4, edgecolor="black", label="p99")],
              fontsize=6.5, loc="upper center", ncols=2)


def _per_query(ax: Axes, groups: list[tuple[str, str, str, pd.DataFrame]], col: str,
               ylabel: str, units: Sequence[tuple[float, str]],
               no_exchange: bool = False) -> None:
    """Bars of ``col`` per (series, plan), clustered by query (ticks name the query)."""
    vals_all = np.concatenate([_num(g, col).to_numpy() for *_x, g in groups]) \
        if groups else np.array([])
    if not np.isfinite(vals_all).any():
        _empty(ax, f"no {col} in these query rows")
        return
    factor, unit = _unit(vals_all, units)
    x, centers, last = 0.0, {}, None
    for query, s, plan, g in groups:
        if last is not None and query != last:
            x += 0.8  # a gap between the queries' clusters
        last = query
        vals = _num(g, col) / factor
        centers.setdefault(query, []).append(x)
        if vals.notna().any():
            med = _median(vals)
            ax.bar(x, med, **{**_look(g).bar(), "hatch": PLAN_HATCH.get(plan, OTHER_HATCH)},
                   gid=f"{col}:{s}:{query}:{plan}")
            _dots(ax, x, vals)
            exch = _num(g, "has_exchange")
            if no_exchange and exch.notna().any() and float(exch.max()) == 0:
                ax.annotate("no Exchange", (x, med), xytext=(0, 4),
                            textcoords="offset points", rotation=90, ha="center",
                            va="bottom", fontsize=6)
        x += 1.0
    ax.set_xticks([float(np.mean(v)) for v in centers.values()], list(centers), fontsize=8)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(f"{ylabel} ({unit})")


def query_figure(df: pd.DataFrame) -> Figure | None:
    """What a reader of each index's table pays (``indexbench query`` rows).

    Top: lookups, (a) data files read per key looked up (files that held none of the keys
    looked up in them hatched) and (b) p50/p99 seconds per key batch. Bottom: (c) shuffle
    write bytes and (d) seconds of each query per index and plan, bucket-aware solid,
    Spark's default plan hatched. Bars are the median of a series' rows (runs, tables),
    dots the rows when there are several (and the title says so only then). None when
    there are no query rows.
    """
    df = _frame(df)
    if not has_queries(df):
        return None
    q = query_rows(df)
    lookups = q[q["query"] == "lookup"]
    others = q[q["query"] != "lookup"]
    with style.paper():
        fig, axes = style.figure(2, 2, height=2.7)
        (ax_f, ax_l), (ax_s, ax_t) = axes
        if len(lookups):
            _files_per_key(ax_f, lookups)
            _latency(ax_l, lookups)
        else:
            for ax in (ax_f, ax_l):
                _empty(ax, "no lookup queries")
        if len(others):
            _per_query(ax_s, _groups(others), "shuffle_bytes", "shuffle write",
                       BYTE_UNITS, no_exchange=True)
        else:
            _empty(ax_s, "no group-by or join queries")
        ax_s.set_title("(c) shuffle bytes per query", fontsize=9)
        _per_query(ax_t, _groups(q), "total_s", "time per query", TIME_UNITS)
        ax_t.set_title("(d) seconds per query", fontsize=9)
        handles = [Patch(**{**_look(g).bar(), "hatch": None}, label=str(s))
                   for s, g in q.groupby("series", sort=False)]
        plans = set(q["plan"])
        solid = [name for p, name in (("index", "index lookup path"),
                                      ("bucket-aware", "bucket-aware plan")) if p in plans]
        if solid:
            handles.append(Patch(facecolor="white", edgecolor="black",
                                 label=" / ".join(solid)))
        if "default" in plans:
            handles.append(Patch(facecolor="white", edgecolor="black",
                                 hatch=PLAN_HATCH["default"], label="Spark default plan"))
        handles += [Patch(facecolor="white", edgecolor="black", hatch=OTHER_HATCH,
                          label=f"plan {p}" if p else "plan not given")
                    for p in sorted(plans - set(PLAN_ORDER))]
        fig.legend(handles=handles, loc="outside lower center",
                   ncols=min(4, len(handles)), fontsize=7)
        several = bool(q.groupby(["series", "query", "plan"], dropna=False).size().gt(1).any())
        fig.suptitle("queries over each index's table" + (
            " (bars: median of runs and tables; dots: each of them)" if several else ""),
            fontsize=9)
    return fig


def query_table(df: pd.DataFrame) -> pd.DataFrame:
    """The page's Queries table: one row per series × query × plan, the median of its
    rows for each of ``TABLE_COLUMNS`` the query rows have (empty when there are none)."""
    df = _frame(df)
    q = query_rows(df)
    cols = [c for c in TABLE_COLUMNS if c in q.columns and _num(q, c).notna().any()]
    rows, index = [], []
    for query, s, plan, g in _groups(q):
        index.append(s)
        rows.append({"query": query, "plan": plan, "rows": float(len(g)),
                     **{c: _median(_num(g, c)) for c in cols}})
    return pd.DataFrame(rows, index=pd.Index(index, name="series"),
                        columns=["query", "plan", "rows", *cols])
