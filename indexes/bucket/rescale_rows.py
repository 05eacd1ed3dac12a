"""A bucket rescale's metrics row (a replacecommit that rewrites file groups into a new
bucket layout; the simulator's too): its own columns, declared by every index whose
service rescales, on top of the contract's service row (:func:`metrics.rows.service_row`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from indexes.base import Metric
from metrics.rows import WriteTotals, service_row

RESCALE_METRICS = (
    Metric("rescale_factor", "a rescale's factor: buckets after over before (empty for a "
           "split, a merge or a resize)"),
    Metric("from_buckets", "buckets of the rescaled partitions before"),
    Metric("to_buckets", "buckets of the rescaled partitions after"),
)


def rescale_figures(*, mode: str, factor: float, from_buckets: int, to_buckets: int,
                    partitions_touched: int, fill_before: Mapping[str, float],
                    fill_after: Mapping[str, float]) -> dict[str, Any]:
    """A bucket rescale's own columns: bucket counts and the fill of the partitions it
    rescaled, before and after."""
    return {"mode": mode, "partitions_touched": partitions_touched,
            "from_buckets": from_buckets, "to_buckets": to_buckets, "rescale_factor": factor,
            **{f"rescaled_{k}_before": v for k, v in fill_before.items()},
            **{f"rescaled_{k}_after": v for k, v in fill_after.items()}}


def rescale_row(*, mode: str, batch_no: int | None, instant: str, factor: float,
                from_buckets: int, to_buckets: int, partitions_touched: int,
                files_read: int, bytes_read: float, writes: WriteTotals, after,
                timings: Mapping[str, float | None], shuffle_bytes: float | None,
                shuffle_read_bytes: float | None, spark_jobs: int | None,
                fill_before: Mapping[str, float], fill_after: Mapping[str, float]
                ) -> dict[str, Any]:
    """The metrics row of one bucket rescale (a replacecommit; the simulator's)."""
    return service_row(
        operation="rescale", batch_no=batch_no, instant=instant,
        figures=rescale_figures(mode=mode, factor=factor, from_buckets=from_buckets,
                                to_buckets=to_buckets, partitions_touched=partitions_touched,
                                fill_before=fill_before, fill_after=fill_after),
        files_read=files_read, bytes_read=bytes_read, writes=writes, after=after,
        timings=timings, shuffle_bytes=shuffle_bytes, shuffle_read_bytes=shuffle_read_bytes,
        spark_jobs=spark_jobs)
