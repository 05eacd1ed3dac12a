"""Regression charts from asv results: each ``track_``, ``time_`` and ``peakmem_``
benchmark's value over commits (times in s/ms/µs/ns and bytes in bytes/KiB/MiB/GiB by
magnitude; a series asv skipped at every commit is named, not drawn).

Reads asv's own files (format version 2 of asv 0.6): ``<results>/benchmarks.json`` for each
benchmark's type, unit and parameters, and ``<results>/<machine>/<commit>-<env>.json`` for
values (``result_columns`` names the columns of every benchmark's row; ``result`` holds one
value per parameter combination, in the order of the cartesian product of ``params``).
CI keeps the PNGs, so a regression is visible without running ``asv publish``.
"""

from __future__ import annotations

import itertools
import json
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import ScalarFormatter

from reports import style


@dataclass
class AsvBenchmark:
    """What benchmarks.json says about one benchmark."""

    name: str
    type: str
    unit: str
    params: list[list[str]]
    param_names: list[str]


def _load_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def read_benchmarks(results_dir: str | Path) -> dict[str, AsvBenchmark]:
    """benchmarks.json of a results directory (empty if absent)."""
    p = Path(results_dir) / "benchmarks.json"
    if not p.exists():
        return {}
    out = {}
    for name, b in _load_json(p).items():
        if not isinstance(b, dict):
            continue  # the "version" entry
        out[name] = AsvBenchmark(name, b.get("type", ""), b.get("unit", ""),
                                 b.get("params") or [], b.get("param_names") or [])
    return out


def read_results(results_dir: str | Path) -> pd.DataFrame:
    """Every (machine, commit, env, benchmark, parameter combination) value as a row."""
    root = Path(results_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"no asv results directory {results_dir}")
    meta = read_benchmarks(root)
    rows = []
    for path in sorted(root.glob("*/*.json")):
        if path.name == "machine.json":
            continue
        try:
            d = _load_json(path)
        except (OSError, json.JSONDecodeError):
            continue
        if "results" not in d or "commit_hash" not in d:
            continue
        cols = d.get("result_columns") or ["result", "params"]
        for name, row in d["results"].items():
            rec = dict(zip(cols, row, strict=False))
            values = rec.get("result")
            params = rec.get("params") or (meta[name].params if name in meta else [])
            if values is None:
                continue
            if not isinstance(values, list):
                values = [values]
            combos = list(itertools.product(*params)) if params else [()]
            names = meta[name].param_names if name in meta else []
            for combo, v in zip(combos, values, strict=False):
                rows.append({"machine": path.parent.name, "commit": d["commit_hash"],
                             "date": d.get("date"), "env": d.get("env_name", ""),
                             "benchmark": name,
                             "params": ", ".join(f"{n}={c}" if n else str(c) for n, c in
                                                 itertools.zip_longest(names, combo)),
                             "combo": combo, "value": np.nan if v is None else float(v)})
    return pd.DataFrame(rows, columns=["machine", "commit", "date", "env", "benchmark",
                                       "params", "combo", "value"])


KIND_ALIASES = {"peakmem": "peakmemory", "mem": "memory"}  # name prefix -> asv type
BYTE_UNITS = [(2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "bytes")]
TIME_UNITS = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")]
KIND_LABELS = {"time": "time", "peakmemory": "peak memory", "memory": "memory"}
DEFAULT_KINDS = ("track", "time", "peakmemory")
ALL_SKIPPED = "skipped at every commit: asv recorded no value"


def _kind(name: str, meta: dict[str, AsvBenchmark]) -> str:
    """asv's benchmark type, from benchmarks.json or else the name's prefix (``peakmem_``
    is type ``peakmemory`` in asv's files)."""
    if name in meta and meta[name].type:
        kind = meta[name].type
    else:
        kind = name.rsplit(".", 1)[-1].split("_", 1)[0]
    return KIND_ALIASES.get(kind, kind)


def _index_param(combo: tuple) -> tuple[str | None, tuple]:
    """The index name among a benchmark's parameters (if any), and the other parameters."""
    import indexes

    known = set(indexes.names()) | set(style.FIXED)
    for c in combo:
        name = str(c).strip("'\"")
        if name in known:
            return name, tuple(x for x in combo if x is not c)
    return None, tuple(combo)


def _is_bytes(name: str, kind: str, unit: str) -> bool:
    """Memory benchmarks, and tracks whose unit (or, unit-less, name) says bytes."""
    if kind in ("peakmemory", "memory") or re.search(r"\bbytes?\b", unit, re.I):
        return True
    return unit in ("", "unit") and "bytes" in name.rsplit(".", 1)[-1]


def _pick(units: list[tuple[float, str]], peak: float) -> tuple[float, str]:
    """The largest unit the peak value reaches (so ticks read 1.5 MiB, not 1.5e6); the
    base unit when there is no value to go by."""
    if peak <= 0:
        return next(u for u in units if u[0] == 1.0)
    for factor, symbol in units:
        if peak >= factor:
            return factor, symbol
    return units[-1]


def axis_unit(name: str, kind: str, unit: str, values: Iterable[float]) -> tuple[float, str]:
    """(divisor, y label) for a benchmark: bytes in bytes/KiB/MiB/GiB and seconds in
    ns/µs/ms/s by magnitude, so the axis needs no ×1e6 offset text."""
    finite = np.abs(np.asarray(list(values), dtype=float))
    peak = float(finite[np.isfinite(finite)].max(initial=0.0))
    factor, label = 1.0, unit or "value"
    if _is_bytes(name, kind, unit):
        factor, symbol = _pick(BYTE_UNITS, peak)
        label = (re.sub(r"\bbytes?\b", symbol, unit, flags=re.I)
                 if re.search(r"\bbytes?\b", unit, re.I) else symbol)
    elif kind == "time" or re.fullmatch(r"seconds?|s", unit):
        factor, label = _pick(TIME_UNITS, peak)
    return factor, f"{KIND_LABELS[kind]} ({label})" if kind in KIND_LABELS else label


