"""Fidelity: our counters beside those of Hudi's own writer (and the simulator's) on the
same batches, batch by batch, each with its tolerance and a pass or a fail.

A run made with ``--peers hudi`` holds, for each index Hudi has, our table and Hudi's
(``tables/<index>[-<type>]``, ``tables/hudi/hudi-<index>[-<type>]``) and both writers'
metrics rows. Every figure here is read from what the writer that did the work wrote:

- what a batch committed (base files, log files, log records, records and bytes written,
  file groups touched), from each table's own commit metadata of that batch's instant,
  through one function (:func:`peers.hudi_logs.commit_figures`) for both;
- what the table held after the batch (base files per partition, records per file
  group), from each table's snapshot as of that instant (:meth:`Table.snapshot`);
- what a compaction after the batch rewrote (log files compacted, base files written);
- the bloom lookup (files read, keys checked, false positives), from the metrics rows:
  ours counted by our lookup, Hudi's from its lookup handle's log lines;
- where each record is, for an index whose counterpart places records as ours does by
  design (``HudiCounterpart.same_placement``: a bucket index), from joining both tables'
  latest snapshots on the record key.

The simulator's column is the simulator's row of the same series and batch, for the
figures it counts (nothing from a table: it writes none). docs/fidelity.md explains
every miss that remains.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

import indexes
from indexes import roles
from peers.hudi_logs import commit_figures, completed_instants, read_instant, write_stats
from tableformat import basefile as bf
from tableformat.slice_reader import read_file_group
from tableformat.table import Table
from tableformat.table_type import short_name

PASS, FAIL, INFO, EXPLAINED = "pass", "fail", "info", "explained"
FIDELITY_MD, FIDELITY_CSV = "fidelity.md", "fidelity.csv"  # written into the run's folder
COLUMNS = ["index", "table_type", "batch", "check", "ours", "hudi", "sim", "tolerance",
           "status", "detail"]


@dataclass(frozen=True)
class Check:
    """One figure both writers count: its name in the report, the relative difference
    it may have from Hudi's (0: equal; None: shown, not judged) and what it is for."""

    name: str
    tolerance: float | None
    why: str


# what each batch committed (commit metadata of the batch's instant, both tables)
COMMITTED = {
    "base_files_written": Check("base files written", 0.0,
                                "file sizing: small-file top-up and insert splits"),
    "file_groups_written": Check("file groups written", 0.0, "which file groups a batch "
                                 "touched (updates found, inserts placed)"),
    "records_written": Check("records written", 0.02, "records in the files written"),
    "bytes_written": Check("bytes written", 0.15, "encodings, compression, footers"),
}
LOGGED = {  # merge-on-read only
    "log_files_written": Check("log files written", 0.0, "updates appended to logs"),
    "log_records_written": Check("log records written", 0.0, "records in those logs"),
}
COMPACTED = {  # a compaction that completed after the batch's commit, before the next
    "log_files_compacted": Check("log files compacted", 0.0, "what compaction merged"),
    "base_files_written": Check("compacted base files", 0.0, "what compaction wrote"),
}
# the bloom lookup (metrics rows; a Hudi row has them when its lookup handle logged)
LOOKUP = {
    "files_read": Check("files read to tag", 0.02, "files whose keys were read"),
    "bloom_checks": Check("keys checked", 0.02, "keys probed against candidate files"),
    "false_positives": Check("false positives", 0.05, "bloom positives not in the file"),
}
# the table after the batch (snapshot as of its instant)
HELD = {
    "base_files": Check("base files per partition", 0.0, "files each partition holds"),
    "records_per_group": Check("records per file group", 0.02, "largest difference of "
                               "a partition's file groups paired by size"),
}
PLACED = Check("records placed alike", 0.0, "share of records whose file group holds "
               "the same keys on both sides (1 = every record)")
# an index kept on disk beside Hudi's record-level index (the metadata table's
# record_index partition): both in their own format by design, so shown, not judged
INDEX_BYTES = Check("index bytes per key", None, "ours: index_disk_bytes; Hudi's: the "
                    "live files of .hoodie/metadata/record_index; per record in the table")
