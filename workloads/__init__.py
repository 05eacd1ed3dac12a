"""Workloads: YCSB-faithful key distributions, key formats, batch generator, presets.

A Workload is a seeded, reproducible description; batches are a pure function of it, so
Spark executors generate them in parallel (spark_source) and the simulator without
Spark (generator.iter_batches / batch_arrays), always with the same rows.
"""

from .generator import (
    batch_frame,
    batch_rows,
    batch_table,
    inserts_before,
    iter_batches,
    update_keyspace,
)
from .spec import DISTRIBUTIONS, KEY_FORMATS, KEYSPACES, Workload, describe, load, presets

__all__ = [
    "DISTRIBUTIONS",
    "KEYSPACES",
    "KEY_FORMATS",
    "Workload",
    "batch_frame",
    "batch_rows",
    "batch_table",
    "describe",
    "inserts_before",
    "iter_batches",
    "load",
    "presets",
    "update_keyspace",
]
