"""What the commands print to a terminal: per-batch lines and tables that fit its width.

Why a module of its own: a table rich cannot fit folds numbers across lines (``79,447,8``
over ``54``) or cuts them (``0.2…``). Here every number keeps one line: tables list one
index per row and are split into as many tables as the terminal's width needs, each
repeating the index column; per-batch lines are laid out for the longest index name of
the run. Counts print as whole numbers, seconds in human units.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from rich import box
from rich.console import Console
from rich.table import Table as RichTable

from metrics.contract import is_count_column, series_of

# Column headers of the median table, short enough to keep the tables few at 80 columns.
# A column not listed here is headed by its own name.
HEADERS = {
    "tag_s": "tag", "write_s": "write", "total_s": "total",
    "model_tag_s": "~tag", "model_write_s": "~write", "model_total_s": "~total",
    "files_read": "files\nread", "bytes_read": "bytes read",
    "model_bytes_read": "~bytes read", "false_positives": "false\npositives",
    "fp_rate": "fp rate", "bucket_records_max": "fullest\nbucket",
    "index_mem_bytes": "index\nmemory B",
}
LEGEND = "tag, write, total: seconds; files read: data files read to tag"
# a table with simulated series, whose seconds are modelled (printed with a ~)
LEGEND_MODELLED = ("tag, write, total: seconds (~ modelled); files read: data files read "
                   "to tag")


def legend(s: pd.DataFrame) -> str:
    """The footer of a median table: "~ modelled" only where some seconds are."""
    modelled = any(c.startswith("model_") and s[c].notna().any() for c in s.columns)
    return LEGEND_MODELLED if modelled else LEGEND


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def fmt_seconds(s: float | None, modelled: bool = False) -> str:
    """Seconds in at most 7 characters however long: ``0.25s``, ``12.3m``, ``28.0h``."""
    if _missing(s):
        return "—"
    mark = "~" if modelled else ""
    if s < 100:
        return f"{mark}{s:.2f}s"
    if s < 6000:
        return f"{mark}{s / 60:.1f}m"
    if s < 360_000:
        return f"{mark}{s / 3600:.1f}h"
    return f"{mark}{s / 86400:.1f}d"


def fmt_count(n: float | None, width: int = 0) -> str:
    """A count as a whole number with thousands separators; when that is wider than
    ``width`` (0: no limit), three significant digits and k/M/G/T."""
    if n is None or (isinstance(n, float) and math.isnan(n)) or n is pd.NA:
        return "—"
    text = f"{int(round(float(n))):,}"
    if not width or len(text) <= width:
        return text
    v = float(n)
    for unit in ("k", "M", "G", "T"):
        v /= 1000
        if abs(v) < 999.5:
            return f"{v:.3g}{unit}"
    return f"{v:.3g}P"


def fmt_value(column: str, v: Any) -> str:
    """A table cell: counts whole, seconds and rates with three significant digits."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    if is_count_column(column) or float(v).is_integer():
        return fmt_count(v)
    f = float(v)
    return f"{f:.3g}" if abs(f) < 1 else f"{f:,.2f}" if abs(f) < 1000 else f"{f:,.0f}"


class BatchLines:
    """One line per batch, aligned for the run's longest index name, under a header.

    Columns: index, batch, records, tag and write seconds, data files read to tag, false
    positives. With the longest registered name (18 characters) a line is 77 wide.
    """

    def __init__(self, names: Sequence[str]):
        self.width = max([len("index"), *(len(n) for n in names)])
        self.header_printed = False

    def header(self) -> str:
        return (f"  {'index':<{self.width}} {'batch':>5} {'records':>11} {'tag':>7} "
                f"{'write':>7} {'files read':>11} {'false pos':>10}")

    def line(self, row: dict[str, Any]) -> str:
        """A batch's line; a peer's (no index) leaves the index columns empty. In
        throughput mode (``timing = "total"``) the write column holds the batch's total
        seconds, marked ``Σ`` (:data:`FUSED_NOTE`)."""
        peer = row.get("run_mode") == "peer"
        fused = row.get("timing") == "total"
        # simulated: its seconds are modelled (a row from sim --jobs has NaN, not None)
        sim = not peer and not fused and (row.get("run_mode") == "sim"
                                          or _missing(row.get("tag_s")))
        if fused:
            tag, write = None, row.get("total_s")
        elif peer:
            tag, write = None, row.get("write_s")
        elif sim:
            tag, write = row.get("model_tag_s"), row.get("model_write_s")
        else:
            tag, write = row.get("tag_s"), row.get("write_s")
        read = "—" if peer else fmt_count(row.get("files_read") or 0, 11)
        fp = "—" if peer else fmt_count(row.get("false_positives") or 0, 10)
        write_cell = fmt_seconds(write, sim)
        if fused and write_cell != "—":
            write_cell = "Σ" + write_cell
        return (f"  {row['index']:<{self.width}} {int(row['batch']):>5} "
                f"{fmt_count(row['records'], 11):>11} {fmt_seconds(tag, sim):>7} "
                f"{write_cell:>7} {read:>11} {fp:>10}")


# printed under the header of a run in throughput mode
FUSED_NOTE = ("throughput mode: phases fused into fewer Spark jobs; Σ = the batch's "
              "total seconds")