RECORD_INDEX = "record_index"
_MDT_LOG = re.compile(r"^\.(?P<fid>.+)_(?P<base>\d{17})\.log\.\d+_")
_MDT_BASE = re.compile(r"^(?P<fid>.+?)_[^_]+_(?P<base>\d{17})\.hfile$")


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def judge(ours: float, hudi: float, tolerance: float | None) -> str:
    """pass: within ``tolerance`` of Hudi's (relative; both 0 is equal); info: no
    tolerance or a side has no figure."""
    if tolerance is None or math.isnan(ours) or math.isnan(hudi):
        return INFO
    if ours == hudi:
        return PASS
    return PASS if abs(ours - hudi) <= tolerance * max(abs(hudi), 1e-12) else FAIL


# --- reading the two tables ------------------------------------------------------------

def _upserts(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["operation"].astype("string").eq("upsert").fillna(False)]


def _instant_of(rows: pd.DataFrame, batch: int) -> str | None:
    hit = rows[rows["batch"] == batch]
    if not len(hit) or "instant" not in hit.columns or pd.isna(hit["instant"].iloc[0]):
        return None
    return str(hit["instant"].iloc[0])


def _committed(table: Table, done: list[tuple[str, str]], instant: str
               ) -> tuple[dict[str, int], dict[str, int] | None]:
    """(what ``instant`` committed, what a compaction right after it committed or None:
    the instants after it are read up to the first that is neither a compaction nor a
    clustering). ``done``: the table's completed instants, listed once."""
    mine = commit_figures(_stats(table.read_commit(instant, dict(done)[instant])))
    for i, a in done:
        if i <= instant:
            continue
        meta = table.read_commit(i, a)
        op = meta.get("operationType")
        if op == "COMPACT":
            return mine, commit_figures(_stats(meta))
        if op != "CLUSTER":
            break  # the next write came first
    return mine, None


def _stats(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for stats in (meta.get("partitionToWriteStats") or {}).values() for s in stats]


def _held(table: Table, instant: str) -> dict[str, Any]:
    """Base files per partition and records per file group (sorted) after ``instant``."""
    snap = table.snapshot(as_of=instant)
    bases: Counter = Counter()
    groups: dict[str, list[int]] = {}
    for s in snap.slices.values():
        if s.path is not None:
            bases[s.partition] += 1
        groups.setdefault(s.partition, []).append(int(s.num_records))
    return {"base_files": dict(bases),
            "records_per_group": {p: sorted(v) for p, v in groups.items()}}


def record_index_sizes(table: str) -> list[tuple[str, int]] | None:
    """(metadata-table instant, bytes of Hudi's record-level index after it), oldest
    first, in one pass over the metadata table's commits: the files of its
    ``record_index`` partition they wrote, each at its latest size, of each file
    group's latest slice. None without a record-level index."""
    mdt = os.path.join(table, ".hoodie", "metadata")
    if not os.path.isdir(os.path.join(mdt, RECORD_INDEX)):
        return None
    files: dict[str, tuple[str, str, int]] = {}  # name -> (file group, base instant, bytes)
    latest: dict[str, str] = {}  # file group -> its newest slice's base instant
    out = []
    for i, _action, path in completed_instants(mdt):
        for stat in write_stats(read_instant(path)):
            if stat.get("partitionPath") != RECORD_INDEX or not stat.get("path"):
                continue
            name = os.path.basename(stat["path"])
            m = _MDT_LOG.match(name) or _MDT_BASE.match(name)
            if m:
                files[name] = (m["fid"], m["base"], int(stat.get("fileSizeInBytes") or 0))
                latest[m["fid"]] = max(latest.get(m["fid"], ""), m["base"])
        out.append((i, sum(size for fid, base, size in files.values() if base == latest[fid])))
    return out


def _as_of(sizes: list[tuple[str, int]], instant: str) -> int:
    """The size after the newest metadata-table instant at or before ``instant``."""
    return next((size for i, size in reversed(sizes) if i <= instant), 0)


