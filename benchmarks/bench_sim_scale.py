"""The simulator at scale (docs/simulator.md): every index on a table of a billion keys.

``setup_cache`` runs ``indexbench sim`` once per index in its own process (so each
index's peak memory is its own, read from the child's rusage), on the scale workload of
docs/simulator.md ("At a billion keys"): ``uniform``, an initial load of 1,000,000,000
keys and 10 batches of 10,000,000. The tracks are the wall seconds, the peak memory, and
the work of the last batch (files read, modelled tag seconds) — the RFC-29 figures at a
size no real run on this machine reaches. Bloom runs at Hudi's own file sizes
(``indexbench.scale=1``). ``INDEXBENCH_ASV_SIM_SIZES=initial,batches,batch_size``
shrinks it (``.ci/asv-check`` runs it at 50,000 keys).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import indexes

_sizes = [int(x) for x in os.environ.get("INDEXBENCH_ASV_SIM_SIZES",
                                         "1000000000,10,10000000").split(",")]
SIZES = {"initial_records": _sizes[0], "batches": _sizes[1], "batch_size": _sizes[2]}


def run_sim(index: str, out: str, workload: str = "uniform",
            sizes: dict[str, int] = SIZES) -> dict[str, float]:
    """One ``indexbench sim`` process: its wall seconds, peak RSS and last batch's work."""
    cmd = [sys.executable, "-m", "indexbench", "sim", "--index", index, "--workload",
           workload, "--initial-records", str(sizes["initial_records"]), "--batches",
           str(sizes["batches"]), "--batch-size", str(sizes["batch_size"]), "--out", out,
           "--no-report", "--set", "bloom:indexbench.scale=1"]  # Hudi's own file sizes
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"indexbench sim --index {index} failed: {err[-2000:]}")
    import pandas as pd

    df = pd.read_parquet(os.path.join(out, "metrics.parquet"))
    last = df[df["index"] == index].sort_values("batch").iloc[-1]
    return {"seconds": seconds, "peak_rss_gb": usage.ru_maxrss / 2**20,
            "files_read": float(last["files_read"]), "model_tag_s": float(last["model_tag_s"]),
            "table_records": float(last["table_records"])}


class SimScale:
    """``indexbench sim`` of every index at a billion keys (one run per index)."""

    params = [indexes.names()]
    param_names = ["index"]
    rounds = 1
    repeat = 1
    number = 1
    timeout = 7200

    def setup_cache(self) -> dict[str, dict[str, Any]]:
        root = tempfile.mkdtemp(prefix="indexbench-asv-sim-")
        return {n: run_sim(n, os.path.join(root, n)) for n in indexes.names()}

    def track_wall_seconds(self, results, index):
        return results[index]["seconds"]

    track_wall_seconds.unit = "seconds"

    def track_peak_memory(self, results, index):
        return results[index]["peak_rss_gb"]

    track_peak_memory.unit = "GiB"

    def track_last_batch_files_read(self, results, index):
        return results[index]["files_read"]

    track_last_batch_files_read.unit = "files"

    def track_last_batch_model_tag_seconds(self, results, index):
        return results[index]["model_tag_s"]

    track_last_batch_model_tag_seconds.unit = "seconds"
