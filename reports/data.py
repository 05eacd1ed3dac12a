"""Loading metrics directories for reports: contract checks, run.json, series labels.

What "unknown column" means (the contract, docs/metrics.md, lets runs *add* columns but never
rename one):

* a missing contract column is an error (as in ``metrics.contract.read_metrics``);
* a column whose name is not snake_case, or that differs from a contract column only in
  case or separators (``FP_rate``, ``tag-s``), is an error: it is a rename or a foreign
  file, and a figure drawn from it would silently be wrong;
* a contract column that holds non-numeric text where numbers belong is an error;
* any other extra column is accepted (indexes add their own metrics). If it is neither in
  ``KNOWN_EXTRA_COLUMNS`` (or a ``KNOWN_EXTRA_PREFIXES`` family) nor declared by an index
  (``RecordIndex.METRICS``) it raises an
  ``UnknownColumnWarning``; ``strict=True`` (``indexbench report --strict``) turns that
  warning into an error naming the column.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from metrics.contract import (
    CONTRACT_COLUMNS,
    STRING_COLUMNS,
    metrics_file,
    read_metrics_file,
    series_of,
)
from metrics.rows import MEASURED_ONLY

# Extra columns the driver, the simulator, the service runner, peers and queries write
# (silences the warning); an index declares its own (``RecordIndex.METRICS``).
KNOWN_EXTRA_COLUMNS = frozenset({
    # driver
    "operation", "instant", "input_records", "table_records", "footers_read",
    "merge_files_read", "merge_bytes_read", "bucket_records_cov", "records_written",
    "footer_keys_written", "footer_filters_written",
    "deletes", "keys_hashed", "write_task_max_s",
    # what tagging read, split by need (any index that reads files to tag)
    "files_read_needed", "files_read_fp_only", "bytes_read_needed", "bytes_read_fp_only",
    "fp_theory", "probed_keys_per_file",
    # counters of the contract only some indexes count (metrics.rows.COPIED_WHEN_COUNTED)
    "true_positives", "buckets_created",
    # simulator (modelled figures are the model_* family)
    "run_mode", "sim_s", "storage",
    # copy-on-write file sizing (indexes that leave inserts to the planner)
    "small_files_topped_up", "small_file_inserts", "avg_record_size",
    # table-service rows (indexbench.services): rescales, resizes, index compactions
    "mode", "factor", "shuffle_bytes",
    "shuffle_read_bytes", "spark_jobs", "partition", "rescaled_partitions",
    # seconds of the phases before tagging (the driver's and a peer's)
    "generate_s", "validate_s", "precombine_s",
    # the driver's timing mode: "phases" (a timer per phase) or "total" (throughput mode)
    "timing",
    # peers (``run_mode = "peer"``; their own figures are the peer_* family)
    # what Hudi's commits count per batch (the hudi peer; docs/peers.md)
    "base_files_written", "file_groups_written", "log_records_written",
    "table_bytes",
    # queries (indexbench query): lookups, group-bys and joins over an index's table
    "query", "plan", "table", "join_table", "keys", "keys_present", "keys_found",
    "lookup_batches", "index_files_read", "fp_file_reads", "files_read_per_key",
    "latency_p50_s", "latency_p99_s", "latency_max_s", "has_exchange", "bucket_groups",
    "spark_tasks", "result_rows", "repeats", "key_fields", "spark_input_bytes",
    # reports
    "run", "series",
    # merge-on-read (docs/table-format.md): log writes, logs in the table, compactions,
    # merged reads
    "table_type", "log_files_written", "log_blocks_written", "log_bytes_written",
    "write_amplification", "records_in_logs", "log_files_in_table", "slices_compacted",
    "log_files_compacted", "log_bytes_compacted", "log_files_read", "log_bytes_read",
    # query types (hoodie.datasource.query.type) and the merge's seconds of a query
    "query_type", "merge_s",
    # indexbench stream (docs/streaming.md): one row per micro-batch
    "stream_batch_id", "processing_s", "freshness_s", "input_rows_per_s", "backlog_batches",
    "landed_batches",
})
# Families of extra columns (multiple-rehash: rescaled_<bucket fill>_before/_after;
# the simulator's modelled figures: model_<column>; a peer's own figures: peer_<name>).
# the Hudi peer's own figures: hudi_<name> (peers/hudi.py)
KNOWN_EXTRA_PREFIXES = ("rescaled_", "model_", "peer_", "hudi_")
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


class MetricsColumnError(ValueError):
    """A metrics file does not follow the column contract (names the columns)."""


class UnknownColumnWarning(UserWarning):
    """A metrics column no index or the driver is known to write."""


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def declared_columns() -> set[str]:
    """Extra metric columns declared by the registered indexes (``METRICS``)."""
    try:
        import indexes
    except ImportError:  # pragma: no cover - reports without the index package
        return set()
    return indexes.metric_columns()


def measured_columns() -> set[str]:
    """Columns of measured bytes and seconds: the driver's and the indexes' declared."""
    try:
        import indexes
    except ImportError:  # pragma: no cover - reports without the index package
        return set(MEASURED_ONLY)
    return set(MEASURED_ONLY) | indexes.measured_columns()


def check_columns(df: pd.DataFrame, source: str = "metrics", strict: bool = False) -> None:
    """Raise ``MetricsColumnError`` for missing/renamed/malformed columns (see module doc)."""
    cols = [str(c) for c in df.columns]
    missing = [c for c in CONTRACT_COLUMNS if c not in cols]
    extras = [c for c in cols if c not in CONTRACT_COLUMNS]
    contract_norm = {_norm(c): c for c in CONTRACT_COLUMNS}
    renamed = [f"{c!r} (looks like {contract_norm[_norm(c)]!r})" for c in extras
               if _norm(c) in contract_norm]
    if missing:
        hint = f"; renamed? {', '.join(renamed)}" if renamed else ""
        raise MetricsColumnError(
            f"{source}: not a metrics file of this contract, missing column(s): "
            f"{', '.join(missing)}{hint}")
    if renamed:
        raise MetricsColumnError(f"{source}: unknown column(s) {', '.join(renamed)}: "
                                 "contract columns are never renamed")
    bad = [c for c in extras if not SNAKE.match(c)]
    if bad:
        raise MetricsColumnError(
            f"{source}: unknown column(s) {', '.join(map(repr, bad))}: metric columns are "
            "snake_case names (docs/metrics.md)")
    for c in CONTRACT_COLUMNS:
        if c in STRING_COLUMNS or df[c].isna().all():
            continue
        conv = pd.to_numeric(df[c], errors="coerce")
        if conv.isna().sum() > df[c].isna().sum():
            raise MetricsColumnError(f"{source}: column {c!r} holds non-numeric values")
    unknown = sorted(c for c in set(extras) - KNOWN_EXTRA_COLUMNS - declared_columns()
                     if not c.startswith(KNOWN_EXTRA_PREFIXES))
    if unknown:
        msg = (f"{source}: unknown column(s) {', '.join(unknown)} (not in the contract, not "
               "in reports.data.KNOWN_EXTRA_COLUMNS, not declared in an index's METRICS)")
        if strict:
            raise MetricsColumnError(msg)
        warnings.warn(msg, UnknownColumnWarning, stacklevel=2)


SIM_SUFFIX = " (sim)"  # series of simulated rows: "bloom (sim)", "bloom (sim) · <dir>"


def is_sim(df: pd.DataFrame) -> pd.Series:
    """Per row: simulated (``run_mode == "sim"``)? Real rows have it empty or "run"."""
    if "run_mode" not in df.columns:
        return pd.Series(False, index=df.index, dtype=bool)
    return df["run_mode"].astype("string").str.strip().str.lower().eq("sim").fillna(False) \
        .astype(bool)


def is_peer(df: pd.DataFrame) -> pd.Series:
    """Per row: a peer's (``run_mode == "peer"``, e.g. delta-merge)? Its index counters
    are empty: it has no record index."""
    if "run_mode" not in df.columns:
        return pd.Series(False, index=df.index, dtype=bool)
    return df["run_mode"].astype("string").str.strip().str.lower().eq("peer").fillna(False) \
        .astype(bool)


def series_labels(df: pd.DataFrame, run_label: str | None = None) -> pd.Series:
    """``index``, `` (sim)`` for simulated rows, `` · run_label`` when several runs."""
    base = series_of(df)
    labels = base.where(~is_sim(df), base + SIM_SUFFIX)
    return labels if run_label is None else labels + " · " + run_label


def modelled_columns(df: pd.DataFrame) -> list[str]:
    """Measured byte/second columns a simulated row leaves to ``model_<column>``."""
    measured = measured_columns()
    return [c for c in df.columns
            if not str(c).startswith("model_")
            and (c in measured or f"model_{c}" in df.columns)]


def mask_modelled(df: pd.DataFrame) -> pd.DataFrame:
    """Measured byte/second columns of simulated rows as empty (never a measured 0).

    Older writers filled the work counters (``bytes_read``, ``index_disk_bytes``) of
    simulated rows with 0; their figures are in the ``model_*`` columns.
    """
    sim = is_sim(df)
    if sim.any():
        for c in modelled_columns(df):
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float).mask(sim)
    return df


def normalise(df: pd.DataFrame) -> pd.DataFrame:
    """Numeric contract columns as floats, an ``operation`` column, a ``series`` label
    (`` (sim)`` for simulated rows), measured columns of simulated rows empty."""
    df = df.copy()
    for c in df.columns:
        if c not in STRING_COLUMNS and c not in ("run", "series"):
            if df[c].dtype == object or str(df[c].dtype).startswith("string"):
                conv = pd.to_numeric(df[c], errors="coerce")
                if conv.notna().sum() == df[c].notna().sum():
                    df[c] = conv
    for c in ("index", "workload", "run_id"):
        df[c] = df[c].astype(str)
    if "operation" not in df.columns:
        df["operation"] = "upsert"
    df["operation"] = df["operation"].fillna("upsert").astype(str)
    if "series" not in df.columns:
        df["series"] = series_labels(df)
    df = mask_modelled(df)
    if "table_records" not in df.columns or df["table_records"].isna().all():
        # Without the driver's count, the table holds every insert committed so far.
        df["table_records"] = df.sort_values("batch").groupby("series")["inserts"].cumsum()
    return df


@dataclass
class RunData:
    """One or more metrics directories, ready for the figures."""

    df: pd.DataFrame
    index_params: dict[str, dict[str, Any]] = field(default_factory=dict)  # series → params
    bucket_counts: dict[str, list[int]] = field(default_factory=dict)  # series → per file
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)  # run label → run.json
    sources: list[str] = field(default_factory=list)


def read_run_json(directory: str | Path) -> dict[str, Any]:
    p = Path(directory) / "run.json"
    return json.loads(p.read_text()) if p.exists() else {}


def table_uris(directory: str | Path, run: Mapping[str, Any], names: Iterable[str]) -> dict:
    """Each index's table: run.json's ``tables``, else ``<dir>/tables/<index>`` if present."""
    out = dict(run.get("tables") or {})
    for n in names:
        if n not in out and (Path(directory) / "tables" / n / ".hoodie").exists():
            out[n] = str(Path(directory) / "tables" / n)
    return out


def snapshot_bucket_counts(uri: str) -> list[int] | None:
    """Records per file group of a table's latest snapshot (None if unreadable)."""
    try:
        from tableformat.table import Table

        return [int(s.num_records) for s in Table(uri).snapshot().slices.values()]
    except Exception:  # noqa: BLE001 - a moved or partial table falls back to metrics
        return None


