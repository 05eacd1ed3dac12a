"""What a run found, first: the report's opening screen (issue #42, point 3).

The indexes that ran are ranked on the criteria the run measured — seconds per upsert
batch, files read to tag, false positives, bucket skew, index bytes — in sentences a
Hudi user can act on, with the settings that shape the result (workload, table type,
file sizes) stated beside them rather than in a parameter dump. Every figure is a
median over the upsert batches after the initial load (batch ≥ 1) of the rows the run
wrote; a simulated series' seconds are its model's and say so. No index is named here:
the series are whatever ran.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.data import is_sim
from reports.figures.common import _num
from reports.units import human_bytes
from tableformat.write_config import MAX_FILE_SIZE

# fullest bucket over the mean at or below which a run's buckets are evenly filled
EVEN_BUCKETS = 1.2
SKEWED_PRESETS = "`--workload zipf-skewed`, `partition-skewed`, `growing` or `growth-with-resize`"


@dataclass(frozen=True)
class Ranked:
    """One series' place on one criterion."""

    series: str
    value: float
    modelled: bool = False


@dataclass
class Conclusion:
    """The ranking by seconds per batch, sentences on the other criteria, and the
    settings that shape them."""

    ranking: list[Ranked] = field(default_factory=list)
    seconds_of: str = ""  # what the ranking's seconds are
    findings: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)


def _later_upserts(df: pd.DataFrame) -> pd.DataFrame:
    up = df[df["operation"].astype(str) == "upsert"] if "operation" in df.columns else df
    later = up[up["batch"] >= 1] if (up["batch"] >= 1).any() else up
    return later


def _median(g: pd.DataFrame, cols: tuple[str, ...]) -> float:
    """Median over the rows of the columns' sum per row (NaN: none of them measured)."""
    if not any(c in g.columns and _num(g, c).notna().any() for c in cols):
        return float("nan")
    total = sum(_num(g, c).fillna(0.0) for c in cols)
    return float(total.median())


def _seconds(g: pd.DataFrame) -> tuple[float, str, bool]:
    """A series' seconds per batch: tag + write + commit (where an index such as the
    RLI or a key-value store is updated) when the phases were timed, the whole upsert in
    throughput mode, the model's three phases for a simulated series."""
    if is_sim(g).all():
        return (_median(g, ("model_tag_s", "model_write_s", "model_commit_s")),
                "tag + write + commit", True)
    if _num(g, "tag_s").notna().any():
        return _median(g, ("tag_s", "write_s", "commit_s")), "tag + write + commit", False
    return _median(g, ("total_s",)), "the whole upsert (throughput mode times no phase)", False


def _fmt_s(v: float) -> str:
    return f"{v:.3g} s" if v < 10 else f"{v:,.1f} s"


def _fmt_n(v: float) -> str:
    return f"{v:,.0f}"


def _names(series: list[str]) -> str:
    return ", ".join(series[:-1]) + f" and {series[-1]}" if len(series) > 1 else series[0]


def _ranking(later: pd.DataFrame) -> tuple[list[Ranked], str]:
    ranked, whats = [], set()
    for s, g in later.groupby("series", sort=False):
        v, what, modelled = _seconds(g)
        if math.isfinite(v):
            ranked.append(Ranked(str(s), v, modelled))
            whats.add(what)
    ranked.sort(key=lambda r: r.value)
    return ranked, " / ".join(sorted(whats))


def _per_series(later: pd.DataFrame, cols: tuple[str, ...]) -> dict[str, float]:
    return {str(s): _median(g, cols) for s, g in later.groupby("series", sort=False)}


def _reads(later: pd.DataFrame) -> list[str]:
    """Files read to tag (footers and key columns) and false positives."""
    files = _per_series(later, ("files_read", "footers_read"))
    files = {s: v for s, v in files.items() if math.isfinite(v)}
    if not files:
        return []
    readers = sorted((s for s, v in files.items() if v > 0), key=lambda s: -files[s])
    none = [s for s, v in files.items() if v == 0]
    out = []
    if readers:
        fps = _per_series(later, ("false_positives",))
        parts = []
        for s in readers:
            fp = fps.get(s, float("nan"))
            extra = f", {_fmt_n(fp)} of them false positives" if math.isfinite(fp) and fp > 0 \
                else ""
            parts.append(f"{s} {_fmt_n(files[s])}{extra}")
        out.append("Files read to tag a batch (footers and key columns): "
                   + "; ".join(parts) + ".")
    if none:
        out.append(f"{_names(none)} read no file of the table to tag: "
                   "each locates a key without opening the table's files.")
    return out


def _skew(df: pd.DataFrame) -> list[str]:
    """Fullest bucket over the mean at the last batch, for series with buckets."""
    up = df[df["operation"].astype(str) == "upsert"] if "operation" in df.columns else df
    ratio = {}
    for s, g in up.groupby("series", sort=False):
        last = g.sort_values("batch").iloc[-1]
        mx, mean = last.get("bucket_records_max"), last.get("bucket_records_mean")
        if pd.notna(mx) and pd.notna(mean) and float(mean) > 0:
            ratio[str(s)] = float(mx) / float(mean)
    if not ratio:
        return []
    order = sorted(ratio, key=lambda s: -ratio[s])
    text = "Fullest bucket over the mean after the last batch: " + "; ".join(
        f"{s} {ratio[s]:.2f}×" for s in order) + "."
    if max(ratio.values()) <= EVEN_BUCKETS:
        text += (f" The buckets are evenly filled here, so the bucket indexes look alike: "
                 f"a skewed or growing workload ({SKEWED_PRESETS}) tells them apart.")
    return [text]


