"""The report directory: PNG figures beside a self-contained, offline ``index.html``.

No external CSS, scripts or fonts: the directory can be zipped, mailed or attached to CI
and opened anywhere. Figures are PNGs beside the page, so a paper can use them directly.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd

from metrics.contract import is_count_column
from reports import figures as F
from reports import style
from reports.conclusion import conclude, conclusion_html
from reports.data import RunData, is_sim, load, shaping_versions, version_warning
from reports.fidelity import FIDELITY_CSV
from reports.fidelity import summary_table as fidelity_summary
from reports.peer_pairs import pairs_figure, pairs_table
from reports.query import has_queries, query_figure, query_table
from reports.stream import stream_timeline_figure
from reports.units import with_unit


@dataclass(frozen=True)
class FigureSpec:
    """One figure of the report: its file name, caption and how to draw it."""

    file: str
    title: str
    caption: str
    draw: Callable[[RunData], Any]  # -> Figure | None (None: not applicable, not written)


FIGURES: list[FigureSpec] = [
    FigureSpec("fp_rate.png", "Bloom false positives",
               "Measured false-positive rate (false positives / probes of keys not in the "
               "file) against records per file and table size; lines: theory from each "
               "filter's own m (bits per row) and k (hashes). Hollow triangles: batches "
               "with 0 false positives, drawn at the 95% upper bound 3/negatives.",
               lambda r: F.fp_rate_figure(r.df, r.index_params)),
    FigureSpec("files_read.png", "Files and bytes read to tag",
               "Data files and bytes each index read to tag a batch, against the table "
               "size before the batch. Simulated series are dashed; their bytes are "
               "modelled (model_bytes_read).", lambda r: F.files_read_figure(r.df)),
    FigureSpec("scale.png", "Cost vs table size",
               "Files read (counted) and tag seconds per upsert batch (≥ 1) against the "
               "table size before the batch (log scales; x linear when the sizes span "
               "less than a decade): bloom reads every candidate file, so its line follows "
               "the table's file count (flat while batches only top up existing files, "
               "growing over a sweep of table sizes); bucket indexes read none (drawn on "
               "the dotted 0 line). Tag "
               "seconds are measured (tag_s) for real runs and modelled (model_tag_s) for "
               "simulated ones, drawn dashed. Drawn only when a series has at least two "
               "such batches.", lambda r: F.scale_figure(r.df)),
    FigureSpec("hudi_side_by_side.png", "Beside Hudi's own writer",
               "Each index that Hudi has beside Hudi's own Spark writer on the same batches "
               "(compare --peers hudi), per table type: files read to tag, false "
               "positives, bytes written and seconds per upsert batch (medians of batches "
               "≥ 1). Ours solid, Hudi's hatched; Hudi's figures are counted from its "
               "commits' write stats, its bloom lookup's log lines and its Spark jobs "
               "(docs/peers.md); 'n/a': not counted on that side (no bloom lookup).",
               lambda r: pairs_figure(r.df)),
    FigureSpec("latency.png", "Latency per batch",
               "Seconds per batch split into tag, write and commit; 'other' is the rest of "
               "total_s (batch generation, validation, planning). Simulated series "
               "(dashed edges) show modelled seconds (model_*), not measurements.",
               lambda r: F.latency_figure(r.df)),
    FigureSpec("bucket_sizes.png", "Bucket size distribution",
               "Records per bucket file group of each bucket index's latest snapshot, "
               "sorted; max/mean and coefficient of variation (std/mean).",
               lambda r: F.bucket_size_figure(r.df, r.bucket_counts)),
    FigureSpec("bucket_growth.png", "Buckets as the table grows",
               "Every series with buckets (bucket indexes; Paimon tables when --peers paimon "
               "ran) against the keys in the table after each batch: (a) buckets over all "
               "partitions, (b) coefficient of variation of records per bucket, (c) index "
               "bytes per key on disk (solid: RLI files, Paimon's HASH index files) and in "
               "memory (dashed, where counted: dynamic-rli's caches), (d) seconds per "
               "upsert batch. Drawn only when a series opens buckets online "
               "(buckets_created).",
               lambda r: F.bucket_growth_figure(r.df)),
    FigureSpec("index_bytes.png", "Index memory and disk",
               "Bytes the index keeps in memory (caches) and on disk (bloom footers, RLI) "
               "vs keys in the table; the legend gives bytes per key at the last batch.",
               lambda r: F.index_bytes_figure(r.df)),
    FigureSpec("rescale.png", "Rescale and resize cost",
               "Each rescale's time, bytes read/written, shuffle bytes: rehash (local "
               "split) vs overwrite (full reshuffle, also partition-bucket's offline "
               "rescale) vs consistent-hashing's resize (split/merge clustering, with the "
               "bytes its dual writes cost). Drawn only when rescale rows exist.",
               lambda r: F.rescale_figure(r.df)),
    FigureSpec("query.png", "Queries",
               "indexbench query over each index's table. (a) Data files read per key "
               "looked up (files_read_per_key); hatched: files read that held none of the "
               "keys looked up in them (fp_file_reads, 'FP': bloom's false positives). "
               "(b) p50 and p99 seconds per key batch (one Spark job each). (c) Shuffle "
               "write bytes and (d) seconds of each group-by and join (and lookup) per "
               "index and plan: bucket-aware plans solid, Spark's default plan hatched; 'no "
               "Exchange' marks plans that executed without a shuffle. Bars: median of "
               "an index's rows (runs, tables); dots: the rows, when there are several. "
               "Drawn only when query rows exist.", lambda r: query_figure(r.df)),
    FigureSpec("write_read.png", "Write cost against read cost",
               "Per index and table type (compare --table-types cow,mor): (a) write "
               "seconds per upsert batch, compactions spread over the batches, against "
               "the lookups' p50 seconds per key batch; (b) bytes written per batch "
               "against bytes read per key looked up (base and log files). Filled "
               "circles: copy-on-write; hollow squares: merge-on-read; an arrow leads "
               "from an index's copy-on-write point to its merge-on-read one. Drawn only "
               "when a series has both upserts and lookups.",
               lambda r: F.write_read_figure(r.df)),
    FigureSpec("stream_timeline.png", "Stream timeline",
               "indexbench stream, per micro-batch: (a) processing seconds (foreachBatch "
               "wall time) and freshness (a batch's landing to its commit becoming "
               "visible); (b) the index's cache bytes (index_mem_bytes; the assigners' "
               "total and largest where reported), evictions (▼) and bootstraps (▲) marked "
               "at the micro-batches where they happened. Drawn only for stream runs.",
               lambda r: stream_timeline_figure(r.df)),
]

# Columns of the per-index summary table that are summed over the run (work done).
ADDITIVE = {"records", "inserts", "updates", "deletes", "tag_s", "write_s", "commit_s", "total_s",
            "candidate_files", "files_read", "bytes_read", "bloom_checks", "bloom_positives",
            "false_positives", "files_written", "bytes_written", "records_rewritten"}
NOT_METRICS = {"batch", "run_id", "index", "workload", "operation", "instant", "mode", "run",
               "series", "run_mode"}
# Modelled figures of simulated series shown in the comparison table (model_<column>).
MODEL_SUMMARY = ("tag_s", "write_s", "total_s", "bytes_read")


def _additive(col: str) -> bool:
    return col in ADDITIVE or col.removeprefix("model_") in ADDITIVE


def declared_specs() -> list[FigureSpec]:
    """The figures the registered indexes declare (``DeclaredFigures.FIGURES``), drawn by
    :func:`reports.figures.declared_figure`: an index adds a figure of its own columns
    without naming itself here."""
    import indexes

    return [FigureSpec(d.file, d.title, d.caption,
                       lambda r, d=d: F.declared_figure(r.df, d))
            for d in indexes.declared_figures()]


def write_figures(run: RunData, out: str | Path) -> list[tuple[FigureSpec, Path]]:
    """Draw every applicable figure into ``out``; returns (spec, path) of those written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in [*FIGURES, *declared_specs()]:
        fig = spec.draw(run)
        if fig is None:
            (out / spec.file).unlink(missing_ok=True)  # stale from an earlier report
            continue
        path = out / spec.file
        fig.savefig(path, dpi=style.RC["savefig.dpi"])
        plt.close(fig)
        written.append((spec, path))
    return written


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return "—"
    if isinstance(v, int | float):
        f = float(v)
        if f.is_integer() and abs(f) < 1e15:
            return f"{int(f):,}"
        return f"{f:.3g}" if abs(f) < 1 else f"{f:,.2f}"
    return html.escape(str(v))


