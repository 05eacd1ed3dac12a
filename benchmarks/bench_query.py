"""The read side per index, tracked commit by commit (``track_*``): files a point lookup
reads, and the shuffle bytes of RFC-29's group-by and join, bucket-aware vs Spark's plan.

One small real run per index plus ``api.query`` happen once in ``setup_cache`` (its own
process); only the figures are pickled to the benchmarks. The figures count work (files,
bytes), so small sizes regress visibly. ``INDEXBENCH_ASV_SIZES`` as in bench_spark_run;
``INDEXBENCH_ASV_QUERY_KEYS`` sets the keys looked up (default 400);
``INDEXBENCH_ASV_QUERY_INDEXES`` (comma-separated) the indexes built, default all (CI's
check builds two: each index's queries are tested in tests/test_query.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from typing import Any

import indexes

_sizes = [int(x) for x in os.environ.get("INDEXBENCH_ASV_SIZES", "4000,2,1000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}
KEYS = int(os.environ.get("INDEXBENCH_ASV_QUERY_KEYS", "400"))
_only = os.environ.get("INDEXBENCH_ASV_QUERY_INDEXES", "")
BUILT = [i for i in indexes.names() if not _only or i in _only.split(",")]
SCANS = ["groupby", "join"]
PLANS = ["bucket-aware", "default"]


def figures(df) -> dict[Any, float]:
    """Tracked numbers of one index's query rows: lookup figures by name, scan figures
    by (query, plan, column)."""
    out: dict[Any, float] = {}
    for _, r in df.iterrows():
        if r["query"] == "lookup":
            for col in ("files_read_per_key", "fp_file_reads", "latency_p50_s"):
                out[col] = float(r[col])
        else:
            out[(r["query"], r["plan"], "shuffle_bytes")] = float(r["shuffle_bytes"])
    return out


class _Queries:
    """Base: one run + query of every index, done once for all tracks."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, dict[Any, Any]]:
        from indexbench import api
        from indexbench.spark import get_session

        spark = get_session("local[2]", app_name="indexbench-asv-query", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        root = tempfile.mkdtemp(prefix="indexbench-asv-query-")
        out: dict[str, dict[Any, Any]] = {}
        try:
            for index in BUILT:
                try:
                    run_dir = os.path.join(root, index)
                    # throughput mode: the same table in fewer jobs (only queries are timed)
                    api.run(index, "uniform", out=run_dir, spark=spark, timing="total",
                            **SIZES)
                    df = api.query(os.path.join(run_dir, "tables", index), keys=KEYS,
                                   spark=spark)
                    out[index] = figures(df)
                except Exception:  # noqa: BLE001 - one broken index fails its tracks only
                    out[index] = {"error": traceback.format_exc(limit=5)}
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)
        return out

    setup_cache.timeout = 1800

    @staticmethod
    def _value(cache, index: str, key: Any) -> float:
        result = cache.get(index)
        if result is None:
            raise NotImplementedError(f"{index} was not built (registered later, or left out "
                                      "by INDEXBENCH_ASV_QUERY_INDEXES)")
        if "error" in result:
            raise RuntimeError(f"query of {index} failed:\n{result['error']}")
        return result[key]


class LookupFilesRead(_Queries):
    """Data files a point lookup reads per key looked up (half present, half absent)."""

    params = [indexes.names()]
    param_names = ["index"]

    def setup(self, cache, index: str) -> None:
        if index not in cache:  # asv skips (n/a) on NotImplementedError in setup only
            self._value(cache, index, "files_read_per_key")

    def track_files_read_per_key(self, cache, index: str) -> float:
        return self._value(cache, index, "files_read_per_key")

    track_files_read_per_key.unit = "files/key"

    def track_fp_file_reads(self, cache, index: str) -> float:
        return self._value(cache, index, "fp_file_reads")

    track_fp_file_reads.unit = "files"

    def track_latency_p50(self, cache, index: str) -> float:
        return self._value(cache, index, "latency_p50_s")

    track_latency_p50.unit = "seconds"


class ScanShuffleBytes(_Queries):
    """Shuffle bytes of the group-by / join on the index key, by plan (bucket-aware only
    for hash-bucketed tables: skipped elsewhere)."""

    params = [indexes.names(), SCANS, PLANS]
    param_names = ["index", "query", "plan"]

    def setup(self, cache, index: str, query: str, plan: str) -> None:
        result = cache.get(index, {})
        if "error" not in result and (query, plan, "shuffle_bytes") not in result:
            raise NotImplementedError(f"{index}: no {plan} plan (not hash-bucketed)")

    def track_shuffle_bytes(self, cache, index: str, query: str, plan: str) -> float:
        return self._value(cache, index, (query, plan, "shuffle_bytes"))

    track_shuffle_bytes.unit = "bytes"
