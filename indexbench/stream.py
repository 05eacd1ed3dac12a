"""`indexbench stream`: the workload's batches as a Structured Streaming query, written
exactly once through the same upsert driver as `run` (docs/streaming.md).

The producer (:mod:`indexbench.landing`) lands each batch as a Parquet file; Spark's
file source reads the landing folder (one landed batch per micro-batch by default) and
``foreachBatch`` calls :class:`Sink`, which upserts the micro-batch with
:func:`indexbench.driver.upsert`, then runs the inline table services as `run` does.

Exactly once, as Hudi's ``HoodieStreamingSink`` (the releases with ``HoodieSinkCheckpoint``)
does it: every commit's
``extraMetadata`` holds ``_hudi_streaming_sink_checkpoint`` =
``{"<batchId>": "<applicationId>-<queryId>"}``, and a micro-batch whose id is not above
the latest committed one is skipped (``canSkipBatch``): Spark replays the last
micro-batch after a crash when its own commit log missed it, with the same files.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

import workloads
from indexbench import landing, services
from indexbench.batches import BATCH_KEY, WORKLOAD_KEY, workload_fingerprint
from indexbench.driver import upsert
from indexbench.failed_write import undone_on_failure
from indexes.base import RecordIndex
from metrics import contract as m
from tableformat import fs as tfs
from tableformat.errors import IndexBenchError
from tableformat.table import Snapshot, Table
from tableformat.table_type import short_name
from writeclient.faults import hang_if

SINK_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"  # HoodieStreamingSink's key
QUERY_ID_PROPERTY = "sql.streaming.queryId"  # StreamExecution.QUERY_ID_KEY
CHECKPOINT_DIR = ".streaming_checkpoint"  # under the table's .hoodie/ by default
GUARD_FILE = "indexbench_stream.json"  # in the checkpoint: what the query reads
HANG_AFTER_COMMIT = "stream_after_commit"  # fault injection: table committed, Spark not
_INTERVAL = re.compile(r"^\s*\d+(\.\d+)?\s*(ms|millisecond|milliseconds|s|sec|second|seconds|"
                       r"min|minute|minutes)\s*$", re.IGNORECASE)


def check_options(rate: float | None, trigger_interval: str | None) -> None:
    """Refuse a bad ``--rate`` or ``--trigger-interval`` before anything starts."""
    if rate is not None and not rate > 0:
        raise IndexBenchError(f"--rate: must be > 0 batches per second, got {rate:g}")
    if trigger_interval is not None and not _INTERVAL.match(trigger_interval):
        raise IndexBenchError(f"--trigger-interval: expected e.g. '2 seconds' or '500 ms', "
                              f"got {trigger_interval!r}")


def checkpoint_value(batch_id: int, application_id: str, query_id: str) -> str:
    """The value HoodieStreamingSink writes under :data:`SINK_CHECKPOINT_KEY`."""
    return json.dumps({str(batch_id): f"{application_id}-{query_id}"})


def latest_committed_batch_id(snapshot: Snapshot) -> int | None:
    """The streaming batch id of the latest completed commit that recorded one (Hudi's
    ``CommitUtils.getLatestCommitMetadataWithValidCheckpointInfo``: table services'
    commits carry none and are passed over); the map's first key."""
    for instant in reversed(snapshot.completed):
        value = snapshot.extra.get(instant, {}).get(SINK_CHECKPOINT_KEY)
        if value:
            return int(next(iter(json.loads(value))))
    return None


def can_skip_batch(snapshot: Snapshot, batch_id: int) -> bool:
    """Hudi's ``canSkipBatch``: the micro-batch was committed already."""
    latest = latest_committed_batch_id(snapshot)
    return latest is not None and latest >= batch_id


def _log_lines(fs: Any, path: str) -> list[str]:
    """A Spark metadata log file's entries (its first line is the version, ``v1``)."""
    return [ln for ln in tfs.read_bytes(fs, path).decode().splitlines()[1:] if ln.strip()]


def _log_offset(fs: Any, checkpoint: str, batch_id: int) -> int:
    """The file source's log offset at the end of micro-batch ``batch_id`` (-1 before
    the first): the last line of Spark's ``offsets/<batch id>``."""
    path = tfs.join(checkpoint, "offsets", str(batch_id))
    if batch_id < 0 or not tfs.exists(fs, path):
        return -1
    return int(json.loads(_log_lines(fs, path)[-1])["logOffset"])


