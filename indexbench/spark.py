"""One place that builds SparkSessions, so every entry point gets the same settings."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import threading
import time

from pyspark.sql import SparkSession

from indexbench import interrupt

DEFAULT_MASTER = "local[*]"
# Spark's own unit of input split (spark.sql.files.maxPartitionBytes): a shuffle partition
# per this many bytes of batch keeps each task's Arrow group well inside an executor's heap.
SHUFFLE_PARTITION_BYTES = 128 << 20
# How long a cluster session waits for its first executor before planning with what it has.
EXECUTOR_WAIT_S = 60.0
# A line the JVM prints on every start (Spark's launcher always adds the module), not a log.
_JVM_NOISE = (b"WARNING: Using incubator modules: jdk.incubator.vector",)
# Set by the command line: Ctrl-C cancels the jobs from another thread and raises
# KeyboardInterrupt (:func:`indexbench.interrupt.on_sigint`), installed again after the
# session starts because PySpark's SparkContext installs its own. Notebooks keep PySpark's.
PLAIN_SIGINT_ENV = "INDEXBENCH_PLAIN_SIGINT"
PYTHON_DAEMON = "indexbench.python_daemon"
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
    options = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        # The driver sizes every shuffle itself (2 partitions per core, more for big
        # batches) and joins only on unique (partition, key): adaptive execution would add
        # nothing but a job per query stage, a fixed cost that a cluster pays per job
        # (7-10% of a small compare on spark://, about 2% on local[*]).
        "spark.sql.adaptive.enabled": "false",
        # A fused plan (throughput mode) computes a broadcast side inside its wait: bloom's
        # tag at 1M records and 8,000 files of indexbench.scale 1/1000 took over Spark's
        # 300 s default and failed the batch, so a slow phase is measured, not aborted.
        "spark.sql.broadcastTimeout": "3600",
        "spark.driver.memory": os.environ.get("INDEXBENCH_DRIVER_MEMORY", "4g"),
        # PySpark's daemon without its per-task re-read of pyspark.zip's directory
        # (indexbench/python_daemon.py): 35% off a small upsert's seconds
        "spark.python.daemon.module": PYTHON_DAEMON,
    }
    if shuffle_partitions is not None:
        options["spark.sql.shuffle.partitions"] = str(shuffle_partitions)
    if quiet:  # errors only from the JVM: no log4j banner, no WARN lines per command
        options["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={QUIET_LOG4J}"
    else:
        options["spark.log.level"] = "ERROR"
    options.update(conf or {})
    cli = bool(os.environ.get(PLAIN_SIGINT_ENV))
    # the command line: a Ctrl-C while the JVM starts is held until it has (interrupted
    # there, the half-started JVM outlived the command), then answered as any other
    with interrupt.held(cli):
        if quiet:
            _launch_filtered_jvm(master, app_name, options)
        builder = SparkSession.builder.master(master).appName(app_name)
        for key, value in options.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        if cli and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, interrupt.on_sigint)  # SparkContext set its own
    if shuffle_partitions is None and "spark.sql.shuffle.partitions" not in (conf or {}):
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * cluster_cores(spark)))
    return spark


# Set by the command line's SIGINT handler: an error raised while the interrupt unwinds
# (a py4j call in a ``finally`` meeting the connection the interrupt broke) is the
# interrupt's, not a failure of its own; the JVM's stderr is dropped from then on.
interrupted = interrupt.interrupted


def _launch_filtered_jvm(master: str, app_name: str, options: dict[str, str]) -> None:
    """Start Spark's JVM ourselves so its stderr passes through a filter of known noise.

    PySpark starts the JVM with the conf it would get from the builder; doing that here
    with the same conf and a pipe on stderr lets every other line (an OutOfMemoryError,
    a crash) through unchanged.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return  # a JVM exists already (this process's, or spark-submit's)
    conf = SparkConf(loadDefaults=False).setMaster(master).setAppName(app_name)
    for key, value in options.items():
        conf.set(key, value)
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    SparkContext._gateway = gateway
    SparkContext._jvm = gateway.jvm
    stream = gateway.proc.stderr

    def forward() -> None:
        """Drain the pipe until the JVM exits: a JVM blocked on a full pipe would hang."""
        for line in iter(stream.readline, b""):
            # after Ctrl-C: the cancelled jobs' errors, the workers' broken pipes
            if not line.startswith(_JVM_NOISE) and not interrupted.is_set():
                try:
                    os.write(2, line)
                except OSError:  # stderr closed or a broken pipe: keep draining
                    pass

    threading.Thread(target=forward, name="jvm-stderr", daemon=True).start()


def cluster_cores(spark: SparkSession, wait_s: float = EXECUTOR_WAIT_S) -> int:
    """The cores the executors offer, waiting for a cluster's executors to register.

    Spark's 200 default shuffle partitions are 200 tasks per shuffle however small the
    batch: on a standalone cluster each costs a network round trip and a Python worker
    call, which made a 20k-record ``compare`` 6x slower than ``local[*]`` on the same 2
    cores. A cluster's executors register after the session starts (standalone asks for
    no minimum), so this waits for the first one, then until no other came for 0.5 s.
    """
    sc = spark.sparkContext
    dynamic = sc.getConf().get("spark.dynamicAllocation.enabled", "false") == "true"
    if sc.master == "local" or sc.master.startswith("local[") or dynamic:
        # local: the cores are known; dynamic allocation: no executor before a job asks
        return sc.defaultParallelism
    status = sc._jsc.sc().getExecutorMemoryStatus  # the driver is one of its entries
    deadline = time.monotonic() + wait_s
    while status().size() < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    seen, settled = status().size(), time.monotonic() + 0.5
    while time.monotonic() < min(settled, deadline):  # the others register close behind
        time.sleep(0.1)
        if status().size() != seen:
            seen, settled = status().size(), time.monotonic() + 0.5
    return sc.defaultParallelism


def shuffle_partitions_for(base: int, data_bytes: float) -> int:
    """The session's partitions (2 per core), more when the data needs them."""
    return max(base, math.ceil(data_bytes / SHUFFLE_PARTITION_BYTES))


def session_facts(spark: SparkSession) -> dict[str, object]:
    """What run.json records of the Spark session the figures came from."""
    return {"master": spark.sparkContext.master,
            "cores": spark.sparkContext.defaultParallelism,
            "shuffle_partitions": int(spark.conf.get("spark.sql.shuffle.partitions"))}
