"""Work counters that Spark tasks add to and the driver reads once a job has run.

Counting happens where the work happens (inside the tasks that open files or probe
filters); a Spark accumulator carries the sums back, so no figure is derived from a
formula. Values are exact as long as the counted job runs once (the driver persists the
tagged batch before reading them).
"""

from __future__ import annotations

from collections import Counter

from pyspark.accumulators import AccumulatorParam


class DictSum(AccumulatorParam):
    """Accumulate ``{name: number}`` dictionaries by adding values per name."""

    def zero(self, value: dict) -> dict:
        return {}

    def addInPlace(self, a: dict, b: dict) -> dict:  # noqa: N802 (Spark's name)
        out = Counter(a)
        out.update(b)
        return dict(out)


def new_counters(spark) -> object:
    """A fresh accumulator for one batch's tagging."""
    return spark.sparkContext.accumulator({}, DictSum())
