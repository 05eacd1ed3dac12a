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

prints the options that use the archive, building it first (about 30 s: a session, a
Parquet write and read, an Arrow UDF and a shuffle, in a JVM that writes the archive of
the classes it loaded when it exits).
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

    from indexbench.spark import get_session

    tmp = f"{path}.{os.getpid()}.tmp"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{JIT} -XX:ArchiveClassesAtExit={tmp} {QUIET}"
    spark = get_session("local[2]", app_name="indexbench-jvm-archive", shuffle_partitions=4)
    with tempfile.TemporaryDirectory(prefix="indexbench-jvm-archive-") as out:
        # the session's own start is most of what a JVM loads; a Parquet write and read,
        # an Arrow UDF and a shuffle add what small jobs share (a session and its first
        # job started as fast from this archive as from one of a whole tiny compare:
        # 4.6 s against 5.0 s, half the build time)
        df = spark.range(100).selectExpr("id", "cast(id as string) AS key")
        df.write.parquet(os.path.join(out, "t"))
        back = spark.read.parquet(os.path.join(out, "t"))
        back.mapInArrow(lambda batches: batches, back.schema).groupBy("key").count().collect()
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
