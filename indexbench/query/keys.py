"""Lookup keys drawn from a table's workload: keys its batches inserted, and keys it
never inserted (same key format and partitions), so a lookup meets both."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa

import workloads
from indexbench.batches import committed_batches as batches
from tableformat.errors import IndexBenchError
from workloads import generator

PRESENT_COL = "drawn_present"  # the key was inserted by a committed batch


def lookup_keys(w: workloads.Workload, committed_batches: int, n: int, seed: int = 0
                ) -> pa.Table:
    """``n`` keys in a random (seeded) order: half drawn uniformly from those batches
    ``0..committed_batches-1`` inserted (a later delete may have removed some), half
    from ordinals past every key the workload inserts in those batches and its own.
    Columns: key, dt, index_key and :data:`PRESENT_COL`.

    A table may hold more batches than ``w`` says (a run resumed with more batches; the
    fingerprint ignores the count): ``w`` is then read as that long."""
    if n < 1:
        raise IndexBenchError("--keys must be >= 1")
    if committed_batches > w.batches + 1:
        w = w.with_overrides(batches=committed_batches - 1)
    inserted = generator.inserts_before(w, committed_batches)
    rng = np.random.default_rng([w.seed, seed, 0x10F])
    present = min(n - n // 2, inserted)
    absent = n - present
    ordinals = np.concatenate([
        np.sort(rng.choice(inserted, size=present, replace=False)) if present else
        np.empty(0, np.int64),
        generator.total_keys(w) + np.sort(rng.choice(max(4 * absent, 1), size=absent,
                                                     replace=False))])
    keys = generator.key_columns(w, ordinals).append_column(
        PRESENT_COL, pa.array(np.arange(n) < present))
    return keys.take(pa.array(rng.permutation(n)))  # batches mix present and absent


def committed_batches(snapshot, fingerprint: str, table_uri: str) -> int:
    """Batches of the workload whose fingerprint is ``fingerprint`` the table committed
    (:func:`indexbench.batches.committed_batches`); none is an error: lookups draw their
    keys from them."""
    done = batches(snapshot, fingerprint, table_uri,
                   hint="give the workload that wrote it (--workload and its sizes)")
    if not done:
        raise IndexBenchError(f"{table_uri}: no batch of a workload is committed; lookups "
                              "draw their keys from the workload that wrote the table")
    return done


def workload_of_table(table_uri: str) -> workloads.Workload:
    """The workload in the run.json of the run that wrote ``table_uri`` (its tables are
    ``<run dir>/tables/<index>``, so the run dir is two levels up)."""
    run_dir = os.path.dirname(os.path.dirname(os.path.normpath(table_uri)))
    path = os.path.join(run_dir, "run.json")
    try:
        with open(path) as f:
            spec = json.load(f)["workload"]
        return workloads.Workload(**spec)
    except (OSError, KeyError, TypeError, ValueError):
        raise IndexBenchError(
            f"{table_uri}: no run.json of the run that wrote it at {path}; give the "
            "workload (--workload and the sizes the run used)") from None