def _draw_series(ax, g: pd.DataFrame, name: str, pos: dict[str, int],
                 factor: float) -> tuple[list, list[str]]:
    """A line per (machine, parameters); a series skipped at every commit draws nothing
    and is returned by label instead, so the legend lists only what is on the chart."""
    multi_machine = g["machine"].nunique() > 1
    rests = list(dict.fromkeys(_index_param(tuple(c))[1] for c in g["combo"]))
    lines, skipped = [], []
    for i, ((machine, params), s) in enumerate(g.groupby(["machine", "params"], sort=True)):
        label = (params or name.rsplit(".", 1)[-1]) + (f" [{machine}]" if multi_machine
                                                       else "")
        if not np.isfinite(s["value"].to_numpy(dtype=float)).any():
            skipped.append(label)
            continue
        s = s.assign(x=s["commit"].map(pos)).sort_values("x")
        index, rest = _index_param(tuple(s["combo"].iloc[0]))
        # index colour when a parameter is an index; line style from the other params
        color = style.index_color(index) if index else style.OKABE_ITO[i % 8]
        ls = style.LINESTYLES[rests.index(rest) % 4] if index else "-"
        lines += ax.plot(s["x"], s["value"] / factor, color=color, ls=ls, marker="o",
                         ms=3.5, label=label)
    return lines, skipped


def _dash_period(line) -> float:
    """Points one repeat of a line's dash pattern takes (0 for solid lines)."""
    key = {"--": "dashed", "-.": "dashdot", ":": "dotted"}.get(line.get_linestyle())
    if key is None:
        return 0.0
    scale = line.get_linewidth() if plt.rcParams["lines.scale_dashes"] else 1.0
    return sum(plt.rcParams[f"lines.{key}_pattern"]) * scale


def _legend(fig, lines: list, skipped: list[str], fontsize: float = 6.5) -> None:
    """Legend of the drawn lines, handles long enough that a full dash period shows on
    each side of the marker (at the default length a dashed handle looks solid)."""
    need = max((2 * _dash_period(h) + h.get_markersize()) / fontsize for h in lines)
    title = None
    if skipped:
        title = textwrap.fill("skipped at every commit: " + "; ".join(skipped), 120)
    fig.legend(handles=lines, labels=[h.get_label() for h in lines],
               loc="outside lower center", ncols=2, fontsize=fontsize,
               title=title, title_fontsize=fontsize, handlelength=max(2.0, need))


def _y_from_zero(ax, values: np.ndarray) -> None:
    """Non-negative values (counts, times, bytes) get a y axis from 0; all zeros get 0..1
    instead of matplotlib's -0.05..0.05, so no negative tick appears."""
    finite = values[np.isfinite(values)]
    if finite.size == 0 or finite.min() < 0:
        return
    top = ax.get_ylim()[1] if finite.max() > 0 else 1.0
    ax.set_ylim(0.0, top)


def _note_all_skipped(ax) -> None:
    """Said in the chart, instead of an empty legend and a y scale with nothing on it."""
    ax.set_yticks([])
    ax.text(0.5, 0.5, ALL_SKIPPED, transform=ax.transAxes, ha="center", va="center",
            fontsize=8, color="0.35")


def benchmark_chart(df: pd.DataFrame, name: str, meta: AsvBenchmark | None = None):
    """One benchmark's values over commits (x: commits by date), a line per parameter set."""
    g = df[df["benchmark"] == name].copy()
    order = (g.groupby("commit")["date"].min().sort_values().index.tolist())
    pos = {c: i for i, c in enumerate(order)}
    kind = _kind(name, {name: meta} if meta else {})
    factor, ylabel = axis_unit(name, kind, meta.unit if meta else "", g["value"])
    with style.paper():
        fig, axes = style.figure(1, 1, height=3.0)
        ax = axes[0][0]
        lines, skipped = _draw_series(ax, g, name, pos, factor)
        ax.set_xticks(range(len(order)), [c[:8] for c in order], rotation=45, ha="right",
                      fontsize=7)
        ax.set_xlabel("commit (oldest → newest)")
        ax.set_ylabel(ylabel)
        ax.yaxis.set_major_formatter(ScalarFormatter(useOffset=False))
        ax.set_title(name, fontsize=9)
        _y_from_zero(ax, g["value"].to_numpy(dtype=float) / factor)
        if lines:
            _legend(fig, lines, skipped)
        else:
            _note_all_skipped(ax)
    return fig


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_asv_charts(results_dir: str | Path, out: str | Path,
                     kinds: Iterable[str] = DEFAULT_KINDS) -> list[Path]:
    """A PNG per benchmark of the given asv types (default: ``track_*``, ``time_*`` and
    ``peakmem_*``); a benchmark skipped at every commit still gets one, saying so."""
    df = read_results(results_dir)
    meta = read_benchmarks(results_dir)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kinds = {KIND_ALIASES.get(k, k) for k in kinds}
    paths = []
    for name in sorted(df["benchmark"].unique()) if len(df) else []:
        if _kind(name, meta) not in kinds:
            continue
        fig = benchmark_chart(df, name, meta.get(name))
        path = out / f"{_safe(name)}.png"
        fig.savefig(path, dpi=style.RC["savefig.dpi"])
        plt.close(fig)
        paths.append(path)
    return paths
