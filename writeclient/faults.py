"""Fault injection for crash-safety tests: a writer dies, or a write task fails, at a
named point.

- ``INDEXBENCH_CRASH_AT=<point>`` kills the writer process there (as ``kill -9``);
  ``<point>#<n>``: the n-th time this process reaches it (a stream's later micro-batch).
- :func:`simulated_crash` makes the same point raise :class:`SimulatedCrash`, which no
  error handling catches (a ``BaseException``), so an in-process test can "kill" a
  writer and start the next one without a new process per crash.
- ``FAIL_TASK_PROPERTY`` (a Spark local property the driver sets) makes a write task
  raise, as a disk error would: the driver's undo of a failed write is tested with it.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

CRASH_ENV = "INDEXBENCH_CRASH_AT"  # after_write | before_commit | rescale_* points
FAIL_TASK_PROPERTY = "indexbench.test.fail.write.task"  # "<n>": write task n raises
_simulated: str | None = None


class SimulatedCrash(BaseException):  # noqa: N818 (a crash, not an error to handle)
    """The writer 'died' at a crash point: nothing may clean up after it."""


_hits: dict[str, int] = {}


def _asked(point: str) -> bool:
    """Whether the test asked for ``point`` here: ``<point>``, or ``<point>#<n>`` on the
    n-th time this process reaches it."""
    want = os.environ.get(CRASH_ENV)
    if not want or not want.startswith(point):
        return False
    if want == point:
        return True
    name, sep, nth = want.rpartition("#")
    if not sep or name != point or not nth.isdigit():
        return False
    _hits[point] = _hits.get(point, 0) + 1
    return _hits[point] == int(nth)


def crash_if(point: str) -> None:
    """Kill this process (as ``kill -9`` would) when the test asked for ``point``."""
    if _asked(point):
        os._exit(137)
    if _simulated == point:
        raise SimulatedCrash(point)


@contextlib.contextmanager
def simulated_crash(point: str) -> Iterator[None]:
    """Within the block, reaching ``point`` raises :class:`SimulatedCrash`."""
    global _simulated
    _simulated = point
    try:
        yield
    finally:
        _simulated = None


def hang_if(point: str, seconds: float = 120.0) -> None:
    """In a task: stay here (up to ``seconds``) when the test asked for ``point``, so it
    can kill the writer with ``kill -9`` while files of the instant are on disk."""
    if _asked(point):
        deadline = time.time() + seconds
        while time.time() < deadline:
            time.sleep(0.2)


def fail_task_if_asked(task_context) -> None:
    """In a write task: raise as a disk error would when the driver set
    :data:`FAIL_TASK_PROPERTY` to this task's partition (``TaskContext``, duck-typed: no
    pyspark import here)."""
    if task_context.getLocalProperty(FAIL_TASK_PROPERTY) == str(task_context.partitionId()):
        raise OSError(f"injected write failure in task {task_context.partitionId()} (a test)")
