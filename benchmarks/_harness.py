"""The harness, for the benchmarks kept in an index's folder (``indexes/<folder>/benchmarks/``).

Those files sit under ``indexes/``, a layer that imports nothing of the layers above it
(``workloads``, ``indexbench``: tests/test_architecture.py); a benchmark that runs its
index for real reaches the harness through these functions. Each imports what it needs
when called (in a ``setup_cache``), so importing the suite starts no Spark.
"""

from __future__ import annotations

from typing import Any


def local_spark(app_name: str, cores: int = 2, shuffle_partitions: int = 4):
    """A local SparkSession of ``cores`` cores (``spark.default.parallelism`` = cores)."""
    from indexbench.spark import get_session

    return get_session(f"local[{cores}]", app_name=app_name,
                       shuffle_partitions=shuffle_partitions,
                       conf={"spark.default.parallelism": str(cores)})


def load_workload(name: str, **overrides: Any):
    """A workload preset, with fields overridden (``partitions=1``...)."""
    import workloads

    w = workloads.load(name)
    return w.with_overrides(**overrides) if overrides else w


def run_index(index: str, workload, **kwargs: Any):
    """``indexbench.api.run`` of one index: its metrics rows (a DataFrame)."""
    from indexbench import api

    return api.run(index, workload, **kwargs)
