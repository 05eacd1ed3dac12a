"""The answer of ``indexbench advise``: an 80-column terminal text and an HTML page with
one figure of cost against table size per index, crossovers marked. Every figure says
whether it was counted (by the indexes' code in the simulator) or modelled (seconds, by
the cost profile), and which sizes were extrapolated."""

from __future__ import annotations

import html
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from reports import style
from reports.units import human_bytes

WIDTH = 80


@dataclass(frozen=True)
class Crossover:
    """Where the first place passes from ``before`` to ``after`` (about ``records``)."""

    before: str
    after: str
    records: int
    why: str


@dataclass(frozen=True)
class Recommendation:
    index: str
    setting: str
    horizon_s: float
    hudi_config: dict[str, str] | None
    hudi_refused: str  # why there is no Hudi configuration ("" when there is)
    gives_up: str
    # Hudi has no such index: (index, setting, Hudi options) of the best one it has
    hudi_fallback: tuple[str, str, dict[str, str]] | None = None
    hudi_fallback_by: str = ""  # how it was chosen ("with Hudi's own writer": its model)


@dataclass
class HudiAdvice:
    """The indexes Hudi has, priced as Apache Hudi's own writer spends the same counted
    work (``advise --hudi-storage``: a profile ``calibrate --writer hudi`` fitted to Hudi's
    own rows): each at the setting that costs Hudi's writer least over the horizon,
    ranked, where its first place changes, and the configuration of its first."""

    storage: str
    writer: str
    best: pd.DataFrame  # the chosen setting of each, its seconds as Hudi's writer's
    chosen: pd.DataFrame  # index, setting, horizon_s (ascending)
    crossovers: list[Crossover]
    index: str  # first with Hudi's writer
    setting: str
    horizon_s: float
    config: dict[str, str]


@dataclass
class CheckResult:
    """The advice held against real runs at the table's size now (``advise --check``):
    per index the modelled and measured seconds per batch (and Hudi's writer's), the
    pairs of our indexes and of Hudi's writer as each side orders them, and Hudi's
    writer's counters against ours (``reports.fidelity``'s checks)."""

    size: int
    batches: int
    table: pd.DataFrame  # per index: modelled_s, measured_s, measured_min_s/max_s, hudi_…
    ours: pd.DataFrame  # pair, modelled_first, measured_first, verdict
    hudi: pd.DataFrame  # the same for Hudi's writer (empty without it)
    run_dir: str
    tie: float
    fidelity: pd.DataFrame | None = None
    # per index, the read side counted on the check's tables (lookups, the self-join)
    reads: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def conflicts(self) -> int:
        return int((self.ours["verdict"] == "conflict").sum()
                   + (self.hudi["verdict"] == "conflict").sum())

    @property
    def agrees(self) -> bool:
        return self.conflicts == 0


@dataclass
class Answer:
    request: dict[str, Any]
    points: pd.DataFrame  # every (index, setting, table_size)
    best: pd.DataFrame  # the chosen setting of each index
    chosen: pd.DataFrame  # index, setting, horizon_s (ascending)
    crossovers: list[Crossover]
    recommendation: Recommendation
    errors: pd.DataFrame  # extrapolation error per (index, setting)
    storage: str = "local"
    exact_limit: int = 0
    tie: float = 0.02
    notes: list[str] = field(default_factory=list)
    check: CheckResult | None = None
    hudi: HudiAdvice | None = None


def short(n: float) -> str:
    """1,234 → 1.23K; 8,780,000 → 8.78M; 1e9 → 1B."""
    for div, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.3g}{unit}"
    return f"{n:,.0f}"


def duration(s: float) -> str:
    if not math.isfinite(s):
        return "—"
    for div, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if s >= div:
            return f"{s / div:.3g} {unit}"
    return f"{s:.3g} s"


def bytes_(v: float) -> str:
    """Index bytes in a 9-column cell: three significant digits, "—" for none."""
    return human_bytes(v, ".3g") if math.isfinite(v) and v > 0 else "—"


