"""`indexbench stream` holds its latency over a long stream: simple-bucket streams N
micro-batches of R rows (after an initial load of R rows, its own micro-batch) and the
figure is LST-Bench's degradation rate over the upserts' per-micro-batch processing
seconds, Σᵢ₌₂..ₙ (Mᵢ − Mᵢ₋₁)/Mᵢ₋₁ ÷ (n − 1) (target ≤ 5%; docs/streaming.md).

The stream runs once in ``setup_cache`` (its own process, as bench_spark_run.py). Full
size (30 × 100k) by default; ``INDEXBENCH_ASV_STREAM_SIZES=micro_batches,rows`` shrinks
it (.ci/asv-check: 2,200). ``python -m benchmarks.bench_stream`` runs it and prints
the figures.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

_sizes = [int(x) for x in os.environ.get("INDEXBENCH_ASV_STREAM_SIZES", "30,100000").split(",")]
MICRO_BATCHES, ROWS = _sizes[0], _sizes[1]


def stream_figures(micro_batches: int = MICRO_BATCHES, rows: int = ROWS,
                   master: str = "local[2]") -> dict[str, Any]:
    """Stream simple-bucket and return the tracked figures and the per-batch seconds."""
    from indexbench import api
    from indexbench.spark import get_session
    from reports.stream import degradation_rate, trend_per_batch

    spark = get_session(master, app_name="indexbench-asv-stream")
    root = tempfile.mkdtemp(prefix="indexbench-asv-stream-")
    try:
        df = api.stream("simple-bucket", "uniform", initial_records=rows,
                        batches=micro_batches, batch_size=rows, out=root, spark=spark)
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    up = df[(df["operation"] == "upsert") & (df["batch"] >= 1)].sort_values("batch")
    seconds = [float(s) for s in up["processing_s"]]
    return {"degradation_rate": degradation_rate(seconds), "processing_s": seconds,
            "trend_per_batch": trend_per_batch(seconds),
            "median_processing_s": float(up["processing_s"].median()),
            "median_freshness_s": float(up["freshness_s"].median()),
            "median_input_rows_per_s": float(up["input_rows_per_s"].median())}


class StreamDegradation:
    """simple-bucket's stream: degradation rate and median seconds per micro-batch."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 1800

    def setup_cache(self) -> dict[str, Any]:
        return stream_figures()

    setup_cache.timeout = 3600

    def track_degradation_rate(self, cache: dict[str, Any]) -> float:
        return cache["degradation_rate"]

    track_degradation_rate.unit = "fraction per micro-batch"

    def track_median_processing_s(self, cache: dict[str, Any]) -> float:
        return cache["median_processing_s"]

    track_median_processing_s.unit = "seconds"

    def track_trend_per_batch(self, cache: dict[str, Any]) -> float:
        return cache["trend_per_batch"]

    track_trend_per_batch.unit = "fraction of the median per micro-batch"

    def track_median_freshness_s(self, cache: dict[str, Any]) -> float:
        return cache["median_freshness_s"]

    track_median_freshness_s.unit = "seconds"


if __name__ == "__main__":
    import json
    import sys

    args = [int(x) for x in sys.argv[1:3]]
    print(json.dumps(stream_figures(*args), indent=1))
