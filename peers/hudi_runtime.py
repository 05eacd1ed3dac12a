"""Where Hudi's writer comes from: the bundle, and the Spark it was built for.

The versions live here and nowhere else. Hudi's bundles are built per Spark minor and
Scala version; the one Maven Central serves to this project is Hudi 1.2.0's
``hudi-spark3.5-bundle_2.12`` (the ``hudi-spark4.0``/``4.1`` bundles of Hudi 1.2 are not
served: docs/peers.md has the commands and their answers). So Hudi runs in a JVM of its
own, on the Spark it was built with (``SPARK_VERSION``, Hudi's ``spark35.version``),
while the project's indexes keep their own pinned Spark 4.1 session: Hudi's presence
changes none of their counters.

On first use the harness gets both itself, each with one progress line, as it starts
its own redis-server: the bundle with the machine's Maven client into the local Maven
repository, the Spark runtime with pip into a virtual environment under the cache
folder. ``INDEXBENCH_HUDI_BUNDLE`` (a local jar) and ``INDEXBENCH_HUDI_PYTHON`` (a Python
with pyspark SPARK_VERSION) point at ones the user already has.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tableformat.errors import IndexBenchError

HUDI_VERSION = "1.2.0"
SCALA_VERSION = "2.12"
SPARK_MINOR = "3.5"
SPARK_VERSION = "3.5.5"  # Hudi 1.2.0's pom: <spark35.version>
BUNDLE_GROUP = "org.apache.hudi"
BUNDLE_ARTIFACT = f"hudi-spark{SPARK_MINOR}-bundle_{SCALA_VERSION}"
BUNDLE = f"{BUNDLE_GROUP}:{BUNDLE_ARTIFACT}:{HUDI_VERSION}"
BUNDLE_ENV = "INDEXBENCH_HUDI_BUNDLE"
PYTHON_ENV = "INDEXBENCH_HUDI_PYTHON"
CACHE_ENV = "INDEXBENCH_CACHE"
MVN_COMMAND = ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={BUNDLE}",
               "-Dtransitive=false"]


class HudiUnavailableError(IndexBenchError):
    """Hudi's bundle or its Spark runtime cannot be had here (one line: what to do)."""


@dataclass(frozen=True)
class Runtime:
    """A Hudi writer that can start: the bundle jar and the Python whose pyspark runs it."""

    jar: str
    python: str
    hudi_version: str = HUDI_VERSION
    spark_version: str = SPARK_VERSION

    def describe(self) -> dict[str, str]:
        return {"hudi": self.hudi_version, "hudi_spark": self.spark_version,
                "bundle": BUNDLE, "bundle_jar": self.jar, "hudi_python": self.python}


def m2_jar(home: str | None = None) -> Path:
    """Where the Maven client puts the bundle."""
    repo = Path(home or os.path.expanduser("~")) / ".m2" / "repository"
    return (repo / BUNDLE_GROUP.replace(".", "/") / BUNDLE_ARTIFACT / HUDI_VERSION
            / f"{BUNDLE_ARTIFACT}-{HUDI_VERSION}.jar")


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(os.path.expanduser("~")) / ".cache"
                / "indexbench")


def runtime_dir() -> Path:
    """The virtual environment holding the Spark Hudi was built for."""
    return cache_dir() / f"hudi-spark-{SPARK_VERSION}"


def _python_of(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def bundle_jar(notify: Callable[[str], None] | None = None) -> str:
    """The bundle: the user's jar, the local Maven repository's, or fetched by ``mvn``."""
    given = os.environ.get(BUNDLE_ENV)
    if given:
        if not os.path.isfile(given):
            raise HudiUnavailableError(f"{BUNDLE_ENV}={given}: no such file (Hudi's Spark "
                                       f"bundle {BUNDLE})")
        return given
    jar = m2_jar()
    if jar.is_file():
        return str(jar)
    if shutil.which("mvn") is None:
        raise HudiUnavailableError(
            f"peer 'hudi' needs Hudi's Spark bundle {BUNDLE}: install Maven (apt-get install "
            f"maven) so the harness can fetch it, or set {BUNDLE_ENV} to the jar")
    if notify:
        notify(f"fetching Hudi's Spark bundle {BUNDLE} with Maven (once)")
    done = subprocess.run(MVN_COMMAND, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not jar.is_file():
        said = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln]
        raise HudiUnavailableError(
            f"peer 'hudi' needs Hudi's Spark bundle {BUNDLE}, which `{' '.join(MVN_COMMAND)}`"
            f" could not fetch ({(said or ['exit ' + str(done.returncode)])[0].strip()[:200]});"
            f" set {BUNDLE_ENV} to the jar")
    return str(jar)


def _has_pyspark(python: str) -> str | None:
    """The pyspark version that ``python`` imports (None: none)."""
    try:
        done = subprocess.run([python, "-c", "import pyspark; print(pyspark.__version__)"],
                              capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def runtime_python(notify: Callable[[str], None] | None = None) -> str:
    """A Python with pyspark SPARK_VERSION: the user's, or the harness's own venv."""
    given = os.environ.get(PYTHON_ENV)
    if given:
        version = _has_pyspark(given)
        if not version or not version.startswith(SPARK_MINOR + "."):
            raise HudiUnavailableError(
                f"{PYTHON_ENV}={given}: needs pyspark {SPARK_MINOR}.x (Hudi's bundle is "
                f"built for Spark {SPARK_VERSION}), found {version or 'none'}")
        return given
    venv = runtime_dir()
    python = _python_of(venv)
    marker = venv / ".indexbench-ready"
    if marker.is_file() and python.is_file():
        return str(python)
    if notify:
        notify(f"installing Spark {SPARK_VERSION} for Hudi's writer into {venv} (once)")
    shutil.rmtree(venv, ignore_errors=True)
    steps = [[sys.executable, "-m", "venv", str(venv)],
             [str(python), "-m", "pip", "install", "-q", f"pyspark=={SPARK_VERSION}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1]
            shutil.rmtree(venv, ignore_errors=True)
            raise HudiUnavailableError(
                f"peer 'hudi' needs pyspark {SPARK_VERSION} for Hudi's writer; "
                f"`{' '.join(step)}` failed ({last[:200]}); or set {PYTHON_ENV}")
    marker.write_text(SPARK_VERSION + "\n")
    return str(python)


def ensure(notify: Callable[[str], None] | None = None) -> Runtime:
    """Everything Hudi's writer needs, fetched once; one clear error otherwise."""
    if shutil.which("java") is None:
        raise HudiUnavailableError("peer 'hudi' needs Java 17 (Spark's JVM): apt-get install "
                                   "openjdk-17-jre-headless")
    return Runtime(jar=bundle_jar(notify), python=runtime_python(notify))


__all__ = ["BUNDLE", "HUDI_VERSION", "HudiUnavailableError", "Runtime", "SPARK_VERSION",
           "ensure", "m2_jar"]
