"""The stream's producer: each workload batch lands as one Parquet file in a folder.

Why a module of its own, with no Spark: the producer stands for the system upstream of
the table (an ingestion job writing files), so it writes with pyarrow from the Spark-free
generator, and `indexbench stream`'s Structured Streaming file source reads what it lands.

- A batch lands atomically: written under a name starting with ``_`` (Spark's file
  source ignores it), then renamed to ``batch-<b:06d>.parquet``. A sidecar
  ``_landed-<b:06d>.json`` (ignored by Spark too) written before the rename records the
  landing time (wall clock, for freshness) and the rows.
- Landing is idempotent: names are deterministic, a batch whose file exists is never
  landed again, so a restarted producer resumes where the last one stopped.
- Files get strictly increasing modification times (1 ms apart at least): Spark's file
  source takes the oldest file first, and batches must reach the table in their order.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable

import pyarrow.parquet as pq

import workloads
from workloads import generator as G

LANDED = re.compile(r"^batch-(\d{6})\.parquet$")


def file_name(batch: int) -> str:
    return f"batch-{batch:06d}.parquet"


def _sidecar(folder: str, batch: int) -> str:
    return os.path.join(folder, f"_landed-{batch:06d}.json")


def batch_of(path: str) -> int | None:
    """The workload batch a landed file holds (None: not a landed batch's file)."""
    m = LANDED.match(os.path.basename(path.rstrip("/")))
    return int(m.group(1)) if m else None


def landed(folder: str) -> dict[int, dict]:
    """Batches landed in ``folder``: batch → its sidecar (``landed_at``, ``rows``)."""
    out: dict[int, dict] = {}
    if not os.path.isdir(folder):
        return out
    for name in os.listdir(folder):
        b = batch_of(name)
        if b is None:
            continue
        try:
            with open(_sidecar(folder, b)) as f:
                out[b] = json.load(f)
        except (OSError, ValueError):  # landed by hand: no landing time known
            out[b] = {"batch": b, "landed_at": os.path.getmtime(os.path.join(folder, name))}
    return out


def _last_mtime_ns(folder: str) -> int:
    times = [os.stat(os.path.join(folder, n)).st_mtime_ns for n in os.listdir(folder)
             if batch_of(n) is not None]
    return max(times, default=0)


def land(w: workloads.Workload, batch: int, folder: str) -> float | None:
    """Land batch ``batch`` of ``w`` in ``folder``; its landing time, or None when it had
    landed already."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, file_name(batch))
    if os.path.exists(path):
        return None
    tmp = os.path.join(folder, f"_tmp-{file_name(batch)}")
    table = G.batch_table(w, batch)
    pq.write_table(table, tmp)
    landed_at = time.time()
    side = _sidecar(folder, batch)
    with open(side + ".tmp", "w") as f:
        json.dump({"batch": batch, "rows": table.num_rows, "landed_at": landed_at}, f)
    os.replace(side + ".tmp", side)
    # strictly after every landed file, in whole milliseconds (Hadoop's resolution)
    ms = max(int(landed_at * 1000), _last_mtime_ns(folder) // 1_000_000 + 1)
    os.utime(tmp, ns=(ms * 1_000_000, ms * 1_000_000))
    os.replace(tmp, path)
    return landed_at


class Producer(threading.Thread):
    """Lands batches ``first..last`` of a workload in order, in a thread of its own.

    ``rate`` (batches per second): batch i of this producer lands at start + i / rate;
    None: closed loop, a batch lands once every batch before it is committed (the stream
    consumes as fast as it can, with no backlog). ``committed`` tells it of committed
    batches; ``stop`` ends it early; an error is kept in ``error`` for the stream.
    """

    def __init__(self, w: workloads.Workload, folder: str, first: int, last: int,
                 rate: float | None, committed_before: int,
                 on_landed: Callable[[int, float], None] | None = None):
        super().__init__(name="indexbench-producer", daemon=True)
        self.w, self.folder, self.first, self.last, self.rate = w, folder, first, last, rate
        self._committed = committed_before  # batches 0..committed-1 are in the table
        self._cond = threading.Condition()
        self._halt = threading.Event()
        self.on_landed = on_landed
        self.error: BaseException | None = None
        self.landed_here: list[int] = []  # batches this producer landed (not earlier ones)

    def committed(self, batch: int) -> None:
        """Batches up to ``batch`` are committed to the table."""
        with self._cond:
            self._committed = max(self._committed, batch + 1)
            self._cond.notify_all()

    def stop(self) -> None:
        self._halt.set()
        with self._cond:
            self._cond.notify_all()

    def _wait_turn(self, b: int, i: int, start: float) -> bool:
        if self.rate is not None:
            return not self._halt.wait(max(0.0, start + i / self.rate - time.monotonic()))
        with self._cond:
            while self._committed < b and not self._halt.is_set():
                self._cond.wait(0.5)
        return not self._halt.is_set()

    def run(self) -> None:
        start = time.monotonic()
        try:
            for i, b in enumerate(range(self.first, self.last + 1)):
                if not self._wait_turn(b, i, start):
                    return
                at = land(self.w, b, self.folder)
                if at is not None:
                    self.landed_here.append(b)
                    if self.on_landed:
                        self.on_landed(b, at)
        except BaseException as exc:  # noqa: BLE001 (the stream raises it in the main thread)
            self.error = exc
