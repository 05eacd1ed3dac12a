"""Each index Hudi has against Hudi's own writer on identical batches (``--peers hudi``).

One ``api.compare(indexes, peers=("hudi",), table_types=("cow", "mor"), timing="total")``
in ``setup_cache`` — throughput mode, as docs/peers.md measures speed — and, per shared
index and table type, the ratio of our upsert seconds to the mirroring Hudi series'
(medians of batches >= 1): 1.0 means our index costs what Hudi's writer does on the same
batches; the target is <= 1. Each side's own seconds are tracked too, so a change on either side
shows. A pair Hudi does not have (consistent hashing on
copy-on-write) is skipped (n/a).

Sizes: ``INDEXBENCH_ASV_HUDI_SIZES=initial,batches,batch_size`` (default 1,000,000 + 3 x
100,000, the first comparison of docs/peers.md); indexes:
``INDEXBENCH_ASV_HUDI_INDEXES`` (default every index with a Hudi counterpart);
``INDEXBENCH_ASV_HUDI_TYPES`` (default cow,mor). Hudi's bundle and Spark runtime are
fetched on first use (peers/hudi_runtime.py); when they cannot be had every track is
skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import indexes
from indexes import roles

_sizes = [int(x) for x in
          os.environ.get("INDEXBENCH_ASV_HUDI_SIZES", "1000000,3,100000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}
SHARED = [n for n in indexes.names()
          if roles.hudi_counterpart(indexes.index_class(n)) is not None]
INDEXES = [n.strip() for n in os.environ.get("INDEXBENCH_ASV_HUDI_INDEXES",
                                              ",".join(SHARED)).split(",") if n.strip()]
TYPES = [t.strip() for t in os.environ.get("INDEXBENCH_ASV_HUDI_TYPES", "cow,mor").split(",")
         if t.strip()]


def side_by_side(df) -> dict[tuple[str, str], dict[str, float]]:
    """(index, table type) → ours / Hudi's, and each side's median seconds per batch."""
    from reports.peer_pairs import pairs

    out = {}
    for _, row in pairs(df).iterrows():
        peer = row["peer"]
        out[(row["index"], row["table_type"])] = {
            "ratio": float(row["total_s ours/theirs"]),
            "ours_total_s": float(row["total_s (ours)"]),
            "hudi_total_s": float(row[f"total_s ({peer})"]),
        }
    return out


class OursOverHudi:
    """Our seconds / Hudi's seconds per upsert batch, per shared index and table type."""

    params = (SHARED, ["cow", "mor"])
    param_names = ("index", "table_type")
    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, Any]:
        from indexbench import api
        from indexbench.spark import get_session
        from peers import hudi_runtime

        try:
            hudi_runtime.ensure()
        except hudi_runtime.HudiUnavailableError as e:
            return {"skip": str(e)}
        spark = get_session("local[2]", app_name="indexbench-asv-hudi", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        root = tempfile.mkdtemp(prefix="indexbench-asv-hudi-")
        try:
            df = api.compare(INDEXES, "uniform", peers=("hudi",), out=root, spark=spark,
                             query_phase=False, table_types=TYPES, timing="total", **SIZES)
            return {"pairs": side_by_side(df)}
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)

    setup_cache.timeout = 3600

    def setup(self, cache, index: str, table_type: str) -> None:
        if "skip" in cache:
            raise NotImplementedError(cache["skip"])
        if (index, table_type) not in cache["pairs"]:
            raise NotImplementedError(f"no hudi-{index} on {table_type} in this run")

    def track_total_s_ratio(self, cache, index: str, table_type: str) -> float:
        return cache["pairs"][(index, table_type)]["ratio"]

    track_total_s_ratio.unit = "ours/Hudi's"

    def track_hudi_total_s(self, cache, index: str, table_type: str) -> float:
        return cache["pairs"][(index, table_type)]["hudi_total_s"]

    track_hudi_total_s.unit = "seconds"

    def track_ours_total_s(self, cache, index: str, table_type: str) -> float:
        return cache["pairs"][(index, table_type)]["ours_total_s"]

    track_ours_total_s.unit = "seconds"