def _table(df: pd.DataFrame, index_name: str = "", units: bool = False) -> str:
    """``df`` as an HTML table; ``units``: its row labels are metric columns, shown with
    their unit."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join(
        f"<tr><th>{html.escape(with_unit(str(i)) if units else str(i))}</th>"
        + "".join(f"<td>{_fmt(v)}</td>" for v in r)
        + "</tr>" for i, r in zip(df.index, df.itertuples(index=False), strict=True))
    return (f"<table><thead><tr><th>{html.escape(index_name)}</th>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


# The two aggregates differ in which batches they take, and the column names say so.
MEDIAN_COL = "median per batch (≥1)"
TOTAL_COL = "total (all batches, load incl.)"


def index_summary(g: pd.DataFrame) -> pd.DataFrame:
    """One index's metrics: median per upsert batch (≥ 1), total over every batch (the
    initial load included), last batch.

    A simulated series' measured seconds/bytes are empty (not shown); its ``model_*``
    rows hold the modelled figures.
    """
    up = g[g["operation"] == "upsert"].sort_values("batch")
    if not len(up):
        return pd.DataFrame(columns=[MEDIAN_COL, TOTAL_COL, "last batch"])
    later = up[up["batch"] >= 1] if (up["batch"] >= 1).any() else up
    cols = [c for c in up.columns if c not in NOT_METRICS
            and pd.api.types.is_numeric_dtype(up[c]) and up[c].notna().any()]
    rows = {}
    for c in cols:
        median = later[c].median()
        if is_count_column(c) and pd.notna(median):  # a count's median is a count
            median = math.floor(median + 0.5)
        rows[c] = {MEDIAN_COL: median,
                   TOTAL_COL: up[c].sum() if _additive(c) else float("nan"),
                   "last batch": up[c].iloc[-1] if len(up) else float("nan")}
    return pd.DataFrame.from_dict(rows, orient="index")


def comparison(df: pd.DataFrame) -> pd.DataFrame:
    """``indexbench.api.summary`` per series (the table the CLI prints), metrics as rows."""
    from metrics.contract import summary

    up = df[df["operation"] == "upsert"].copy()
    up["index"] = up["series"]
    table = summary(up)
    if is_sim(up).any():  # the modelled figures of simulated series, beside the measured
        later = up[up["batch"] >= 1] if (up["batch"] >= 1).any() else up
        for c in MODEL_SUMMARY:
            col = f"model_{c}"
            if col in up.columns and col not in table.columns:
                table[col] = pd.to_numeric(later[col], errors="coerce").groupby(
                    later["index"], sort=False).median()
    return table.T


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1100px;color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0 1em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
thead th{background:#f4f4f4}tbody th{text-align:left;font-weight:normal;color:#444}
figure{margin:1em 0}img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}.swatch{display:inline-block;width:.9em;height:.9em;
margin-right:.3em;vertical-align:middle}code{background:#f4f4f4;padding:0 .2em}
.muted{color:#777;font-size:.85em}
"""


