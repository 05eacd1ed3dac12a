"""Figures from metrics DataFrames (the contract of docs/metrics.md): one function per question.

Every function takes the DataFrame ``indexbench.api.run/compare`` returns (or
``reports.load(dirs).df``, or ``indexbench.sim.driver.simulate_compare``'s) and returns a
matplotlib Figure, so notebooks, the report page and papers draw the same pictures.
Indexes are drawn in their fixed colour (``reports.style.index_color``); any index name
and any extra column is accepted.

Simulated series (``run_mode == "sim"``) are labelled ``<index> (sim)`` and drawn dashed
with hollow markers in the index's colour. Their byte and second figures are models
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
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

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


# Line styles of runs: real runs solid (then dotted), simulated runs always dashed.
REAL_LINESTYLES: list[Any] = ["-", ":", (0, (1, 3)), (0, (4, 1, 1, 1))]
SIM_LINESTYLES: list[Any] = ["--", (0, (7, 2)), (0, (2, 2)), (0, (9, 2, 3, 2))]


def is_sim_series(g: pd.DataFrame) -> bool:
    """Whether a series' rows are simulated (``run_mode == "sim"``)."""
    return bool(len(g)) and bool(is_sim(g).all())


def is_peer_series(g: pd.DataFrame) -> bool:
    """Whether a series is a peer's (``run_mode == "peer"``: no index, no counters)."""
    return bool(len(g)) and bool(is_peer(g).all())


def _line_style(df: pd.DataFrame, name: str, g: pd.DataFrame) -> dict[str, Any]:
    """Colour and marker of the index; line style of the run: solid (dotted for further
    real runs) when measured, dashed with hollow markers when simulated."""
    sim = is_sim_series(g)
    styles = SIM_LINESTYLES if sim else REAL_LINESTYLES
    same_kind = df[is_sim(df) == sim] if len(df) else df
    runs = list(pd.unique(same_kind["run"])) if "run" in df.columns else []
    run = g["run"].iloc[0] if "run" in g.columns else None
    ls = styles[runs.index(run) % len(styles)] if run in runs else styles[0]
    color = style.index_color(name)
    kw: dict[str, Any] = {"color": color, "marker": style.index_marker(name), "ms": 4,
                          "ls": ls}
    if sim:
        kw["markerfacecolor"] = "none"
    return kw


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


