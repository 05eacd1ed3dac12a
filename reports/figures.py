"""Figures from metrics DataFrames (the contract of docs/metrics.md): one function per question.

Every function takes the DataFrame ``indexbench.api.run/compare`` returns (or
``reports.load(dirs).df``, or ``indexbench.sim.driver.simulate_compare``'s) and returns a
matplotlib Figure, so notebooks, the report page and papers draw the same pictures.
Each series is drawn in its look (``reports.style.series_look``: the index's colour and
marker, the run's line style, hollow on merge-on-read), so no two series of a figure
share both colour and style; lines that lie on each other are drawn nested
(:func:`plot_nested`), so each shows. Any index name and any extra column is accepted.

Simulated series (``run_mode == "sim"``) are labelled ``<index> (sim)`` and drawn dashed
in the index's colour. Their byte and second figures are models
(``model_<column>``): a figure of measured seconds or bytes draws them from the
``model_*`` column and says "modelled" in its legend or title, never as measured.

Peer series (``run_mode == "peer"``, e.g. ``delta-merge``: the same batches through
delta-rs MERGE) have measured seconds and no index counters: they are drawn wherever
seconds per batch are (latency), and left out of figures of counters they leave empty
(files read, cost vs table size) rather than drawn as 0. A peer with buckets and index
files of its own (``paimon-fixed``, ``paimon-dynamic``) fills those columns and is drawn
in the bucket and index-bytes figures like an index.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from metrics.contract import series_of
from reports import style
from reports.data import SIM_SUFFIX, default_index_params, is_peer, is_sim, normalise

MIB = 1024 * 1024
FP_UPPER_BOUND_Z = 3.0  # "rule of three": 95% upper bound on a rate after 0 of n events


# ---- helpers ----------------------------------------------------------------------------
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


# ---- false positives --------------------------------------------------------------------
def is_bloom(params: Mapping[str, Any] | None) -> bool:
    """An index whose parameters size a Hudi bloom filter."""
    return bool(params) and "fpp" in params and "num_entries" in params


def bloom_filter_for(params: Mapping[str, Any]):
    """An empty filter sized exactly as the run's index built them (m and k per row)."""
    from indexes.bloom_filter import (
        DEFAULT_FPP,
        DEFAULT_MAX_ENTRIES,
        DEFAULT_NUM_ENTRIES,
        DYNAMIC_V0,
        HoodieBloomFilter,
    )

    # a scaled run (indexbench.scale) built its filters with the effective sizes
    return HoodieBloomFilter.create(
        str(params.get("filter_type", DYNAMIC_V0)),
        int(params.get("effective_num_entries", params.get("num_entries", DEFAULT_NUM_ENTRIES))),
        float(params.get("fpp", DEFAULT_FPP)),
        int(params.get("effective_max_entries", params.get("max_entries", DEFAULT_MAX_ENTRIES))))


def theoretical_fp_curve(params: Mapping[str, Any], n: Sequence[float] | np.ndarray) -> np.ndarray:
    """Expected FP rate of one file's filter holding ``n`` keys, for each ``n``.

    Uses the filter's own m (bits per row) and k (hashes) and, for DYNAMIC_V0, how many
    keys each row holds (``HoodieBloomFilter.theoretical_fpp``).
    """
    f = bloom_filter_for(params)
    return np.array([f.theoretical_fpp(int(round(x))) for x in np.atleast_1d(n)], dtype=float)


