"""Figures that show every series (issue #43, point 3): one look per series, so no two
series of a figure share both colour and style; a unit on every axis that has data;
merge-on-read series named "(mor)" wherever copy-on-write rows meet them.

The run-based tests render every figure of one small ``compare --table-types cow,mor
--peers delta,paimon`` of every registered index (a module-scoped run, so Spark and
redis-server start once); the others draw synthetic rows.
"""

from __future__ import annotations

import io
import itertools
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from rich.console import Console

import indexes
import peers
import reports
from indexbench import api
from indexbench.terminal import query_tables
from reports import figures as F
from reports import page, style
from reports.query import query_figure, query_table

# One index of each figure family (CI time): bloom's filter figures, a fixed bucket count,
# a resizing one (bucket growth), an index in executor caches and one in a server (index
# bytes, key-value latency). Every index's look is tested below without Spark.
RUN_INDEXES = ["bloom", "simple-bucket", "dynamic-rli", "consistent-hashing", "external-kv"]
# An axis label carries its unit: a parenthesised one ("(s)", "(B)", "(MiB)") or a noun
# that says what is counted.
COUNTED = ("records", "files", "file groups", "buckets", "keys", "batches", "batch",
           "requests", "micro-batch", "rank")
PAREN = re.compile(r"\([^)]+\)")


def has_unit(label: str) -> bool:
    return bool(PAREN.search(label)) or any(re.search(rf"\b{re.escape(w)}\b", label)
                                            for w in COUNTED)


# ---- reading what a figure draws ---------------------------------------------------------
def _hex(c) -> str:
    return to_hex(c, keep_alpha=True)


def _dashes(line: Line2D) -> tuple:
    """A line's dash pattern (custom patterns all report ``--`` as their style)."""
    pattern = getattr(line, "_unscaled_dash_pattern", (None, None))[1]
    return tuple(pattern or ())


def look_key(handle) -> tuple | None:
    """What tells a legend entry apart: colour and style (line style and marker for a
    line, face, edge and hatch for a patch or marker collection)."""
    if isinstance(handle, Line2D):
        marker = str(handle.get_marker())
        fill = _hex(handle.get_markerfacecolor()) if marker not in ("None", "", " ") else ""
        return ("line", _hex(handle.get_color()), handle.get_linestyle(), _dashes(handle),
                marker, fill)
    if isinstance(handle, Patch):
        return ("patch", _hex(handle.get_facecolor()), _hex(handle.get_edgecolor()),
                handle.get_hatch() or "", handle.get_linestyle())
    if isinstance(handle, PathCollection):
        paths = tuple(p.vertices.round(3).tobytes() for p in handle.get_paths())
        return ("points", tuple(map(_hex, handle.get_facecolors())),
                tuple(map(_hex, handle.get_edgecolors())), paths)
    return None


def legend_entries(fig: Figure) -> list[tuple[str, object]]:
    """(text, handle) of every legend of the figure, its axes' and its own."""
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.axes)]
    return [(t.get_text().replace("\n", " "), h) for lg in legends if lg is not None
            for t, h in zip(lg.get_texts(), lg.legend_handles, strict=True)]


def series_named(text: str, series: list[str]) -> list[str]:
    """The series a legend text names (longest labels first: "bloom (mor)" is not also
    "bloom")."""
    found = []
    for s in sorted(series, key=len, reverse=True):
        pattern = rf"(?<![\w-]){re.escape(s)}(?![\w-])"
        if re.search(pattern, text):
            found.append(s)
            text = re.sub(pattern, " ", text)
    return found


def clashes(fig: Figure, series: list[str]) -> list[tuple[str, str]]:
    """Legend entries of two different series that look the same."""
    keyed = []
    for text, handle in legend_entries(fig):
        named = series_named(text, series)
        key = look_key(handle)
        if len(named) == 1 and key is not None:
            keyed.append((named[0], key, text))
    return [(a[2], b[2]) for a, b in itertools.combinations(keyed, 2)
            if a[0] != b[0] and a[1] == b[1]]


