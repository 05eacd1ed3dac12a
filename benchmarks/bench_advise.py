"""``indexbench advise`` over a horizon reaching a billion keys (issue #42: every index in
at most 10 minutes on 2 cores and 8 GB; docs/choosing-an-index.md).

``setup_cache`` runs the command once in its own process (its peak memory read from the
child's rusage): ``uniform``, 1,000,000 records now, batches of 200,000 (half of them new
keys), 24 a day for 417 days — 1,000,600,000 records at the horizon — every index,
``--jobs 2``. The tracks: wall seconds, peak memory, and the worst relative error of the
path above the exact limit where it is checked against an exact simulation.
``INDEXBENCH_ASV_ADVISE_SIZES=records,batch,days,exact_limit`` shrinks it (``.ci/asv-check``
runs a horizon of a few hundred thousand keys). ``AdviseHorizonHudi``: the same answer on
the profiles of docs/profiles fitted on 2026-12-01, ours (``--storage``) and Hudi's own
writer's (``--hudi-storage``), which prices the indexes Hudi has a second time (its own
``--storage``, so the two tracks differ by more than that pricing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

_sizes = [int(x) for x in os.environ.get("INDEXBENCH_ASV_ADVISE_SIZES",
                                         "1000000,200000,417,1000000").split(",")]
RECORDS, BATCH, DAYS, EXACT_LIMIT = _sizes
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "profiles")
# our writer's profile of this machine (2026-12-02: our Spark plan's work and a merge's
# reads priced) and Hudi's writer's (2026-12-01, which those do not change)
HUDI_PRICED = ["--storage", os.path.join(PROFILES, "2core-2026-12-02.json"),
               "--hudi-storage", os.path.join(PROFILES, "2core-2026-12-01-hudi.json")]


def run_advise(out: str, extra: tuple[str, ...] = ()) -> dict[str, float]:
    """One ``indexbench advise`` process: wall seconds, peak RSS, worst check error."""
    cmd = [sys.executable, "-m", "indexbench", "advise", "--initial-records", str(RECORDS),
           "--batch-size", str(BATCH), "--batches-per-day", "24", "--horizon-days", str(DAYS),
           "--exact-limit", str(EXACT_LIMIT), "--jobs", "2", "--out", out, *extra]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"indexbench advise failed: {err[-2000:]}")
    import pandas as pd

    errors = pd.read_csv(os.path.join(out, "extrapolation.csv"))["extrapolation_error"]
    return {"seconds": seconds, "peak_rss_gb": usage.ru_maxrss / 2**20,
            "worst_error": float(errors.max()) if errors.notna().any() else float("nan")}


class AdviseHorizon:
    """``indexbench advise`` of every index to a billion-key horizon."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 3600

    def setup_cache(self) -> dict[str, float]:
        return run_advise(os.path.join(tempfile.mkdtemp(prefix="indexbench-asv-advise-"),
                                       "answer"))

    def track_wall_seconds(self, results):
        return results["seconds"]

    track_wall_seconds.unit = "seconds"

    def track_peak_memory(self, results):
        return results["peak_rss_gb"]

    track_peak_memory.unit = "GiB"

    def track_worst_extrapolation_error(self, results):
        return results["worst_error"]

    track_worst_extrapolation_error.unit = "ratio"


class AdviseHorizonHudi(AdviseHorizon):
    """The same answer with the indexes Hudi has priced as Hudi's own writer as well."""

    def setup_cache(self) -> dict[str, float]:
        # its own: asv keys a setup_cache by where it is defined, so an inherited one
        # would hand this class the other's results
        return run_advise(os.path.join(tempfile.mkdtemp(prefix="indexbench-asv-advise-"),
                                       "answer"), tuple(HUDI_PRICED))