def fp_points(g: pd.DataFrame) -> pd.DataFrame:
    """Per upsert batch of one bloom series: records per file probed, negatives, FP rate.

    Negatives are probes of keys not in the probed file (checks − true positives); a batch
    with 0 false positives gets the 95% upper bound 3/negatives instead of a point at 0.
    ``theory_rate`` is the run's own reference figure (``fp_theory``: each probed
    filter's theoretical fpp at its fill, weighted by its negative probes) when the run
    counted it; ``probed_n`` the mean keys of the filters the negative probes met. Rows
    of other operations (a query's lookups, a rescale) are left out.
    """
    if "operation" in g.columns:
        g = g[g["operation"].astype("string").fillna("upsert") == "upsert"]
    recs_per_file = _before(g, "table_records") / _before(g, "file_groups").replace(0, np.nan)
    checks = _num(g, "bloom_checks")
    fps = _num(g, "false_positives").fillna(0)
    true_pos = (_num(g, "bloom_positives") - fps).clip(lower=0)
    negatives = checks - true_pos.fillna(0)
    rate = _num(g, "fp_rate")
    rate = rate.where(rate.notna(), fps / negatives.replace(0, np.nan))
    theory = _num(g, "fp_theory") / negatives.replace(0, np.nan)
    probed = _num(g, "probed_keys_per_file")
    out = pd.DataFrame({"batch": g["batch"].to_numpy(), "records_per_file": recs_per_file,
                        "probed_n": probed.where(probed.notna(), recs_per_file),
                        "table_records": _before(g, "table_records"), "negatives": negatives,
                        "false_positives": fps, "fp_rate": rate, "theory_rate": theory})
    out["upper_bound"] = np.where(out["false_positives"] > 0, np.nan,
                                  FP_UPPER_BOUND_Z / out["negatives"])
    return out[(out["negatives"] > 0) & out["records_per_file"].notna()]


def effective_n(params: Mapping[str, Any], rate: np.ndarray) -> np.ndarray:
    """The fill n whose theoretical fpp is ``rate`` (the curve is monotone in n): where a
    batch probed filters of many fills, its theory point lies on the curve there."""
    ns = np.unique(np.round(np.geomspace(1, 1e10, 1500)))
    curve = theoretical_fp_curve(params, ns)
    ok = curve > 0
    rate = np.asarray(rate, dtype=float)
    out = np.full(rate.shape, np.nan)
    pos = rate > 0
    if ok.any() and pos.any():
        out[pos] = np.exp(np.interp(np.log(rate[pos]), np.log(curve[ok]), np.log(ns[ok])))
    return out


def _filter_sizes(params: Mapping[str, Any]) -> tuple[int, int]:
    """(keys a row is sized for, most keys a filter holds) as the run built them."""
    ne = int(params.get("effective_num_entries", params.get("num_entries", 60000)))
    mx = int(params.get("effective_max_entries", params.get("max_entries", 1e5)))
    return ne, mx


def theory_groups(blooms: Sequence[tuple[str, str, Mapping[str, Any], pd.DataFrame, bool]]
                  ) -> list[tuple[list[int], Mapping[str, Any]]]:
    """Series whose filters have one theory curve (same type, m, k and sizes, all
    simulated or all measured): (their positions in ``blooms``, the params of the first).
    One curve is drawn per group, labelled with every series of it."""
    groups: dict[tuple, list[int]] = {}
    for i, (_label, _name, params, _pts, sim) in enumerate(blooms):
        f = bloom_filter_for(params)
        key = (f.type_code, f.bits_per_row, f.hashes_per_row, *_filter_sizes(params), sim)
        groups.setdefault(key, []).append(i)
    return [(idx, blooms[idx[0]][2]) for idx in groups.values()]


# Dash patterns of theory curves that several series share (drawn in dark grey).
SHARED_THEORY_STYLES: list[Any] = ["-", (0, (6, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2))]


def _draw_theory(ax, blooms, n_lo: float) -> float:
    """One theory curve per :func:`theory_groups` group: in the series' colour when it
    is one series', dark grey with a dash pattern of its own when shared. Returns the
    largest n drawn."""
    n_hi = 1.0
    for j, (idx, params) in enumerate(theory_groups(blooms)):
        members = [blooms[i] for i in idx]
        f = bloom_filter_for(params)
        ne, mx = _filter_sizes(params)
        top = max([float(p["n"].max()) for *_x, p, _s in members if p["n"].notna().any()]
                  or [0.0])
        hi = max(3 * mx, 2 * top)
        n_hi = max(n_hi, hi)
        ns = np.unique(np.round(np.geomspace(n_lo, hi, 90)))
        curve = theoretical_fp_curve(params, ns)
        sim = members[0][4]
        if len(members) == 1:
            color, ls = style.index_color(members[0][1]), "--" if sim else "-"
        else:
            color = "0.25"
            ls = SHARED_THEORY_STYLES[j % len(SHARED_THEORY_STYLES)]
        names = ", ".join(m[0] for m in members)
        ax.plot(ns, np.where(curve > 0, curve, np.nan), color=color, lw=1.5, ls=ls,
                label=f"theory of {names} (m={f.bits_per_row:,} bits/row, "
                      f"k={f.hashes_per_row}, {f.type_code}; dotted: the {ne:,} keys a "
                      f"row is sized for)", gid=f"theory:{names}")
        ax.axvline(ne, color=color, ls=":", lw=0.8)
    return n_hi


