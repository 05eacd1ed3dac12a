"""One ``indexbench advise``: the request checked, its probes simulated, the answer
ranked and written (``index.html``, ``advice.png``, ``points.csv``, ``run.json``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from indexbench.advise.answer import answer
from indexbench.advise.check import CheckRequest, Measure, run_check
from indexbench.advise.probes import extend, run_probes
from indexbench.advise.request import AdviceRequest
from metrics.contract import new_run_id, write_run_json
from reports.advice import Answer, write_advice_page
from tableformat.errors import IndexBenchError


def advise(req: AdviceRequest, out: str | os.PathLike | None = None, jobs: int = 1,
           check: CheckRequest | None = None, measure: Measure | None = None
           ) -> tuple[Answer, Path]:
    """The answer to ``req`` and its page (under ``out``, default ``out/advise-<run id>``);
    with ``check``, held against real runs that ``measure`` makes (``check/``)."""
    req = req.check()
    if check is not None:
        check.check(req)
        if measure is None:
            raise IndexBenchError("advise: a check needs a way to measure (api.advise "
                                  "gives one: compare on Spark)")
    if jobs < 1:
        raise IndexBenchError(f"--jobs must be >= 1, got {jobs}")
    run_id = new_run_id()
    out = Path(out or os.path.join("out", f"advise-{run_id}"))
    if out.exists() and any(out.iterdir()):
        raise IndexBenchError(f"{out}: not empty; advise writes its answer into a new "
                              "directory (give another --out)")
    started = time.perf_counter()
    exact = run_probes(req, jobs=jobs)
    points, errors = extend(req, exact)
    a = answer(req, points, errors)
    # written beside, then moved into place: a failed or killed run leaves no half answer
    tmp = out.with_name(f".{out.name}.{run_id}.tmp")
    try:
        if check is not None:
            (tmp / "check").mkdir(parents=True)
            a.check = run_check(req, a, check, measure, tmp / "check", str(out / "check"),
                                jobs=jobs)
        a.request["advise_s"] = time.perf_counter() - started
        write_advice_page(a, tmp)
        points.to_csv(tmp / "points.csv", index=False)
        errors.to_csv(tmp / "extrapolation.csv", index=False)
        write_run_json(tmp, {"run_id": run_id, "command": "advise", "mode": "sim",
                             "workload": vars(req.workload), "advice": a.request,
                             "recommended": {"index": a.recommendation.index,
                                             "setting": a.recommendation.setting},
                             **({"check": {"size": a.check.size, "batches": a.check.batches,
                                           "conflicts": a.check.conflicts,
                                           "peers": list(check.peers)}}
                                if a.check is not None else {})})
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return a, out / "index.html"