def _index_bytes(df: pd.DataFrame) -> list[str]:
    up = df[df["operation"].astype(str) == "upsert"] if "operation" in df.columns else df
    out = []
    for col, what in (("index_mem_bytes", "memory"), ("index_disk_bytes", "storage")):
        last = {}
        for s, g in up.groupby("series", sort=False):
            v = _num(g.sort_values("batch"), col).dropna()
            if len(v) and v.iloc[-1] > 0:
                last[str(s)] = float(v.iloc[-1])
        if last:
            order = sorted(last, key=lambda s: -last[s])
            out.append(f"Index {what} after the last batch: "
                       + "; ".join(f"{s} {human_bytes(last[s])}" for s in order) + ".")
    return out


def _settings(df: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Workload, sizes, table types and the files the run wrote: what shapes the ranking."""
    out = []
    for info in runs.values():
        w = info.get("workload") or {}
        if w:
            about = str(w.get("description") or "").rstrip(".")
            keys = str(w.get("key_format") or "")
            if keys and keys not in about:
                about = f"{about}, {keys} keys" if about else f"{keys} keys"
            out.append(f"Workload `{w.get('name', '?')}`: {about} "
                       f"({w.get('initial_records', 0):,} records loaded, then "
                       f"{w.get('batches', 0)} batches of {w.get('batch_size', 0):,}).")
    types = sorted(df["table_type"].dropna().astype(str).unique()) \
        if "table_type" in df.columns else []
    if types:
        out.append("Table type: " + ", ".join(
            {"cow": "copy-on-write", "mor": "merge-on-read"}.get(t, t) for t in types) + ".")
    later = _later_upserts(df)
    sizes = {}
    for s, g in later.groupby("series", sort=False):
        n, b = _num(g, "files_written").sum(), _num(g, "bytes_written").sum()
        if n > 0 and b > 0:
            sizes[str(s)] = b / n
    if sizes and max(sizes.values()) < MAX_FILE_SIZE / 8:
        lo, hi = min(sizes.values()), max(sizes.values())
        out.append(f"Files written average {human_bytes(lo)} to {human_bytes(hi)}, far below "
                   f"Hudi's {human_bytes(MAX_FILE_SIZE)} target (hoodie.parquet.max.file."
                   "size): costs per file (footers, filter probes, files read) weigh more "
                   "here than on a table at Hudi's sizing.")
    return out


def conclude(df: pd.DataFrame, runs: Mapping[str, Mapping[str, Any]] | None = None
             ) -> Conclusion:
    """The conclusion of a report's rows (with ``series``) and their runs' run.json."""
    if "series" not in df.columns or df.empty:
        return Conclusion()
    later = _later_upserts(df)
    ranking, seconds_of = _ranking(later)
    findings = []
    if len(ranking) > 1:
        best, worst = ranking[0], ranking[-1]
        ratio = worst.value / best.value if best.value > 0 else float("nan")
        findings.append(
            f"Fastest upsert: {best.series} at {_fmt_s(best.value)} per batch; slowest "
            f"{worst.series} at {_fmt_s(worst.value)}"
            + (f" ({ratio:.1f}× as long)." if math.isfinite(ratio) else "."))
    findings += _reads(later) + _skew(df) + _index_bytes(df)
    return Conclusion(ranking, seconds_of, findings, _settings(df, runs or {}))


def conclusion_html(c: Conclusion) -> str:
    """The conclusion as the page's first section."""
    if not c.ranking and not c.findings:
        return ""
    rows = "".join(
        f"<tr><td>{i}</td><th>{html.escape(r.series)}</th><td>{_fmt_s(r.value)}"
        f"{' (modelled)' if r.modelled else ''}</td></tr>"
        for i, r in enumerate(c.ranking, 1))
    table = (f"<table><thead><tr><th>rank</th><th>series</th><th>seconds per batch "
             f"({html.escape(c.seconds_of)})</th></tr></thead><tbody>{rows}</tbody></table>"
             if rows else "")
    items = "".join(f"<li>{html.escape(t)}</li>" for t in c.findings)
    settings = "".join(f"<li>{html.escape(t)}</li>" for t in c.settings)
    return ("<h2>What this run found</h2><p class=muted>medians over the upsert batches "
            "after the initial load (batch ≥ 1)</p>" + table + f"<ul>{items}</ul>"
            + (f"<p><b>What shapes this result</b></p><ul>{settings}</ul>" if settings
               else ""))


def conclusion_text(c: Conclusion) -> list[str]:
    """The conclusion as terminal lines (the CLI wraps them to its width)."""
    lines = []
    if c.ranking:
        lines.append(f"ranked by seconds per batch ({c.seconds_of}, median of batches ≥ 1):")
        lines += [f"  {i}. {r.series}: {_fmt_s(r.value)}{' (modelled)' if r.modelled else ''}"
                  for i, r in enumerate(c.ranking, 1)]
    return lines + c.findings + c.settings