def record_index_bytes(table: str, instant: str) -> int | None:
    """Bytes of Hudi's record-level index as of a data-table instant (None: none)."""
    sizes = record_index_sizes(table)
    return None if sizes is None else _as_of(sizes, instant)


def _index_bytes_row(pair: Pair, b: int, theirs: str, sizes: list[tuple[str, int]]
                     ) -> dict[str, Any] | None:
    our_row = pair.our_rows[pair.our_rows["batch"] == b]
    hudi_row = pair.hudi_rows[pair.hudi_rows["batch"] == b]
    if "index_disk_bytes" not in our_row.columns:
        return None
    hudi = _as_of(sizes, theirs)
    # per live key on both sides: Hudi's snapshot count (equal to ours, `records_check`);
    # our merge-on-read `table_records` counts a logged update once per stored copy
    keys = max(_num(hudi_row["table_records"].iloc[0]), 1)
    ours = _num(our_row["index_disk_bytes"].iloc[0])
    return _row(pair, b, INDEX_BYTES, ours / keys, hudi / keys,
                detail=f"ours {ours:,.0f} B, Hudi's record_index {hudi:,} B")


def _largest_gap(ours: dict[str, list[int]], hudi: dict[str, list[int]]) -> float:
    """Largest relative difference between file groups paired by size, per partition
    (inf when a partition's group counts differ)."""
    gap = 0.0
    for p in set(ours) | set(hudi):
        a, b = ours.get(p, []), hudi.get(p, [])
        if len(a) != len(b):
            return math.inf
        for x, y in zip(a, b, strict=True):
            gap = max(gap, abs(x - y) / max(y, 1))
    return gap


