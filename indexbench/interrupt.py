"""Ctrl-C on the command line: one line on stderr, whatever was running.

Why a module of its own (and no pyspark import): the command line installs this before
it knows whether Spark will run, and everything that could print after an interrupt
checks one flag here. Without it a Ctrl-C printed, depending on the instant it came:
PySpark's ``toPandas`` Arrow warning with ~78 lines of the cancelled job's Java stack
trace; the JVM's ERROR lines about closed shuffle files; tracebacks of Python workers
whose pipe closed; or a second KeyboardInterrupt's traceback when the key was pressed
again while the first unwound.

- :func:`on_sigint` cancels the running Spark jobs from another thread (its own py4j
  connection: PySpark's handler calls ``cancelAllJobs`` through the connection the main
  thread is blocked in and prints pages of "reentrant call" tracebacks), sets
  :data:`interrupted` and raises ``KeyboardInterrupt``; a repeated Ctrl-C while the
  first unwinds is ignored.
- :func:`quiet_after_interrupt` drops Python warnings, thread exceptions and
  "Exception ignored" reports once :data:`interrupted` is set, and PySpark's ``toPandas``
  Arrow warning always (the failure it announces is reported as the one ``error:``
  line). The JVM's stderr filter (:mod:`indexbench.spark`) drops every line after it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import warnings
from collections.abc import Iterator

MESSAGE = "interrupted; the unfinished instant will be rolled back by the next run"

# Set on the first Ctrl-C: output that follows is the interrupt's, not news.
interrupted = threading.Event()
_cancel: list[threading.Thread] = []  # the job-cancelling thread of the interrupt


def on_sigint(signum: int, frame: object) -> None:
    """The command line's SIGINT handler (see the module docstring)."""
    if interrupted.is_set():
        return  # pressed again while the first interrupt unwinds: it is on its way out
    interrupted.set()
    pyspark = sys.modules.get("pyspark")  # imported only if Spark may be running
    sc = getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None)
    if sc is not None:
        def cancel() -> None:
            try:
                sc.cancelAllJobs()
            except Exception:  # noqa: BLE001 (the command is exiting either way)
                pass

        thread = threading.Thread(target=cancel, name="cancel-jobs", daemon=True)
        _cancel.append(thread)
        thread.start()
    raise KeyboardInterrupt


@contextlib.contextmanager
def held(active: bool = True) -> Iterator[None]:
    """Hold a Ctrl-C until the block ends, then raise it (main thread, ``active`` only).

    For the Spark JVM's start: a KeyboardInterrupt inside PySpark's ``launch_gateway``
    leaves the JVM it launched running with no driver (it never got to watch its stdin
    for the driver's exit), an orphan that outlives the command."""
    if not active or threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: fired.append(signum))
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is not on_sigint:  # the block may install it
            signal.signal(signal.SIGINT, previous)
    if fired:
        on_sigint(signal.SIGINT, None)


def join_cancel(timeout: float = 5.0) -> None:
    """Wait for the interrupt's job cancelling to be sent (an in-process caller's next
    job must not be the one it cancels)."""
    while _cancel:
        _cancel.pop().join(timeout)


@contextlib.contextmanager
def quiet_after_interrupt(verbose: bool = False) -> Iterator[None]:
    """Within the block: :func:`on_sigint` handles SIGINT (main thread only), and what
    Python would print after an interrupt is dropped. Everything is restored on exit."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    hooks = (threading.excepthook, sys.unraisablehook)

    def thread_hook(args: threading.ExceptHookArgs) -> None:
        if not interrupted.is_set():
            hooks[0](args)

    def unraisable_hook(args: object) -> None:
        if not interrupted.is_set():
            hooks[1](args)

    with warnings.catch_warnings():
        show = warnings.showwarning

        def showwarning(*args: object, **kwargs: object) -> None:
            if not interrupted.is_set():
                show(*args, **kwargs)

        warnings.showwarning = showwarning
        if not verbose:
            warnings.filterwarnings("ignore", message="toPandas attempted Arrow",
                                    category=UserWarning)
        threading.excepthook, sys.unraisablehook = thread_hook, unraisable_hook
        if main:
            signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        finally:
            threading.excepthook, sys.unraisablehook = hooks
            if main and previous is not None:
                signal.signal(signal.SIGINT, previous)