def _run_info(run: RunData) -> str:
    parts = []
    for label, info in run.runs.items():
        w = info.get("workload") or {}
        sizes = ", ".join(f"{k}={w[k]}" for k in ("name", "initial_records", "batches",
                                                   "batch_size", "partitions", "seed")
                          if k in w)
        params = "; ".join(
            f"<b>{html.escape(n)}</b>: " + ", ".join(
                f"{html.escape(str(k))}={html.escape(str(v))}" for k, v in p.items()
                if k not in ("index",))
            for n, p in (info.get("indexes") or {}).items())
        shaping = shaping_versions(info)
        where = (f"simulated (no Spark), storage model "
                 f"{html.escape(str(info.get('storage', '?')))}"
                 if info.get("mode") == "sim" or info.get("command") == "sim" else
                 f"master {html.escape(str(info.get('master', '?')))}")
        parts.append(
            f"<li><b>{html.escape(label)}</b> — run {html.escape(str(info.get('run_id', '?')))}"
            f", {html.escape(sizes)}, {where}, "
            f"git {html.escape(str(info.get('git_commit') or '?')[:10])}, "
            + ", ".join(f"{k} {html.escape(str(v or '?'))}" for k, v in shaping.items())
            + f"<br><span class=muted>{params}</span></li>")
    return "<ul>" + "".join(parts) + "</ul>" if parts else ""


