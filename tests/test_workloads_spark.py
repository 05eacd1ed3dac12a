"""Workloads inside Spark: executors generate the same rows as the Spark-free generator.

Uses the session-scoped `spark` fixture of tests/conftest.py.
"""

from __future__ import annotations

import pandas as pd
import pytest

import workloads
from workloads import generator as G
from workloads.spark_source import batch_df


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("ts", kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def wl() -> workloads.Workload:
    # two generator blocks in batch 1, late arrivals and a skewed index key: every path
    return workloads.load("late-arrivals", initial_records=3_000, batches=1,
                          batch_size=70_000, index_key_cardinality=40,
                          index_key_skew=1.0, payload_bytes=12)


@pytest.mark.parametrize("method", ["arrow", "pandas"])
def test_same_rows_at_any_parallelism_and_as_spark_free(spark, wl, method):
    ref = G.batch_frame(wl, 1)
    one = _sorted(batch_df(spark, wl, 1, num_slices=1, method=method).toPandas())
    three = _sorted(batch_df(spark, wl, 1, num_slices=3, method=method).toPandas())
    assert one.equals(three)
    assert one.equals(_sorted(ref))
    assert len(one) == G.batch_rows(wl, 1)


def test_initial_load_and_schema(spark, wl):
    df = batch_df(spark, wl, 0)
    assert df.columns == ["key", "dt", "ts", "index_key", "payload"]
    assert dict(df.dtypes) == {"key": "string", "dt": "string", "ts": "bigint",
                               "index_key": "string", "payload": "string"}
    got = _sorted(df.toPandas())
    assert got.equals(_sorted(G.batch_frame(wl, 0)))
    assert got["key"].is_unique


def test_empty_batch(spark):
    w = workloads.load("uniform", initial_records=0, batches=1, batch_size=10)
    assert batch_df(spark, w, 0).count() == 0
    assert batch_df(spark, w, 1, num_slices=4).count() == 10


LOCAL1_SCRIPT = """
import sys, workloads
from indexbench.spark import get_session
from workloads.spark_source import batch_df
spark = get_session("local[1]", shuffle_partitions=1)
w = workloads.load("late-arrivals", initial_records=3_000, batches=1, batch_size=70_000,
                   index_key_cardinality=40, index_key_skew=1.0, payload_bytes=12)
batch_df(spark, w, 1).toPandas().to_parquet(sys.argv[1])
"""


def test_local1_and_local2_sessions_give_identical_batches(spark, wl, tmp_path):
    """Same seed, same rows: a local[1] session in another process against this local[2]."""
    import os
    import subprocess
    import sys

    out = tmp_path / "local1.parquet"
    proc = subprocess.run([sys.executable, "-c", LOCAL1_SCRIPT, str(out)], capture_output=True,
                          text=True, timeout=300, env=os.environ.copy())
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert spark.sparkContext.master == "local[2]"
    here = _sorted(batch_df(spark, wl, 1).toPandas())
    assert _sorted(pd.read_parquet(out)).equals(here)


@pytest.mark.parametrize("method", ["arrow", "pandas"])
def test_deletes_preset_has_the_delete_column(spark, method):
    w = workloads.load("deletes", initial_records=400, batches=1, batch_size=300)
    df = batch_df(spark, w, 1, num_slices=2, method=method)
    assert df.columns == [*G.COLUMNS, G.DELETE_COLUMN]
    assert dict(df.dtypes)[G.DELETE_COLUMN] == "boolean"
    got = _sorted(df.toPandas())
    assert got[G.DELETE_COLUMN].sum() == G.batch_deletes(w, 1) == 30
    assert got.equals(_sorted(G.batch_frame(w, 1)))