def files_of_micro_batch(checkpoint: str, batch_id: int) -> list[str]:
    """The files micro-batch ``batch_id`` reads, from Spark's own checkpoint: its offset
    range in ``offsets/`` and the file source's log ``sources/0/`` (entries carry the
    source batch they were taken in; ``N.compact`` files repeat older entries). Spark
    writes both before it calls ``foreachBatch``, and a replay reads the same files.
    (``DataFrame.inputFiles()`` of a micro-batch is empty.)"""
    fs, root = tfs.resolve(checkpoint)
    end = _log_offset(fs, root, batch_id)
    start = _log_offset(fs, root, batch_id - 1)
    files: set[str] = set()
    for info in tfs.list_files(fs, tfs.join(root, "sources", "0")):
        stem = info.base_name.removesuffix(".compact")
        if not stem.isdigit() or int(stem) <= start:
            continue  # a log file of earlier source batches only
        for line in _log_lines(fs, info.path):
            entry = json.loads(line)
            if start < int(entry["batchId"]) <= end:
                files.add(entry["path"])
    return sorted(files)


def default_checkpoint(table_uri: str) -> str:
    """``<table>/.hoodie/.streaming_checkpoint``: a directory, which the timeline (files
    of ``.hoodie/`` only) and Hudi readers pass over."""
    return tfs.join(table_uri.rstrip("/"), ".hoodie", CHECKPOINT_DIR)