def _fp_points(look: style.SeriesLook, pts: pd.DataFrame, x: str, low: float
               ) -> list[tuple[Any, Any, dict[str, Any]]]:
    """A series' points on one panel, as :func:`plot_nested` lines: measured rates
    (its marker), 0-FP upper bounds (▼) and the theory at each batch's filters (✕), in
    its colour: filled on copy-on-write, hollow on merge-on-read."""
    kw = {**look.points(), "ms": 5.5, "zorder": 3}
    meas = pts[pts["fp_rate"] > 0]
    zero = pts[pts["fp_rate"].fillna(0) <= 0]
    out = []
    if len(meas):
        out.append((meas[x], meas["fp_rate"], kw))
    if len(zero):
        out.append((zero[x], zero["upper_bound"], {**kw, "marker": "v"}))
    if len(pts):
        out.append((pts[x], np.maximum(pts["theory"], low),
                    {**kw, "marker": "X", "clip_on": False}))
    return out


def _fp_legend(fig, ax_n, looks: Mapping[str, style.SeriesLook], sims: bool,
               nested: bool) -> None:
    """Theory curves and series (their own marker), then what the shapes mean in any
    series' colour; wrapped, two to a row."""
    grey = {"color": "0.35", "ls": "none", "ms": 5.5, "markerfacecolor": "0.35"}
    handles, labels = ax_n.get_legend_handles_labels()
    for label, look in looks.items():
        handles.append(Line2D([], [], **{**look.points(), "ms": 5.5}))
        labels.append(label)
    for marker, text in (("o", "measured" + (" or simulated" if sims else "") + " FP rate "
                               "(the series' own marker)"),
                         ("v", "a batch with 0 FP: 95% upper bound 3/negatives"),
                         ("X", "theory for the batch's filters")):
        handles.append(Line2D([], [], marker=marker, **grey))
        labels.append(f"{text}, in the series' colour" if marker != "o" else text)
    nested_legend(fig, handles, [_fill(lab, 62) for lab in labels],
                  nested=nested, loc="outside lower center", ncols=2, fontsize=7)


def fp_rate_figure(df: pd.DataFrame,
                   index_params: Mapping[str, Mapping[str, Any]] | None = None) -> Figure | None:
    """Measured bloom false-positive rate against the theory of each filter's m and k.

    Left: FP rate vs records per file (the n each probed filter holds), with the
    theoretical curve (one per distinct filter, labelled with every series it belongs
    to). Right: the same measurements vs table size, with the theoretical value at each
    batch's n (drawn on the axis floor when it is smaller). None when no bloom index
    ran: the report leaves the figure out.
    """
    df = _frame(df)
    index_params = dict(index_params or {})
    blooms = []
    for label, name, g in iter_series(df):
        params = index_params.get(label) or index_params.get(name)
        if params is None:
            params = default_index_params([name]).get(name, {})
        if is_bloom(params):
            pts = fp_points(g)
            at_n = theoretical_fp_curve(params, pts["probed_n"].to_numpy())
            counted = pts["theory_rate"].notna()
            pts["theory"] = np.where(counted, pts["theory_rate"], at_n)
            # x of the rate-vs-n panel: the n whose curve value is the batch's theory
            pts["n"] = np.where(counted & (pts["theory"] > 0),
                                effective_n(params, pts["theory"].to_numpy()), pts["probed_n"])
            blooms.append((label, name, params, pts, is_sim_series(g)))
    if not blooms:  # no bloom index in these runs: not applicable, the report omits it
        return None
    by_label = {label: (name, g) for label, name, g in iter_series(df)}
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.6)
        ax_n, ax_t = axes[0]
        lows = [float(p.get("fpp", 1e-9)) for _l, _n, p, _pts, _s in blooms]
        for _l, _n, _p, pts, _s in blooms:
            lows += [v for c in ("fp_rate", "upper_bound") for v in pts[c] if v > 0]
        low = max(1e-15, min(lows) / 1e3)
        all_n = pd.concat([pts["n"] for _l, _n, _p, pts, _s in blooms]).dropna()
        n_lo = max(1.0, float(all_n.min()) / 10) if len(all_n) else 10.0
        n_hi = _draw_theory(ax_n, blooms, n_lo)
        looks = {label: series_look(df, name, by_label[label][1])
                 for label, name, *_x in blooms}
        nested: list[bool] = []
        for ax, x in ((ax_n, "n"), (ax_t, "table_records")):
            # series whose points lie on each other are drawn nested: every one shows
            nested.append(plot_nested(ax, [line for label, _n, _p, pts, _s in blooms
                                           for line in _fp_points(looks[label], pts, x,
                                                                  low)]))
        for ax in (ax_n, ax_t):
            ax.set_yscale("log")
            ax.set_ylim(low, 1.5)
        # short enough for the panel's height (the long form ran off its top); the
        # caption says it is false positives / probes of keys not in the file
        ax_n.set_ylabel("false-positive rate (fraction)")
        ax_n.set_xscale("log")
        ax_n.set_xlim(n_lo, n_hi)
        label_log_axis(ax_n.xaxis)
        ax_n.set_xlabel("keys in the filter (records per file)")
        ax_n.set_title("FP rate vs records per file")
        ax_t.set_ylabel("false-positive rate (fraction)")
        ax_t.set_xlabel("table size before the batch (records)")
        ax_t.xaxis.set_major_formatter(_kilo)
        ax_t.set_title("FP rate vs table size")
        _fp_legend(fig, ax_n, looks, any(sim for *_x, sim in blooms), any(nested))
    return fig


