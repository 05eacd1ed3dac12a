"""The ``hudi`` peer: the identical batches through Apache Hudi's own Spark writer.

For every index in a run that declares a Hudi counterpart (``HUDI`` in its folder,
:mod:`indexes.hudi_counterpart`), series ``hudi-<index>`` writes each batch through
Hudi's Spark datasource (``df.write.format("hudi")``, operation ``upsert``) with the
counterpart's options: the same index settings in Hudi's keys, the same table type,
partitioning (``dt``, not hive-style), record key (``key``), ordering field (``ts``,
the larger wins as in ``DefaultHoodieRecordPayload``), file sizing and merge-on-read
compaction settings. Series ``hudi-simple`` is Hudi's Spark default index, ``SIMPLE``,
sized like the run's other Hudi series. Table version 6 by default (hudi-rs,
``indexbench verify`` and this project's readers open it), 9 with
``--set hudi:hoodie.write.table.version=9``; any other Hudi key goes through
``--set hudi:KEY=VALUE`` (``hoodie.metadata.enable=false``: the metadata table off).

Hudi runs in a JVM of its own (:mod:`peers.hudi_job`, on the Spark its bundle was built
for: :mod:`peers.hudi_runtime`), one per process, started on first use and stopped by
:func:`stop` (and when this process ends: the job stops when its stdin closes).

Every figure of a Hudi row is one Hudi wrote or logged (:mod:`peers.hudi_logs`): the
write stats of the batch's commit (records, inserts, updates, deletes, files, bytes,
file groups, log records; a compaction or clustering that Hudi ran inline in the same
write adds its own ``hudi_service_*`` figures), the bloom lookup handle's log lines
(files and keys checked, candidates, false positives, true matches), the event log's
job descriptions for the phases (``tag_s``, ``write_s``, ``commit_s``, ``hudi_service_s``,
``hudi_other_s``) and ``total_s`` around Hudi's write call. ``table_records`` is Hudi's
own snapshot count after the batch (untimed).
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import indexes
from indexes import roles
from indexes.hudi_counterpart import FILE_SIZING_KEYS
from metrics.rows import peer_upsert_row
from peers import hudi_logs as logs
from peers import hudi_runtime
from tableformat.basefile import BASE_FILE_CODEC
from tableformat.errors import IndexBenchError, TableConfigError
from tableformat.table_type import (
    COPY_ON_WRITE,
    MERGE_ON_READ,
    TABLE_TYPE,
    check_table_type,
    short_name,
)
from tableformat.write_config import WriteConfig
from workloads import Workload
from workloads import generator as G

NAME = "hudi"
PREFIX = "hudi-"
DEFAULT_SERIES = "hudi-simple"  # Hudi's Spark default index, a row of its own
KEY, PARTITION, ORDERING = "key", "dt", "ts"
WORKLOAD_KEY = "_indexbench.workload"  # commit extraMetadata (Hudi's "_" key prefix)
BATCH_KEY = "_indexbench.batch"
TABLE_VERSION_KEY = "hoodie.write.table.version"
DEFAULT_TABLE_VERSION = "6"
TABLE_VERSIONS = ("6", "8", "9")
CODEC_KEY = "hoodie.parquet.compression.codec"
BLOOM_FOOTER_KEY = "hoodie.parquet.bloom.filter.enabled"
LOOKUP_LOGGER = "org.apache.hudi.io.HoodieKeyLookupHandle"
START_TIMEOUT_S = 300.0
LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = STDERR
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n
appender.lookup.type = File
appender.lookup.name = LOOKUP
appender.lookup.fileName = {log}
appender.lookup.layout.type = PatternLayout
appender.lookup.layout.pattern = %d{{HH:mm:ss.SSS}} %c{{1}} %m%n
logger.lookup.name = {logger}
logger.lookup.level = info
logger.lookup.additivity = false
logger.lookup.appenderRef.file.ref = LOOKUP
"""


# --- series ------------------------------------------------------------------------------

def counterpart_indexes() -> list[str]:
    """The registered indexes that declare a Hudi counterpart."""
    return [n for n in indexes.names()
            if roles.hudi_counterpart(indexes.index_class(n)) is not None]


def all_series() -> tuple[str, ...]:
    """Every series the peer can write: Hudi's default index and one per counterpart."""
    return (DEFAULT_SERIES, *(PREFIX + n for n in counterpart_indexes()))