def _wrap(text: str, indent: str = "", then: str | None = None) -> list[str]:
    """``text`` in lines of at most 80 columns; ``then``: the indent after the first."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent if then is None else then) or [""]


def _extrapolation_note(a: Answer) -> str:
    far = a.points[~a.points["exact"].astype(bool)]
    if far.empty:
        return "every size simulated exactly."
    err = a.errors["extrapolation_error"].dropna()
    check = (f"checked against an exact simulation at {a.errors['checked_at'].max():,} keys "
             f"(carried there from similar tables of {a.errors['check_keys'].max():,} and "
             f"half as many keys): within {err.max() * 100:.2g}% for every index"
             if len(err) else
             "not checked (one exact size only)")
    return (f"* above {a.exact_limit:,} keys (the exact limit), seen through two similar "
            "tables at the limit and half of it: the described batch, every capacity "
            "(file and bucket sizes, filter entries) shrunk to keep the described files "
            "and buckets; each counted figure carried by the power of the size it grows "
            f"by between them, then priced by the same model; {check}.")


def _heading(a: Answer) -> list[str]:
    r = a.request
    tt = {"cow": "copy-on-write", "mor": "merge-on-read"}[r["table_type"]]
    lines = _wrap(f"Which index for a `{r['workload']}` table ({r['key_format']} keys, "
                  f"{r['partitions']} partitions, {tt}, storage {r['storage']}):")
    lines += _wrap(f"{r['records_now']:,} records now; batches of {r['batch_size']:,} records, "
                   f"{r['update_fraction']:.0%} updates (+{r['inserts_per_batch']:,.0f} new "
                   f"keys each), {r['batches_per_day']:g} a day for {r['horizon_days']:g} days: "
                   f"{r['records_at_horizon']:,} records at the horizon.", "  ")
    return lines


def secs(s: float) -> str:
    """Seconds in words and cells: three significant digits, whole seconds from 1,000
    (``%.3g`` writes 1.48e+03), millions shortened."""
    if not math.isfinite(s) or s < 1000:
        return f"{s:.3g}"
    return f"{s:,.0f}" if s < 1e6 else short(s)


def _cell(s: float) -> str:
    """Seconds in an 8-column cell."""
    return secs(s).rjust(8)


def cost_table(a: Answer | HudiAdvice) -> list[str]:
    """Seconds per batch of each index (its chosen setting) at each size."""
    sizes = sorted(a.best["table_size"].unique())
    exact = dict(zip(a.best["table_size"], a.best["exact"].astype(bool), strict=False))
    head = "keys".ljust(19) + "".join(
        (short(n) + ("" if exact[n] else "*")).rjust(8) for n in sizes) + "horizon".rjust(
        WIDTH - 19 - 8 * len(sizes) - 1)
    lines = [head]
    order = list(a.chosen["index"])
    for name in order:
        g = a.best[a.best["index"] == name].set_index("table_size")["cost_s"]
        total = float(a.chosen.loc[a.chosen["index"] == name, "horizon_s"].iloc[0])
        lines.append(name[:18].ljust(19) + "".join(_cell(g.get(n, math.nan)) for n in sizes)
                     + duration(total).rjust(WIDTH - 19 - 8 * len(sizes) - 1))
    return lines


def crossover_lines(crossovers: list[Crossover], tie: float, who: str = "") -> list[str]:
    """Where the first place changes, one reason each (``who``: whose ranking)."""
    if not crossovers:
        return _wrap(f"The first place{who} does not change from now to the horizon (ties "
                     f"within {tie:.0%} aside).")
    lines = [f"Where the first place{who} changes:"]
    for c in crossovers:
        lines += _wrap(f"{c.before} until about {short(c.records)} keys, then {c.after}: "
                       f"{c.why}.", "  - ", "    ")
    return lines


def _tied(chosen: pd.DataFrame, first: str, horizon_s: float, tie: float) -> list[str]:
    return [str(i) for i, s in zip(chosen["index"], chosen["horizon_s"], strict=True)
            if i != first and s <= horizon_s * (1 + tie)]


def hudi_lines(h: HudiAdvice, tie: float) -> list[str]:
    """The indexes Hudi has as Hudi's own writer is modelled to run them."""
    lines = _wrap(f"With Apache Hudi's own writer ({h.writer}; seconds modelled by the "
                  f"{h.storage} profile, fitted to Hudi's own rows, from the same counted "
                  "work): the indexes Hudi has, each at the setting that costs Hudi's writer "
                  "least over the horizon.")
    lines += cost_table(h)
    lines += crossover_lines(h.crossovers, tie, " with Hudi's writer")
    lines += _wrap(f"Best with Hudi's writer: {h.index} ({h.setting}), "
                   f"{duration(h.horizon_s)} of upserts over the horizon:")
    lines += [f"  {k}={v}" for k, v in sorted(h.config.items())]
    tied = _tied(h.chosen, h.index, h.horizon_s, tie)
    if tied:
        lines += _wrap(f"Tied with it within {tie:.0%}: {', '.join(tied)}.")
    return lines