def peer_bucket_counts(series: str, info: Mapping[str, Any]) -> list[int] | None:
    """Records per bucket of a peer series' table, if the peer has buckets and its
    package is installed (None otherwise: the figure falls back to the metrics)."""
    try:
        import peers

        module = peers.get(str(info["peer"]))
        count = getattr(module, "bucket_counts", None)
        return count(str(info["table"]), series) if count else None
    except Exception:  # noqa: BLE001 - no package, a moved table: fall back to metrics
        return None


def default_index_params(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Registry defaults of each index (``describe()``), for DataFrames without run.json."""
    out: dict[str, dict[str, Any]] = {}
    try:
        import indexes
    except ImportError:  # pragma: no cover
        return out
    for n in names:
        try:
            out[n] = indexes.get(n).describe()
        except Exception:  # noqa: BLE001 - unknown index: no parameters to draw from
            out[n] = {}
    return out


def _labels(dirs: Sequence[Path]) -> list[str]:
    names = [d.name or str(d) for d in dirs]
    if len(set(names)) == len(names):
        return names
    return [str(d) for d in dirs]


# The versions that shape the numbers: pyarrow's Parquet bytes feed Hudi's byte-based file
# sizing (so bloom's files, filters and false positives follow them), Spark's the plans,
# and Hudi's writer its own rows.
SHAPING_VERSIONS = ("pyspark", "pyarrow")


def shaping_versions(run: Mapping[str, Any]) -> dict[str, str | None]:
    """A run's versions that shape its counters (run.json): pyspark, pyarrow, and Hudi's
    when ``--peers hudi`` ran."""
    versions = run.get("versions") or {}
    out: dict[str, str | None] = {k: versions.get(k) for k in SHAPING_VERSIONS}
    hudi = sorted({str(p["hudi"]) for p in (run.get("peers") or {}).values()
                   if isinstance(p, Mapping) and p.get("hudi")})
    if hudi:
        out["hudi"] = ", ".join(hudi)
    return out


def version_warning(runs: Mapping[str, Mapping[str, Any]]) -> str | None:
    """One line when runs reported together differ in a version that shapes the numbers
    (None: they agree, or one run)."""
    seen = {label: shaping_versions(run) for label, run in runs.items()}
    if len(seen) < 2:
        return None
    keys = sorted({k for v in seen.values() for k in v})
    differ = [k for k in keys if len({v.get(k) for v in seen.values()}) > 1]
    if not differ:
        return None
    parts = ["{} ({})".format(k, ", ".join(f"{label} {v.get(k) or '?'}"
                                           for label, v in seen.items())) for k in differ]
    return ("runs made with different versions: " + "; ".join(parts)
            + ": their counters can differ for that alone")


def load(dirs: str | Path | Sequence[str | Path], strict: bool = False) -> RunData:
    """Read metrics directories (checked against the contract) with their run.json."""
    if isinstance(dirs, str | Path):
        dirs = [dirs]
    paths = [Path(d) for d in dirs]
    if not paths:
        raise ValueError("no metrics directory given")
    labels = _labels(paths)
    frames, params, counts, runs = [], {}, {}, {}
    for path, label in zip(paths, labels, strict=True):
        file = metrics_file(path)
        df = read_metrics_file(file)
        check_columns(df, str(file), strict=strict)  # names renames, unlike read_metrics
        df = df.copy()
        df["run"] = label
        df["series"] = series_labels(df, None if len(paths) == 1 else label)
        run = read_run_json(path)
        runs[label] = run
        names = df["index"].astype(str).unique().tolist()
        described = dict(run.get("indexes") or {})
        defaults = default_index_params(n for n in names if n not in described)
        uris = table_uris(path, run, names)
        for series, n, sim in (df.assign(_sim=is_sim(df))[["series", "index", "_sim"]]
                               .drop_duplicates().itertuples(index=False)):
            n = str(n)
            params[series] = {**defaults.get(n, {}), **described.get(n, {})}
            if n in uris and not sim:  # a simulated run has no table to read
                c = snapshot_bucket_counts(uris[n])
                if c is not None:
                    counts[series] = c
            elif n in (run.get("peers") or {}):  # a peer's table with buckets of its own
                c = peer_bucket_counts(n, run["peers"][n])
                if c is not None:
                    counts[series] = c
        frames.append(df)
    df = normalise(pd.concat(frames, ignore_index=True))
    return RunData(df=df, index_params=params, bucket_counts=counts, runs=runs,
                   sources=[str(p) for p in paths])