def index_of(series: str) -> str | None:
    """The index a series mirrors (None: ``hudi-simple``)."""
    return series[len(PREFIX):] if series != DEFAULT_SERIES else None


def absent_reason(series: str, table_type: str, settings: Mapping[str, str] | None = None
                  ) -> str | None:
    """Why Hudi has no such table (consistent hashing on copy-on-write; the record-level
    index with the metadata table off), else None."""
    name = index_of(series)
    if name is None:
        return None
    counterpart = roles.hudi_counterpart(indexes.index_class(name))
    return counterpart.refusal(check_table_type(table_type), settings)


def describe(series: str = DEFAULT_SERIES) -> dict[str, Any]:
    name = index_of(series)
    out: dict[str, Any] = {"peer": NAME, "engine": "Apache Hudi Spark datasource (upsert)",
                           "hudi": hudi_runtime.HUDI_VERSION,
                           "hudi_spark": hudi_runtime.SPARK_VERSION,
                           "bundle": hudi_runtime.BUNDLE, "mirrors": name}
    counterpart = roles.hudi_counterpart(indexes.index_class(name)) if name else None
    if counterpart is not None and counterpart.note:
        out["differs"] = counterpart.note
    return out


def location(tables_dir: str, series: str = DEFAULT_SERIES, table_type: str | None = None
             ) -> str:
    """``<tables>/hudi/<series>`` (``-mor`` when the run has both table types)."""
    suffix = "" if table_type is None else "-" + short_name(table_type)
    return os.path.join(tables_dir, NAME, series + suffix)


def check_settings(settings: Mapping[str, str]) -> None:
    """``--set hudi:KEY=VALUE``: Hudi's keys only, a table version Hudi 1.2 writes."""
    for key, value in settings.items():
        if not key.startswith("hoodie."):
            raise IndexBenchError(f"--set hudi:{key}: Hudi's write options are hoodie.* keys")
        if key == TABLE_VERSION_KEY and str(value) not in TABLE_VERSIONS:
            raise IndexBenchError(f"--set hudi:{key}={value}: Hudi "
                                  f"{hudi_runtime.HUDI_VERSION} writes table version "
                                  f"{', '.join(TABLE_VERSIONS)}")


def prepare(notify: Callable[[str], None] | None = None) -> dict[str, str]:
    """Fetch what Hudi's writer needs (once) before anything runs; one clear error."""
    return hudi_runtime.ensure(notify).describe()


# --- the JVM -----------------------------------------------------------------------------

