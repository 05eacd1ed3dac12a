"""Which of a workload's batches a table holds: each commit of a run records the
workload's fingerprint and its batch number in its extra metadata; a run resumes after
the batches committed, a query draws its lookup keys from them.

Shared by the façade (:mod:`indexbench.api`) and the query runner; it imports nothing of
``indexbench``.
"""

from __future__ import annotations

import hashlib
import json

import workloads
from tableformat.errors import TableConfigError

WORKLOAD_KEY = "indexbench.workload"
BATCH_KEY = "indexbench.batch"


def workload_fingerprint(w: workloads.Workload) -> str:
    """What makes two runs' batches identical (everything but the batch count)."""
    spec = {k: v for k, v in sorted(vars(w).items()) if k not in ("batches", "description")}
    if not w.delete_fraction:  # a field added later: delete-free workloads keep their print
        spec.pop("delete_fraction")
    spec["update_keyspace"] = workloads.update_keyspace(w)  # zipfian: depends on batches
    return hashlib.sha256(json.dumps(spec, default=str).encode()).hexdigest()[:16]


def committed_batches(snapshot, fingerprint: str, table_uri: str,
                      hint: str = "use another --table") -> int:
    """Batches of the workload with this fingerprint the table committed (a run resumes
    after them; a query draws its keys from them); another workload's is refused."""
    done = -1
    for extra in snapshot.extra.values():
        if WORKLOAD_KEY in extra:
            if extra[WORKLOAD_KEY] != fingerprint:
                raise TableConfigError(
                    f"table {table_uri} holds batches of another workload; {hint}")
            done = max(done, int(extra[BATCH_KEY]))
    return done + 1
