"""A write that failed after its instant started: why, in one line, and its undo.

The driver calls these when tagging, writing or committing raised (a Spark task failed,
say): the instant is undone on the spot once no task of it can still write a file
(:mod:`tableformat.abort`), so the table is byte-for-byte what it was; when tasks do not
stop in time, it is left pending for the next writer's rollback, as a crash is.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from tableformat.abort import abort_instant
from tableformat.table import Table

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


def undo_failed_instant(spark: SparkSession, table: Table, instant: str) -> bool:
    """Undo ``instant`` once no task can still write a file; returns whether it was
    undone (else it stays pending: the next writer's rollback removes it)."""
    try:
        if not quiesce(spark):
            return False
    except Exception:  # noqa: BLE001 (the JVM is gone: leave it to the next writer)
        return False
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