def horizon_table(a: Answer) -> list[str]:
    """At the last size: each index's setting and what it reads, skew and bytes."""
    last = a.best["table_size"].max()
    rows = a.best[a.best["table_size"] == last].set_index("index")
    lines = [f"{'':3}{'index':19}{'setting':28}{'reads':>6}{'skew':>5}{'memory':>9}"
             f"{'disk':>9}"]
    for i, name in enumerate(a.chosen["index"], 1):
        r = rows.loc[name]
        skew = f"{r['bucket_skew']:.2f}" if math.isfinite(r["bucket_skew"]) else "—"
        setting = str(r["setting"])
        setting = setting if len(setting) <= 27 else setting[:26] + "…"
        lines.append(f"{i:>2} {name[:18]:19}{setting:28}"
                     f"{r['files_read']:6,.0f}{skew:>5}{bytes_(r['index_mem_bytes']):>9}"
                     f"{bytes_(r['index_disk_bytes']):>9}")
    return lines


def advice_text(a: Answer) -> str:
    """The answer in 80 columns."""
    lines = _heading(a) + [""]
    lines += _wrap("Seconds per upsert batch (tag + write + commit + table services; modelled by "
                   f"the {a.storage} cost profile), each index at its best setting; "
                   "horizon: every batch until the horizon, summed.")
    lines += cost_table(a) + _wrap(_extrapolation_note(a), "  ")
    for note in a.notes:
        lines += _wrap(note, "  ")
    lines.append("")
    last = a.best["table_size"].max()
    lines += _wrap(f"At the horizon ({last:,} keys), counted: files read to tag a batch, "
                   "fullest bucket over the mean, index bytes in memory and on disk.")
    lines += horizon_table(a) + [""]
    lines += crossover_lines(a.crossovers, a.tie)
    lines += [""] + recommendation_lines(a.recommendation)
    tied = _tied(a.chosen, a.recommendation.index, a.recommendation.horizon_s, a.tie)
    if tied:
        lines += _wrap(f"Tied with it within {a.tie:.0%} over the horizon: {', '.join(tied)}: "
                       "here the upsert cost does not choose between them; their reads, "
                       "skew and bytes above, and what each gives up, do.")
    if a.hudi is not None:
        lines += [""] + hudi_lines(a.hudi, a.tie)
        rec = a.recommendation
        if rec.hudi_config is not None and (a.hudi.index, a.hudi.setting) != (rec.index,
                                                                                rec.setting):
            lines += _wrap(f"In a Hudi job, paste this configuration, not the one above: "
                           f"that is {rec.index} at our writer's best setting, this is the "
                           "best as Hudi's own writer is modelled to run it.")
    if a.check is not None:
        lines += [""] + check_lines(a.check)
    return "\n".join(lines) + "\n"


def _verdicts(p: pd.DataFrame) -> str:
    n = p["verdict"].value_counts()
    return (f"{n.get('agree', 0)} agree, {n.get('conflict', 0)} conflict, "
            f"{n.get('tied', 0)} tied")