def _record_groups(table: Table) -> pa.Table:
    """(record key, file group code) of every record of the latest snapshot."""
    keys, codes = [], []
    for n, s in enumerate(sorted(table.snapshot().slices.values(),
                                 key=lambda s: (s.partition, s.file_id))):
        got = read_file_group(table, s).column(bf.RECORD_KEY)
        keys.append(got)
        codes.append(pa.array(np.full(len(got), n, np.int64)))
    if not keys:
        return pa.table({"key": pa.array([], pa.string()), "g": pa.array([], pa.int64())})
    return pa.table({"key": pa.chunked_array(keys).cast(pa.string()),
                     "g": pa.chunked_array(codes)})


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Share of records whose group in ``b`` is the one most of their ``a`` group is in,
    the smaller of both directions: 1 exactly when both split the keys alike."""
    if not len(a):
        return 1.0

    def one_way(x: np.ndarray, y: np.ndarray) -> float:
        pairs = np.stack([x, y], axis=1)
        uniq, counts = np.unique(pairs, axis=0, return_counts=True)
        order = np.lexsort((-counts, uniq[:, 0]))
        first = np.unique(uniq[order, 0], return_index=True)[1]
        return float(counts[order][first].sum()) / len(x)

    return min(one_way(a, b), one_way(b, a))


def placement(ours: Table, hudi: Table) -> tuple[float, int, int]:
    """(agreement, records on both sides, records on one side only) of the latest
    snapshots, joined on the record key."""
    a, b = _record_groups(ours), _record_groups(hudi)
    joined = a.join(b, "key", join_type="inner", left_suffix="_o", right_suffix="_h")
    only = a.num_rows + b.num_rows - 2 * joined.num_rows
    agree = _agreement(joined.column("g_o").to_numpy(), joined.column("g_h").to_numpy())
    return agree, joined.num_rows, only


# --- the checks -------------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """One index on one table type: our table and rows, Hudi's, the simulator's rows."""

    index: str
    table_type: str  # short: cow / mor
    ours: Table
    hudi: Table
    our_rows: pd.DataFrame
    hudi_rows: pd.DataFrame
    sim_rows: pd.DataFrame

    @cached_property
    def our_timeline(self) -> list[tuple[str, str]]:
        return self.ours.completed_instants()

    @cached_property
    def hudi_timeline(self) -> list[tuple[str, str]]:
        return self.hudi.completed_instants()


def _row(pair: Pair, batch: int, check: Check, ours: float, hudi: float,
         sim: float = math.nan, detail: str = "") -> dict[str, Any]:
    return {"index": pair.index, "table_type": pair.table_type, "batch": batch,
            "check": check.name, "ours": ours, "hudi": hudi, "sim": sim,
            "tolerance": check.tolerance, "status": judge(ours, hudi, check.tolerance),
            "detail": detail}


def _sim_value(rows: pd.DataFrame, batch: int, *cols: str) -> float:
    hit = rows[rows["batch"] == batch] if len(rows) else rows
    for col in cols:
        if len(hit) and col in hit.columns:
            return _num(hit[col].iloc[0])
    return math.nan


def _sim_figure(rows: pd.DataFrame, batch: int, col: str) -> float:
    """The simulator's row's figure for a commit check (its columns are the metrics
    contract's: a base file or a log per file group written)."""
    if col == "bytes_written":
        return _sim_value(rows, batch, "model_bytes_written", col)
    if col == "base_files_written":
        return _sim_value(rows, batch, "files_written") - \
            np.nan_to_num(_sim_value(rows, batch, "log_files_written"))
    if col == "file_groups_written":
        return _sim_value(rows, batch, "files_written")
    return _sim_value(rows, batch, col)


def check_pair(pair: Pair) -> list[dict[str, Any]]:
    """Every check of one index on one table type, batch by batch."""
    out: list[dict[str, Any]] = []
    mor = pair.table_type == "mor"
    batches = sorted(set(pair.our_rows["batch"]) & set(pair.hudi_rows["batch"]))
    rli_sizes = record_index_sizes(pair.hudi.root)  # read once, not once a batch
    for b in batches:
        mine, theirs = _instant_of(pair.our_rows, b), _instant_of(pair.hudi_rows, b)
        if mine not in dict(pair.our_timeline) or theirs not in dict(pair.hudi_timeline):
            continue  # no commit to read (archived, rolled back): nothing to hold
        our_commit, our_compaction = _committed(pair.ours, pair.our_timeline, mine)
        hudi_commit, hudi_compaction = _committed(pair.hudi, pair.hudi_timeline, theirs)
        for col, check in (COMMITTED | (LOGGED if mor else {})).items():
            out.append(_row(pair, b, check, our_commit[col], hudi_commit[col],
                            _sim_figure(pair.sim_rows, b, col)))
        if our_compaction or hudi_compaction:
            for col, check in COMPACTED.items():
                out.append(_row(pair, b, check, (our_compaction or {}).get(col, 0),
                                (hudi_compaction or {}).get(col, 0)))
        hudi_row = pair.hudi_rows[pair.hudi_rows["batch"] == b]
        looked = "candidate_files" in hudi_row.columns and hudi_row["candidate_files"].notna().any()
        if looked and b > 0:
            our_row = pair.our_rows[pair.our_rows["batch"] == b]
            for col, check in LOOKUP.items():
                out.append(_row(pair, b, check, _num(our_row[col].iloc[0]),
                                _num(hudi_row[col].iloc[0]), _sim_value(pair.sim_rows, b, col)))
        ours_held, hudi_held = _held(pair.ours, mine), _held(pair.hudi, theirs)
        a, h = ours_held["base_files"], hudi_held["base_files"]
        differ = sorted(p for p in set(a) | set(h) if a.get(p, 0) != h.get(p, 0))
        row = _row(pair, b, HELD["base_files"], sum(a.values()), sum(h.values()),
                   detail=f"{len(differ)} of {len(set(a) | set(h))} partitions differ"
                   if differ else "")
        row["status"] = FAIL if differ else PASS
        out.append(row)
        indexed = rli_sizes is not None and _index_bytes_row(pair, b, theirs, rli_sizes)
        if indexed:
            out.append(indexed)
        gap = _largest_gap(ours_held["records_per_group"], hudi_held["records_per_group"])
        row = _row(pair, b, HELD["records_per_group"], gap, math.nan,
                   detail="file group counts differ" if math.isinf(gap) else "")
        row["status"] = PASS if gap <= HELD["records_per_group"].tolerance else FAIL
        out.append(row)
    if batches:
        same = roles.hudi_counterpart(indexes.index_class(pair.index)).same_placement
        agree, both, only = placement(pair.ours, pair.hudi)
        check = PLACED if same else Check(PLACED.name, None, PLACED.why)
        row = _row(pair, batches[-1], check, agree, 1.0,
                   detail=f"{both:,} records joined, {only:,} on one side only")
        if same:
            row["status"] = PASS if agree == 1.0 and only == 0 else FAIL
        out.append(row)
    return [_verdict(pair, r) for r in out]


def _verdict(pair: Pair, row: dict[str, Any]) -> dict[str, Any]:
    """The counterpart's say: a check it does not judge is shown only, a miss it
    explains (docs/fidelity.md) is ``explained`` with the reason."""
    hudi = roles.hudi_counterpart(indexes.index_class(pair.index))
    if hudi.judged is not None and row["check"] not in hudi.judged:
        return {**row, "status": INFO, "tolerance": None}
    why = next((w for check, tt, w in hudi.explained
                if check == row["check"] and tt in ("", row["table_type"])), None)
    if row["status"] == FAIL and why:
        detail = f"{row['detail']}; {why}" if row["detail"] else why
        return {**row, "status": EXPLAINED, "detail": detail}
    return row


def _peer_tables(run: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """(mirrored index, cow/mor) -> Hudi's table path, from run.json's peers: the tables
    of table version 6, the one this project's reader opens (Hudi writes 6 unless
    ``--set hudi:hoodie.write.table.version=...``)."""
    out = {}
    for info in (run.get("peers") or {}).values():
        if info.get("peer") == "hudi" and info.get("mirrors") and info.get("table") and \
                str(info.get("table_version", "6")) == "6" and \
                info.get("same_params", True):  # not run at other settings than ours
            out[(info["mirrors"], short_name(info["table_type"]))] = info["table"]
    return out


def _our_table(run: Mapping[str, Any], index: str, table_type: str) -> str | None:
    """Our table of ``index`` on ``table_type`` (``<index>-<type>`` when the run had
    both types, else ``<index>``), from run.json's tables."""
    tables = run.get("tables") or {}
    return tables.get(f"{index}-{table_type}") or tables.get(index)


def pairs_of_run(run_dir: str) -> list[Pair]:
    """Every (index, table type) of a run that Hudi's writer mirrored, both tables kept."""
    with open(os.path.join(run_dir, "run.json")) as f:
        run = json.load(f)
    df = pd.read_parquet(os.path.join(run_dir, "metrics.parquet"))
    up = _upserts(df)
    types = up["table_type"].astype("string").fillna("cow")
    mode = up["run_mode"].astype("string").fillna("") if "run_mode" in up.columns else \
        pd.Series("", index=up.index)
    out = []
    for (index, tt), path in sorted(_peer_tables(run).items()):
        ours_path = _our_table(run, index, tt)
        if ours_path is None or not os.path.isdir(ours_path) or not os.path.isdir(path):
            continue
        our_rows = up[(up["index"] == index) & (types == tt) & ~mode.isin(["peer", "sim"])]
        hudi_rows = up[(up["index"] == "hudi-" + index) & (types == tt)]
        out.append(Pair(index, tt, Table(ours_path), Table(path), our_rows, hudi_rows,
                        pd.DataFrame()))
    return out


def with_sim(pairs: list[Pair], sim: pd.DataFrame | None) -> list[Pair]:
    """The pairs with the simulator's rows of their index and table type."""
    if sim is None or not len(sim):
        return pairs
    up = _upserts(sim)
    types = up["table_type"].astype("string").fillna("cow")
    return [replace(p, sim_rows=up[(up["index"] == p.index) & (types == p.table_type)])
            for p in pairs]


def check_pairs(pairs: list[Pair]) -> pd.DataFrame:
    """Every check of the given pairs (:data:`COLUMNS`)."""
    return pd.DataFrame([r for pair in pairs for r in check_pair(pair)], columns=COLUMNS)


def check_run(run_dir: str, sim: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every check of every mirrored index and table type of a run (:data:`COLUMNS`)."""
    return check_pairs(with_sim(pairs_of_run(run_dir), sim))


# --- writing it down --------------------------------------------------------------------

def _fmt(value: Any, check: str) -> str:
    v = _num(value)
    if math.isnan(v):
        return "—"
    if check in (PLACED.name,):
        return f"{v:.4f}"
    if check == HELD["records_per_group"].name:
        return "differ" if math.isinf(v) else f"{v:.1%}"
    return f"{v:,.0f}"


def markdown(checks: pd.DataFrame) -> str:
    """One table per index and table type: every check per batch, ours / Hudi's / the
    simulator's, the tolerance and the verdict."""
    if not len(checks):
        return "No index of this run has Hudi's writer beside it (`--peers hudi`).\n"
    lines = []
    n_fail = int((checks["status"] == FAIL).sum())
    lines.append(f"{len(checks)} checks: {int((checks['status'] == PASS).sum())} pass, "
                 f"{n_fail} fail, {int((checks['status'] == EXPLAINED).sum())} explained "
                 f"(docs/fidelity.md), {int((checks['status'] == INFO).sum())} shown only.\n")
    for (index, tt), rows in checks.groupby(["index", "table_type"], sort=False):
        lines += [f"\n### {index} ({tt})\n",
                  "| batch | check | ours | Hudi's | simulator | tolerance | verdict |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in rows.iterrows():
            tol = "—" if r["tolerance"] is None or pd.isna(r["tolerance"]) else (
                "equal" if r["tolerance"] == 0 else f"±{r['tolerance']:.0%}")
            verdict = r["status"] + (f" ({r['detail']})" if r["detail"] else "")
            lines.append(f"| {r['batch']} | {r['check']} | {_fmt(r['ours'], r['check'])} | "
                         f"{_fmt(r['hudi'], r['check'])} | {_fmt(r['sim'], r['check'])} | "
                         f"{tol} | {verdict} |")
    return "\n".join(lines) + "\n"


def summary(checks: pd.DataFrame) -> list[str]:
    """Terminal lines: per index and table type, checks passed and the misses by name."""
    out = []
    for (index, tt), rows in checks.groupby(["index", "table_type"], sort=False):
        failed = rows[rows["status"] == FAIL]
        explained = rows[rows["status"] == EXPLAINED]
        judged = rows[rows["status"] != INFO]
        line = (f"{index} ({tt}): {int((judged['status'] == PASS).sum())}/{len(judged)} "
                "within tolerance")
        if len(explained):
            line += f", {len(explained)} explained"
        if len(failed):
            line += "; misses: " + ", ".join(sorted(set(failed["check"])))
        out.append(line)
    return out


def summary_table(checks: pd.DataFrame) -> pd.DataFrame:
    """Per index and table type: checks judged, passed, explained, missed (by name)."""
    rows = []
    for (index, tt), g in checks.groupby(["index", "table_type"], sort=False):
        failed = g[g["status"] == FAIL]
        rows.append({"index": f"{index} ({tt})", "judged": int((g["status"] != INFO).sum()),
                     "pass": int((g["status"] == PASS).sum()),
                     "explained": int((g["status"] == EXPLAINED).sum()),
                     "fail": len(failed),
                     "misses": ", ".join(sorted(set(failed["check"]))) or "—"})
    return pd.DataFrame(rows)


# every check's name (what a counterpart's ``judged`` and ``explained`` refer to)
CHECKS = tuple(dict.fromkeys(c.name for c in (*COMMITTED.values(), *LOGGED.values(),
                                              *COMPACTED.values(), *LOOKUP.values(),
                                              *HELD.values(), PLACED, INDEX_BYTES)))

__all__ = ["CHECKS", "COLUMNS", "EXPLAINED", "FAIL", "FIDELITY_CSV", "FIDELITY_MD", "INFO",
           "INDEX_BYTES", "PASS", "RECORD_INDEX", "Check", "Pair", "check_pair", "check_pairs",
           "check_run", "judge", "markdown", "pairs_of_run", "placement", "record_index_bytes",
           "record_index_sizes", "summary", "summary_table", "with_sim"]