def _swatch(index: str, sim: bool) -> str:
    """The index's colour; hollow with a dashed border for a simulated series."""
    color = style.index_color(index)
    css = (f"border:2px dashed {color};box-sizing:border-box" if sim
           else f"background:{color}")
    return f"<span class=swatch style='{css}'></span>"


def render_html(run: RunData, written: Sequence[tuple[FigureSpec, Path]], out: Path,
                asv_charts: Sequence[Path] = ()) -> str:
    """The page: what the run found and what shaped it, the comparison table, figures,
    then folded away the runs' parameters and one summary table per index."""
    df = run.df
    series = list(pd.unique(df["series"]))
    names = {s: str(df.loc[df["series"] == s, "index"].iloc[0]) for s in series}
    sims = {s for s in series if is_sim(df[df["series"] == s]).all()}
    legend = " ".join(f"<span>{_swatch(names[s], s in sims)}{html.escape(s)}</span>"
                      for s in series)
    body = [f"<h1>indexbench report</h1><p class=muted>generated "
            f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC} from "
            f"{html.escape(', '.join(run.sources))}</p>",
            *([f"<p><b>warning:</b> {html.escape(w)}</p>"]
              if (w := version_warning(run.runs)) else []),
            conclusion_html(conclude(df, run.runs)),
            f"<p>{legend}</p>", "<h2>Comparison</h2>",
            "<p class=muted>median per upsert batch after the initial load (batch ≥ 1)"
            + ("; series marked (sim) are simulated: their seconds and bytes are the "
               "modelled model_* rows, their measured rows stay empty (—)" if sims else "")
            + "</p>",
            _table(comparison(df), "metric", units=True)]
    side = pairs_table(df)
    if len(side):  # compare --peers hudi: each index beside Hudi's own writer
        body += ["<h2>Beside Hudi's own writer</h2>",
                 "<p class=muted>median per upsert batch ≥ 1 of each index and of the Hudi "
                 "series that mirrors it (same batches, settings and table type); Hudi's "
                 "figures come from its commits, log lines and Spark jobs</p>",
                 _table(side, "metric", units=True)]
    for source in run.sources:  # indexbench fidelity wrote its checks beside the run
        checks = Path(source) / FIDELITY_CSV
        if checks.is_file():
            body += ["<h2>Fidelity against Hudi's writer</h2>",
                     f"<p class=muted>checks of {html.escape(source)} per index and table "
                     "type, batch by batch: ours within each tolerance of Hudi's (or a "
                     "miss docs/fidelity.md explains); every row in "
                     f"{html.escape(str(Path(source) / 'fidelity.md'))}</p>",
                     _table(fidelity_summary(pd.read_csv(checks)), "index")]
    if has_queries(df):  # indexbench query rows: never part of the upsert tables above
        body += ["<h2>Queries</h2>",
                 "<p class=muted>median of each index's query rows (rows: how many runs or "
                 "tables); lookups use the index's own lookup path, group-bys and joins "
                 "a bucket-aware or Spark's default plan</p>",
                 _table(query_table(df), "index")]
    body.append("<h2>Figures</h2>")
    for spec, path in written:
        rel = path.relative_to(out).as_posix()
        body.append(f"<figure id='{html.escape(Path(spec.file).stem)}'><h3>"
                    f"{html.escape(spec.title)}</h3><a href='{rel}'><img src='{rel}' "
                    f"alt='{html.escape(spec.title)}'></a><figcaption>"
                    f"{html.escape(spec.caption)}</figcaption></figure>")
    body.append("<h2>Detail</h2><details><summary>runs and their parameters</summary>"
                 f"{_run_info(run)}</details>")
    for s in series:  # folded: a page of ~50 rows per index otherwise
        g = df[df["series"] == s]
        body.append(f"<details id='index-{html.escape(s)}'><summary>"
                    f"{_swatch(names[s], s in sims)}{html.escape(s)}: every metric"
                    f"</summary>{_table(index_summary(g), 'metric', units=True)}</details>")
    if asv_charts:
        body.append("<h2>asv: benchmarks over commits</h2>")
        for p in asv_charts:
            rel = p.relative_to(out).as_posix()
            body.append(f"<figure><a href='{rel}'><img src='{rel}' alt='{html.escape(p.stem)}'>"
                        f"</a><figcaption>{html.escape(p.stem)}</figcaption></figure>")
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>indexbench report"
            f"</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")