def fitted_tables(title: str, keys: list[tuple[str, list[str]]],
                  columns: list[tuple[str, list[str]]], width: int) -> list[RichTable]:
    """Tables of ``keys`` columns (repeated in each) and as many of ``columns`` as fit
    ``width``, in order; every cell on one line, nothing cut. ``title`` heads the first."""
    console = Console(width=10_000)  # measures only

    def build(cols: list[tuple[str, list[str]]], with_title: bool) -> RichTable:
        t = RichTable(title=title if with_title else None, box=box.SIMPLE_HEAD,
                      show_edge=False, pad_edge=False, title_justify="left")
        for head, _ in keys:
            t.add_column(head, no_wrap=True)
        for head, _ in cols:
            t.add_column(head, justify="right", no_wrap=True)
        n = len(keys[0][1]) if keys else len(cols[0][1]) if cols else 0
        for i in range(n):
            t.add_row(*[v[i] for _, v in keys], *[v[i] for _, v in cols])
        return t

    def fits(cols: list[tuple[str, list[str]]]) -> bool:
        return console.measure(build(cols, False)).maximum <= width

    tables, group = [], []
    for col in columns:
        if group and not fits([*group, col]):
            tables.append(build(group, not tables))
            group = []
        group.append(col)
    if group or not tables:
        tables.append(build(group, not tables))
    return tables


def summary_tables(s: pd.DataFrame, width: int) -> list[RichTable]:
    """The median table (``api.summary``: one row per index) as tables within ``width``;
    columns empty for every index are left out."""
    keys = [("index", [str(i) for i in s.index])]
    order = []  # a simulated run's modelled column where its empty measured one would be
    for c in s.columns:
        model = f"model_{c}"
        if model in s.columns and not s[c].notna().any():
            order.append(model)
        elif not (c.startswith("model_") and c in order) and c not in order:
            order.append(c)
    cols = [(HEADERS.get(c, c), [_summary_cell(c, v) for v in s[c]]) for c in order
            if s[c].notna().any()]
    return fitted_tables("median per upsert batch (batches ≥ 1)", keys, cols, width)


def _summary_cell(column: str, v: Any) -> str:
    if column.endswith("_s") and not isinstance(v, bool):
        return fmt_seconds(None if pd.isna(v) else float(v))
    return fmt_value(column, v)


LOOKUP_COLUMNS = [("keys", "keys"), ("keys_found", "found"), ("files_read", "files"),
                  ("fp_file_reads", "fp files"), ("latency_p50_s", "p50"),
                  ("latency_p99_s", "p99")]
# the result rows (equal for every plan of a query) are in the report's Queries table
SCAN_COLUMNS = [("total_s", "time"), ("shuffle_bytes", "shuffle\nbytes"),
                ("has_exchange", "Ex-\nchange")]


def query_tables(df: pd.DataFrame, width: int) -> list[RichTable]:
    """Lookups per index (latency per key batch), then the group-by/join per index and
    plan, each within ``width``; an index on a merge-on-read table is named
    ``<index> (mor)`` (``series_of``), so a compare of both table types tells its two
    rows apart."""
    out: list[RichTable] = []
    for kind, cols, title in (
            ("lookup", LOOKUP_COLUMNS, "point lookups (latency per key batch)"),
            ("scan", SCAN_COLUMNS, "group-by and join on the index key")):
        rows = df[(df["query"] == "lookup") == (kind == "lookup")]
        if rows.empty:
            continue
        keys = [("index", [str(v) for v in series_of(rows)])]
        if kind == "scan":
            keys += [("query", [str(v) for v in rows["query"]]),
                     ("plan", [str(v) for v in rows["plan"]])]
        values = []
        for c, head in cols:
            cells = rows[c] if c in rows.columns else pd.Series([None] * len(rows))
            if c == "has_exchange":
                cells = cells.map(lambda v: v if pd.isna(v) else bool(v))
            values.append((head, [_summary_cell(c, v) for v in cells]))
        out += fitted_tables(title, keys, values, width)
    return out


# what an index and the peer row mirroring it both count (reports.peer_pairs.PAIRED)
PAIR_COLUMNS = [("files_read", "files read"), ("false_positives", "false pos."),
                ("bytes_written", "bytes written"), ("total_s", "total")]


def pair_tables(p: pd.DataFrame, width: int) -> list[RichTable]:
    """``reports.peer_pairs.pairs``: each index beside the peer that mirrors it, "ours /
    theirs" per cell (— where a side does not count it), within ``width``."""
    if not len(p):
        return []
    keys = [("index", [f"{i} (mor)" if t == "mor" else str(i)
                       for i, t in zip(p["index"], p["table_type"], strict=True)]),
            ("beside", [str(x) for x in p["peer"]])]
    cols = []
    for col, head in PAIR_COLUMNS:
        cells = []
        for _, row in p.iterrows():
            a, b = row[f"{col} (ours)"], row[f"{col} ({row['peer']})"]
            cells.append(f"{_summary_cell(col, a)} / {_summary_cell(col, b)}")
        cols.append((head, cells))
    return fitted_tables("beside Hudi's own writer: ours / Hudi's, median per upsert batch "
                         "(batches ≥ 1)", keys, cols, width)
