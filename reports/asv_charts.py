"""Regression charts from asv results: each tracked benchmark's value over commits.

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
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

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


def _kind(name: str, meta: dict[str, AsvBenchmark]) -> str:
    if name in meta and meta[name].type:
        return meta[name].type
    return name.rsplit(".", 1)[-1].split("_", 1)[0]


def _index_param(combo: tuple) -> tuple[str | None, tuple]:
    """The index name among a benchmark's parameters (if any), and the other parameters."""
    import indexes

    known = set(indexes.names()) | set(style.FIXED)
    for c in combo:
        name = str(c).strip("'\"")
        if name in known:
            return name, tuple(x for x in combo if x is not c)
    return None, tuple(combo)


def benchmark_chart(df: pd.DataFrame, name: str, meta: AsvBenchmark | None = None):
    """One benchmark's values over commits (x: commits by date), a line per parameter set."""
    g = df[df["benchmark"] == name].copy()
    order = (g.groupby("commit")["date"].min().sort_values().index.tolist())
    pos = {c: i for i, c in enumerate(order)}
    with style.paper():
        fig, axes = style.figure(1, 1, height=3.0)
        ax = axes[0][0]
        multi_machine = g["machine"].nunique() > 1
        rests = list(dict.fromkeys(_index_param(tuple(c))[1] for c in g["combo"]))
        for i, ((machine, params), s) in enumerate(g.groupby(["machine", "params"],
                                                              sort=True)):
            s = s.assign(x=s["commit"].map(pos)).sort_values("x")
            index, rest = _index_param(tuple(s["combo"].iloc[0]))
            # index colour when a parameter is an index; line style from the other params
            color = style.index_color(index) if index else style.OKABE_ITO[i % 8]
            ls = style.LINESTYLES[rests.index(rest) % 4] if index else "-"
            label = (params or name.rsplit(".", 1)[-1]) + (f" [{machine}]" if multi_machine
                                                           else "")
            ax.plot(s["x"], s["value"], color=color, ls=ls, marker="o", ms=3.5, label=label)
        ax.set_xticks(range(len(order)), [c[:8] for c in order], rotation=45, ha="right",
                      fontsize=7)
        ax.set_xlabel("commit (oldest → newest)")
        unit = meta.unit if meta and meta.unit else "value"
        ax.set_ylabel(unit)
        ax.set_title(name, fontsize=9)
        if ax.lines:
            fig.legend(loc="outside lower center", ncols=2, fontsize=6.5)
    return fig


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def write_asv_charts(results_dir: str | Path, out: str | Path,
                     kinds: Iterable[str] = ("track",)) -> list[Path]:
    """A PNG per benchmark of the given kinds (default: ``track_*``); returns the paths."""
    df = read_results(results_dir)
    meta = read_benchmarks(results_dir)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kinds = set(kinds)
    paths = []
    for name in sorted(df["benchmark"].unique()) if len(df) else []:
        if _kind(name, meta) not in kinds:
            continue
        if df.loc[df["benchmark"] == name, "value"].notna().sum() == 0:
            continue
        fig = benchmark_chart(df, name, meta.get(name))
        path = out / f"{_safe(name)}.png"
        fig.savefig(path, dpi=style.RC["savefig.dpi"])
        plt.close(fig)
        paths.append(path)
    return paths
