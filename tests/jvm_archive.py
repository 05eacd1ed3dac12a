"""Build a class-data-sharing archive of what Spark's driver JVM loads, for the suite.

Every JVM the suite starts through spark-submit (the two sessions, each CLI subprocess,
crash script and notebook kernel, asv's setup_caches) loads and verifies the same ~20,000
classes from Spark's jars before its first job: about 10 s of wall time and 13 s of CPU
for a session and one tiny job on this 2-core machine. Started from an archive of those
classes (JDK's AppCDS, ``-XX:SharedArchiveFile``) the same takes 5 s and 6.5 s, and the
suite is CPU-bound on 2 cores. A JVM whose class path or Java differs from the archive's
(Hudi's, on Spark 3.5) ignores it and starts as before; no result depends on it.

Usage (``.ci/run``)::

    export SPARK_SUBMIT_OPTS="$(python tests/jvm_archive.py .venv/spark-driver.jsa)"

prints the options that use the archive, building it first (about 40 s: a tiny compare
of two indexes on both table types, with its query phase, in a JVM that writes the
archive of the classes it loaded when it exits).
"""

from __future__ import annotations

import os
import sys
import tempfile

JIT = "-XX:TieredStopAtLevel=1"  # as tests/conftest.py: C1 only for the suite's JVMs
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # no warning per class it cannot archive


def options(path: str) -> str:
    """SPARK_SUBMIT_OPTS for JVMs that start from the archive at ``path``."""
    return f"{JIT} -XX:SharedArchiveFile={os.path.abspath(path)} {QUIET}"


def build(path: str) -> None:
    """Run a tiny compare in a JVM that archives its classes at exit, then wait for the
    JVM to have written it (the archive appears whole or not at all)."""
    from pyspark import SparkContext

    from indexbench import api
    from indexbench.spark import get_session

    tmp = f"{path}.{os.getpid()}.tmp"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{JIT} -XX:ArchiveClassesAtExit={tmp} {QUIET}"
    spark = get_session("local[2]", app_name="indexbench-jvm-archive", shuffle_partitions=4)
    with tempfile.TemporaryDirectory(prefix="indexbench-jvm-archive-") as out:
        api.compare(["bloom", "simple-bucket"], "uniform", table_types=("cow", "mor"),
                    out=os.path.join(out, "run"), spark=spark, initial_records=400,
                    batches=1, batch_size=100, run_id="jvm-archive")
    gateway = SparkContext._gateway
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()  # Spark's gateway server exits when its stdin ends
    if gateway.proc.wait(300) != 0 or not os.path.exists(tmp):
        raise SystemExit(f"the JVM wrote no class archive ({tmp})")
    os.replace(tmp, path)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/jvm_archive.py ARCHIVE.jsa", file=sys.stderr)
        return 2
    path = argv[0]
    if not os.path.exists(path):
        build(path)
    print(options(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