# ---- files and bytes read ---------------------------------------------------------------
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


# ---- cost vs table size (RFC-29) ---------------------------------------------------------
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


# ---- latency ----------------------------------------------------------------------------
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


# ---- bucket sizes -----------------------------------------------------------------------
def bucket_stats(counts: Sequence[float]) -> dict[str, float]:
    """max/mean and coefficient of variation of bucket (file group) record counts."""
    c = np.asarray(counts, dtype=float)
    if c.size == 0 or c.mean() == 0:
        return {"buckets": int(c.size), "max": 0.0, "mean": 0.0, "max_over_mean": float("nan"),
                "cov": float("nan")}
    return {"buckets": int(c.size), "max": float(c.max()), "mean": float(c.mean()),
            "max_over_mean": float(c.max() / c.mean()), "cov": float(c.std() / c.mean())}


def bucket_series(df: pd.DataFrame,
                  bucket_counts: Mapping[str, Sequence[int]] | None = None) -> list[str]:
    """Series of bucket indexes: those reporting a ``buckets`` metric (bloom does not)."""
    out = []
    for label, _name, g in iter_series(df):
        if _num(g, "buckets").fillna(0).gt(0).any():
            out.append(label)
    return out


def counted_groups(file_groups: int, buckets: float) -> str:
    """What a panel of per-file-group counts holds: "910 file groups in 16 buckets"
    when buckets hold several file groups, "64 buckets, one file group each" when each
    holds one (the run's own ``buckets`` after its last batch)."""
    if not math.isfinite(buckets) or buckets <= 0:
        return f"{file_groups:,} file groups"
    if int(buckets) == file_groups:
        return f"{file_groups:,} buckets, one file group each"
    return f"{file_groups:,} file groups in {int(buckets):,} buckets"


