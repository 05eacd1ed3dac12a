"""The metrics contract (docs/metrics.md): metrics.parquet, metrics.csv and run.json.

One row per (index, batch). Columns are only ever added, never renamed; a metric that
does not apply is 0 where it counts work not done and empty where it has no meaning.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metrics.rows import MEASURED_ONLY
from tableformat.errors import IndexBenchError

CONTRACT_COLUMNS = [
    "run_id", "index", "workload", "batch", "records", "inserts", "updates", "tag_s",
    "write_s", "commit_s", "total_s", "partitions_touched", "files_in_table", "file_groups",
    "candidate_files", "files_read", "bytes_read", "bloom_checks", "bloom_positives",
    "false_positives", "fp_rate", "files_written", "bytes_written", "records_rewritten",
    "buckets", "bucket_records_max", "bucket_records_mean", "index_mem_bytes",
    "index_disk_bytes",
]
# Work counters: 0 when the index did not do that work.
COUNT_COLUMNS = ["candidate_files", "files_read", "bytes_read", "bloom_checks",
                 "bloom_positives", "false_positives", "index_mem_bytes", "index_disk_bytes"]
# Text columns of the contract and the driver; any other column whose values are all
# text (an index's own, such as the simulator's mode of a filter) stays text too.
STRING_COLUMNS = {"run_id", "index", "workload", "operation", "instant", "mode", "run_mode",
                  "storage", "query", "plan", "table", "join_table", "key_fields",
                  "table_type", "query_type", "peer_writer", "peer_of", "timing"}


def _is_text(col: pd.Series) -> bool:
    """Whether every value of ``col`` that is set is a string that is not a number."""
    if not (col.dtype == object or isinstance(col.dtype, pd.StringDtype)):
        return False
    values = col.dropna()
    return (not values.empty and pd.api.types.infer_dtype(values, skipna=True) == "string"
            and bool(pd.to_numeric(values, errors="coerce").isna().all()))


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ-") + uuid.uuid4().hex[:6]


def to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows in the contract's column order (extra columns after, sorted)."""
    df = pd.DataFrame(rows)
    for col in CONTRACT_COLUMNS:
        if col not in df.columns:
            df[col] = pd.NA
    mode = df["run_mode"] if "run_mode" in df.columns else pd.Series(pd.NA, index=df.index)
    simulated = mode.eq("sim").fillna(False).astype(bool)
    peer = mode.eq("peer").fillna(False).astype(bool)
    op = df["operation"] if "operation" in df.columns else pd.Series(pd.NA, index=df.index)
    query = op.eq("query").fillna(False).astype(bool)
    for col in COUNT_COLUMNS:
        values = pd.to_numeric(df[col], errors="coerce")
        # a simulated row's measured bytes stay empty (its model_* column has them); a
        # peer's row leaves every index counter empty (it has no index to count); a
        # query's row has its zeros from its builder (rows.query_row), the rest is empty
        fill = ~peer & ~query & (~simulated if col in MEASURED_ONLY else True)
        df[col] = values.where(values.notna() | ~fill, 0)
    extras = sorted(c for c in df.columns if c not in CONTRACT_COLUMNS)
    df = df[CONTRACT_COLUMNS + extras]
    for col in df.columns:
        if col in STRING_COLUMNS or _is_text(df[col]):
            df[col] = df[col].astype("string")
        else:
            df[col] = pd.to_numeric(df[col], errors="coerce")
    return df


