"""One place that builds SparkSessions, so every entry point gets the same settings."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
QUIET_LOG4J = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2-quiet.properties")


def get_session(
    master: str | None = None,
    app_name: str = "indexbench",
    shuffle_partitions: int | None = None,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Create (or reuse) the SparkSession.

    ``PYSPARK_PYTHON`` is pinned to this interpreter first: otherwise Python workers may
    start a different Python that lacks the project's packages.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or DEFAULT_MASTER
    quiet = not os.environ.get("INDEXBENCH_VERBOSE")
    if quiet and master.startswith("local"):
        # one machine: bind to loopback and skip Spark's "resolves to a loopback address"
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", os.environ.get("INDEXBENCH_DRIVER_MEMORY", "4g"))
    )
    if shuffle_partitions is None:
        shuffle_partitions = 2 * (os.cpu_count() or 2) if master.startswith("local") else 200
    builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    if quiet:  # errors only from the JVM: no log4j banner, no WARN lines per command
        builder = builder.config("spark.driver.extraJavaOptions",
                                 f"-Dlog4j2.configurationFile={QUIET_LOG4J}")
    else:
        builder = builder.config("spark.log.level", "ERROR")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