def bucket_size_figure(df: pd.DataFrame,
                       bucket_counts: Mapping[str, Sequence[int]] | None = None
                       ) -> Figure | None:
    """Records per file group, sorted, per bucket index, with max/mean and CoV; the
    title says how many file groups and buckets (:func:`counted_groups`).

    ``bucket_counts`` maps a series (index) to the record count of every file group of
    its latest snapshot (``reports.load`` reads them from the tables); without it the
    figure falls back to the last batch's ``bucket_records_max/mean/cov`` metrics.
    """
    df = _frame(df)
    bucket_counts = dict(bucket_counts or {})
    labels = bucket_series(df, bucket_counts)
    if not labels:  # no bucket index in these runs: not applicable, the report omits it
        return None
    ncols = min(2, len(labels))
    nrows = math.ceil(len(labels) / ncols)
    by_label = {label: (name, g) for label, name, g in iter_series(df)}
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.7)
        flat = axes.ravel()
        for ax, label in zip(flat, labels, strict=False):
            name, g = by_label[label]
            color = style.index_color(name)
            if label in bucket_counts:
                counts = np.sort(np.asarray(bucket_counts[label], dtype=float))[::-1]
                s = bucket_stats(counts)
                ax.bar(np.arange(len(counts)), counts, width=1.0, color=color,
                       edgecolor=color, linewidth=0.2)
                ax.axhline(s["mean"], color="black", lw=0.8, ls="--",
                           label=f"mean: {s['mean']:,.0f} records")
                ax.legend(fontsize=7, loc="upper right")
                ax.set_ylim(0, 1.25 * float(counts.max()) if len(counts) else 1)  # legend room
                ax.set_xlabel("file groups, sorted by size (rank)")
                ax.set_ylabel("records per file group (records)")
                what = counted_groups(len(counts), _num(g, "buckets").iloc[-1])
                src = "latest snapshot"
            else:
                last = g.iloc[-1]
                mx, mean = float(last.get("bucket_records_max", np.nan)), float(
                    last.get("bucket_records_mean", np.nan))
                cov = float(last.get("bucket_records_cov", np.nan)) \
                    if "bucket_records_cov" in g.columns else float("nan")
                s = {"buckets": float(last.get("buckets", np.nan)), "max": mx, "mean": mean,
                     "max_over_mean": mx / mean if mean else float("nan"), "cov": cov}
                ax.bar([0, 1], [mx, mean], color=color, alpha=0.8)
                ax.set_xticks([0, 1], ["largest bucket", "mean bucket"])
                ax.set_ylabel("records per bucket (records)")
                groups = float(last.get("file_groups", np.nan))
                what = counted_groups(int(groups), s["buckets"]) if math.isfinite(groups) \
                    else f"{int(s['buckets']):,} buckets" if math.isfinite(s["buckets"]) \
                    else "buckets"
                src = "last batch metrics"
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(_kilo))  # 1.5M, not 1e6 offsets
            # three short lines: a long series label and "(last batch metrics)" on one
            # line ran past both edges of a two-column figure
            ax.set_title(f"{label}\n{what} ({src})\n"
                         f"max/mean = {s['max_over_mean']:.2f}, CoV = {s['cov']:.3f}",
                         color=color, fontsize=8.5)
        for ax in flat[len(labels):]:
            ax.set_axis_off()
    return fig


# ---- index memory and disk ---------------------------------------------------------------
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


# ---- buckets as the table grows ---------------------------------------------------------
def has_bucket_growth(df: pd.DataFrame) -> bool:
    """Whether a series opens buckets online (reports ``buckets_created``): the figure of
    buckets, spread and index bytes as the table grows is drawn only then."""
    df = _frame(df)
    return any(_num(g, "buckets_created").notna().any() for _l, _n, g in iter_series(df))