def is_categorical(axis) -> bool:
    """An axis of named ticks (series, queries, modes): no quantity, no unit. Numbers
    (``2.5k``, ``10^{-2}``, ``1M``) are not names."""
    texts = [re.sub(r"\\mathdefault|[${}]", "", t.get_text())
             for t in axis.get_ticklabels()]
    return any(re.search(r"[A-Za-z]{2,}", t) for t in texts)


def unlabelled(fig: Figure) -> list[str]:
    """Axes with data whose quantitative axis has no label with a unit."""
    out = []
    for ax in fig.axes:
        if not ax.axison or not ax.has_data():
            continue
        for name, axis, label in (("x", ax.xaxis, ax.get_xlabel()),
                                  ("y", ax.yaxis, ax.get_ylabel())):
            if axis.get_visible() and not is_categorical(axis) and not has_unit(label):
                out.append(f"{ax.get_title()!r} {name}: {label!r}")
    return out


def figure_text(fig: Figure) -> str:
    """Every text a reader sees: titles, labels, ticks, notes and legends."""
    fig.canvas.draw()
    texts = [t.get_text() for t in fig.findobj(match=lambda a: hasattr(a, "get_text"))]
    return "\n".join(str(t) for t in texts)


# ---- the run -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run(spark, tmp_path_factory) -> reports.RunData:
    pytest.importorskip("deltalake")
    pytest.importorskip("pypaimon")
    out = tmp_path_factory.mktemp("figures-series") / "run"
    api.compare(RUN_INDEXES, "uniform", table_types=("cow", "mor"),
                peers=("delta", "paimon"), out=str(out), spark=spark,
                initial_records=1000, batches=1, batch_size=300)
    return reports.load([out])


@pytest.fixture(scope="module")
def drawn(run) -> dict[str, Figure]:
    """Every figure the report draws for the run, by file name."""
    figs = {}
    for spec in [*page.FIGURES, *page.declared_specs()]:
        fig = spec.draw(run)
        if fig is not None:
            figs[spec.file] = fig
    yield figs
    for fig in figs.values():
        plt.close(fig)


def test_the_run_draws_the_figures_of_every_kind(drawn):
    for name in ("fp_rate.png", "files_read.png", "latency.png", "bucket_sizes.png",
                 "bucket_growth.png", "index_bytes.png", "query.png", "write_read.png",
                 "kv_latency.png"):
        assert name in drawn, name


def test_the_run_has_merge_on_read_and_peer_series(run):
    series = set(run.df["series"].astype(str))
    assert "bloom (mor)" in series
    (info,) = run.runs.values()
    errors = {s: p.get("error") for s, p in (info.get("peers") or {}).items()
              if p.get("error")}
    assert {"delta-merge", "paimon-fixed", "paimon-dynamic"} <= series, errors


def test_no_two_series_of_a_figure_look_the_same(run, drawn):
    series = [str(s) for s in pd.unique(run.df["series"])]
    for name, fig in drawn.items():
        assert not clashes(fig, series), name


def test_every_axis_with_data_says_its_unit(drawn):
    for name, fig in drawn.items():
        fig.canvas.draw()
        assert not unlabelled(fig), name


def test_figures_name_every_series_they_draw(run, drawn):
    """Latency: a panel per series; query and write/read: every series with lookups,
    merge-on-read ones named "(mor)"."""
    df = run.df
    up = df[df["operation"] == "upsert"]
    text = figure_text(drawn["latency.png"])
    for s in pd.unique(up["series"]):
        assert s in text, s
    queried = pd.unique(df.loc[df["operation"] == "query", "series"])
    assert any(str(s).endswith(" (mor)") for s in queried)
    for file in ("query.png", "write_read.png"):
        text = figure_text(drawn[file])
        for s in queried:
            assert s in text, (file, s)


def test_latency_panels_share_one_scale(drawn):
    panels = [ax for ax in drawn["latency.png"].axes if ax.axison and ax.has_data()]
    assert len(panels) > 2
    assert len({ax.get_ylim() for ax in panels}) == 1
    assert len({ax.get_ylabel() for ax in panels}) == 1


