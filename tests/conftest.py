"""One SparkSession for the whole test session, and small helpers the tests share."""

from __future__ import annotations

import pandas as pd
import pytest

from indexbench.spark import get_session
from tableformat import basefile as bf
from tableformat.table import Table


@pytest.fixture(scope="session")
def spark():
    session = get_session("local[2]", app_name="indexbench-tests", shuffle_partitions=4,
                          conf={"spark.default.parallelism": "2",
                                "spark.driver.memory": "2g"})
    yield session
    session.stop()


def read_snapshot(uri: str) -> pd.DataFrame:
    """Every record of the committed snapshot (tests only: small tables)."""
    table = Table(uri)
    frames = [bf.read_base_file(table.fs, table.abs_path(s.path)).to_pandas()
              for s in table.snapshot().slices.values()]
    if not frames:
        return pd.DataFrame()
    return pd.concat(frames, ignore_index=True)


def table_files(uri: str) -> set[str]:
    """Every file under the table root (relative paths), to prove nothing was written."""
    table = Table(uri)
    from tableformat.fs import list_files

    return {i.path[len(table.root):] for i in list_files(table.fs, table.root, recursive=True)}


def table_digest(uri: str) -> dict[str, str]:
    """sha256 of every file under the table root and every folder (as "dir"): equal
    digests = a byte-identical table."""
    import hashlib
    import os

    root = Table(uri).root
    out = {}
    for folder, _dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        out[rel + "/"] = "dir"
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.join(rel, name)] = hashlib.sha256(f.read()).hexdigest()
    return out


# Hypothesis profiles: "ci" (loaded here) keeps the Spark oracle suite to a fixed, small
# number of examples; `pytest --hypothesis-profile=long` runs it deeper. Tests with their
# own @settings(max_examples=...) keep theirs under both.
def _hypothesis_profiles() -> None:
    from hypothesis import HealthCheck, settings

    slow = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ci", max_examples=3, deadline=None,
                              suppress_health_check=slow)
    settings.register_profile("long", max_examples=60, deadline=None,
                              suppress_health_check=slow)
    settings.load_profile("ci")


_hypothesis_profiles()
