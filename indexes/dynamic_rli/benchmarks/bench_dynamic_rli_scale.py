"""dynamic-rli's assigners on the executors at scale (tracks only).

``AssignerShareBytes``: ``INDEXBENCH_ASV_SHARE_KEYS`` resident keys (default 10,000,000;
``.ci/asv-check`` runs 20,000) of one partition over P = 4 assigners, each share built as
an assigner task builds it (``PartitionIndex.bootstrap`` over its own keys, as
:func:`indexes.dynamic_rli.executor._share` does): the largest share's bytes over
total / P, and bytes per key over all shares. Spark-free.

``AssignerScaleOut``: ``indexbench run --index dynamic-rli`` (P = 2) on a standalone
cluster of one 1-core worker, then of two (``tests/standalone.py``), sizes
``INDEXBENCH_ASV_SCALEOUT_SIZES=initial,batches,batch_size`` (default
2000000,2,1000000); the upserts' records per second of tagging (the assign stage) and
the warm rate of the tasks' caches. ``0`` skips it (``.ci/asv-check``: two clusters
cost minutes).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

from benchmarks import ROOT
from benchmarks._data import int32_hashes

ASSIGNERS = 4
SHARE_KEYS = int(os.environ.get("INDEXBENCH_ASV_SHARE_KEYS", "10000000"))
_SCALE = os.environ.get("INDEXBENCH_ASV_SCALEOUT_SIZES", "2000000,2,1000000")


class AssignerShareBytes:
    """The largest assigner task's cache bytes against total / P, and bytes per key."""

    rounds = repeat = number = 1
    timeout = 600

    def setup_cache(self) -> dict[str, float]:
        try:
            from indexes.dynamic_rli.shares import PartitionShares
        except ImportError as exc:  # before the shares landed
            raise NotImplementedError(f"no dynamic-rli shares: {exc}") from None
        h = int32_hashes(SHARE_KEYS)
        buckets = (np.arange(SHARE_KEYS) % 4000).astype(np.int16)
        shares = PartitionShares.bootstrap(ASSIGNERS, h, buckets).shares
        sizes = [s.nbytes for s in shares]
        return {"max_over_mean": max(sizes) / (sum(sizes) / ASSIGNERS),
                "bytes_per_key": sum(sizes) / SHARE_KEYS}

    def track_largest_share_over_mean(self, data: dict[str, float]) -> float:
        return data["max_over_mean"]

    track_largest_share_over_mean.unit = "max / (total/P)"

    def track_share_bytes_per_key(self, data: dict[str, float]) -> float:
        return data["bytes_per_key"]

    track_share_bytes_per_key.unit = "bytes/key"


def _stop_on_sigterm(signum: int, _frame) -> None:
    raise SystemExit(128 + signum)


def run_cluster_command(argv: list[str], env: dict[str, str], cwd: str) -> None:
    """Run tests/standalone.py; when asv stops this benchmark (SIGTERM at its timeout),
    pass the signal on so the cluster's daemons are stopped, not left running."""
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    proc = subprocess.Popen(argv, env=env, cwd=cwd)
    try:
        if proc.wait():
            raise subprocess.CalledProcessError(proc.returncode, argv)
    except BaseException:
        if proc.poll() is None:
            proc.terminate()  # standalone.py stops its command and both daemons
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def scale_out_run(workers: int, initial: int, batches: int, batch_size: int,
                  out: str) -> dict[str, Any]:
    """One ``indexbench run`` on a standalone cluster of ``workers`` 1-core workers;
    tagging throughput and the caches' warm rate over the upserts."""
    import pandas as pd

    cmd = (f"{sys.executable} -m indexbench run --index dynamic-rli --master {{master}} "
           f"--initial-records {initial} --batches {batches} --batch-size {batch_size} "
           f"--set hoodie.bucket.index.dynamic.num.assigners=2 "
           f"--set hoodie.bucket.index.dynamic.max.records={max(2000, initial // 64)} "
           f"--out {out}")
    env = dict(os.environ, INDEXBENCH_STANDALONE_WORKERS=str(workers),
               INDEXBENCH_STANDALONE_CORES="1")
    run_cluster_command([sys.executable, os.path.join(ROOT, "tests", "standalone.py"), cmd],
                        env, ROOT)
    df = pd.read_parquet(os.path.join(out, "metrics.parquet"))
    up = df[(df["operation"] == "upsert") & (df["batch"] >= 1)]
    hits, loads = up["assigner_cache_hits"].sum(), up["assigner_bootstraps"].sum()
    return {"records_per_s": float(up["records"].sum() / up["tag_s"].sum()),
            "warm_rate": float(hits / (hits + loads)) if hits + loads else 0.0}


class AssignerScaleOut:
    """Tagging throughput of dynamic-rli with one and two 1-core workers."""

    rounds = repeat = number = 1
    timeout = 3600
    params = [[1, 2]]
    param_names = ["workers"]

    def setup_cache(self) -> dict[int, dict[str, Any]]:
        sizes = [int(x) for x in _SCALE.split(",")]
        if not sizes[0]:  # "0": not run (CI)
            return {}
        initial, batches, batch_size = sizes
        with tempfile.TemporaryDirectory(prefix="indexbench-asv-scaleout-") as root:
            return {w: scale_out_run(w, initial, batches, batch_size,
                                     os.path.join(root, f"w{w}")) for w in (1, 2)}

    setup_cache.timeout = 3600

    def setup(self, data: dict, workers: int) -> None:
        if workers not in data:
            raise NotImplementedError("INDEXBENCH_ASV_SCALEOUT_SIZES=0: not run")

    def track_assign_records_per_s(self, data: dict, workers: int) -> float:
        return data[workers]["records_per_s"]

    track_assign_records_per_s.unit = "records/s"

    def track_warm_rate(self, data: dict, workers: int) -> float:
        return data[workers]["warm_rate"]

    track_warm_rate.unit = "hits / (hits + loads)"
