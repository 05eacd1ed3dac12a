"""Figures of a real PySpark upsert run, tracked commit by commit (``track_*``).

As in Apache Spark's asv suite, nothing here starts Spark at import: the run happens once
in ``setup_cache`` (shared by every class below, since they inherit the same function),
in its own process (``launch_method: spawn``), and only its small result dict is pickled
to the benchmarks. Sizes are small on purpose: these track *work* (false positives, files
and bytes read, cache bytes), which does not need a big table to regress visibly.

Environment overrides: ``INDEXBENCH_ASV_SIZES=initial,batches,batch_size`` and
``INDEXBENCH_ASV_WORKLOADS=uniform,zipf-skewed``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from typing import Any

import indexes

WORKLOADS = os.environ.get("INDEXBENCH_ASV_WORKLOADS", "uniform,zipf-skewed").split(",")
_sizes = [int(x) for x in os.environ.get("INDEXBENCH_ASV_SIZES", "4000,2,1000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}


def figures(df) -> dict[str, float | None]:
    """The tracked numbers of one (index, workload) run, from its metrics rows."""
    up = df[(df["batch"] >= 1) & (df.get("operation", "upsert") == "upsert")]
    checks = up["bloom_checks"].fillna(0).sum()
    negatives = checks - (up["bloom_positives"].fillna(0) - up["false_positives"].fillna(0)).sum()
    last = df.sort_values("batch").iloc[-1]
    keys = float(last.get("table_records") or 0) or float(df["inserts"].sum())
    return {
        "fp_rate": float(up["false_positives"].sum() / negatives) if checks > 0 else None,
        # measured over the run's own theory, where enough FPs were counted to compare
        "fp_over_theory": (float(up["false_positives"].sum() / theory)
                           if (theory := _sum(up, "fp_theory")) and
                           up["false_positives"].sum() >= 100 else None),
        "files_read_fp_only": (float(up["files_read_fp_only"].fillna(0).mean())
                               if checks > 0 and "files_read_fp_only" in up else None),
        "files_read": float(up["files_read"].fillna(0).mean()),
        "bytes_read": float(up["bytes_read"].fillna(0).mean()),
        "tag_s_per_1k": float(up["tag_s"].sum() / up["records"].sum() * 1000),
        "cache_bytes_per_key": float(last["index_mem_bytes"] or 0) / keys if keys else None,
    }


def _skip_if_none(cache, index: str, workload: str, key: str, why: str) -> None:
    """asv skips a benchmark whose setup raises NotImplementedError (a figure that does
    not apply); raised in the track itself it would count as a failure."""
    result = cache.get((index, workload), {})
    if "error" not in result and result.get(key, 0) is None:
        raise NotImplementedError(f"{index} on {workload}: {why}")


def _sum(df, col: str) -> float:
    return float(df[col].fillna(0).sum()) if col in df else 0.0


class _SparkRun:
    """Base: one Spark run of every index × workload, done once for all tracks."""

    params = [indexes.names(), WORKLOADS]
    param_names = ["index", "workload"]
    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[tuple[str, str], dict[str, Any]]:
        from indexbench import api
        from indexbench.spark import get_session

        spark = get_session("local[2]", app_name="indexbench-asv", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        root = tempfile.mkdtemp(prefix="indexbench-asv-")
        out: dict[tuple[str, str], dict[str, Any]] = {}
        try:
            for workload in WORKLOADS:
                for index in indexes.names():
                    try:
                        df = api.run(index, workload, out=os.path.join(root, workload, index),
                                     spark=spark, **SIZES)
                        out[(index, workload)] = figures(df)
                    except Exception:  # noqa: BLE001 - one broken index fails its tracks only
                        out[(index, workload)] = {"error": traceback.format_exc(limit=5)}
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)
        return out

    setup_cache.timeout = 1800

    def _value(self, cache, index: str, workload: str, key: str) -> float:
        result = cache.get((index, workload))
        if result is None:
            raise NotImplementedError(f"{index} was not registered when the cache was built")
        if "error" in result:
            raise RuntimeError(f"run of {index} on {workload} failed:\n{result['error']}")
        value = result[key]
        if value is None:
            raise NotImplementedError(f"{key} does not apply to {index}")
        return value


class FalsePositiveRate(_SparkRun):
    """Bloom FP rate over all upsert batches: false positives / probes of absent keys."""

    def setup(self, cache, index: str, workload: str) -> None:
        _skip_if_none(cache, index, workload, "fp_rate", "no bloom probes")

    def track_fp_rate(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "fp_rate")

    track_fp_rate.unit = "FP/negative probe"


class FalsePositivesOverTheory(_SparkRun):
    """Bloom: measured false positives over the run's own theoretical figure (fp_theory,
    Σ negatives × each probed filter's fpp at its fill); 1.0 = on the curve. Skipped
    below 100 false positives."""

    def setup(self, cache, index: str, workload: str) -> None:
        _skip_if_none(cache, index, workload, "fp_over_theory",
                      "under 100 false positives (or no bloom probes) to compare")

    def track_fp_over_theory(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "fp_over_theory")

    track_fp_over_theory.unit = "FP/expected FP"


class FilesReadForFalsePositives(_SparkRun):
    """Bloom: files whose key column was read only because of false positives (mean per
    batch) — the read cost of the FPs."""

    def setup(self, cache, index: str, workload: str) -> None:
        _skip_if_none(cache, index, workload, "files_read_fp_only", "no bloom probes")

    def track_files_read_fp_only(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "files_read_fp_only")

    track_files_read_fp_only.unit = "files/batch"


class FilesRead(_SparkRun):
    """Data files read to tag one upsert batch (mean over batches)."""

    def track_files_read(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "files_read")

    track_files_read.unit = "files/batch"


class BytesRead(_SparkRun):
    """Bytes read to tag one upsert batch (mean over batches)."""

    def track_bytes_read(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "bytes_read")

    track_bytes_read.unit = "bytes/batch"


class TagLatency(_SparkRun):
    """Seconds of tag_location per 1,000 batch records."""

    def track_tag_seconds_per_1k_records(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "tag_s_per_1k")

    track_tag_seconds_per_1k_records.unit = "s/1k records"


class CacheBytesPerKey(_SparkRun):
    """Bytes the index holds in memory per key in the table (dynamic-rli's caches)."""

    def track_cache_bytes_per_key(self, cache, index: str, workload: str) -> float:
        return self._value(cache, index, workload, "cache_bytes_per_key")

    track_cache_bytes_per_key.unit = "bytes/key"