def write_report(dirs: str | Path | Sequence[str | Path], out: str | Path | None = None,
                 asv_results: str | Path | None = None, strict: bool = False) -> Path:
    """Figures + ``index.html`` for metrics directories (and asv results); returns the page.

    ``out`` defaults to ``<DIR>/report`` for one directory, ``./report`` for several.
    """
    if isinstance(dirs, str | Path):
        dirs = [dirs]
    dirs = list(dirs)
    if out is None:
        out = Path(dirs[0]) / "report" if len(dirs) == 1 else Path("report")
    out = Path(out)
    run = load(dirs, strict=strict)
    written = write_figures(run, out)
    charts: list[Path] = []
    if asv_results is not None:
        from reports.asv_charts import write_asv_charts

        charts = write_asv_charts(asv_results, out / "asv")
    page = out / "index.html"
    page.write_text(render_html(run, written, out, charts), encoding="utf-8")
    return page


def write_asv_report(asv_results: str | Path, out: str | Path) -> Path:
    """A page of asv charts alone (``indexbench report --asv RESULTS`` without DIRs)."""
    from reports.asv_charts import write_asv_charts

    out = Path(out)
    charts = write_asv_charts(asv_results, out / "asv")
    figs = "".join(
        f"<figure><a href='{p.relative_to(out).as_posix()}'><img src='"
        f"{p.relative_to(out).as_posix()}' alt='{html.escape(p.stem)}'></a><figcaption>"
        f"{html.escape(p.stem)}</figcaption></figure>" for p in charts)
    page = out / "index.html"
    page.write_text("<!doctype html><html lang=en><head><meta charset=utf-8><title>indexbench "
                    f"asv</title><style>{CSS}</style></head><body><h1>asv: benchmarks "
                    f"over commits</h1><p class=muted>{html.escape(str(asv_results))}</p>{figs}"
                    "</body></html>\n", encoding="utf-8")
    return page