def check_lines(c: CheckResult) -> list[str]:
    """The check in 80 columns: per index modelled and measured seconds, the verdict of
    the pairs, each conflict, and Hudi's writer against our counters."""
    hudi = "hudi_measured_s" in c.table and c.table["hudi_measured_s"].notna().any()
    hudi_model = hudi and "hudi_modelled_s" in c.table
    lines = _wrap(f"Checked on real Spark at {c.size:,} records, {c.batches} upsert batches "
                  f"after the load ({c.run_dir}): seconds per batch, modelled (this "
                  "answer's cost profile) and measured (median, fastest-slowest batch)"
                  + ("; Hudi's writer modelled (its own profile, at the settings it ran) and "
                     "measured (median)." if hudi_model else "."))

    def cell(v: float, width: int) -> str:
        return (secs(v) if pd.notna(v) else "—").rjust(width)

    wide = 12 if hudi_model else 13
    lines.append(f"{'index':<19}{'modelled':>9}{'measured':>10}{'min-max':>15}"
                 + (f"{'Hudi model':>12}" if hudi_model else "")
                 + (f"{'Hudi writer':>{wide}}" if hudi else ""))
    for name, r in c.table.iterrows():
        span = f"{secs(r['measured_min_s'])}-{secs(r['measured_max_s'])}"
        h = cell(r["hudi_modelled_s"], 12) if hudi_model else ""
        h += cell(r["hudi_measured_s"], wide) if hudi else ""
        lines.append(f"{str(name):<19}{secs(r['modelled_s']):>9}{secs(r['measured_s']):>10}"
                     f"{span:>15}{h}")
    lines += _wrap(f"Pairs of indexes: {_verdicts(c.ours)} (a pair is ordered by the model "
                   f"when more than {c.tie:.0%} apart, by the measurement when every batch of "
                   "one is faster than every batch of the other; tied on either side: "
                   "neither ranking orders it)." + (
                       f" Hudi's writer, its indexes: {_verdicts(c.hudi)}." if len(c.hudi)
                       else ""))
    for who, p in (("ours", c.ours), ("Hudi's writer", c.hudi)):
        for r in p[p["verdict"] == "conflict"].itertuples(index=False):
            lines += _wrap(f"conflict ({who}): modelled {r.a} {secs(r.modelled_a_s)} s, {r.b} "
                           f"{secs(r.modelled_b_s)} s; measured {secs(r.measured_a_s)} s, "
                           f"{secs(r.measured_b_s)} s.", "  - ", "    ")
    lines += read_lines(c.reads.reindex([i for i in c.table.index if i in c.reads.index]))
    f = c.fidelity
    if f is not None and len(f):
        n = f["status"].value_counts()
        lines += _wrap(f"Hudi's writer against our counters on these batches: {len(f)} "
                       f"checks, {n.get('pass', 0)} pass, {n.get('explained', 0)} explained, "
                       f"{n.get('fail', 0)} fail (fidelity.md beside the check's metrics).")
        for r in f[f["status"] == "fail"].head(5).itertuples(index=False):
            lines += _wrap(f"{r.index} ({r.table_type}) batch {r.batch} {r.check}: ours "
                           f"{r.ours}, Hudi's {r.hudi}", "  - ", "    ")
    return lines


def read_lines(reads: pd.DataFrame) -> list[str]:
    """The read side the check counted, one line per index."""
    if not len(reads) or "lookup_files_per_key" not in reads:
        return []
    lines = _wrap("Read side on the same tables, counted: files a point lookup reads per "
                  "key (median latency of a key batch), and the self-join on the key at "
                  "the plan that shuffles least.")
    lines.append(f"{'index':<19}{'files/key':>10}{'lookup p50':>11}{'join shuffle':>14}"
                 f"  plan")
    for name, r in reads.iterrows():
        shuffle = r.get("join_shuffle_bytes", float("nan"))
        lines.append(f"{str(name):<19}{r['lookup_files_per_key']:>10.3g}"
                     f"{duration(r['lookup_p50_s']):>11}"
                     f"{human_bytes(shuffle) if pd.notna(shuffle) else '—':>14}"
                     f"  {r.get('join_plan', '—')}")
    return lines


