"""Step 1 of Hudi's bloom lookup on Spark: every base file's footer min/max record key,
read in executor tasks (``HoodieBloomIndex.loadColumnRangesFromFiles``). Only one row
per file comes back to the driver; footers read and bytes go to the batch's counters,
and the job itself to ``tag_jobs``.
bloom reads every file of the batch's partitions, multi-fg-bucket its file groups."""

from __future__ import annotations

import pandas as pd

from indexes.base import TagContext
from tableformat.basefile import MAX_KEY_FOOTER, MIN_KEY_FOOTER, read_footer
from tableformat.fs import IOStats

RANGES_SCHEMA = "partition string, file_id string, path string, min_key string, max_key string"


def read_key_ranges(ctx: TagContext, files: list[tuple[str, str, str]]) -> pd.DataFrame:
    """``(partition, file id, path relative to the table)`` of each file → a frame of
    those columns plus ``min_key``/``max_key`` (None where the footer has no range)."""
    uri, acc = ctx.table.uri, ctx.counters
    n = max(1, min(len(files), ctx.spark.sparkContext.defaultParallelism * 2))
    acc.add({"tag_jobs": 1})  # a Spark job of the tagging's own (the time model's)

    def read(frames):
        from tableformat.table import Table

        table = Table(uri)
        for pdf in frames:
            stats = IOStats()
            footers = [read_footer(table.fs, table.abs_path(p), stats) for p in pdf["path"]]
            acc.add({"range_footers_read": stats.footers_read, "bytes_read": stats.bytes_read})
            yield pdf.assign(min_key=[f.get(MIN_KEY_FOOTER) for f in footers],
                             max_key=[f.get(MAX_KEY_FOOTER) for f in footers])

    return (ctx.spark.createDataFrame(files, "partition string, file_id string, path string")
            .repartition(n)
            .mapInPandas(read, RANGES_SCHEMA)
            .toPandas())  # ok: one row per base file


__all__ = ["RANGES_SCHEMA", "read_key_ranges"]
