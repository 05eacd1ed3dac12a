"""Spark's Python worker daemon (``pyspark.daemon``), minus a fixed cost of every task.

Before each task, PySpark's worker calls ``importlib.invalidate_caches()``
(``pyspark.worker_util.setup_spark_files``). Below Python 3.13 that makes every
``zipimporter`` on ``sys.path`` re-read its archive's whole directory, and Spark puts
``pyspark.zip`` and py4j's zip first on the workers' path: 84% of a reused worker's time
on a small Arrow task went there (py-spy, 2026-11-28), 0.1-0.3 s a task on 2 cores. The
archives never change while a worker lives (a file Spark ships to workers is a new path,
and Spark refuses to register one name twice with other contents), so here their
directories are read once; and pyarrow and pandas are imported once, here (below). Set
as ``spark.python.daemon.module`` by :func:`indexbench.spark.get_session`; the forked
workers are PySpark's own.
"""

from __future__ import annotations

import zipimport

# Every worker forked from this daemon imported pyarrow and pandas again on its first Arrow
# task (pyspark.worker imports them when a task needs them): 0.3 s of CPU a worker,
# measured (2026-11-29), paid by every session's every worker. Imported here once, before
# any fork, the workers share them.
import pandas  # noqa: F401
import pyarrow  # noqa: F401
from pyspark import daemon


def _keep_directory(self: zipimport.zipimporter) -> None:
    """The archive's directory as read when the importer was made (see the module doc)."""


zipimport.zipimporter.invalidate_caches = _keep_directory  # type: ignore[method-assign]

if __name__ == "__main__":
    daemon.manager()
