"""``indexbench fidelity``: a compare beside Hudi's own writer, checked figure by figure.

Runs (or takes) a compare with ``--peers hudi`` whose tables are kept, simulates the same
indexes on the same batches and table types, and writes the checks of
:mod:`reports.fidelity` — ours, Hudi's, the simulator's, tolerance, verdict — to
``<out>/fidelity.md`` and ``<out>/fidelity.csv``. docs/fidelity.md has the full table and
explains every miss.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

import pandas as pd

import indexes
import workloads
from indexbench.sim.driver import simulate_compare
from reports import fidelity as F
from tableformat.errors import IndexBenchError
from tableformat.table_type import TABLE_TYPE, check_table_type, short_name
from tableformat.write_config import KEYS as WRITE_CONFIG_KEYS

MD, CSV = F.FIDELITY_MD, F.FIDELITY_CSV


def _run_json(run_dir: str) -> dict[str, Any]:
    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            return json.load(f)
    except OSError as exc:
        raise IndexBenchError(f"{run_dir}: not a run directory (no run.json)") from exc


def sim_params(pair: F.Pair, hudi_options: Mapping[str, str]) -> dict[str, Any]:
    """The simulator's parameters for one pair: the index's as our table stored them,
    its table type, and the write configs the run gave both writers (Hudi's copy)."""
    cfg = pair.ours.config
    cls = indexes.index_class(pair.index)
    params = {k: v for k, v in (cfg.index_params or {}).items() if k in cls.param_keys()}
    params.update({k: hudi_options[k] for k in WRITE_CONFIG_KEYS if k in hudi_options})
    params[TABLE_TYPE] = check_table_type(pair.table_type)
    return params


def simulate_run(run_dir: str, run: Mapping[str, Any], pairs: list[F.Pair]) -> pd.DataFrame:
    """The simulator on the run's workload, once per mirrored index and table type."""
    w = workloads.Workload(**run["workload"])
    options = {info["mirrors"] + "/" + short_name(info["table_type"]): info["options"]
               for info in (run.get("peers") or {}).values() if info.get("mirrors")}
    frames = []
    for pair in pairs:
        params = sim_params(pair, options.get(f"{pair.index}/{pair.table_type}", {}))
        frames.append(simulate_compare(
            [pair.index], w, params={pair.index: params},
            out=os.path.join(run_dir, "fidelity-sim", f"{pair.index}-{pair.table_type}"),
            run_id=f"{run.get('run_id', 'run')}-sim"))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def has_pairs(run_dir: str) -> bool:
    """Whether a run has something to check (an index beside Hudi's writer, both kept)."""
    return bool(F.pairs_of_run(run_dir))


def check(run_dir: str, *, simulate: bool = True) -> pd.DataFrame:
    """Every fidelity check of a compare run with Hudi's writer beside it; writes
    ``fidelity.md`` and ``fidelity.csv`` into ``run_dir``."""
    run = _run_json(run_dir)
    pairs = F.pairs_of_run(run_dir)
    if not pairs:
        raise IndexBenchError(
            f"{run_dir}: no index with Hudi's writer beside it, both tables kept, Hudi's "
            "of table version 6 (run `indexbench compare --peers hudi` with "
            "--keep-tables, or `indexbench fidelity` without a run directory)")
    sim = simulate_run(run_dir, run, pairs) if simulate else None
    checks = F.check_pairs(F.with_sim(pairs, sim))
    checks.to_csv(os.path.join(run_dir, CSV), index=False)
    with open(os.path.join(run_dir, MD), "w") as f:
        f.write(f"# Fidelity: {run_dir}\n\nOurs against Hudi's own writer "
                f"({_hudi_of(run)}) and the simulator, on the same batches.\n\n")
        f.write(F.markdown(checks))
    return checks


def _hudi_of(run: Mapping[str, Any]) -> str:
    for info in (run.get("peers") or {}).values():
        if info.get("peer") == "hudi":
            return f"Hudi {info.get('hudi')} on Spark {info.get('hudi_spark')}"
    return "Hudi"


__all__ = ["CSV", "MD", "check", "has_pairs", "sim_params", "simulate_run"]