@dataclass
class StreamState:
    """What the sink and the main thread share (the sink runs in Spark's callback
    thread)."""

    last_batch: int  # the workload's last batch: the stream ends once it is committed
    committed: int  # workload batches 0..committed-1 are in the table
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # micro-batch ids skipped (replays)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Sink:
    """``foreachBatch``'s function: skip a committed micro-batch, else upsert it, commit
    the checkpoint with it, run the inline services, and write its metrics row."""

    def __init__(self, tbl: Table, idx: RecordIndex, w: workloads.Workload, state: StreamState,
                 *, landing_dir: str, checkpoint: str, run_id: str, out: str, timing: str,
                 producer: landing.Producer | None,
                 progress: Callable[[dict[str, Any]], None] | None,
                 notify: Callable[[str], None] | None):
        self.tbl, self.idx, self.w, self.state = tbl, idx, w, state
        self.checkpoint = checkpoint
        self.landing_dir, self.run_id, self.out, self.timing = landing_dir, run_id, out, timing
        self.producer, self.progress, self.notify = producer, progress, notify
        self.fingerprint = workload_fingerprint(w)
        self.table_type = short_name(tbl.config.table_type)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        try:
            self._batch(df, batch_id)
        except BaseException as exc:
            if self.state.error is None:
                self.state.error = exc  # the main thread raises it (Spark wraps it)
            raise

    def _row(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {"run_id": self.run_id, "index": self.idx.name, "workload": self.w.name,
                "table_type": self.table_type, **extra}

    def _append(self, row: dict[str, Any]) -> None:
        self.state.rows.append(row)
        m.write_metrics(self.out, self.state.rows)

    def _batch(self, df: DataFrame, batch_id: int) -> None:
        t0 = time.perf_counter()
        spark = df.sparkSession
        if can_skip_batch(self.tbl.snapshot(), batch_id):
            self.state.skipped.append(batch_id)
            if self.notify:
                self.notify(f"micro-batch {batch_id} skipped: committed before the restart "
                            f"({SINK_CHECKPOINT_KEY})")
            self._services(spark, None)  # a replay: what followed the commit, if not done
            return
        files = files_of_micro_batch(self.checkpoint, batch_id)
        batches = sorted({b for b in map(landing.batch_of, files) if b is not None})
        if not batches:
            return
        sc = spark.sparkContext
        query_id = sc.getLocalProperty(QUERY_ID_PROPERTY) or ""
        extra = {WORKLOAD_KEY: self.fingerprint, BATCH_KEY: str(batches[-1]),
                 SINK_CHECKPOINT_KEY: checkpoint_value(batch_id, sc.applicationId, query_id)}
        with undone_on_failure(spark, self.tbl, f"micro-batch {batch_id}"):
            result = upsert(spark, self.tbl, self.idx, df, batch_no=batches[-1],
                            extra_metadata=extra, timing=self.timing)
        visible = time.time()  # the commit file's rename is the commit
        processing_s = time.perf_counter() - t0
        hang_if(HANG_AFTER_COMMIT)  # a test's kill -9: committed here, not in Spark's log
        self.state.committed = batches[-1] + 1
        lands = landing.landed(self.landing_dir)
        times = [lands[b]["landed_at"] for b in batches if b in lands]
        records = result.metrics.get("input_records") or result.metrics.get("records") or 0
        row = self._row({"operation": "upsert", **result.metrics,
                         "stream_batch_id": batch_id, "processing_s": processing_s,
                         "freshness_s": (visible - min(times)) if times else None,
                         "input_rows_per_s": records / processing_s if processing_s else None,
                         "backlog_batches": sum(1 for b in lands if b > batches[-1]),
                         "landed_batches": len(batches)})
        self._append(row)
        if self.progress:
            self.progress(row)
        self._services(spark, batches[-1])
        if self.producer is not None:
            self.producer.committed(batches[-1])
        if batches[-1] >= self.state.last_batch:
            self.state.done.set()

    def _services(self, spark: SparkSession, batch_no: int | None) -> None:
        """The inline table services after a commit, as `run` runs them."""
        for extra in services.run_inline(spark, self.tbl, self.idx, batch_no=batch_no):
            self._append(self._row(extra))


def guard(checkpoint: str, landing_dir: str, fingerprint: str) -> None:
    """A checkpoint remembers which landing folder and workload it read: another one
    would be read from its start again, and its batches committed twice."""
    fs, path = tfs.resolve(checkpoint)
    want = {"landing": os.path.abspath(landing_dir), "workload": fingerprint}
    target = tfs.join(path, GUARD_FILE)
    if tfs.exists(fs, target):
        have = json.loads(tfs.read_bytes(fs, target))
        if have != want:
            raise IndexBenchError(
                f"checkpoint {checkpoint} belongs to a stream reading {have.get('landing')} "
                f"(workload {have.get('workload')}), not {want['landing']} (workload "
                f"{fingerprint}); use the same --out/--landing, or another --checkpoint")
        return
    fs.create_dir(path, recursive=True)
    tfs.write_bytes_atomic(fs, target, json.dumps(want).encode())


def start_query(spark: SparkSession, w: workloads.Workload, landing_dir: str, checkpoint: str,
                sink: Sink, trigger_interval: str | None) -> Any:
    """The streaming query: the landing folder through ``foreachBatch``; one landed file
    per micro-batch unless a trigger interval gathers what landed meanwhile."""
    from workloads.spark_source import spark_schema

    reader = spark.readStream.schema(spark_schema(w))
    if trigger_interval is None:
        reader = reader.option("maxFilesPerTrigger", 1)
    writer = (reader.parquet(landing_dir).writeStream.foreachBatch(sink)
              .option("checkpointLocation", checkpoint))
    if trigger_interval is not None:
        writer = writer.trigger(processingTime=trigger_interval.strip())
    return writer.start()


def run_stream(spark: SparkSession, tbl: Table, idx: RecordIndex, w: workloads.Workload, *,
               landing_dir: str, checkpoint: str, rate: float | None,
               trigger_interval: str | None, run_id: str, out: str, rows: list[dict],
               first: int, timing: str,
               progress: Callable[[dict[str, Any]], None] | None = None,
               notify: Callable[[str], None] | None = None) -> StreamState:
    """Land and stream batches ``first..w.batches`` into ``tbl`` (the caller holds the
    writer lock); returns once the last is committed and Spark's commit log holds every
    micro-batch it started. The query and the producer are
    stopped on every way out (an error, Ctrl-C)."""
    state = StreamState(last_batch=w.batches, committed=first, rows=rows)
    guard(checkpoint, landing_dir, workload_fingerprint(w))
    os.makedirs(landing_dir, exist_ok=True)
    if first > w.batches:  # the table holds every batch; the query still starts, so that
        state.done.set()  # a micro-batch Spark's log missed is replayed (and skipped)
    producer = landing.Producer(w, landing_dir, first, w.batches, rate, first)
    sink = Sink(tbl, idx, w, state, landing_dir=landing_dir, checkpoint=checkpoint,
                run_id=run_id, out=out, timing=timing, producer=producer, progress=progress,
                notify=notify)
    query = None
    try:
        producer.start()
        query = start_query(spark, w, landing_dir, checkpoint, sink, trigger_interval)
        while not state.done.is_set():
            if state.error is not None:
                raise state.error
            if producer.error is not None:
                raise producer.error
            if not query.isActive:
                raise state.error or query.exception() or IndexBenchError(
                    "the streaming query stopped before the last batch")
            state.done.wait(0.2)
        query.processAllAvailable()  # Spark's commit log catches up with the table
    finally:
        producer.stop()
        if query is not None:
            try:
                query.stop()
            finally:
                producer.join(30)
        else:
            producer.join(30)
    return state