class HudiJob:
    """The Hudi writer process: requests in, answers out, one at a time."""

    def __init__(self, runtime: hudi_runtime.Runtime, logs_dir: str, master: str):
        os.makedirs(os.path.join(logs_dir, "events"), exist_ok=True)
        self.logs_dir = logs_dir
        self.lookup_log = os.path.join(logs_dir, "hudi-lookup.log")
        log4j = os.path.join(logs_dir, "log4j2.properties")
        with open(log4j, "w") as f:
            f.write(LOG4J.format(log=self.lookup_log, logger=LOOKUP_LOGGER))
        self.stderr_path = os.path.join(logs_dir, "hudi-jvm.err")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hudi_job.py")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYSPARK_", "SPARK_HOME", "PYTHONPATH"))}
        env["PYSPARK_PYTHON"] = runtime.python
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self._stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(
            [runtime.python, script, "--jar", runtime.jar, "--master", master,
             "--log4j", log4j, "--event-dir",
             "file://" + os.path.abspath(os.path.join(logs_dir, "events")),
             "--driver-memory", os.environ.get("INDEXBENCH_HUDI_DRIVER_MEMORY", "4g"),
             "--parent-pid", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env,
            text=True, bufsize=1, start_new_session=True)
        self.runtime = runtime
        self._asked = 0
        ready = self._read(START_TIMEOUT_S)
        self.spark_version, self.app_id = ready["spark"], ready["app_id"]
        self.event_log = os.path.join(logs_dir, "events", self.app_id + ".inprogress")

    def _read(self, timeout: float | None = None, want: int | None = None) -> dict[str, Any]:
        """The next answer (``want``: the one to request ``want``), waiting ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            box: list[str] = []
            reader = threading.Thread(target=self._readline_into, args=(box,), daemon=True)
            reader.start()
            reader.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if not box or not box[0]:
                self.stop()
                raise IndexBenchError(f"Hudi's writer stopped: {self._last_error()}")
            try:
                answer = json.loads(box[0])
            except ValueError:
                continue  # not the protocol's (should not happen: fd 1 is stderr there)
            if want is None or answer.get("id") == want:
                return answer

    def _readline_into(self, box: list[str]) -> None:
        box.append(self.proc.stdout.readline())

    def _last_error(self) -> str:
        try:
            with open(self.stderr_path, errors="replace") as f:
                lines = [ln.strip() for ln in f if "Exception" in ln or "Error" in ln]
        except OSError:
            lines = []
        return (lines or [f"see {self.stderr_path}"])[-1][:300]

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.proc.poll() is not None:
            raise IndexBenchError(f"Hudi's writer is not running: {self._last_error()}")
        self._asked += 1
        self.proc.stdin.write(json.dumps({**request, "id": self._asked}) + "\n")
        self.proc.stdin.flush()
        answer = self._read(want=self._asked)
        if not answer.get("ok"):
            raise IndexBenchError(f"Hudi's writer: {answer.get('error')}")
        return answer

    def stop(self, now: bool = False) -> None:
        """Ask the JVM to stop, and kill it if it has not within a minute; ``now`` (an
        interrupted or failed run): kill it at once, mid-write or not. A write it never
        completed stays an inflight instant, which Hudi's next writer rolls back."""
        if self.proc.poll() is None:
            if now:
                self.proc.kill()
            else:
                try:
                    self.proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
                    self.proc.stdin.flush()
                except (OSError, ValueError):
                    pass
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self._stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


_JOB: HudiJob | None = None


def job(logs_dir: str, master: str = "local[*]") -> HudiJob:
    """This process's Hudi writer (started on first use; again if its logs move)."""
    global _JOB
    if _JOB is not None and (_JOB.logs_dir != logs_dir or _JOB.proc.poll() is not None):
        stop()
    if _JOB is None:
        _JOB = HudiJob(hudi_runtime.ensure(), logs_dir, master)
    return _JOB


def stop(now: bool = False) -> None:
    """Stop this process's Hudi writer, if one runs (``now``: kill it at once)."""
    global _JOB
    if _JOB is not None:
        j, _JOB = _JOB, None
        j.stop(now)


atexit.register(stop)


def running() -> bool:
    """Whether this process has a Hudi writer up (tests)."""
    return _JOB is not None and _JOB.proc.poll() is None


# --- the table ---------------------------------------------------------------------------

def _tail(path: str, offset: int) -> tuple[list[str], int]:
    """Lines appended to ``path`` since ``offset`` (complete lines only), and the new end."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return [], offset
    end = data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", "replace").splitlines(), offset + end


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _table_files(table: str) -> tuple[int, int]:
    """(data files, their bytes) under a Hudi table, the timeline and metadata aside.

    Hadoop's local file system writes a ``.<name>.crc`` checksum beside every file Hudi
    writes; a log file's (``..<fileId>_<instant>.log.1_<token>.crc``) holds ``.log.`` in
    its name and is not a data file."""
    files = size = 0
    for root, dirs, names in os.walk(table):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for n in names:
            if n.endswith(".crc"):
                continue
            if n.endswith(".parquet") or ".log." in n:
                files += 1
                size += os.path.getsize(os.path.join(root, n))
    return files, size


class HudiPeerTable:
    """One Hudi table the batches of one workload are upserted into by Hudi's writer.

    Resumes like the index runs' tables: each commit's extraMetadata carries the workload
    fingerprint and batch number (Hudi adds every ``_``-prefixed write option to it)."""

    def __init__(self, path: str, fingerprint: str, *, series: str,
                 index_params: Mapping[str, Mapping[str, Any]] | None = None,
                 table_type: str | None = None, settings: Mapping[str, str] | None = None,
                 master: str = "local[*]", logs_dir: str | None = None,
                 table_name: str | None = None):
        self.path, self.fingerprint, self.series = str(path), fingerprint, series
        self._table_name = table_name  # an existing table's hoodie.table.name
        self.settings = dict(settings or {})
        check_settings(self.settings)
        self.mirrors = index_of(series)
        params = {n: dict(p or {}) for n, p in (index_params or {}).items()}
        self.table_type = check_table_type(table_type) if table_type else \
            self._mirrored_type(params)
        reason = absent_reason(series, self.table_type, self.settings)
        if reason:
            raise TableConfigError(f"{series} on {self.table_type}: {reason}")
        self.options = self._options(params)
        self.table_name = self.options["hoodie.table.name"]
        self.logs_dir = logs_dir or os.path.join(os.path.dirname(self.path), "_jvm")
        self.master = master
        self._job: HudiJob | None = None

    # options -----------------------------------------------------------------------
    def _mirrored_type(self, params: dict[str, dict[str, Any]]) -> str:
        given = (params.get(self.mirrors) or {}).get(TABLE_TYPE) if self.mirrors else None
        return check_table_type(str(given)) if given else COPY_ON_WRITE

    def _write_config(self, params: dict[str, dict[str, Any]]) -> WriteConfig:
        return WriteConfig.pop_from(dict(params.get(self.mirrors or "", {})))

    def _counterpart(self, params: dict[str, dict[str, Any]]) -> dict[str, str]:
        if self.mirrors is None:  # hudi-simple: sized like the run's other Hudi series
            sizing: dict[str, str] = {}
            for name in counterpart_indexes():
                if name in params:
                    opts = self._index_options(name, params)
                    sizing.update({k: v for k, v in opts.items() if k in FILE_SIZING_KEYS})
            return {"hoodie.index.type": "SIMPLE", **sizing}
        return self._index_options(self.mirrors, params)

    @staticmethod
    def _index_options(name: str, params: dict[str, dict[str, Any]]) -> dict[str, str]:
        p = dict(params.get(name) or {})
        WriteConfig.pop_from(p)
        index = indexes.get(name, **p)
        return roles.hudi_counterpart(indexes.index_class(name)).options(index)

    def _options(self, params: dict[str, dict[str, Any]]) -> dict[str, str]:
        wc = self._write_config(params)
        version = str(self.settings.get(TABLE_VERSION_KEY, DEFAULT_TABLE_VERSION))
        merge = ({"hoodie.datasource.write.payload.class":
                  "org.apache.hudi.common.model.DefaultHoodieRecordPayload"}
                 if version == "6" else {"hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING"})
        out = {
            "hoodie.table.name": self._table_name or self.series.replace("-", "_"),
            "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.table.type": self.table_type,
            "hoodie.datasource.write.recordkey.field": KEY,
            "hoodie.datasource.write.partitionpath.field": PARTITION,
            "hoodie.datasource.write.precombine.field": ORDERING,
            "hoodie.datasource.write.hive_style_partitioning": "false",
            TABLE_VERSION_KEY: version,
            "hoodie.write.auto.upgrade": "false",
            # our base files are snappy Parquet (Hudi's default is gzip, about 15x the
            # CPU per byte): the same codec on both sides, so bytes, file sizing and
            # seconds compare like for like (--set hudi:...codec=gzip for Hudi's own)
            CODEC_KEY: BASE_FILE_CODEC,
            **merge,
            **self._counterpart(params),
        }
        if "BLOOM" not in out["hoodie.index.type"]:
            # Hudi writes a bloom filter into every base file's footer by default (60,000
            # entries at 1e-9: 431,380 bytes), whatever the index; ours only where the index
            # probes one: off here too, so bytes compare like for like
            out.setdefault(BLOOM_FOOTER_KEY, "false")
        if self.table_type == MERGE_ON_READ:
            out.update({"hoodie.compact.inline": "true" if wc.compact_inline else "false",
                        "hoodie.compact.inline.max.delta.commits": str(wc.max_delta_commits),
                        "hoodie.logfile.data.block.format": wc.log_block_format})
        out.update(self.settings)
        return out

    # resuming ----------------------------------------------------------------------
    def _our_commits(self) -> list[tuple[int, str]]:
        """(batch, instant) of the completed writes of this workload; another workload's
        table is refused."""
        out = []
        for instant, action, path in logs.completed_instants(self.path):
            if action not in logs.WRITE_ACTIONS:
                continue
            extra = logs.read_instant(path).get("extraMetadata") or {}
            if BATCH_KEY not in extra:
                continue
            if extra.get(WORKLOAD_KEY) != self.fingerprint:
                raise TableConfigError(
                    f"{self.path} holds another workload's batches (Hudi table of series "
                    f"{self.series}); use a new --out")
            out.append((int(extra[BATCH_KEY]), instant))
        return out

    def committed_batches(self) -> int:
        done = self._our_commits()
        return max(b for b, _ in done) + 1 if done else 0

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"options": dict(self.options), "table_type": self.table_type,
                               "table_version": self.options[TABLE_VERSION_KEY],
                               "logs": self.logs_dir}
        if self._job is not None:
            out.update({**self._job.runtime.describe(), "spark_app": self._job.app_id})
        return out

    # one batch ---------------------------------------------------------------------
    def upsert(self, workload: Workload, batch_no: int) -> dict[str, Any]:
        j = self._job = job(self.logs_dir, self.master)
        t0 = time.perf_counter()
        batch = G.batch_table(workload, batch_no)
        generate_s = time.perf_counter() - t0
        staging = os.path.join(self.logs_dir, f"batch-{self.series}-{batch_no}.parquet")
        pq.write_table(batch, staging)
        before = {i for i, _, _ in logs.completed_instants(self.path)}
        lookup_at, events_at = _size(j.lookup_log), _size(j.event_log)
        options = {**self.options, WORKLOAD_KEY: self.fingerprint, BATCH_KEY: str(batch_no)}
        try:
            answer = j.ask({"op": "write", "source": os.path.abspath(staging),
                            "table": os.path.abspath(self.path), "options": options})
        finally:
            os.remove(staging)
        lookup_lines, _ = _tail(j.lookup_log, lookup_at)
        event_lines, _ = _tail(j.event_log, events_at)
        new = [(i, a, p) for i, a, p in logs.completed_instants(self.path) if i not in before]
        records = j.ask({"op": "count", "table": os.path.abspath(self.path)})["records"]
        return self._row(batch_no, batch.num_rows, generate_s, answer["write_s"], new,
                         lookup_lines, event_lines, records)

    def _row(self, batch_no: int, input_records: int, generate_s: float, total_s: float,
             new: Sequence[tuple[str, str, str]], lookup_lines: list[str],
             event_lines: list[str], table_records: int) -> dict[str, Any]:
        mine, services = None, []
        for instant, action, path in new:
            meta = logs.read_instant(path)
            if action not in logs.WRITE_ACTIONS:
                continue
            extra = meta.get("extraMetadata") or {}
            if extra.get(BATCH_KEY) == str(batch_no) and mine is None:
                mine = (instant, logs.write_stats(meta))
            else:  # a compaction or clustering Hudi ran inline in this write
                services.append((action, meta.get("operationType"), logs.write_stats(meta)))
        if mine is None:
            raise IndexBenchError(f"Hudi's write of batch {batch_no} left no completed "
                                  f"commit in {self.path}")
        instant, stats = mine
        figures = logs.commit_figures(stats, self._writes_footers())
        phases = logs.job_phases(event_lines, self.table_name)
        files, size = _table_files(self.path)
        extra: dict[str, Any] = {
            "instant": instant, "table_type": short_name(self.table_type),
            "peer_of": self.mirrors, "peer_writer": f"hudi {hudi_runtime.HUDI_VERSION}",
            "hudi_table_version": int(self.options[TABLE_VERSION_KEY]),
            "deletes": figures["deletes"],
            "file_groups_written": figures["file_groups_written"],
            "base_files_written": figures["base_files_written"],
            "log_files_written": figures["log_files_written"],
            "log_records_written": figures["log_records_written"],
            "merge_files_read": figures["merge_files_read"],
            "footer_keys_written": figures["footer_keys_written"],
            "footer_filters_written": figures["footer_filters_written"],
            "hudi_jobs": phases["jobs"],
            "hudi_service_s": phases["service"], "hudi_other_s": phases["other"],
            "hudi_services": len(services),
        }
        if services:
            done = logs.commit_figures([s for _, _, st in services for s in st])
            extra.update({"hudi_service_files_written": done["files_written"],
                          "hudi_service_bytes_written": done["bytes_written"],
                          "hudi_service_records_written": done["records_written"],
                          "hudi_service_log_files_compacted": done["log_files_compacted"],
                          "hudi_service_log_records_compacted": done["log_records_compacted"]})
        counterpart = (roles.hudi_counterpart(indexes.index_class(self.mirrors))
                       if self.mirrors else None)
        if counterpart is not None and counterpart.metadata_figures:
            # where Hudi keeps the index in its metadata table: what this commit appended
            extra.update(logs.metadata_figures(self.path, instant,
                                               counterpart.metadata_figures))
        looked = logs.lookup_counters(lookup_lines)
        if looked["candidate_files"]:
            fp_negatives = looked["bloom_checks"] - looked["true_positives"]
            extra.update({k: looked[k] for k in (
                "candidate_files", "files_read", "footers_read", "bloom_checks",
                "bloom_positives", "false_positives", "true_positives")})
            extra["fp_rate"] = (looked["false_positives"] / fp_negatives
                                if fp_negatives else None)
        records = figures["inserts"] + figures["updates"] + figures["deletes"]
        return peer_upsert_row(
            batch_no=batch_no, input_records=input_records, records=records,
            partitions_touched=figures["partitions_touched"], inserts=figures["inserts"],
            updates=figures["updates"], records_written=figures["records_written"],
            files_written=figures["files_written"], bytes_written=figures["bytes_written"],
            files_in_table=files, table_records=table_records, table_bytes=size,
            timings={"generate_s": generate_s, "tag_s": phases["tag"],
                     "write_s": phases["write"], "commit_s": phases["commit"],
                     "total_s": total_s},
            extra=extra)

    def _writes_footers(self) -> bool:
        """Whether Hudi writes a bloom filter into each base file's footer (Hudi's
        ``HoodieFileWriterFactory.enableBloomFilter``: a BLOOM index type, or
        ``hoodie.parquet.bloom.filter.enabled``, default true)."""
        on = str(self.options.get(BLOOM_FOOTER_KEY, "true")).lower() == "true"
        return on or "BLOOM" in str(self.options.get("hoodie.index.type", ""))

    def close(self) -> None:
        """The JVM stays for the run's next series (``stop`` ends it)."""


