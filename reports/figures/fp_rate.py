"""The false-positive figure: measured rates against the theory of each filter. The
theory is the index's (:class:`indexes.roles.FilterTheory`, asked through the registry),
so the report holds no filter's formulas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

import indexes
from indexes.roles import FilterTheory, plays
from reports import style
from reports.data import default_index_params
from reports.figures.common import (
    _before,
    _fill,
    _frame,
    _kilo,
    _num,
    is_sim_series,
    iter_series,
    label_log_axis,
    nested_legend,
    plot_nested,
    series_look,
)

FP_UPPER_BOUND_Z = 3.0  # "rule of three": 95% upper bound on a rate after 0 of n events


def filter_theory(name: str) -> type[FilterTheory] | None:
    """The class of the registered index ``name`` when it plays
    :class:`~indexes.roles.FilterTheory` (its filter's theoretical false-positive rate is
    the figure's reference), else None: an index without such a filter, a peer, a name
    the registry does not know."""
    if name not in indexes.names():
        return None
    cls = indexes.index_class(name)
    return cast(type[FilterTheory], cls) if plays(cls, FilterTheory) else None


def theoretical_fp_curve(params: Mapping[str, Any], n: Sequence[float] | np.ndarray,
                         index: str | None = None) -> np.ndarray:
    """Expected FP rate of one file's filter holding ``n`` keys, for each ``n``, by the
    filter theory of ``index`` (default: the first registered index playing
    :class:`~indexes.roles.FilterTheory`) over the run's index parameters ``params``."""
    theory = filter_theory(index) if index is not None else next(
        (t for t in map(filter_theory, indexes.names()) if t is not None), None)
    if theory is None:
        raise ValueError(f"no filter theory for index {index!r}")
    return np.asarray(theory.theoretical_fp_rate(params, n), dtype=float)


def fp_points(g: pd.DataFrame) -> pd.DataFrame:
    """Per upsert batch of one bloom series: records per file probed, negatives, FP rate.

    Negatives are probes of keys not in the probed file (checks − true positives); a batch
    with 0 false positives gets the 95% upper bound 3/negatives instead of a point at 0.
    ``theory_rate`` is the run's own reference figure (``fp_theory``: each probed
    filter's theoretical rate at its fill, weighted by its negative probes) when the run
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


def effective_n(theory: type[FilterTheory], params: Mapping[str, Any],
                rate: np.ndarray) -> np.ndarray:
    """The fill n whose theoretical rate (``theory.theoretical_fp_rate``) is ``rate`` (the
    curve is monotone in n): where a batch probed filters of many fills, its theory point
    lies on the curve there."""
    ns = np.unique(np.round(np.geomspace(1, 1e10, 1500)))
    curve = np.asarray(theory.theoretical_fp_rate(params, ns), dtype=float)
    ok = curve > 0
    rate = np.asarray(rate, dtype=float)
    out = np.full(rate.shape, np.nan)
    pos = rate > 0
    if ok.any() and pos.any():
        out[pos] = np.exp(np.interp(np.log(rate[pos]), np.log(curve[ok]), np.log(ns[ok])))
    return out


# A series with a filter theory: (label, index name, theory class, params, points, sim?)
Filtered = tuple[str, str, type[FilterTheory], Mapping[str, Any], pd.DataFrame, bool]


def theory_groups(filtered: Sequence[Filtered]) -> list[tuple[list[int], Mapping[str, Any]]]:
    """Series whose filters have one theory curve (equal ``theory_key``, all simulated or
    all measured): (their positions in ``filtered``, the params of the first). One curve
    is drawn per group, labelled with every series of it."""
    groups: dict[tuple, list[int]] = {}
    for i, (_label, _name, theory, params, _pts, sim) in enumerate(filtered):
        groups.setdefault((theory.theory_key(params), sim), []).append(i)
    return [(idx, filtered[idx[0]][3]) for idx in groups.values()]


# Dash patterns of theory curves that several series share (drawn in dark grey).
SHARED_THEORY_STYLES: list[Any] = ["-", (0, (6, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2))]


def _draw_theory(ax, filtered: Sequence[Filtered], n_lo: float) -> float:
    """One theory curve per :func:`theory_groups` group: in the series' colour when it
    is one series', dark grey with a dash pattern of its own when shared; a dotted line
    at the keys a filter row is sized for. Returns the largest n drawn."""
    n_hi = 1.0
    for j, (idx, params) in enumerate(theory_groups(filtered)):
        members = [filtered[i] for i in idx]
        theory = members[0][2]
        ne, mx = theory.sized_keys(params)
        top = max([float(p["n"].max()) for *_x, p, _s in members if p["n"].notna().any()]
                  or [0.0])
        hi = max(3 * mx, 2 * top)
        n_hi = max(n_hi, hi)
        ns = np.unique(np.round(np.geomspace(n_lo, hi, 90)))
        curve = np.asarray(theory.theoretical_fp_rate(params, ns), dtype=float)
        sim = members[0][5]
        if len(members) == 1:
            color, ls = style.index_color(members[0][1]), "--" if sim else "-"
        else:
            color = "0.25"
            ls = SHARED_THEORY_STYLES[j % len(SHARED_THEORY_STYLES)]
        names = ", ".join(m[0] for m in members)
        ax.plot(ns, np.where(curve > 0, curve, np.nan), color=color, lw=1.5, ls=ls,
                label=f"theory of {names} ({theory.theory_label(params)})",
                gid=f"theory:{names}")
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
    """Measured false-positive rate against the theory of each filter (its m and k).

    Left: FP rate vs records per file (the n each probed filter holds), with the
    theoretical curve (one per distinct filter, labelled with every series it belongs
    to). Right: the same measurements vs table size, with the theoretical value at each
    batch's n (drawn on the axis floor when it is smaller). Series of the indexes that
    play :class:`~indexes.roles.FilterTheory` are drawn; None when none ran: the report
    leaves the figure out.
    """
    df = _frame(df)
    index_params = dict(index_params or {})
    filtered: list[Filtered] = []
    for label, name, g in iter_series(df):
        theory = filter_theory(name)
        if theory is None:
            continue
        params = index_params.get(label) or index_params.get(name)
        if params is None:
            params = default_index_params([name]).get(name, {})
        pts = fp_points(g)
        at_n = np.asarray(theory.theoretical_fp_rate(params, pts["probed_n"].to_numpy()),
                          dtype=float)
        counted = pts["theory_rate"].notna()
        pts["theory"] = np.where(counted, pts["theory_rate"], at_n)
        # x of the rate-vs-n panel: the n whose curve value is the batch's theory
        pts["n"] = np.where(counted & (pts["theory"] > 0),
                            effective_n(theory, params, pts["theory"].to_numpy()),
                            pts["probed_n"])
        filtered.append((label, name, theory, params, pts, is_sim_series(g)))
    if not filtered:  # no index with a filter theory ran: the report omits the figure
        return None
    by_label = {label: (name, g) for label, name, g in iter_series(df)}
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.6)
        ax_n, ax_t = axes[0]
        lows = [float(t.design_fp_rate(p)) for _l, _n, t, p, _pts, _s in filtered]
        for *_x, pts, _s in filtered:
            lows += [v for c in ("fp_rate", "upper_bound") for v in pts[c] if v > 0]
        low = max(1e-15, min(lows) / 1e3)
        all_n = pd.concat([pts["n"] for *_x, pts, _s in filtered]).dropna()
        n_lo = max(1.0, float(all_n.min()) / 10) if len(all_n) else 10.0
        n_hi = _draw_theory(ax_n, filtered, n_lo)
        looks = {label: series_look(df, name, by_label[label][1])
                 for label, name, *_x in filtered}
        nested: list[bool] = []
        for ax, x in ((ax_n, "n"), (ax_t, "table_records")):
            # series whose points lie on each other are drawn nested: every one shows
            nested.append(plot_nested(ax, [line for label, *_x, pts, _s in filtered
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
        _fp_legend(fig, ax_n, looks, any(sim for *_x, sim in filtered), any(nested))
    return fig