def test_index_bytes_fit_the_keys_and_name_a_server_held_index(run, drawn):
    fig = drawn["index_bytes.png"]
    keys = run.df["table_records"].dropna()
    for ax in fig.axes:
        if ax.lines:
            assert ax.get_xlim()[0] > 0.5 * float(keys[keys > 0].min())
    notes = [t for t, _h in legend_entries(fig)]
    served = [s for s, g in run.df.groupby("series") if F.server_held(g)]
    assert served and any("in its server" in t for t in notes)
    for note in notes:  # the "0 B:" part (last) names none of them
        zero = note.split("0 B:", 1)[1] if "0 B:" in note else ""
        assert not any(s in zero for s in served), note


def test_fp_rate_draws_a_shared_theory_curve_once(drawn):
    ax = drawn["fp_rate.png"].axes[0]
    theory = [ln for ln in ax.lines if str(ln.get_gid() or "").startswith("theory:")]
    owners = [ln.get_gid().removeprefix("theory:").split(", ") for ln in theory]
    assert theory and sum(len(o) for o in owners) > len(theory)  # some curve is shared
    assert len({tuple(np.round(ln.get_ydata(), 12)) for ln in theory}) == len(theory)


def test_integer_quantities_get_whole_ticks(drawn):
    ax_b = drawn["bucket_growth.png"].axes[0]
    ticks = [t for t in ax_b.get_yticks() if ax_b.get_ylim()[0] <= t <= ax_b.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_report_query_table_names_merge_on_read_rows(run):
    table = query_table(run.df)
    assert any(str(i).endswith(" (mor)") for i in table.index)


# ---- without Spark -------------------------------------------------------------------------
def _peer_series() -> list[str]:
    return [s for p in peers.PEERS.values() for s in p.all_series()]


def test_every_index_and_peer_series_has_a_look_of_its_own():
    names = [*indexes.names(), *_peer_series()]
    looks = {n: style.series_look(n) for n in names}
    own = [n for n in names if style.mirrored_index(n) is None]
    assert len({looks[n].color for n in own}) == len(own)  # a colour each
    for a, b in itertools.combinations(names, 2):
        la, lb = looks[a], looks[b]
        assert (la.color, la.linestyle, la.marker, la.hatch) != \
            (lb.color, lb.linestyle, lb.marker, lb.hatch), (a, b)
    for cow, mor in ((style.series_look(n), style.series_look(n, mor=True)) for n in names):
        assert cow.line() != mor.line() and cow.bar() != mor.bar()


def test_a_mirroring_peer_series_wears_its_index_colour_in_a_style_of_its_own():
    mirrors = [s for s in _peer_series() if style.mirrored_index(s)]
    assert mirrors
    for s in mirrors:
        index = style.mirrored_index(s)
        mine, theirs = style.series_look(index), style.series_look(s)
        assert theirs.color == mine.color
        assert theirs.linestyle != mine.linestyle and theirs.hatch and not mine.hatch


def test_an_unknown_name_keeps_a_stable_look():
    assert style.series_look("my-new-index") == style.series_look("my-new-index")
    assert style.index_color("my-new-index") in style.INDEX_COLORS
    assert set(style.FIXED) >= set(indexes.names())


def test_coinciding_lines_are_drawn_nested():
    fig, ax = plt.subplots()
    x, y = np.arange(3.0), np.array([4.0, 4.0, 4.0])
    F.plot_nested(ax, [(x, y, {"color": "C0", "label": "a"}),
                       (x, y, {"color": "C1", "label": "b"}),
                       (x, y + 1, {"color": "C2", "label": "c"})])
    widths = {ln.get_label(): ln.get_linewidth() for ln in ax.lines}
    assert widths["a"] > widths["b"] == widths["c"]  # a under b, both seen; c alone
    plt.close(fig)


def _bucket_rows() -> pd.DataFrame:
    """Two bucket indexes' last batch: one with a file group per bucket, one whose 16
    buckets hold 910 file groups."""
    return pd.DataFrame([
        {"run_id": "r", "index": name, "workload": "uniform", "batch": 1,
         "operation": "upsert", "records": 100, "table_records": 90_000,
         "buckets": 16 if many else 64, "file_groups": 910 if many else 64,
         "bucket_records_max": 120.0, "bucket_records_mean": 100.0}
        for name, many in (("simple-bucket", False), ("multi-fg-bucket", True))])


@pytest.mark.parametrize("counted", [True, False], ids=["snapshot", "metrics"])
def test_bucket_sizes_count_file_groups_where_buckets_hold_several(counted):
    """What the panel counts comes from the run's own columns, not the index's name."""
    counts = {"simple-bucket": [100] * 64, "multi-fg-bucket": [99] * 910} if counted else {}
    fig = F.bucket_size_figure(_bucket_rows(), counts)
    titles = {ax.get_title().split("\n")[0]: ax for ax in fig.axes if ax.get_title()}
    assert "910 file groups in 16 buckets" in titles["multi-fg-bucket"].get_title()
    assert "64 buckets, one file group each" in titles["simple-bucket"].get_title()
    if counted:
        assert titles["multi-fg-bucket"].get_ylabel() == "records per file group (records)"
    plt.close(fig)


def _queries() -> pd.DataFrame:
    rows = []
    for tt in ("cow", "mor"):
        for name in ("bloom", "simple-bucket"):
            extra = {"table_type": tt, "records": 100, "inserts": 0, "table_records": 1000}
            rows.append({"run_id": "r", "index": name, "workload": "uniform", "batch": 3,
                         "operation": "query", "query": "lookup", "plan": "index",
                         "keys": 100, "files_read_per_key": 2.0, "latency_p50_s": 0.2,
                         "latency_p99_s": 0.5, **extra})
            rows.append({"run_id": "r", "index": name, "workload": "uniform", "batch": 3,
                         "operation": "query", "query": "groupby", "plan": "default",
                         "shuffle_bytes": 1e6, "total_s": 0.3, "has_exchange": 1.0,
                         **extra})
    return pd.DataFrame(rows)


def test_terminal_query_tables_name_merge_on_read_rows():
    console = Console(width=100, file=io.StringIO(), record=True)
    for table in query_tables(_queries(), 100):
        console.print(table)
    text = console.export_text()
    assert text.count("bloom (mor)") == 2  # the lookup table and the group-by table
    assert "simple-bucket (mor)" in text


def test_query_figure_tells_table_types_apart():
    fig = query_figure(_queries())
    series = ["bloom", "bloom (mor)", "simple-bucket", "simple-bucket (mor)"]
    texts = {t for t, _h in legend_entries(fig)}
    assert set(series) <= texts
    assert not clashes(fig, series)
    plt.close(fig)


def test_declared_figure_draws_no_line_for_one_request_size():
    decl = next(d for d in indexes.declared_figures() if d.file == "kv_latency.png")
    rows = [{"run_id": "r", "index": "external-kv", "workload": "uniform", "batch": b,
             "operation": "upsert", "table_type": tt, "records": 100, "inserts": 10,
             "table_records": 1000 + 10 * b, "kv_gets": 1000.0,
             "kv_get_round_trips": 10.0, "kv_get_p50_ms": 1.0 + b,
             "kv_get_p99_ms": 3.0 + b} for tt in ("cow", "mor") for b in range(3)]
    fig = F.declared_figure(pd.DataFrame(rows), decl)
    entries = legend_entries(fig)
    assert len(entries) == 4 and all("one request size" in t for t, _h in entries)
    assert all(h.get_linestyle() == "None" for _t, h in entries)
    assert len({look_key(h) for _t, h in entries}) == 4
    plt.close(fig)


def test_has_unit_accepts_units_and_counted_nouns():
    assert has_unit("seconds per batch (s)") and has_unit("keys in the table (records)")
    assert has_unit("files read to tag the batch (files)") and not has_unit("seconds")
