"""Hudi reads what we write: every kept table of a run, through Hudi's Spark datasource.

For each of our tables (every index, both table types) four queries run in Hudi's own
JVM (:func:`peers.hudi.read`) and each is held against the workload's oracle
(:mod:`workloads.oracle`) for that point:

- ``snapshot``: the latest table, against the state after the last batch;
- ``read_optimized``: base files only. On copy-on-write that is the snapshot. On
  merge-on-read it holds each file group's latest base file, which no workload rule
  predicts (it depends on which groups took logs since their last compaction), so it is
  held against those base files as this project's own reader reads them, and every row
  must be a version the oracle once held (``not_a_version``);
- ``incremental`` from the middle batch's instant: the records whose winning version a
  later batch wrote;
- ``time_travel`` to the middle batch's instant: the state after that batch.

Besides the data columns, every record's ``_hoodie_commit_time`` must be the instant of
the batch that wrote its winning version (``wrong_commit_time``): the field Hudi's
incremental queries and CDC readers trust. A miss is a format bug in this project.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

import workloads
from indexbench.batches import BATCH_KEY
from peers import hudi as hudi_peer
from tableformat import basefile as bf
from tableformat.errors import IndexBenchError
from tableformat.table import Snapshot, Table
from tableformat.table_type import MERGE_ON_READ, short_name
from workloads.oracle import BATCH, Oracle, difference

READS_MD, READS_CSV = "hudi-reads.md", "hudi-reads.csv"
COMMIT_TIME = "_hoodie_commit_time"
COLUMNS = ["table", "index", "table_type", "query", "batch", "instant", "expected_from",
           "expected", "read", "missing", "unexpected", "differ", "duplicates",
           "wrong_commit_time", "not_a_version", "error", "status"]
PASS, FAIL = "pass", "fail"


def batch_instants(snap: Snapshot) -> dict[int, str]:
    """Batch number -> the instant of our commit that wrote it."""
    return {int(extra[BATCH_KEY]): instant for instant, extra in snap.extra.items()
            if BATCH_KEY in extra}


def _with_commit_time(state: pa.Table, instants: Mapping[int, str]) -> pa.Table:
    """The oracle's rows with the instant of the batch that wrote each."""
    batches = state.column(BATCH).to_numpy()
    lookup = np.array([instants.get(b, "") for b in range(int(batches.max(initial=-1)) + 1)],
                      dtype=object)
    return state.append_column(COMMIT_TIME, pa.array(lookup[batches] if len(batches) else
                                                     [], pa.string()))


def _base_files(table: Table, snap: Snapshot) -> pa.Table:
    """Every latest base file's rows, as this project's reader reads them."""
    parts = [bf.read_base_file(table.fs, table.abs_path(s.path))
             for s in snap.slices.values() if s.path is not None]
    parts = [p for p in parts if p.num_rows]
    if not parts:
        return pa.table({c: pa.array([], pa.string()) for c in ("key", "dt", "payload")})
    cols = [c for c in (*hudi_peer.READ_COLUMNS,) if c in parts[0].column_names]
    return pa.concat_tables([p.select(cols) for p in parts])


def _not_versions(rows: pa.Table, oracle: Oracle) -> int:
    """Rows whose (key, ts) the oracle never held live."""
    if not rows.num_rows:
        return 0
    versions = oracle.versions()
    hit = rows.select(["key", "ts"]).join(versions.append_column(
        "_v", pa.array(np.ones(versions.num_rows, bool))), keys=["key", "ts"])
    return int(rows.num_rows - pc.sum(pc.is_valid(hit.column("_v"))).as_py())