def recommendation_lines(r: Recommendation) -> list[str]:
    lines = _wrap(f"Recommended: {r.index} ({r.setting}), {duration(r.horizon_s)} of upserts "
                  "over the horizon.")
    if r.hudi_config is not None:
        lines.append("Hudi configuration:")
        lines += [f"  {k}={v}" for k, v in sorted(r.hudi_config.items())]
    else:
        lines += _wrap(f"No Hudi configuration: {r.hudi_refused}.")
        if r.hudi_fallback:
            name, setting, config = r.hudi_fallback
            by = f" {r.hudi_fallback_by} (below)" if r.hudi_fallback_by else ""
            lines += _wrap(f"The best index Hudi has here{by}: {name} ({setting}):")
            lines += [f"  {k}={v}" for k, v in sorted(config.items())]
    if r.gives_up:
        lines += _wrap(f"What you give up: {r.gives_up}.")
    return lines


def advice_figure(a: Answer) -> Figure:
    """Seconds per batch against table size, one line per index; extrapolated sizes
    dashed and hollow; crossovers marked."""
    with style.paper():
        fig, axes = style.figure(1, 1, height=3.2)
        ax = axes[0][0]
        for name in a.chosen["index"]:
            g = a.best[a.best["index"] == name].sort_values("table_size")
            look = style.series_look(str(name))
            ex = g[g["exact"].astype(bool)]
            far = pd.concat([ex.tail(1), g[~g["exact"].astype(bool)]])
            ax.plot(ex["table_size"], ex["cost_s"], **look.line(), label=str(name))
            if len(far) > 1:
                ax.plot(far["table_size"], far["cost_s"], **{**look.line(), "ls": "--",
                                                              "markerfacecolor": "none"})
        for c in a.crossovers:
            ax.axvline(c.records, color="grey", ls=":", lw=1)
            ax.annotate(f"{c.before} → {c.after}", (c.records, ax.get_ylim()[1]),
                        rotation=90, va="top", ha="right", fontsize=7, color="grey")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("keys in the table (dashed: extrapolated)")
        ax.set_ylabel(f"seconds per upsert batch ({a.storage}, modelled)")
        ax.set_title("cost per batch as the table grows")
        ax.legend(fontsize=7, ncol=2)
    return fig


def write_advice_page(a: Answer, out: str | Path) -> Path:
    """``out/index.html`` and ``out/advice.png``: the answer as a page."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fig = advice_figure(a)
    fig.savefig(out / "advice.png", dpi=style.RC["savefig.dpi"])
    plt.close(fig)
    text = html.escape(advice_text(a))
    settings = a.points.groupby(["index", "setting"], sort=False)["cost_s"].median()
    rows = "".join(f"<tr><th>{html.escape(str(i))}</th><td>{html.escape(str(s))}</td>"
                   f"<td>{v:.3g}</td></tr>" for (i, s), v in settings.items())
    page = ("<!doctype html><html lang=en><head><meta charset=utf-8><title>indexbench advise"
            "</title><style>body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em "
            "auto;padding:0 1em}pre{background:#f6f6f6;padding:1em;overflow-x:auto}img{max-"
            "width:100%}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:right}"
            "table{border-collapse:collapse}</style></head><body><h1>Which index</h1>"
            f"<pre>{text}</pre><figure><img src='advice.png' alt='cost per batch against "
            "table size'><figcaption>Seconds per upsert batch (modelled) against keys in the "
            "table, each index at its best setting; dashed: extrapolated; dotted: where the "
            "first place changes.</figcaption></figure><h2>Every setting tried</h2><table>"
            "<tr><th>index</th><th>setting</th><th>median s per batch over the sizes</th></tr>"
            f"{rows}</table></body></html>\n")
    (out / "index.html").write_text(page, encoding="utf-8")
    return out / "index.html"