def bucket_growth_figure(df: pd.DataFrame) -> Figure | None:
    """Every series with buckets (bucket indexes, Paimon tables) as the table grows:
    (a) buckets, (b) spread of records per bucket (CoV), (c) index bytes per key on disk
    (solid) and in memory (dashed, where counted), (d) seconds per upsert batch (the
    initial load left out). None unless a series opens buckets online
    (``has_bucket_growth``)."""
    df = _frame(df)
    if not has_bucket_growth(df):
        return None
    series = [(label, name, g) for label, name, g in iter_series(df)
              if _num(g, "buckets").fillna(0).gt(0).any()]
    with style.paper():
        fig, axes = style.figure(2, 2, height=2.6)
        (ax_b, ax_c), (ax_i, ax_t) = axes
        any_model, no_mem = False, []
        drawn: dict[str, list[tuple[Any, Any, dict[str, Any]]]] = {
            "b": [], "c": [], "i": [], "t": []}
        for label, name, g in series:
            kw = {**_line_style(df, name, g), "label": label}
            keys = _num(g, "table_records")
            drawn["b"].append((keys, _num(g, "buckets"), kw))
            drawn["c"].append((keys, _num(g, "bucket_records_cov"), kw))
            disk, modelled = measured_or_model(g, "index_disk_bytes")
            any_model |= modelled
            ok = keys > 0
            drawn["i"].append((keys[ok], (disk / keys)[ok], kw))
            mem = _num(g, "index_mem_bytes")
            if mem.fillna(0).gt(0).any():
                drawn["i"].append((keys[ok], (mem / keys)[ok],
                                   {**kw, "ls": "--", "label": None,
                                    "markerfacecolor": "none"}))
            elif mem.isna().all():
                no_mem.append(label)
            total, modelled = measured_or_model(g, "total_s")
            any_model |= modelled
            later = (g["batch"] >= 1).to_numpy() if (g["batch"] >= 1).any() else \
                np.ones(len(g), dtype=bool)  # upserts, not the initial load
            drawn["t"].append((g["batch"][later], total[later], kw))
        nested = [plot_nested(ax, drawn[key])
                  for key, ax in (("b", ax_b), ("c", ax_c), ("i", ax_i), ("t", ax_t))]
        ax_b.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax_t.xaxis.set_major_locator(MaxNLocator(integer=True))
        for ax in (ax_b, ax_c, ax_i):
            ax.set_xlabel("keys in the table after the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.set_ylim(bottom=0, top=_headroom(ax))
        ax_b.set_ylabel("buckets (all partitions)")
        ax_b.set_title("(a) buckets")
        ax_c.set_ylabel("bucket size CoV (std/mean)")
        ax_c.set_title("(b) bucket size spread (std/mean)")
        ax_i.set_ylabel("index bytes per key (B)")
        ax_i.set_title("(c) index on disk (solid), in memory (dashed)")
        if no_mem:
            ax_i.text(0.98, 0.6, _fill("memory not counted: " + ", ".join(no_mem),
                                               40), transform=ax_i.transAxes, ha="right",
                      va="center", fontsize=6.5, color="0.3")
        ax_t.set_xlabel("upsert batch (batches; the initial load left out)")
        ax_t.set_ylabel("seconds per batch (s)")
        ax_t.set_ylim(bottom=0)
        ax_t.set_title("(d) total_s per upsert batch" + (" (sim: modelled)" if any_model
                                                          else ""))
        room_for_legend(fig, nested_legend(fig, *ax_b.get_legend_handles_labels(),
                                           nested=any(nested), loc="outside lower center",
                                           ncols=min(4, len(series)), fontsize=7))
    return fig


# ---- rescale ----------------------------------------------------------------------------
RESCALE_METRICS = [("total_s", "time (s)", 1.0), ("bytes_read", "bytes read (MiB)", MIB),
                   ("bytes_written", "bytes written (MiB)", MIB),
                   ("shuffle_bytes", "shuffle bytes (MiB)", MIB),
                   ("records_rewritten", "records rewritten (records)", 1.0),
                   ("files_written", "files written (files)", 1.0),
                   ("dual_written_bytes", "dual-written bytes (MiB)", MIB)]
# multiple-rehash's modes, partition-bucket's offline overwrite, consistent-hashing's resize
MODE_HATCH = {"rehash": None, "overwrite": "///", "resize": "xx"}


def has_rescale(df: pd.DataFrame) -> bool:
    """Whether any row is a rescale (the rescale figure is drawn only then)."""
    return "operation" in df.columns and (df["operation"].astype(str) == "rescale").any()


def rescale_figure(df: pd.DataFrame) -> Figure | None:
    """Cost of each rescale or resize: multiple-rehash's rehash vs overwrite,
    partition-bucket's offline overwrite, consistent-hashing's split/merge resize with
    the bytes its dual writes cost (None when there are no rescale rows)."""
    df = _frame(df)
    if not has_rescale(df):
        return None
    rs = df[df["operation"] == "rescale"].copy()
    mode = rs["mode"].astype(str) if "mode" in rs.columns else pd.Series("rescale", rs.index)
    rs["_mode"] = mode.fillna("rescale")
    metrics = [(c, lab, s) for c, lab, s in RESCALE_METRICS
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
                                            "hatch": MODE_HATCH.get(mode_, "..")})
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


def legend_handles(names: Sequence[str]) -> list[Line2D]:
    """Legend entries of the index colours (for composite figures in notebooks)."""
    return [Line2D([], [], color=style.index_color(n), marker=style.index_marker(n), label=n)
            for n in names]


# ---- write cost against read cost (table types) -------------------------------------------
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


# ---- figures an index declares (RecordIndex.FIGURES) ------------------------------------
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