def fp_rate_figure(df: pd.DataFrame,
                   index_params: Mapping[str, Mapping[str, Any]] | None = None) -> Figure | None:
    """Measured bloom false-positive rate against the theory of each filter's m and k.

    Left: FP rate vs records per file (the n each probed filter holds), with the
    theoretical curve. Right: the same measurements vs table size, with the theoretical
    value at each batch's n (drawn on the axis floor when it is smaller). None when no
    bloom index ran: the report leaves the figure out.
    """
    df = _frame(df)
    index_params = dict(index_params or {})
    blooms = []
    by_label = {label: g for label, _name, g in iter_series(df)}
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
            blooms.append((label, name, params, pts))
    if not blooms:  # no bloom index in these runs: not applicable, the report omits it
        return None
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.4)
        ax_n, ax_t = axes[0]
        lows = [float(p.get("fpp", 1e-9)) for _l, _n, p, _pts in blooms]
        for *_x, pts in blooms:
            lows += [v for c in ("fp_rate", "upper_bound") for v in pts[c] if v > 0]
        low = max(1e-15, min(lows) / 1e3)
        all_n = pd.concat([pts["n"] for *_x, pts in blooms]).dropna()
        n_lo = max(1.0, float(all_n.min()) / 10) if len(all_n) else 10.0
        n_hi = 1.0
        for label, name, params, pts in blooms:
            color, marker = style.index_color(name), style.index_marker(name)
            f = bloom_filter_for(params)
            ne = int(params.get("effective_num_entries", params.get("num_entries", 60000)))
            mx = int(params.get("effective_max_entries", params.get("max_entries", 1e5)))
            hi = max(3 * mx, 2 * float(pts["n"].max()) if pts["n"].notna().any() else 0)
            n_hi = max(n_hi, hi)
            ns = np.unique(np.round(np.geomspace(n_lo, hi, 90)))
            curve = theoretical_fp_curve(params, ns)
            sim = is_sim_series(by_label[label])
            what = "simulated" if sim else "measured"
            ax_n.plot(ns, np.where(curve > 0, curve, np.nan), color=color, lw=1.5,
                      ls="--" if sim else "-",
                      label=f"{label}: theory (m={f.bits_per_row:,} bits/row, "
                            f"k={f.hashes_per_row}, {f.type_code}; dotted: the "
                            f"{ne:,} keys a row is sized for)", gid=f"theory:{label}")
            ax_n.axvline(ne, color=color, ls=":", lw=0.8)
            meas = pts[pts["fp_rate"] > 0]
            zero = pts[pts["fp_rate"].fillna(0) <= 0]
            for ax, x in ((ax_n, "n"), (ax_t, "table_records")):
                if len(meas):
                    ax.scatter(meas[x], meas["fp_rate"], color=color, marker=marker, s=28,
                               zorder=3, label=f"{label}: {what}")
                if len(zero):
                    ax.scatter(zero[x], zero["upper_bound"], facecolors="none",
                               edgecolors=color, marker="v", s=30, zorder=3,
                               label=f"{label}: 0 FP {what}, 95% upper bound 3/negatives")
            if len(pts):
                for ax, x in ((ax_n, "n"), (ax_t, "table_records")):
                    ax.scatter(pts[x], np.maximum(pts["theory"], low), marker="x",
                               color=color, s=24, clip_on=False,
                               label=f"{label}: theory for the batch's filters")
        for ax in (ax_n, ax_t):
            ax.set_yscale("log")
            ax.set_ylim(low, 1.5)
        # short enough for the panel's height (the long form ran off its top); the
        # caption says it is false positives / probes of keys not in the file
        ax_n.set_ylabel("false-positive rate")
        ax_n.set_xscale("log")
        ax_n.set_xlim(n_lo, n_hi)
        label_log_axis(ax_n.xaxis)
        ax_n.set_xlabel("keys in the filter (records per file)")
        ax_n.set_title("FP rate vs records per file")
        ax_t.set_xlabel("table size before the batch (records)")
        ax_t.xaxis.set_major_formatter(_kilo)
        ax_t.set_title("FP rate vs table size")
        handles, labels = [], []
        for ax in (ax_n, ax_t):
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        # long entries one to a row: two to a row ran off both edges of the figure
        wide = max((len(lab) for lab in labels), default=0) > 50
        fig.legend(handles, labels, loc="outside lower center", ncols=1 if wide else 2,
                   fontsize=7)
    return fig


