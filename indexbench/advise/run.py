"""One ``indexbench advise``: the request checked, its probes simulated, the answer
ranked and written (``index.html``, ``advice.png``, ``points.csv``, ``run.json``)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from indexbench.advise.answer import answer
from indexbench.advise.probes import extend, run_probes
from indexbench.advise.request import AdviceRequest
from metrics.contract import new_run_id, write_run_json
from reports.advice import Answer, write_advice_page
from tableformat.errors import IndexBenchError


def advise(req: AdviceRequest, out: str | os.PathLike | None = None, jobs: int = 1
           ) -> tuple[Answer, Path]:
    """The answer to ``req`` and its page (under ``out``, default ``out/advise-<run id>``)."""
    req = req.check()
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
    a.request["advise_s"] = time.perf_counter() - started
    # written beside, then moved into place: a failed or killed run leaves no half answer
    tmp = out.with_name(f".{out.name}.{run_id}.tmp")
    try:
        write_advice_page(a, tmp)
        points.to_csv(tmp / "points.csv", index=False)
        errors.to_csv(tmp / "extrapolation.csv", index=False)
        write_run_json(tmp, {"run_id": run_id, "command": "advise", "mode": "sim",
                             "workload": vars(req.workload), "advice": a.request,
                             "recommended": {"index": a.recommendation.index,
                                             "setting": a.recommendation.setting}})
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return a, out / "index.html"