# --- Hudi's reader ---------------------------------------------------------------------

SNAPSHOT, READ_OPTIMIZED, INCREMENTAL, TIME_TRAVEL = (
    "snapshot", "read_optimized", "incremental", "time_travel")
QUERIES = (SNAPSHOT, READ_OPTIMIZED, INCREMENTAL, TIME_TRAVEL)
READ_COLUMNS = (KEY, PARTITION, ORDERING, "payload", "_hoodie_commit_time")
_READS = itertools.count()


def read_options(query: str, instant: str | None = None) -> dict[str, str]:
    """Hudi's datasource read options of a query: its query type, and the instant an
    incremental query begins after (exclusive) or a time-travel query reads as of."""
    if query not in QUERIES:
        raise IndexBenchError(f"query {query!r}: one of {', '.join(QUERIES)}")
    if query in (INCREMENTAL, TIME_TRAVEL) and not instant:
        raise IndexBenchError(f"a {query} query needs an instant")
    if query == INCREMENTAL:
        return {"hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": str(instant)}
    if query == TIME_TRAVEL:
        return {"hoodie.datasource.query.type": "snapshot", "as.of.instant": str(instant)}
    return {"hoodie.datasource.query.type": query}


def read(table: str, query: str, *, instant: str | None = None, logs_dir: str,
         columns: Sequence[str] = READ_COLUMNS, master: str = "local[*]") -> pa.Table:
    """A table as Hudi's Spark datasource reads it (any Hudi table: ours or Hudi's), in
    this process's Hudi JVM; Spark writes the rows to a scratch Parquet file under
    ``logs_dir``, read back here and removed (nothing is collected to a driver)."""
    options = read_options(query, instant)
    j = job(logs_dir, master)
    out = os.path.join(logs_dir, f"read-{os.getpid()}-{next(_READS)}")
    try:
        j.ask({"op": "read", "table": os.path.abspath(table), "options": options,
               "columns": list(columns), "out": os.path.abspath(out)})
        return pq.read_table(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def open_table(location: str, fingerprint: str, *, series: str = DEFAULT_SERIES,
               index_params: Mapping[str, Mapping[str, Any]] | None = None,
               table_type: str | None = None, settings: Mapping[str, str] | None = None,
               **_: Any) -> HudiPeerTable:
    return HudiPeerTable(location, fingerprint, series=series, index_params=index_params,
                         table_type=table_type, settings=settings)


__all__ = ["DEFAULT_SERIES", "HudiJob", "HudiPeerTable", "QUERIES", "READ_COLUMNS",
           "absent_reason", "all_series", "read", "read_options",
           "check_settings", "counterpart_indexes", "describe", "index_of", "job", "location",
           "open_table", "prepare", "running", "stop"]