# ---- files and bytes read ---------------------------------------------------------------
def files_read_figure(df: pd.DataFrame) -> Figure:
    """Data files and bytes read to tag each batch, as the table grows, per index."""
    df = _frame(df)
    with style.paper():
        fig, axes = style.figure(1, 2, height=2.9)
        ax_f, ax_b = axes[0]
        any_model, never_read = False, []
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
            ax_f.plot(x[upsert], files[upsert], **kw)
            any_model |= modelled
            ax_b.plot(x[upsert], read.fillna(0)[upsert] / MIB,
                      **{**kw, "label": f"{label}: modelled" if modelled else label})
        if never_read:
            for ax in (ax_f, ax_b):
                ax.text(0.98, 0.04, "0 in every batch:\n" + "\n".join(never_read),
                        transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                        color="0.3", gid="never-read",
                        bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.8"})
        for ax in (ax_f, ax_b):
            ax.set_xlabel("table size before the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.yaxis.set_major_formatter(FuncFormatter(_kilo))  # 374k, not 374000
            # headroom: the legend sits above the lines, not on them
            ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.25 if ax.lines else None)
        ax_f.set_ylabel("data files read to tag the batch (files)")
        ax_b.set_ylabel("bytes read to tag the batch (MiB)")
        ax_f.set_title("files read per batch (counted)")
        ax_b.set_title("bytes read per batch" + (" (sim: modelled)" if any_model else ""))
        if len(ax_f.lines) > 4:  # many series (several runs): one legend below the panels
            fig.legend(*ax_f.get_legend_handles_labels(), loc="outside lower center",
                       ncols=3, fontsize=7)
        elif ax_f.lines:  # (every index drawn may be named in the never-read note)
            ax_f.legend()
            if any_model:
                ax_b.legend(fontsize=7)
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
        zeros, any_model, any_real = [], False, False
        for label, name, g, pts in series:
            kw = _line_style(df, name, g)
            files = pts["files_read"]
            ax_f.plot(pts["table_records"], files.where(files > 0, SCALE_ZERO_FILES),
                      **kw, label=label, gid=f"files_read:{label}")
            if (files.fillna(0) <= 0).any():
                zeros.append(label)
            tag = pts["tag_s"].where(pts["tag_s"] > 0)
            modelled = bool(pts["modelled"].iloc[0])
            any_model |= modelled
            any_real |= not modelled
            if tag.notna().any():
                ax_t.plot(pts["table_records"], tag, **kw, gid=f"tag_s:{label}",
                          label=f"{label}: {'modelled' if modelled else 'measured'}")
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
        ax_f.set_ylabel("files read to tag the batch")
        ax_f.set_title("files read per upsert batch (counted)", fontsize=9)
        kinds = " / ".join(k for k, on in (("measured (real)", any_real),
                                           ("modelled (sim)", any_model)) if on)
        ax_t.set_ylabel("tag seconds per batch (s)")
        ax_t.set_title(f"tag seconds: {kinds}", fontsize=9)
        if not ax_t.lines:
            ax_t.text(0.5, 0.5, "no tag seconds in these runs", transform=ax_t.transAxes,
                      ha="center", fontsize=8, color="grey")
        fig.legend(*ax_f.get_legend_handles_labels(), loc="outside lower center",
                   ncols=min(4, len(series)), fontsize=7)
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


def latency_figure(df: pd.DataFrame) -> Figure:
    """Seconds per batch stacked by phase: generate, validate, precombine, tag, write,
    commit (and the rest of total_s). Each index has its own y scale, in the unit that
    reads best (s, min, h): on one shared scale bloom's batches (100,000 s in a sim at
    100M keys) flattened the bucket indexes' phases to nothing. The total above each bar
    keeps the indexes comparable."""
    df = _frame(df)
    series = list(iter_series(df))
    if not series:
        with style.paper():
            fig, axes = style.figure(1, 1)
            return _empty(fig, axes[0][0], "no upsert batches")
    ncols = min(2, len(series))
    nrows = math.ceil(len(series) / ncols)
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.6)
        flat = axes.ravel()
        any_model = False
        for ax, (label, name, g) in zip(flat, series, strict=False):
            color = style.index_color(name)
            parts = {c: measured_or_model(g, c)[0].fillna(0).to_numpy()
                     for c, *_ in PHASES[:-1]}
            total, modelled = measured_or_model(g, "total_s")
            any_model |= modelled
            known = sum(parts.values())
            parts["other_s"] = np.clip(np.nan_to_num(total.to_numpy() - known, nan=0.0), 0,
                                       None)
            top = float(np.nanmax(np.maximum(total.to_numpy(dtype=float), known)))
            unit, div = seconds_unit(top if np.isfinite(top) else 0.0)
            x = np.arange(len(g))
            bottom = np.zeros(len(g))
            for col, _name, alpha, hatch in PHASES:
                ax.bar(x, parts[col] / div, bottom=bottom, color=color, alpha=alpha,
                       hatch=hatch, edgecolor=color, linewidth=0.8 if modelled else 0.5,
                       width=0.75, linestyle="--" if modelled else "-")
                bottom += parts[col] / div
            if len(g) <= 12:  # each bar's total, in human units
                for xi, t in zip(x, total.to_numpy(), strict=True):
                    if np.isfinite(t):
                        ax.text(xi, t / div, human_seconds(t), ha="center", va="bottom",
                                fontsize=6.5, color=color)
                ax.set_ylim(0, max(ax.get_ylim()[1], 1.12 * top / div) if top > 0 else 1)
            ax.set_xticks(x, [str(int(b)) for b in g["batch"]])
            ax.set_xlabel("batch (0 = initial load)")
            ax.set_ylabel(f"per batch ({unit})")
            kind = "modelled seconds (model_*)" if modelled else \
                "measured seconds; its own upsert drawn as write" if is_peer_series(g) else \
                "measured seconds"
            ax.set_title(f"{label}\n{kind}", color=color, fontsize=8.5)
        for ax in flat[len(series):]:
            ax.set_axis_off()
        handles = [Patch(facecolor="grey", alpha=a, hatch=h, edgecolor="grey", label=n)
                   for _c, n, a, h in PHASES]
        if any_model:
            handles.append(Patch(facecolor="none", edgecolor="grey", linestyle="--",
                                 label="(sim): modelled seconds, not measured"))
        # four to a row: a longer (sim) legend wraps instead of running off both edges
        fig.legend(handles=handles, loc="outside upper center", ncols=min(4, len(handles)),
                   fontsize=7, title="each index on its own scale; the number on a bar is "
                   "its total", title_fontsize=7)
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


