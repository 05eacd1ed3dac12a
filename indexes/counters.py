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


class ShuffleMeter:
    """Shuffle bytes of the Spark jobs run inside it, from Spark's own status store.

    Jobs are tagged with a job group; on exit the listener bus is drained and the
    ``shuffleWriteBytes``/``shuffleReadBytes`` of every attempt of every stage of those
    jobs are summed (``AppStatusStore.stageData``, what the UI and REST API show).
    """

    def __init__(self, spark, group: str, description: str = "indexbench rescale"):
        self.sc, self.group, self.description = spark.sparkContext, group, description
        self.write_bytes = self.read_bytes = self.input_bytes = self.tasks = 0
        self.jobs: list[int] = []

    def __enter__(self) -> ShuffleMeter:
        self._prev = self.sc.getLocalProperty("spark.jobGroup.id")
        self.sc.setJobGroup(self.group, self.description)
        return self

    def __exit__(self, *exc) -> None:
        self.sc.setLocalProperty("spark.jobGroup.id", self._prev)
        self.sc.setLocalProperty("spark.job.description", None)
        if exc[0] is None:
            self.measure()

    def measure(self) -> None:
        jsc = self.sc._jsc.sc()
        jsc.listenerBus().waitUntilEmpty()
        store = jsc.statusStore()
        tasks_default = getattr(store, "stageData$default$3")()
        quantiles = getattr(store, "stageData$default$5")()
        self.jobs = sorted(self.sc.statusTracker().getJobIdsForGroup(self.group))
        seen: set[int] = set()
        for job in self.jobs:
            ids = store.job(job).stageIds()
            for i in range(ids.size()):
                sid = int(ids.apply(i))
                if sid in seen:
                    continue
                seen.add(sid)
                attempts = store.stageData(sid, False, tasks_default, False, quantiles)
                for a in range(attempts.size()):
                    st = attempts.apply(a)
                    self.write_bytes += int(st.shuffleWriteBytes())
                    self.read_bytes += int(st.shuffleReadBytes())
                    self.input_bytes += int(st.inputBytes())
                    self.tasks += int(st.numTasks())
