"""Build a class-data-sharing archive of what Spark's driver JVM loads, for the suite.

Every JVM the suite starts through spark-submit (the two sessions, each CLI subprocess,
crash script and notebook kernel, asv's setup_caches) loads and verifies the same ~20,000
classes from Spark's jars before its first job: about 10 s of wall time and 13 s of CPU
for a session and one tiny job on this 2-core machine. Started from an archive of those
classes (JDK's AppCDS, ``-XX:SharedArchiveFile``) the same takes 5 s and 6.5 s, and the
suite is CPU-bound on 2 cores. A JVM whose class path or Java differs from the archive's
(Hudi's, on Spark 3.5) ignores it and starts as before; no result depends on it.

Usage::

    SPARK_SUBMIT_OPTS="$(python tests/jvm_archive.py .venv/spark-driver.jsa)" \
        python -m pytest -q -n 2

prints the options that use the archive (one line, nothing else on stdout), building it
first when it is missing or was built for another pyspark or Java (about 30 s: a session,
a Parquet write and read, an Arrow UDF and a shuffle, in a JVM that writes the archive of
the classes it loaded when it exits). A build that fails prints the options without the
archive and a warning on stderr: the suite runs as before, only slower.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

JIT = "-XX:TieredStopAtLevel=1"  # C1 only for the suite's JVMs (tests/conftest.py uses it)
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # no warning per class it cannot archive


def options(path: str) -> str:
    """SPARK_SUBMIT_OPTS for JVMs that start from the archive at ``path``."""
    return f"{JIT} -XX:SharedArchiveFile={os.path.abspath(path)} {QUIET}"


def fingerprint() -> str:
    """The pyspark and Java an archive is valid for (a JVM ignores one of another)."""
    import pyspark

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") \
        if os.environ.get("JAVA_HOME") else "java"
    try:
        version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    except OSError as exc:  # no Java: the build fails and says so
        version = f"no java ({exc})"
    return f"pyspark {pyspark.__version__}; {(version.strip().splitlines() or ['?'])[0]}"


def build(path: str) -> None:
    """Run a session and three small jobs in a JVM that archives its classes at exit,
    then wait for it to have written them (the archive appears whole or not at all)."""
    from pyspark import SparkContext

    from indexbench.spark import get_session

    tmp = f"{path}.{os.getpid()}.tmp"
    os.environ["SPARK_SUBMIT_OPTS"] = f"{JIT} -XX:ArchiveClassesAtExit={tmp} {QUIET}"
    spark = get_session("local[2]", app_name="indexbench-jvm-archive", shuffle_partitions=4)
    gateway = SparkContext._gateway
    try:
        with tempfile.TemporaryDirectory(prefix="indexbench-jvm-archive-") as out:
            # the session's own start is most of what a JVM loads; a Parquet write and
            # read, an Arrow UDF and a shuffle add what small jobs share (a session and
            # its first job started as fast from this archive as from one of a whole
            # tiny compare: 4.6 s against 5.0 s, half the build time)
            df = spark.range(100).selectExpr("id", "cast(id as string) AS key")
            df.write.parquet(os.path.join(out, "t"))
            back = spark.read.parquet(os.path.join(out, "t"))
            back.mapInArrow(lambda batches: batches, back.schema).groupBy("key").count(
                ).collect()
        spark.stop()
        gateway.shutdown()
    finally:
        gateway.proc.stdin.close()  # Spark's gateway server exits when its stdin ends
        try:
            code = gateway.proc.wait(300)
        except subprocess.TimeoutExpired:
            gateway.proc.kill()
            code = gateway.proc.wait()
        if code == 0 and os.path.exists(tmp):
            os.replace(tmp, path)
        elif os.path.exists(tmp):
            os.remove(tmp)
    if not os.path.exists(path):
        raise RuntimeError(f"the JVM wrote no class archive (exit code {code})")


def refresh(path: str, stamp: str, wanted: str) -> bool:
    """(Re)build the archive; False, with a warning, when it cannot be built."""
    try:
        if os.path.exists(path):
            os.remove(path)
        build(path)
        with open(stamp, "w") as f:
            f.write(wanted)
        return True
    except Exception as exc:  # noqa: BLE001 - a speed-up: the suite runs without it
        print(f"warning: no class archive, JVMs start as before: {exc}", file=sys.stderr)
        return False


def main(argv: list[str]) -> int:
    """Print the options for the archive at ``argv[0]``, building it when needed."""
    if len(argv) != 1:
        print("usage: python tests/jvm_archive.py ARCHIVE.jsa", file=sys.stderr)
        return 2
    path, stamp = argv[0], argv[0] + ".stamp"
    wanted = fingerprint()
    current = False
    if os.path.exists(path) and os.path.exists(stamp):
        with open(stamp) as f:
            current = f.read() == wanted
    if not current:
        saved = os.dup(1)
        os.dup2(2, 1)  # the JVM and Spark print to stdout: only the options line goes there
        try:
            current = refresh(path, stamp, wanted)
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
    print(options(path) if current else JIT)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
