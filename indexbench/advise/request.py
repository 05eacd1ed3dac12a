"""What ``indexbench advise`` is asked: a table described by a workload's shape and
sizes, how fast it grows and for how long, its type and storage, and the table sizes
along the horizon at which the indexes are compared."""

from __future__ import annotations

import math
from dataclasses import dataclass

import indexes
import workloads
from indexbench.sim import profiles
from indexes import roles
from tableformat.errors import IndexBenchError
from tableformat.table_type import check_table_type
from tableformat.write_config import MAX_FILE_SIZE

TABLE_TYPES = ("cow", "mor")
# below this many keys the simulator is run; a horizon past it is extrapolated
EXACT_LIMIT = 1_000_000
MIN_EXACT_LIMIT = 1_000


@dataclass(frozen=True)
class AdviceRequest:
    """A described table. ``workload``: its shape (update fraction and keys, key format,
    partitions and skew) with ``initial_records`` the records now and ``batch_size``
    the records of one upsert batch."""

    workload: workloads.Workload
    batches_per_day: float = 24.0
    horizon_days: float = 365.0
    table_type: str = "cow"
    storage: str = "local"
    indexes: tuple[str, ...] = ()
    exact_limit: int = EXACT_LIMIT
    probe_batches: int = 2
    points: int = 6
    parallelism: int = 2
    # a profile ``calibrate --writer hudi`` fitted to Apache Hudi's own writer: the
    # indexes Hudi has are also priced as Hudi's writer runs them, and ranked so
    hudi_storage: str | None = None

    def check(self) -> AdviceRequest:
        """The request, every field checked (one clear error, before anything runs)."""
        w = self.workload
        if w.initial_records < 1 or w.batch_size < 1:
            raise IndexBenchError("advise needs a table: --initial-records and --batch-size "
                                  f"must be >= 1, got {w.initial_records}, {w.batch_size}")
        if w.delete_fraction > 0:
            raise IndexBenchError("advise runs the simulator, which does not model deletes: "
                                  f"the workload's delete_fraction is {w.delete_fraction}")
        if not (self.batches_per_day > 0 and self.horizon_days > 0):
            raise IndexBenchError("--batches-per-day and --horizon-days must be > 0, got "
                                  f"{self.batches_per_day}, {self.horizon_days}")
        if self.table_type not in TABLE_TYPES:
            raise IndexBenchError(f"--table-type must be one of {TABLE_TYPES}, "
                                  f"not {self.table_type!r}")
        if self.exact_limit < MIN_EXACT_LIMIT:
            raise IndexBenchError(f"--exact-limit must be >= {MIN_EXACT_LIMIT:,}, "
                                  f"got {self.exact_limit:,}")
        if self.points < 2 or self.probe_batches < 1 or self.parallelism < 1:
            raise IndexBenchError("--points must be >= 2, --probe-batches and --parallelism "
                                  ">= 1")
        unknown = [n for n in self.indexes if n not in indexes.names()]
        if unknown:
            raise IndexBenchError(f"unknown index {unknown[0]!r}: one of "
                                  f"{', '.join(indexes.names())}")
        ours = profiles.profile(self.storage, cores=self.parallelism)  # refused if unknown
        if profiles.hudis(ours.writer):
            raise IndexBenchError(f"--storage {self.storage} is a profile of {ours.writer}'s "
                                  "writer: it prices our writer's seconds as Hudi's; give it "
                                  "as --hudi-storage")
        if self.hudi_storage is not None:
            writer = profiles.profile(self.hudi_storage).writer
            if not profiles.hudis(writer):
                fitted = f"{writer}'s writer" if writer else "published figures"
                raise IndexBenchError(
                    f"--hudi-storage {self.hudi_storage}: a profile fitted to Apache Hudi's "
                    f"own writer (`indexbench calibrate RUN --writer hudi`), not to {fitted}")
            if not self.hudi_names:
                raise IndexBenchError(f"--hudi-storage: Hudi has none of the indexes asked "
                                      f"for on {self.table_type}")
        return self

    @property
    def hudi_names(self) -> tuple[str, ...]:
        """The indexes asked for that Hudi's writer runs on this table type."""
        out = []
        for name in self.names:
            counterpart = roles.hudi_counterpart(indexes.index_class(name))
            if counterpart is not None and counterpart.refusal(
                    check_table_type(self.table_type)) is None:
                out.append(name)
        return tuple(out)

    @property
    def names(self) -> tuple[str, ...]:
        return self.indexes or tuple(indexes.names())

    @property
    def inserts_per_batch(self) -> float:
        """New keys per batch: the batch less its updates."""
        return self.workload.batch_size * max(0.0, 1.0 - self.workload.update_fraction)

    @property
    def horizon_batches(self) -> int:
        return max(1, round(self.batches_per_day * self.horizon_days))

    @property
    def records_at_horizon(self) -> int:
        return int(self.workload.initial_records + self.inserts_per_batch * self.horizon_batches)

    @property
    def target_file_bytes(self) -> int:
        return MAX_FILE_SIZE

    def exact_sizes(self) -> list[int]:
        """Table sizes the simulator runs: up to the exact limit, from the table now
        (or a tenth of the limit, when the table is larger than it already)."""
        top = min(self.records_at_horizon, self.exact_limit)
        lo = min(self.workload.initial_records, max(top // 10, 1))
        count = self.points if top == self.records_at_horizon else max(3, self.points // 2 + 1)
        return geometric(lo, top, count)

    def answer_sizes(self) -> list[tuple[int, bool]]:
        """The sizes the answer ranks at, from now to the horizon: (records, exact)."""
        n0, top = self.workload.initial_records, self.records_at_horizon
        exact = [n for n in self.exact_sizes() if n >= n0]
        if top <= self.exact_limit:
            return [(n, True) for n in exact]
        start = max(n0, self.exact_limit)
        far = [n for n in geometric(start, top, max(2, self.points - len(exact) + 1))
               if n > self.exact_limit]
        return [(n, True) for n in exact] + [(n, False) for n in far]


def geometric(lo: int, hi: int, count: int) -> list[int]:
    """``count`` whole sizes from ``lo`` to ``hi``, evenly spaced in log, each once."""
    lo, hi = max(1, int(lo)), max(1, int(hi))
    if hi <= lo or count < 2:
        return [hi]
    step = (math.log(hi) - math.log(lo)) / (count - 1)
    sizes = [round(math.exp(math.log(lo) + i * step)) for i in range(count)]
    sizes[0], sizes[-1] = lo, hi
    return sorted(set(sizes))