def write_metrics(out_dir: str | os.PathLike, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Write metrics.parquet and metrics.csv (rewritten after every batch: resumable)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    df = to_frame(rows)
    tmp = out / "metrics.parquet.tmp"
    df.to_parquet(tmp, index=False)
    tmp.replace(out / "metrics.parquet")
    df.to_csv(out / "metrics.csv", index=False)
    return df


def existing_rows(out_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows already in ``out_dir``'s metrics file (a resumed run, a rescale or another
    engine appending to the same run), or none."""
    p = Path(out_dir) / "metrics.parquet"
    return pd.read_parquet(p).to_dict("records") if p.exists() else []


METRICS_DIR = ("a metrics directory holds metrics.parquet or metrics.csv, as `indexbench "
               "run`, `compare`, `sim` and `query` write them under --out")


def metrics_file(path: str | os.PathLike) -> Path:
    """The metrics file of a directory (parquet preferred), or ``path`` itself when it
    names a ``.parquet``/``.csv`` file; anything else is refused saying what a metrics
    directory is (``indexbench report README.md`` is not a pandas parser error)."""
    p = Path(path)
    if p.is_dir():
        for name in ("metrics.parquet", "metrics.csv"):
            if (p / name).exists():
                return p / name
        raise IndexBenchError(f"{path}: no metrics.parquet or metrics.csv in this directory; "
                              f"{METRICS_DIR}")
    if not p.exists():
        raise IndexBenchError(f"{path}: no such directory; {METRICS_DIR}")
    if p.suffix not in (".parquet", ".csv"):
        raise IndexBenchError(f"{path}: a file, not a metrics directory; {METRICS_DIR}")
    return p


def read_metrics_file(p: Path) -> pd.DataFrame:
    """A metrics file's rows; a file that does not parse is refused in one line."""
    try:
        return pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as exc:  # noqa: BLE001 (pyarrow's and pandas' parser errors vary)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise IndexBenchError(f"{p}: not a metrics file ({first}); {METRICS_DIR}") from None


def read_metrics(path: str | os.PathLike) -> pd.DataFrame:
    """Read a metrics directory (or file) and check it against the contract."""
    p = metrics_file(path)
    df = read_metrics_file(p)
    missing = [c for c in CONTRACT_COLUMNS if c not in df.columns]
    if missing:
        raise IndexBenchError(f"{p}: not a metrics file of this contract, missing columns: "
                              f"{missing}")
    return df


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, timeout=5,
                              check=True).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _version(dist: str) -> str | None:
    try:
        return importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return None


def environment() -> dict[str, Any]:
    """Versions, git commit and machine: what a result needs to be reproduced."""
    mem = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "versions": {d: _version(d) for d in ("indexbench", "pyspark", "pyarrow", "pandas",
                                               "numpy", "pybloom-live", "matplotlib")}
        | {"python": sys.version.split()[0]},
        "git_commit": _git_commit(),
        "machine": {"platform": platform.platform(), "processor": platform.machine(),
                    "cpus": os.cpu_count(), "memory_bytes": mem,
                    "hostname": platform.node()},
    }


def write_run_json(out_dir: str | os.PathLike, config: dict[str, Any]) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    body = {"created": datetime.now(UTC).isoformat(), **config, **environment()}
    (out / "run.json").write_text(json.dumps(body, indent=2, default=str) + "\n")


SUMMARY_COLUMNS = ["tag_s", "write_s", "total_s", "files_read", "bytes_read",
                   "false_positives", "fp_rate", "bucket_records_max", "index_mem_bytes"]


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Median per index of the upsert batches after the initial load (batch ≥ 1); the
    median of a count (:func:`is_count_column`) is rounded to a whole number, half up."""
    if "operation" in df.columns:  # rescale rows are not upsert batches
        df = df[df["operation"].fillna("upsert") == "upsert"]
    upserts = df[(df["batch"] >= 1)] if (df["batch"] >= 1).any() else df
    cols = [c for c in SUMMARY_COLUMNS if c in df.columns]
    # simulated series: their seconds and bytes are modelled (model_* columns)
    cols += [f"model_{c}" for c in ("tag_s", "write_s", "total_s", "bytes_read")
             if f"model_{c}" in df.columns]
    values = upserts[cols].apply(pd.to_numeric, errors="coerce")  # None: empty, not object
    medians = values.groupby(series_of(upserts), sort=False).median()
    for col in cols:  # a count's median is a count: 10,847.5 false positives read 10,848
        if is_count_column(col):
            medians[col] = np.floor(medians[col] + 0.5)
    return medians


def series_of(df: pd.DataFrame) -> pd.Series:
    """A row's series: its index, `` (mor)`` on a merge-on-read table (a compare of
    both table types runs each index twice on the same batches)."""
    labels = df["index"].astype(str)
    if "table_type" in df.columns:
        mor = df["table_type"].astype("string").eq("mor").fillna(False).astype(bool)
        labels = labels.where(~mor, labels + " (mor)")
    return labels.rename("index")


# Suffixes of the columns that are not counts (seconds, rates, means and ratios).
NOT_COUNT_SUFFIXES = ("_s", "_rate", "_mean", "_cov", "_per_key", "_per_file", "_theory",
                      "_ratio", "_amplification")


def is_count_column(name: str) -> bool:
    """Whether a metrics column counts things (records, files, bytes, probes): its
    median is shown as a whole number. Seconds, rates, means and ratios are not."""
    return not name.endswith(NOT_COUNT_SUFFIXES)
