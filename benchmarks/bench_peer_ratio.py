"""simple-bucket against its peers on identical batches, side by side in one run (the
speed targets against delta-rs and Paimon): delta-rs MERGE (copy-on-write, no record
index) and Apache Paimon's fixed-bucket table (an LSM, merge-on-read; pypaimon's native
writer where ``pypaimon-rust`` is installed).

One ``api.compare(["simple-bucket"], peers=...)`` in ``setup_cache`` — one process, so
every series shares the machine's state — and tracks of the ratio of their upsert
seconds (batches >= 1, medians): 1.0 means the Spark upsert with a record index costs
what a Python user gets from the peer. A regression of the write path shows as a rising
ratio whatever the machine's speed. The targets: <= 2 against delta-merge at 1M +
3 x 100k, <= 3 against paimon-fixed at 10M + 3 x 1M.

A peer whose package is missing is left out (its tracks skipped, ``NotImplementedError``;
``pip install -e ".[peers]"``). Sizes: ``INDEXBENCH_ASV_PEER_SIZES=initial,batches,
batch_size`` (default 1,000,000 + 3 x 100,000, the first delta-rs comparison's size).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any

_sizes = [int(x) for x in
          os.environ.get("INDEXBENCH_ASV_PEER_SIZES", "1000000,3,100000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}
INDEX = "simple-bucket"
# peer name on --peers → (its series here, the package it needs)
PEERS = {"delta": ("delta-merge", "deltalake"), "paimon-fixed": ("paimon-fixed", "pypaimon")}
SERIES = PEERS["delta"][0]  # the first yardstick: delta-rs MERGE


def ratios(df, series: str = SERIES) -> dict[str, float]:
    """Median per-batch seconds of the index over a peer series' (upsert batches >= 1)."""
    up = df[df["batch"] >= 1]
    med = {name: up[up["index"] == name][["total_s", "write_s"]].median()
           for name in (INDEX, series)}
    return {"total": float(med[INDEX]["total_s"] / med[series]["total_s"]),
            "write": float(med[INDEX]["write_s"] / med[series]["write_s"]),
            "index_total_s": float(med[INDEX]["total_s"]),
            "peer_total_s": float(med[series]["total_s"])}


def compare_with_peers(app: str, figures: Callable[[Any, str], dict[str, float]],
                       **compare: Any) -> dict[str, Any]:
    """One ``api.compare`` of simple-bucket with every installed peer (``compare``: its
    other arguments), and ``figures(df, series)`` per peer that ran; a ``skip`` reason
    when none did. Each class's ``setup_cache`` calls it: asv shares one inherited
    ``setup_cache`` between classes, and these runs differ."""
    import peers

    run = [p for p, (_s, package) in PEERS.items() if peers.installed(package)]
    if not run:
        return {"skip": "no peer package is installed (pip install -e '.[peers]')"}
    from indexbench import api
    from indexbench.spark import get_session

    spark = get_session("local[2]", app_name=app, shuffle_partitions=4,
                        conf={"spark.default.parallelism": "2"})
    root = tempfile.mkdtemp(prefix=f"{app}-")
    try:
        df = api.compare([INDEX], "uniform", peers=tuple(run), out=root, spark=spark,
                         query_phase=False, **compare, **SIZES)
        out = {PEERS[p][0]: figures(df, PEERS[p][0]) for p in run
               if df["index"].eq(PEERS[p][0]).any()}  # a failed peer has no rows
        return out or {"skip": "every peer failed"}
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


class _PeerTracks:
    """What the peer classes share: asv's sampling, the skip, a figure of one series."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup(self, cache) -> None:
        if "skip" in cache:
            raise NotImplementedError(cache["skip"])

    @staticmethod
    def _of(cache, series: str, key: str) -> float:
        if series not in cache:
            raise NotImplementedError(f"{series} did not run (package missing or failed)")
        return cache[series][key]


class SimpleBucketOverDeltaMerge(_PeerTracks):
    """simple-bucket seconds / peer seconds per upsert batch (median), every peer in one
    run: delta-merge (the class's name, kept for asv's history) and paimon-fixed."""

    def setup_cache(self) -> dict[str, Any]:
        return compare_with_peers("indexbench-asv-peer", ratios)

    setup_cache.timeout = 1800

    def track_total_s_ratio(self, cache) -> float:
        return self._of(cache, SERIES, "total")

    track_total_s_ratio.unit = "simple-bucket/delta-merge"

    def track_write_s_ratio(self, cache) -> float:
        return self._of(cache, SERIES, "write")

    track_write_s_ratio.unit = "simple-bucket/delta-merge"

    def track_simple_bucket_total_s(self, cache) -> float:
        return next(v["index_total_s"] for v in cache.values())

    track_simple_bucket_total_s.unit = "seconds"

    def track_total_s_ratio_paimon_fixed(self, cache) -> float:
        return self._of(cache, "paimon-fixed", "total")

    track_total_s_ratio_paimon_fixed.unit = "simple-bucket/paimon-fixed"

    def track_paimon_fixed_total_s(self, cache) -> float:
        return self._of(cache, "paimon-fixed", "peer_total_s")

    track_paimon_fixed_total_s.unit = "seconds"


def table_type_ratios(df, series: str) -> dict[str, float]:
    """Median per-batch ``total_s`` of simple-bucket on each table type over a peer's
    (upsert batches >= 1), and the seconds themselves."""
    up = df[(df["batch"] >= 1) & (df["operation"] == "upsert")]
    peer = float(up[up["index"] == series]["total_s"].median())
    out = {"peer_total_s": peer}
    for table_type in ("cow", "mor"):
        mine = up[(up["index"] == INDEX) & (up["table_type"] == table_type)]
        out[f"{table_type}_total_s"] = float(mine["total_s"].median())
        out[table_type] = out[f"{table_type}_total_s"] / peer
    return out


class ThroughputModeOverPeers(_PeerTracks):
    """The speed targets' comparison as the docs measure it: simple-bucket on
    copy-on-write and merge-on-read in throughput mode (``timing="total"``: the phases
    fused, the pre-combine in each file group's write), against delta-merge and
    paimon-fixed on the same batches, in one run. Targets: MOR <= 1x delta-merge (the
    merge-on-read target); COW <= 2x delta-merge at 1M + 3 x 100k, the faster of the two
    <= 3x paimon-fixed at 10M + 3 x 1M (the copy-on-write and Paimon targets)."""

    def setup_cache(self) -> dict[str, Any]:
        return compare_with_peers("indexbench-asv-peer-total", table_type_ratios,
                                  table_types=("cow", "mor"), timing="total")

    setup_cache.timeout = 1800

    def track_mor_over_delta_merge(self, cache) -> float:
        return self._of(cache, SERIES, "mor")

    track_mor_over_delta_merge.unit = "simple-bucket (mor)/delta-merge"

    def track_cow_over_delta_merge(self, cache) -> float:
        return self._of(cache, SERIES, "cow")

    track_cow_over_delta_merge.unit = "simple-bucket (cow)/delta-merge"

    def track_mor_over_paimon_fixed(self, cache) -> float:
        return self._of(cache, "paimon-fixed", "mor")

    track_mor_over_paimon_fixed.unit = "simple-bucket (mor)/paimon-fixed"

    def track_mor_total_s(self, cache) -> float:
        return next(v["mor_total_s"] for v in cache.values())

    track_mor_total_s.unit = "seconds"