def bucket_size_figure(df: pd.DataFrame,
                       bucket_counts: Mapping[str, Sequence[int]] | None = None
                       ) -> Figure | None:
    """Records per bucket, sorted, per bucket index, with max/mean and CoV.

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
                ax.set_xlabel("bucket file groups, sorted by size (rank)")
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
                src = "last batch metrics"
            ax.set_ylabel("records per bucket (records)")
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(FuncFormatter(_kilo))  # 1.5M, not 1e6 offsets
            # three short lines: a long series label and "(last batch metrics)" on one
            # line ran past both edges of a two-column figure
            ax.set_title(f"{label}\n{int(s['buckets']):,} buckets ({src})\n"
                         f"max/mean = {s['max_over_mean']:.2f}, CoV = {s['cov']:.3f}",
                         color=color, fontsize=8.5)
        for ax in flat[len(labels):]:
            ax.set_axis_off()
    return fig


# ---- index memory and disk ---------------------------------------------------------------
def index_bytes_figure(df: pd.DataFrame) -> Figure:
    """Bytes the index holds in memory and on disk vs keys in the table, per index."""
    df = _frame(df)
    with style.paper():
        fig, axes = style.figure(1, 2, height=2.9)
        zero: dict[str, list[str]] = {"index_mem_bytes": [], "index_disk_bytes": []}
        for ax, col in zip(axes[0], zero, strict=True):
            for label, name, g in iter_series(df):
                keys = _num(g, "table_records")
                # memory is counted in both; disk bytes of a simulated run are modelled
                y, modelled = measured_or_model(g, col) if col == "index_disk_bytes" \
                    else (_num(g, col), False)
                if is_peer_series(g) and y.isna().all():  # not seen: empty, not 0
                    continue
                ok = (y > 0) & (keys > 0)
                if not ok.any():
                    zero[col].append(label)
                    continue
                ax.plot(keys[ok], y[ok] / MIB, **_line_style(df, name, g),
                        label=f"{label}{': modelled' if modelled else ''} "
                              f"({y[ok].iloc[-1] / keys[ok].iloc[-1]:.1f} B/key)")
            ax.set_xlabel("keys in the table (records)")
            if ax.lines:
                ys = np.concatenate([ln.get_ydata() for ln in ax.lines])
                if ys.max() / ys.min() > 50:  # indexes differ by orders of magnitude
                    ax.set_yscale("log")
                    ax.yaxis.set_minor_formatter(NullFormatter())
                    ax.yaxis.set_major_formatter(lambda v, _p: f"{v:g}")
                else:
                    ax.set_ylim(bottom=0)
                ax.set_xlim(left=0)
                ax.xaxis.set_major_formatter(_kilo)
                ax.legend(fontsize=7)
            else:
                ax.text(0.5, 0.5, "no index holds bytes here", transform=ax.transAxes,
                        ha="center", fontsize=8, color="grey")
            if zero[col]:
                ax.text(0.02, 0.02, textwrap.fill("0 B: " + ", ".join(zero[col]), 50),
                        transform=ax.transAxes, fontsize=7, va="bottom")
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
        for label, name, g in series:
            kw = {**_line_style(df, name, g), "label": label}
            keys = _num(g, "table_records")
            ax_b.plot(keys, _num(g, "buckets"), **kw)
            ax_c.plot(keys, _num(g, "bucket_records_cov"), **kw)
            disk, modelled = measured_or_model(g, "index_disk_bytes")
            any_model |= modelled
            ok = keys > 0
            ax_i.plot(keys[ok], (disk / keys)[ok], **kw)
            mem = _num(g, "index_mem_bytes")
            if mem.fillna(0).gt(0).any():
                ax_i.plot(keys[ok], (mem / keys)[ok], **{**kw, "ls": "--", "label": None,
                                                         "markerfacecolor": "none"})
            elif mem.isna().all():
                no_mem.append(label)
            total, modelled = measured_or_model(g, "total_s")
            any_model |= modelled
            later = (g["batch"] >= 1).to_numpy() if (g["batch"] >= 1).any() else \
                np.ones(len(g), dtype=bool)  # upserts, not the initial load
            ax_t.plot(g["batch"][later], total[later], **kw)
        for ax in (ax_b, ax_c, ax_i):
            ax.set_xlabel("keys in the table after the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.set_ylim(bottom=0)
        ax_b.set_ylabel("buckets (all partitions)")
        ax_b.set_title("(a) buckets")
        ax_c.set_ylabel("CoV of records per bucket")
        ax_c.set_title("(b) bucket size spread (std/mean)")
        ax_i.set_ylabel("index bytes per key (B)")
        ax_i.set_title("(c) index on disk (solid), in memory (dashed)")
        if no_mem:
            ax_i.text(0.98, 0.6, textwrap.fill("memory not counted: " + ", ".join(no_mem),
                                               40), transform=ax_i.transAxes, ha="right",
                      va="center", fontsize=6.5, color="0.3")
        ax_t.set_xlabel("upsert batch (the initial load left out)")
        ax_t.set_ylabel("seconds per batch (s)")
        ax_t.set_ylim(bottom=0)
        ax_t.set_title("(d) total_s per upsert batch" + (" (sim: modelled)" if any_model
                                                          else ""))
        fig.legend(*ax_b.get_legend_handles_labels(), loc="outside lower center",
                   ncols=min(4, len(series)), fontsize=7)
    return fig


# ---- rescale ----------------------------------------------------------------------------
RESCALE_METRICS = [("total_s", "time (s)", 1.0), ("bytes_read", "bytes read (MiB)", MIB),
                   ("bytes_written", "bytes written (MiB)", MIB),
                   ("shuffle_bytes", "shuffle bytes (MiB)", MIB),
                   ("records_rewritten", "records rewritten", 1.0),
                   ("files_written", "files written", 1.0),
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
                name = _index_of(g)
                vals = measured_or_model(g, col)[0] / scale
                ax.bar(i, vals.median(), color=style.index_color(name),
                       hatch=MODE_HATCH.get(mode_, ".."), edgecolor="black", linewidth=0.5)
                if len(vals) > 1:
                    ax.scatter([i] * len(vals), vals, color="black", s=6, zorder=3)
            ax.set_xticks(range(len(groups)),
                          [f"{m} (sim, modelled)" if is_sim_series(g) else m
                           for (_lab, m), g in groups], fontsize=7, rotation=30, ha="right")
            ax.set_ylabel(ylab)
            ax.set_title(ylab.split(" (")[0])
        for ax in flat[len(metrics):]:
            ax.set_axis_off()
        seen = list(dict.fromkeys((lab, _index_of(g)) for (lab, _m), g in groups))
        fig.legend(handles=[Patch(color=style.index_color(n), label=lab) for lab, n in seen],
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


def write_read_figure(df: pd.DataFrame) -> Figure | None:
    """Write cost (x) against read cost (y) per index and table type: (a) seconds,
    (b) bytes; an arrow leads from an index's copy-on-write point to its merge-on-read
    one. None when no series has both upserts and lookups."""
    pts = write_read_points(df)
    if pts.empty:
        return None
    panels = (("write_s", "lookup_s", "write seconds per batch (compactions included)",
               "lookup seconds per key batch (p50)"),
              ("bytes_written", "bytes_read_per_key", "bytes written per batch",
               "bytes read per key looked up"))
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.0)
        for ax, (xc, yc, xl, yl) in zip(axes.ravel(), panels, strict=True):
            for _, p in pts.iterrows():
                color = style.index_color(p["index"])
                mor = p["table_type"] == "mor"
                ax.scatter(p[xc], p[yc], color=color, marker="s" if mor else "o",
                           facecolors="none" if mor else color, s=36, zorder=3)
                ax.annotate(p["series"], (p[xc], p[yc]), fontsize=6, color=color,
                            xytext=(3, 3), textcoords="offset points")
            for name, g in pts.groupby("index"):
                cow, mor = g[g["table_type"] == "cow"], g[g["table_type"] == "mor"]
                if len(cow) and len(mor):
                    ax.annotate("", xy=(mor[xc].iloc[0], mor[yc].iloc[0]),
                                xytext=(cow[xc].iloc[0], cow[yc].iloc[0]),
                                arrowprops={"arrowstyle": "->", "color":
                                            style.index_color(str(name)), "lw": 0.8})
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
            if xc == "bytes_written":
                ax.xaxis.set_major_formatter(FuncFormatter(_kilo))
                ax.yaxis.set_major_formatter(FuncFormatter(_kilo))
        handles = [Line2D([], [], marker="o", color="grey", linestyle="", label="copy-on-write"),
                   Line2D([], [], marker="s", color="grey", markerfacecolor="none",
                          linestyle="", label="merge-on-read")]
        fig.legend(handles=handles, loc="outside upper center", ncols=2, fontsize=7)
    return fig


# ---- figures an index declares (RecordIndex.FIGURES) ------------------------------------
def _column_or_ratio(g: pd.DataFrame, expr: str) -> pd.Series:
    """A column, or ``"a/b"``: the ratio of two (empty where ``b`` is 0)."""
    if "/" not in expr:
        return _num(g, expr)
    a, b = expr.split("/", 1)
    den = _num(g, b)
    return _num(g, a) / den.where(den != 0)


def declared_figure(df: pd.DataFrame, decl) -> Figure | None:
    """An index's declared figure (:class:`indexes.base.IndexFigure`): ``decl.y`` against
    ``decl.x`` over the upsert rows of every index that has them; a point per row,
    filled for real runs and hollow for simulated ones (``model_<y>``, dotted lines), a
    line through the median at each ``x`` (within a tenth of a decade on a log axis).
    None when no row has the columns."""
    df = _frame(df)
    up = _upserts(df)
    if not len(up):
        return None
    kinds = {False: ["-", "--", (0, (5, 1, 1, 1))], True: [":", "-.", (0, (1, 3))]}
    drawn = False
    with style.paper():
        fig, axes = style.figure(1, 1, height=3.0)
        ax = axes[0][0]
        for (name, sim), g in up.assign(_sim=is_sim(up)).groupby(["index", "_sim"],
                                                                 sort=False):
            x = _column_or_ratio(g, decl.x)
            for i, col in enumerate(decl.y):
                y = _num(g, f"model_{col}") if sim else _num(g, col)
                ok = x.notna() & y.notna() & (x > 0) & (y > 0)
                if not ok.any():
                    continue
                drawn = True
                label = f"{name}{SIM_SUFFIX if sim else ''} " \
                        f"{decl.y_names[i] if i < len(decl.y_names) else col}"
                color = style.index_color(str(name))
                marker = style.index_marker(str(name))
                ax.plot(x[ok], y[ok], ls="none", marker=marker, ms=3, alpha=0.45,
                        color=color, markerfacecolor="none" if sim else color)
                # the median of the points whose x is within ~12% (a tenth of a decade):
                # a batch's partial requests make x wander a little around its setting
                xs = x[ok].to_numpy(float)
                bins = np.round(np.log10(xs), 1) if decl.log_x else np.round(xs, 6)
                med = pd.DataFrame({"b": bins, "x": xs, "y": y[ok].to_numpy(float)}) \
                    .groupby("b")[["x", "y"]].median().sort_values("x")
                style_ = kinds[bool(sim)]
                ax.plot(med["x"], med["y"], ls=style_[i % len(style_)], color=color,
                        marker=marker, ms=4, markerfacecolor="none" if sim else color,
                        label=label)
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

