"""Hudi's own Spark writer in a JVM of its own: the process ``peers.hudi`` talks to.

Run by the Hudi runtime's Python (``peers.hudi_runtime``: the pyspark that Hudi's bundle
was built for), never imported by the project: it needs nothing but the standard library
and that pyspark, so the project's own Spark session, its versions and its counters are
untouched by Hudi's presence.

Protocol, one JSON object a line: the parent writes requests on stdin, this process
answers each on stdout (Spark's and Hudi's logs go to stderr and the log files the
parent named):

    {"op": "write", "source": PARQUET, "table": PATH, "options": {...}}
        → {"ok": true, "write_s": seconds around Hudi's write call}
    {"op": "count", "table": PATH}   → {"ok": true, "records": snapshot records}
    {"op": "read", "table": PATH, "options": {...}, "columns": [...], "out": PARQUET}
        → {"ok": true}: Hudi's read of the table with those read options (query type,
          begin instant, as.of.instant), those columns, written to PARQUET by Spark
    {"op": "stop"}                   → {"ok": true}, then the JVM stops

A failed request answers ``{"ok": false, "error": "<Java or Python error>"}`` and the
process stays up; the parent decides.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import traceback

ORPHAN_POLL_S = 1.0


def _session(args: argparse.Namespace):
    """A SparkSession as Hudi's quick start sets it up, with the bundle on the classpath,
    the event log on (phase seconds) and the log4j file that keeps the bloom lookup's
    lines (counters)."""
    from pyspark.sql import SparkSession

    conf = {
        "spark.jars": args.jar,
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": args.driver_memory,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={args.log4j}",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": args.event_dir,
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    if args.shuffle_partitions:
        conf["spark.sql.shuffle.partitions"] = str(args.shuffle_partitions)
    builder = SparkSession.builder.master(args.master).appName(args.app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


# the protocol's own pipe: file descriptor 1 is handed to stderr before the JVM starts,
# since the JVM (and libraries in Hudi's bundle) print to standard output
_PROTOCOL = None


def _answer(obj: dict) -> None:
    _PROTOCOL.write(json.dumps(obj) + "\n")
    _PROTOCOL.flush()


def _error(exc: BaseException) -> str:
    """The first line of a Java error (py4j puts it after a Python preamble) or Python's."""
    text = str(exc)
    for line in text.splitlines():
        if "Exception" in line or "Error" in line:
            return line.strip()[:2000]
    return (text.strip().splitlines() or [type(exc).__name__])[0][:2000]


def _exit_when_orphaned(parent: int) -> None:
    """End this process (and so the JVM, whose gateway exits when this process's pipe
    to it closes) as soon as the process that started it is gone, even mid-write: stdin
    is read only between requests, so a parent killed during a long write would
    otherwise leave the JVM writing until the write ends. An instant left inflight is
    rolled back by Hudi's next writer, as after ``stop(now=True)``."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    os._exit(3)


def serve(args: argparse.Namespace) -> int:
    global _PROTOCOL
    parent = args.parent_pid or os.getppid()
    if os.getppid() != parent:  # the parent died before this process got here
        return 3
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    _PROTOCOL = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    spark = _session(args)
    sc = spark.sparkContext
    _answer({"ready": True, "spark": spark.version, "app_id": sc.applicationId,
             "master": sc.master, "parallelism": sc.defaultParallelism})
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        op = req.get("op")
        answered = {"id": req.get("id")}
        try:
            if op == "stop":
                _answer({**answered, "ok": True})
                break
            if op == "write":
                df = spark.read.parquet(req["source"])
                t0 = time.monotonic()
                df.write.format("hudi").options(**req["options"]).mode("append").save(
                    req["table"])
                _answer({**answered, "ok": True, "write_s": time.monotonic() - t0})
            elif op == "count":
                sc.setJobDescription("indexbench: snapshot count")
                n = spark.read.format("hudi").load(req["table"]).count()
                sc.setJobDescription(None)
                _answer({**answered, "ok": True, "records": int(n)})
            elif op == "read":
                sc.setJobDescription("indexbench: hudi read")
                df = spark.read.format("hudi").options(**req["options"]).load(req["table"])
                df.select(*[c for c in req["columns"] if c in df.columns]) \
                    .write.mode("overwrite").parquet(req["out"])
                sc.setJobDescription(None)
                _answer({**answered, "ok": True})
            else:
                _answer({**answered, "ok": False, "error": f"unknown op {op!r}"})
        except Exception as exc:  # noqa: BLE001 - answered, the parent decides
            traceback.print_exc(file=sys.stderr)
            _answer({**answered, "ok": False, "error": _error(exc)})
    spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jar", required=True, help="Hudi's Spark bundle")
    p.add_argument("--master", default="local[*]")
    p.add_argument("--app-name", default="indexbench-hudi")
    p.add_argument("--driver-memory", default="4g")
    p.add_argument("--shuffle-partitions", type=int, default=0)
    p.add_argument("--log4j", required=True, help="log4j2 properties file")
    p.add_argument("--event-dir", required=True, help="Spark event log folder (file: URI)")
    p.add_argument("--parent-pid", type=int, default=0,
                   help="the process that started this one: when it is gone, this ends")
    return serve(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
