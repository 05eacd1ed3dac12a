"""A write that failed after its instant started: why, in one line, and its undo.

Every writer (an upsert, a rescale, an RLI compaction, the table services after a
batch) runs inside :func:`undone_on_failure`: when the block raises (a Spark task
failed, say), the instants it started are undone on the spot once no task can still
write a file (:mod:`tableformat.abort`), so the table is byte-for-byte what it was; when
tasks do not stop in time, they are left pending for the next writer's rollback, as a
crash is.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from pyspark.sql import SparkSession

from tableformat.abort import abort_instant
from tableformat.errors import IndexBenchError, WriteFailedError
from tableformat.table import Table
from writeclient.faults import SimulatedCrash

_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Violation|Interrupt)\b.*?:")


def failure_cause(exc: BaseException) -> str:
    """The one line that names why a Spark job failed: the Python error a task raised
    (the last ``Type: message`` line of its traceback), else the first line."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
    cause = errors[-1] if errors and "PythonException" in type(exc).__name__ else lines[0]
    return cause if len(cause) <= 400 else cause[:397] + "..."


@contextlib.contextmanager
def undone_on_failure(spark: SparkSession, table: Table, what: str,
                      on_failure: Callable[[list[str]], Any] | None = None) -> Iterator[None]:
    """Undo every instant started in the block that has not completed when it raises.

    ``on_failure(started)`` runs first (an index drops state of the failed instants).
    An exception becomes :class:`WriteFailedError` naming ``what`` and its cause in one
    line; an IndexBenchError (a refusal an index could only make once started) stays as
    it is. Ctrl-C and a simulated crash leave the instants to the next writer's rollback,
    as a crash does: tasks may still be writing."""
    before = set(table.pending_instants())
    try:
        yield
    except (KeyboardInterrupt, SimulatedCrash):
        if on_failure:
            safely(on_failure, [i for i in table.pending_instants() if i not in before])
        raise
    except Exception as exc:
        started = [i for i in table.pending_instants() if i not in before]
        if on_failure:
            safely(on_failure, started)
        if not started:
            raise  # nothing of it is on the timeline (or it completed): nothing to undo
        undone = undo_failed_instants(spark, table, started)
        if isinstance(exc, IndexBenchError) and undone:
            raise
        how = "was rolled back, the table is unchanged" if undone else \
            "is left for the next writer to roll back (its tasks did not stop in time)"
        raise WriteFailedError(f"{what} failed and {how}: {failure_cause(exc)}") from exc


def undo_failed_instants(spark: SparkSession, table: Table, instants: list[str]) -> bool:
    """Undo ``instants`` once no task can still write a file; returns whether they were
    undone (else they stay pending: the next writer's rollback removes them)."""
    try:
        if not quiesce(spark):
            return False
    except Exception:  # noqa: BLE001 (the JVM is gone: leave it to the next writer)
        return False
    for instant in instants:
        abort_instant(table, instant)
    return True


def quiesce(spark: SparkSession, timeout_s: float = 60.0) -> bool:
    """Wait until no executor runs a task (a failed job's other tasks are cancelled, but
    a task already writing its file group finishes it first), then a moment for its
    Python worker; False on timeout."""
    jsc = spark.sparkContext._jsc.sc()
    tracker = jsc.statusTracker()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jsc.listenerBus().waitUntilEmpty()  # task-end events reach the tracker first
        if sum(e.numRunningTasks() for e in tracker.getExecutorInfos()) == 0:
            time.sleep(0.2)  # a cancelled task's worker may outlive its JVM task briefly
            return True
        time.sleep(0.05)
    return False


def safely(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """A clean-up step that must not mask the error being handled."""
    try:
        fn(*args, **kwargs)
    except Exception:  # noqa: BLE001
        pass