def check_table(table: Table, index: str, table_type: str, oracle: Oracle,
                logs_dir: str) -> list[dict[str, Any]]:
    """The four queries of one of our tables, each against its oracle."""
    path = table.uri
    snap = table.snapshot()
    instants = batch_instants(snap)
    if not instants:
        return []
    last = max(instants)
    middle = last // 2
    queries = [(hudi_peer.SNAPSHOT, last, None), (hudi_peer.READ_OPTIMIZED, last, None)]
    if last > 0:
        queries += [(hudi_peer.INCREMENTAL, middle, instants[middle]),
                    (hudi_peer.TIME_TRAVEL, middle, instants[middle])]
    rows = []
    for query, batch, instant in queries:
        base = {"table": path, "index": index, "table_type": table_type, "query": query,
                "batch": batch, "instant": instant or instants[batch]}
        try:
            got = hudi_peer.read(path, query, instant=instant, logs_dir=logs_dir)
        except IndexBenchError as exc:  # Hudi refused the table: a format bug, reported
            rows.append({**base, "expected_from": "", "error": str(exc)[:300],
                         "status": FAIL})
            continue
        base_only = query == hudi_peer.READ_OPTIMIZED and table_type == short_name(
            MERGE_ON_READ)
        if base_only:
            expected, source = _base_files(table, snap), "base files (our reader)"
        elif query == hudi_peer.INCREMENTAL:
            expected, source = oracle.changed_after(middle, last), "oracle"
        else:
            expected, source = oracle.state(batch), "oracle"
        if source == "oracle":
            expected = _with_commit_time(expected, instants)
        diff = difference(expected, got, separate=(COMMIT_TIME,))
        commit = diff.pop(f"differ_{COMMIT_TIME}", 0)
        not_version = _not_versions(got, oracle) if base_only else 0
        bad = diff["missing"] + diff["unexpected"] + diff["differ"] + diff["duplicates"] \
            + commit + not_version
        rows.append({**base, "expected_from": source, **diff, "wrong_commit_time": commit,
                     "not_a_version": not_version, "error": "",
                     "status": FAIL if bad else PASS})
    return rows


def _our_tables(run: Mapping[str, Any]) -> list[tuple[Table, str, str]]:
    """(table, index, cow/mor) of every kept table of ours in a run."""
    out = []
    for name, path in sorted((run.get("tables") or {}).items()):
        if not os.path.isdir(path):
            continue
        table = Table(path)
        index = table.config.index_name or name
        out.append((table, index, short_name(table.config.table_type)))
    return out


def check(run_dir: str) -> pd.DataFrame:
    """Hudi's four queries of every kept table of ours in a run, against the oracle;
    writes ``hudi-reads.md`` and ``hudi-reads.csv`` into ``run_dir``."""
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            run = json.load(f)
    except OSError as exc:
        raise IndexBenchError(f"{run_dir}: not a run directory (no run.json)") from exc
    tables = _our_tables(run)
    if not tables:
        raise IndexBenchError(f"{run_dir}: no kept table of ours (run compare with "
                              "--keep-tables)")
    oracle = Oracle(workloads.Workload(**run["workload"]))
    logs_dir = os.path.join(run_dir, "hudi-reads")
    os.makedirs(logs_dir, exist_ok=True)
    rows = [r for table, index, tt in tables
            for r in check_table(table, index, tt, oracle, logs_dir)]
    out = pd.DataFrame(rows, columns=COLUMNS)
    out.to_csv(os.path.join(run_dir, READS_CSV), index=False)
    with open(os.path.join(run_dir, READS_MD), "w") as f:
        f.write(markdown(out))
    return out


def markdown(checks: pd.DataFrame) -> str:
    """The checks as a Markdown table, one line per table and query."""
    head = ("| index | type | query | batch | expected from | expected | read | missing "
            "| unexpected | differ | duplicates | wrong commit time | not a version | "
            "status |\n" + "|---" * 14 + "|\n")
    def line(r) -> str:
        if isinstance(r.error, str) and r.error:
            return (f"| {r.index} | {r.table_type} | {r.query} | {r.batch} | Hudi refused: "
                    f"{r.error} |" + " |" * 8 + f" {r.status} |\n")
        return (f"| {r.index} | {r.table_type} | {r.query} | {r.batch} | {r.expected_from} "
                f"| {int(r.expected):,} | {int(r.read):,} | {int(r.missing)} | "
                f"{int(r.unexpected)} | {int(r.differ)} | {int(r.duplicates)} | "
                f"{int(r.wrong_commit_time)} | {int(r.not_a_version)} | {r.status} |\n")
    body = "".join(line(r) for r in checks.itertuples())
    passed = int((checks["status"] == PASS).sum())
    return (f"# Hudi reads our tables\n\n{passed} of {len(checks)} queries equal their "
            f"oracle.\n\n{head}{body}")


def summary(checks: pd.DataFrame) -> str:
    """One line: how many of Hudi's reads equal their oracle, and which did not."""
    failed = checks[checks["status"] == FAIL]
    line = f"Hudi reads our tables: {len(checks) - len(failed)} of {len(checks)} queries " \
           "equal the oracle"
    if len(failed):
        line += "; not: " + ", ".join(f"{r.index} ({r.table_type}) {r.query}"
                                      for r in failed.itertuples())
    return line


__all__ = ["COLUMNS", "READS_CSV", "READS_MD", "batch_instants", "check", "check_table",
           "markdown", "summary"]
