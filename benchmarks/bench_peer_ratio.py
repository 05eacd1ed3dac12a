"""simple-bucket against the delta-rs MERGE yardstick on identical batches (issue #11).

One ``api.compare(["simple-bucket"], peers=("delta",))`` in ``setup_cache`` — one
process, so both series share the machine's state — and tracks of the ratio of their
upsert seconds (batches >= 1, medians): 1.0 means the Spark upsert with a record index
costs what a Python user gets from delta-rs without one. A regression of the write path
shows as a rising ratio whatever the machine's speed.

Skipped (``NotImplementedError``) without the ``deltalake`` package
(``pip install -e ".[peers]"``). Sizes: ``INDEXBENCH_ASV_PEER_SIZES=initial,batches,
batch_size`` (default 1,000,000 + 3 x 100,000, the issue's comparison).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

_sizes = [int(x) for x in
          os.environ.get("INDEXBENCH_ASV_PEER_SIZES", "1000000,3,100000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}
INDEX, PEER, SERIES = "simple-bucket", "delta", "delta-merge"


def ratios(df) -> dict[str, float]:
    """Median per-batch seconds of the index over the peer's (upsert batches >= 1)."""
    up = df[df["batch"] >= 1]
    med = {name: up[up["index"] == name][["total_s", "write_s"]].median()
           for name in (INDEX, SERIES)}
    return {"total": float(med[INDEX]["total_s"] / med[SERIES]["total_s"]),
            "write": float(med[INDEX]["write_s"] / med[SERIES]["write_s"]),
            "index_total_s": float(med[INDEX]["total_s"]),
            "peer_total_s": float(med[SERIES]["total_s"])}


class SimpleBucketOverDeltaMerge:
    """simple-bucket seconds / delta-merge seconds per upsert batch (median)."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, Any]:
        import peers

        if PEER not in peers.names() or not peers.installed("deltalake"):
            return {"skip": "deltalake is not installed (pip install -e '.[peers]')"}
        from indexbench import api
        from indexbench.spark import get_session

        spark = get_session("local[2]", app_name="indexbench-asv-peer", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        root = tempfile.mkdtemp(prefix="indexbench-asv-peer-")
        try:
            df = api.compare([INDEX], "uniform", peers=(PEER,), out=root, spark=spark,
                             query_phase=False, **SIZES)
            return ratios(df)
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)

    setup_cache.timeout = 1800

    def setup(self, cache) -> None:
        if "skip" in cache:
            raise NotImplementedError(cache["skip"])

    def track_total_s_ratio(self, cache) -> float:
        return cache["total"]

    track_total_s_ratio.unit = "simple-bucket/delta-merge"

    def track_write_s_ratio(self, cache) -> float:
        return cache["write"]

    track_write_s_ratio.unit = "simple-bucket/delta-merge"

    def track_simple_bucket_total_s(self, cache) -> float:
        return cache["index_total_s"]

    track_simple_bucket_total_s.unit = "seconds"
