"""Figures from metrics DataFrames (the contract of DESIGN §6): one function per question.

Every function takes the DataFrame ``indexbench.api.run/compare`` returns (or
``reports.load(dirs).df``) and returns a matplotlib Figure, so notebooks, the report page
and papers draw the same pictures. Indexes are drawn in their fixed colour
(``reports.style.index_color``); any index name and any extra column is accepted.
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
from matplotlib.ticker import NullFormatter

from reports import style
from reports.data import default_index_params, normalise

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


def _line_style(df: pd.DataFrame, name: str, g: pd.DataFrame) -> dict[str, Any]:
    """Colour and marker of the index; line style of the run (several runs on one page)."""
    runs = list(pd.unique(df["run"])) if "run" in df.columns else []
    run = g["run"].iloc[0] if "run" in g.columns else None
    ls = style.LINESTYLES[runs.index(run) % len(style.LINESTYLES)] if run in runs else "-"
    return {"color": style.index_color(name), "marker": style.index_marker(name), "ms": 4,
            "ls": ls}


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


def _kilo(x: float, _pos=None) -> str:
    return f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}"


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

    return HoodieBloomFilter.create(
        str(params.get("filter_type", DYNAMIC_V0)),
        int(params.get("num_entries", DEFAULT_NUM_ENTRIES)),
        float(params.get("fpp", DEFAULT_FPP)),
        int(params.get("max_entries", DEFAULT_MAX_ENTRIES)))


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
    """
    recs_per_file = _before(g, "table_records") / _before(g, "file_groups").replace(0, np.nan)
    checks = _num(g, "bloom_checks")
    fps = _num(g, "false_positives").fillna(0)
    true_pos = (_num(g, "bloom_positives") - fps).clip(lower=0)
    negatives = checks - true_pos.fillna(0)
    rate = _num(g, "fp_rate")
    rate = rate.where(rate.notna(), fps / negatives.replace(0, np.nan))
    out = pd.DataFrame({"batch": g["batch"].to_numpy(), "records_per_file": recs_per_file,
                        "table_records": _before(g, "table_records"), "negatives": negatives,
                        "false_positives": fps, "fp_rate": rate})
    out["upper_bound"] = np.where(out["false_positives"] > 0, np.nan,
                                  FP_UPPER_BOUND_Z / out["negatives"])
    return out[(out["negatives"] > 0) & out["records_per_file"].notna()]


