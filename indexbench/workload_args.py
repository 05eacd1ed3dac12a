"""The workload a command runs: a preset, a TOML path or a Workload, with size overrides.

Shared by the façade (:mod:`indexbench.api`), the CLI and the simulator; it imports
nothing of ``indexbench``.
"""

from __future__ import annotations

import workloads


def load_workload(workload: str | workloads.Workload = "uniform", batches: int | None = None,
                  batch_size: int | None = None, initial_records: int | None = None,
                  seed: int | None = None) -> workloads.Workload:
    """A preset name, a TOML path or a Workload, with the CLI's size overrides applied."""
    w = workload if isinstance(workload, workloads.Workload) else workloads.load(workload)
    overrides = {k: v for k, v in {"batches": batches, "batch_size": batch_size,
                                   "initial_records": initial_records, "seed": seed}.items()
                 if v is not None}
    return w.with_overrides(**overrides) if overrides else w
