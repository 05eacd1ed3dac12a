"""A batch as a Spark DataFrame, generated on the executors, never on the driver.

`spark.range(0, rows)` gives each partition a contiguous range of row numbers; each
partition generates its rows [min id, max id] with the Spark-free generator, which is
a pure function of (workload, batch, row), so the result does not depend on the
parallelism.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from . import generator as G
from .spec import Workload

if TYPE_CHECKING:  # pyspark is heavy; import it only where a session exists
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

SPARK_SCHEMA = "key string, dt string, ts bigint, index_key string, payload string"


def spark_schema(w: Workload) -> str:
    """The batches' Spark schema (DDL): SPARK_SCHEMA, plus ``_hoodie_is_deleted boolean``
    when the workload has deletes (``generator.arrow_schema``)."""
    if w.delete_fraction > 0:
        return f"{SPARK_SCHEMA}, {G.DELETE_COLUMN} boolean"
    return SPARK_SCHEMA


def _id_range(ids: Iterator) -> tuple[int, int] | None:
    lo = hi = None
    for a in ids:
        if len(a) == 0:
            continue
        mn, mx = int(a.min()), int(a.max())
        lo = mn if lo is None else min(lo, mn)
        hi = mx if hi is None else max(hi, mx)
    return None if lo is None else (lo, hi + 1)


def _arrow_fn(w: Workload, batch: int):
    def gen(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rng = _id_range(rb.column(0).to_numpy() for rb in it)
        if rng is None:
            return
        for t in G.iter_tables(w, batch, rng[0], rng[1]):
            yield from t.to_batches()

    return gen


def _pandas_fn(w: Workload, batch: int):
    def gen(it: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        rng = _id_range(pdf["id"].to_numpy() for pdf in it)
        if rng is None:
            return
        pos, hi = rng
        while pos < hi:  # one frame per generator block: bounded memory, no re-draws
            stop = min(hi, (pos // G.BLOCK + 1) * G.BLOCK)
            yield G.batch_frame(w, batch, pos, stop)
            pos = stop

    return gen


def batch_df(spark: SparkSession, w: Workload, batch: int, num_slices: int | None = None,
             method: str = "arrow") -> DataFrame:
    """Batch `batch` of `w` as a Spark DataFrame (columns key, dt, ts, index_key, payload,
    and ``_hoodie_is_deleted`` when the workload has deletes: ``spark_schema(w)``).

    num_slices: Spark partitions of the generating range (default: the context's
    default parallelism, at least one per 1M rows). method: "arrow" (mapInArrow over
    generator.batch_table, no pandas round trip, the default) or "pandas" (mapInPandas
    over generator.batch_frame); both give the same rows.
    """
    rows = G.batch_rows(w, batch)
    if num_slices is None:
        num_slices = max(spark.sparkContext.defaultParallelism, -(-rows // 1_000_000))
    num_slices = max(1, min(int(num_slices), max(rows, 1)))
    base = spark.range(0, rows, 1, numPartitions=num_slices)
    if method == "arrow":
        return base.mapInArrow(_arrow_fn(w, batch), spark_schema(w))
    if method == "pandas":
        return base.mapInPandas(_pandas_fn(w, batch), spark_schema(w))
    raise ValueError(f"method: unknown {method!r}, expected 'arrow' or 'pandas'")