def fp_rate_figure(df: pd.DataFrame,
                   index_params: Mapping[str, Mapping[str, Any]] | None = None) -> Figure:
    """Measured bloom false-positive rate against the theory of each filter's m and k.

    Left: FP rate vs records per file (the n each probed filter holds), with the
    theoretical curve. Right: the same measurements vs table size, with the theoretical
    value at each batch's n (drawn on the axis floor when it is smaller).
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
            pts["theory"] = theoretical_fp_curve(params, pts["records_per_file"].to_numpy())
            blooms.append((label, name, params, pts))
    with style.paper():
        fig, axes = style.figure(1, 2, height=3.4)
        ax_n, ax_t = axes[0]
        if not blooms:
            fig.delaxes(ax_t)
            return _empty(fig, ax_n, "no bloom index in these runs: no false positives to draw")
        lows = [float(p.get("fpp", 1e-9)) for _l, _n, p, _pts in blooms]
        for *_x, pts in blooms:
            lows += [v for c in ("fp_rate", "upper_bound") for v in pts[c] if v > 0]
        low = max(1e-15, min(lows) / 1e3)
        all_n = pd.concat([pts["records_per_file"] for *_x, pts in blooms])
        n_lo = max(1.0, float(all_n.min()) / 10) if len(all_n) else 10.0
        n_hi = 1.0
        for label, name, params, pts in blooms:
            color, marker = style.index_color(name), style.index_marker(name)
            f = bloom_filter_for(params)
            ne, mx = int(params.get("num_entries", 60000)), int(params.get("max_entries", 1e5))
            hi = max(3 * mx, 2 * float(pts["records_per_file"].max()) if len(pts) else 0)
            n_hi = max(n_hi, hi)
            ns = np.unique(np.round(np.geomspace(n_lo, hi, 90)))
            curve = theoretical_fp_curve(params, ns)
            ax_n.plot(ns, np.where(curve > 0, curve, np.nan), color=color, lw=1.5,
                      label=f"{label}: theory (m={f.bits_per_row:,} bits/row, "
                            f"k={f.hashes_per_row}, {f.type_code})", gid=f"theory:{label}")
            ax_n.axvline(ne, color=color, ls=":", lw=0.8)
            ax_n.text(ne, 0.98, " num_entries", color=color, fontsize=7, va="top",
                      transform=ax_n.get_xaxis_transform())
            meas = pts[pts["fp_rate"] > 0]
            zero = pts[pts["fp_rate"].fillna(0) <= 0]
            for ax, x in ((ax_n, "records_per_file"), (ax_t, "table_records")):
                if len(meas):
                    ax.scatter(meas[x], meas["fp_rate"], color=color, marker=marker, s=28,
                               zorder=3, label=f"{label}: measured")
                if len(zero):
                    ax.scatter(zero[x], zero["upper_bound"], facecolors="none",
                               edgecolors=color, marker="v", s=30, zorder=3,
                               label=f"{label}: 0 FP measured, 95% upper bound 3/negatives")
            if len(pts):
                ax_t.scatter(pts["table_records"], np.maximum(pts["theory"], low), marker="x",
                             color=color, s=24, clip_on=False,
                             label=f"{label}: theory at measured n "
                                                     "(floor = below axis)")
        for ax in (ax_n, ax_t):
            ax.set_yscale("log")
            ax.set_ylim(low, 1.5)
            ax.set_ylabel("false-positive rate (FP / negative probes)")
        ax_n.set_xscale("log")
        ax_n.set_xlim(n_lo, n_hi)
        ax_n.set_xlabel("records per file n (keys in each probed filter)")
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
        fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)
    return fig


# ---- files and bytes read ---------------------------------------------------------------
def files_read_figure(df: pd.DataFrame) -> Figure:
    """Data files and bytes read to tag each batch, as the table grows, per index."""
    df = _frame(df)
    with style.paper():
        fig, axes = style.figure(1, 2, height=2.9)
        ax_f, ax_b = axes[0]
        for label, name, g in iter_series(df):
            x = _before(g, "table_records")
            kw = {**_line_style(df, name, g), "label": label}
            ax_f.plot(x, _num(g, "files_read").fillna(0), **kw)
            ax_b.plot(x, _num(g, "bytes_read").fillna(0) / MIB, **kw)
        for ax in (ax_f, ax_b):
            ax.set_xlabel("table size before the batch (records)")
            ax.xaxis.set_major_formatter(_kilo)
            ax.set_ylim(bottom=0)
        ax_f.set_ylabel("data files read to tag the batch (files)")
        ax_b.set_ylabel("bytes read to tag the batch (MiB)")
        ax_f.set_title("files read per batch")
        ax_b.set_title("bytes read per batch")
        ax_f.legend()
    return fig


# ---- latency ----------------------------------------------------------------------------
PHASES = [("tag_s", "tag", 1.0, None), ("write_s", "write", 0.6, None),
          ("commit_s", "commit", 0.35, None), ("other_s", "other (generate, plan, ...)",
                                               0.12, "///")]


def latency_figure(df: pd.DataFrame) -> Figure:
    """Seconds per batch split into tag / write / commit (and the rest of total_s)."""
    df = _frame(df)
    series = list(iter_series(df))
    if not series:
        with style.paper():
            fig, axes = style.figure(1, 1)
            return _empty(fig, axes[0][0], "no upsert batches")
    ncols = min(2, len(series))
    nrows = math.ceil(len(series) / ncols)
    with style.paper():
        fig, axes = style.figure(nrows, ncols, height=2.6, sharey=True)
        flat = axes.ravel()
        for ax, (label, name, g) in zip(flat, series, strict=False):
            color = style.index_color(name)
            parts = {c: _num(g, c).fillna(0).to_numpy() for c, *_ in PHASES[:3]}
            total = _num(g, "total_s").to_numpy()
            known = sum(parts.values())
            parts["other_s"] = np.clip(np.nan_to_num(total - known, nan=0.0), 0, None)
            x = np.arange(len(g))
            bottom = np.zeros(len(g))
            for col, _name, alpha, hatch in PHASES:
                ax.bar(x, parts[col], bottom=bottom, color=color, alpha=alpha, hatch=hatch,
                       edgecolor=color, linewidth=0.5, width=0.75)
                bottom += parts[col]
            ax.set_xticks(x, [str(int(b)) for b in g["batch"]])
            ax.set_xlabel("batch (0 = initial load)")
            ax.set_title(label, color=color)
        for ax in flat[len(series):]:
            ax.set_axis_off()
        for ax in axes[:, 0]:
            ax.set_ylabel("seconds per batch (s)")
        handles = [Patch(facecolor="grey", alpha=a, hatch=h, edgecolor="grey", label=n)
                   for _c, n, a, h in PHASES]
        fig.legend(handles=handles, loc="outside upper center", ncols=4, fontsize=7.5)
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
                       bucket_counts: Mapping[str, Sequence[int]] | None = None) -> Figure:
    """Records per bucket, sorted, per bucket index, with max/mean and CoV.

    ``bucket_counts`` maps a series (index) to the record count of every file group of
    its latest snapshot (``reports.load`` reads them from the tables); without it the
    figure falls back to the last batch's ``bucket_records_max/mean/cov`` metrics.
    """
    df = _frame(df)
    bucket_counts = dict(bucket_counts or {})
    labels = bucket_series(df, bucket_counts)
    if not labels:
        with style.paper():
            fig, axes = style.figure(1, 1, height=2.0)
            return _empty(fig, axes[0][0], "no bucket index in these runs")
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
                ax.axhline(s["mean"], color="black", lw=0.8, ls="--", label="mean")
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
            ax.set_title(f"{label}: {int(s['buckets'])} buckets ({src})\n"
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
                y = _num(g, col)
                ok = (y > 0) & (keys > 0)
                if not ok.any():
                    zero[col].append(label)
                    continue
                ax.plot(keys[ok], y[ok] / MIB, **_line_style(df, name, g),
                        label=f"{label} ({y[ok].iloc[-1] / keys[ok].iloc[-1]:.1f} B/key)")
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
        axes[0][1].set_title("disk (bloom footers, RLI)")
    return fig


# ---- rescale ----------------------------------------------------------------------------
RESCALE_METRICS = [("total_s", "time (s)", 1.0), ("bytes_read", "bytes read (MiB)", MIB),
                   ("bytes_written", "bytes written (MiB)", MIB),
                   ("shuffle_bytes", "shuffle bytes (MiB)", MIB),
                   ("records_rewritten", "records rewritten", 1.0),
                   ("files_written", "files written", 1.0)]
MODE_HATCH = {"rehash": None, "overwrite": "///"}


def has_rescale(df: pd.DataFrame) -> bool:
    """Whether any row is a rescale (the rescale figure is drawn only then)."""
    return "operation" in df.columns and (df["operation"].astype(str) == "rescale").any()


def rescale_figure(df: pd.DataFrame) -> Figure | None:
    """Cost of each rescale, rehash vs overwrite (None when there are no rescale rows)."""
    df = _frame(df)
    if not has_rescale(df):
        return None
    rs = df[df["operation"] == "rescale"].copy()
    mode = rs["mode"].astype(str) if "mode" in rs.columns else pd.Series("rescale", rs.index)
    rs["_mode"] = mode.fillna("rescale")
    metrics = [(c, lab, s) for c, lab, s in RESCALE_METRICS
               if c in rs.columns and _num(rs, c).notna().any()]
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
                vals = _num(g, col) / scale
                ax.bar(i, vals.median(), color=style.index_color(name),
                       hatch=MODE_HATCH.get(mode_, ".."), edgecolor="black", linewidth=0.5)
                if len(vals) > 1:
                    ax.scatter([i] * len(vals), vals, color="black", s=6, zorder=3)
            ax.set_xticks(range(len(groups)), [m for (_lab, m), _ in groups], fontsize=7,
                          rotation=30, ha="right")
            ax.set_ylabel(ylab)
            ax.set_title(ylab.split(" (")[0])
        for ax in flat[len(metrics):]:
            ax.set_axis_off()
        seen = list(dict.fromkeys((lab, _index_of(g)) for (lab, _m), g in groups))
        fig.legend(handles=[Patch(color=style.index_color(n), label=lab) for lab, n in seen],
                   loc="outside lower center", ncols=min(4, len(seen)), fontsize=7)
        fig.suptitle("rescale cost, rehash vs overwrite (median of rescales; dots = runs)",
                     fontsize=9)
    return fig


def legend_handles(names: Sequence[str]) -> list[Line2D]:
    """Legend entries of the index colours (for composite figures in notebooks)."""
    return [Line2D([], [], color=style.index_color(n), marker=style.index_marker(n), label=n)
            for n in names]
