"""external-kv: Hudi's HBase index (``hoodie.index.type=HBASE``) on a real key-value server.

Every record's location lives in an external store, ``(partition, record key) →
(commit instant, file id)`` (:mod:`~indexes.external_kv.core`). Tagging looks the
batch's keys up from the executors, ``hoodie.index.hbase.get.batch.size`` keys per
request, and trusts an entry only when its instant is on the completed timeline (Hudi's
``checkIfValidCommit``); after the data files are written and before the commit, the
inserts' new entries are put, ``hoodie.index.hbase.put.batch.size`` per request
(``updateLocation``). A writer that dies in between leaves entries naming an instant
that never completes: stale, ignored at lookup and counted (``kv_stale_entries``);
``hoodie.index.hbase.rollback.sync=true`` deletes them when the instant is rolled back.
The index can find records in log files (``canIndexLogFiles``), so on a merge-on-read
table inserts may go to logs.

HBase cannot be installed here; redis can, a networked key-value server with the same
shape of cost (round trips, multi-gets, server memory). By default the table has its own
server (:mod:`~indexes.external_kv.server`: started on 127.0.0.1 when a command first
needs it, stopped by PID when the command ends, its data under
``<table>/.hoodie/.aux/kv/``); ``indexbench.kv.url`` names an existing server instead.
The requests are :mod:`~indexes.external_kv.store`'s; :mod:`~indexes.external_kv.spark`
and :mod:`~indexes.external_kv.sim` are the adapters.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from indexes.base import IndexFigure, Metric, Param, Price, RecordIndex
from indexes.external_kv import core, server
from indexes.external_kv.calibration import fit_kv_constants
from indexes.lookup import Candidates
from indexes.roles import (
    AdvisedSettings,
    Candidate,
    DeclaredFigures,
    ExternalResources,
    FitsCostProfile,
    PointLookups,
    TableShape,
)
from tableformat.errors import IndexBenchError

__all__ = ["ExternalKvIndex"]

URL_KEY = "indexbench.kv.url"


class ExternalKvIndex(AdvisedSettings, ExternalResources, DeclaredFigures, PointLookups,
                      FitsCostProfile, RecordIndex):
    """Hudi's ``SparkHoodieHBaseIndex``, its store a redis server."""

    ADVICE_TRADEOFF = ("a key-value server to run, size and keep in step with the table "
                       "(Hudi's HBase index)")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        return (Candidate("defaults", {}),)


    name = "external-kv"
    index_type = "HBASE"
    # the store maps every key to its file group, whether the record is in a log or not
    CAN_INDEX_LOG_FILES = True
    SPARK_ADAPTER = "indexes.external_kv.spark:ExternalKvSpark"
    SIM_ADAPTER = "indexes.external_kv.sim:ExternalKvSim"
    PARAMS = (
        Param("get_batch_size", "hoodie.index.hbase.get.batch.size", int, 100,
              "keys per lookup request (one multi-get, one round trip), Hudi's default"),
        Param("put_batch_size", "hoodie.index.hbase.put.batch.size", int, 100,
              "entries per put request (one round trip), per file group as Hudi batches"),
        Param("rollback_sync", "hoodie.index.hbase.rollback.sync", bool, False,
              "delete a rolled-back instant's entries (default: leave them; a lookup "
              "ignores an entry whose instant never completed)"),
        Param("table_name", "hoodie.index.hbase.table", str, "",
              "names this table's entries on a shared server (required with "
              f"{URL_KEY}); empty: the table's own server holds nothing else"),
        Param("url", URL_KEY, str, "",
              "redis://HOST:PORT of an existing server; empty: the table's own "
              "redis-server, started and stopped by each command"),
    )
    METRICS = (
        Metric("kv_gets", "keys looked up in the store", counter=True,
               priced=(Price("tag", "kv_key_s", "per_core"),
                       Price("tag", "cpu_kv_key_s", "per_core"))),
        Metric("kv_get_round_trips", "lookup requests (multi-gets)", counter=True,
               priced=(Price("tag", "kv_round_trip_s"),)),
        Metric("kv_stale_entries", "entries found naming an instant not on the completed "
               "timeline (ignored: the record is tagged as an insert)", counter=True),
        # the puts run as a Spark job of their own: inserts shuffled by file group, one
        # Python task per group building and sending its entries
        Metric("kv_puts", "entries put (new keys and keys whose entry was stale)",
               priced=(Price("commit", "kv_key_s", "per_core"),
                       Price("commit", "cpu_kv_key_s", "per_core"),
                       Price("commit", "index_job_s", "job"),
                       Price("commit", "index_job_record_s", "per_core"))),
        Metric("kv_put_round_trips", "put requests",
               priced=(Price("commit", "kv_round_trip_s"),)),
        Metric("kv_round_trips", "every request to the store: lookups, puts, rollbacks",
               # the driver's own (journals, rollbacks), one after another
               priced=(Price("commit", "kv_round_trip_s", "driver",
                             less=("kv_get_round_trips", "kv_put_round_trips")),)),
        Metric("kv_rollback_deletes", "entries of rolled-back instants deleted "
               "(hoodie.index.hbase.rollback.sync)"),
        Metric("kv_get_p50_ms", "median lookup request latency, milliseconds", measured=True),
        Metric("kv_get_p99_ms", "99th percentile lookup request latency, milliseconds",
               measured=True),
        Metric("kv_server_bytes", "the server's own memory report (INFO used_memory)",
               measured=True),
        Metric("kv_entries", "keys in the server's database after the batch"),
    )

    FIGURES = (
        IndexFigure(
            "kv_latency.png", "Key-value lookup latency",
            "Latency of one lookup request (a multi-get of up to "
            "hoodie.index.hbase.get.batch.size keys, measured by the task that sent it) "
            "against the keys it carried (kv_gets / kv_get_round_trips): a faint point "
            "per upsert batch and, bold, the median at each request size, p50 and p99 "
            "each with a marker of its own (merge-on-read hollow). One run has one "
            "request size: one median point each, no line. Runs at several batch sizes "
            "(indexbench report DIR...) join the medians into a curve, p50 solid, p99 "
            "dashed; simulated runs (dotted) show the cost profile's model.",
            x="kv_gets/kv_get_round_trips", y=("kv_get_p50_ms", "kv_get_p99_ms"),
            x_label="keys per lookup request", y_label="request latency (ms)",
            y_names=("p50", "p99"), log_x=True, log_y=True),
    )

    @classmethod
    def fit_cost_constants(cls, columns, base):
        """The key-value server's constants from the run's request latencies and the
        server's memory report (:func:`indexes.external_kv.calibration.fit_kv_constants`)."""
        return fit_kv_constants(columns, base)

    def __init__(self, **params: Any):
        super().__init__(**params)
        self._depth = 0  # nested resources() scopes
        self._table_root: str | None = None
        self._server: server.RedisServer | None = None
        self._url: str | None = None  # the server in use (given, or started)

    def validate(self) -> None:
        p = self.params
        for name in ("get_batch_size", "put_batch_size"):
            if p[name] < 1:
                key = next(x.key for x in self.PARAMS if x.name == name)
                raise IndexBenchError(f"{key} must be >= 1, not {p[name]}")
        table = p["table_name"]
        if any(c == core.SEP or not c.isprintable() for c in table):
            raise IndexBenchError(f"hoodie.index.hbase.table={table!r}: no '{core.SEP}' "
                                  "or control characters")
        if p["url"]:
            from indexes.external_kv.store import check_url

            check_url(p["url"])
            if not table:
                raise IndexBenchError(
                    f"{URL_KEY} names a server other tables may share: set "
                    "hoodie.index.hbase.table too (Hudi requires it: the table that "
                    "holds this table's entries)")

    def describe(self) -> dict[str, Any]:
        where = self.params["url"] or \
            f"own redis-server, data in <table>/{'/'.join(server.DATA_DIR)}"
        return {**super().describe(), "kv_server": where}

    @property
    def prefix(self) -> str:
        return core.key_prefix(self.params["table_name"])

    # ---- the server: a resource of the commands that use the index ------------------
    def check_resources(self, table_uri: str) -> None:
        """Before Spark starts: the given server answers, or one can be started here."""
        url = self.params["url"]
        if url:
            from indexes.external_kv.store import ping

            why = ping(url)
            if why:
                raise IndexBenchError(f"{URL_KEY}={url}: the server does not answer ({why})")
            return
        if server.binary() is None:
            raise IndexBenchError(
                f"index {self.name} needs a key-value server: redis-server is not installed "
                f"(Debian: apt-get install redis-server) and no --set {URL_KEY}=redis://"
                "HOST:PORT names one")
        if "://" in table_uri and not table_uri.startswith("file://"):
            raise IndexBenchError(
                f"{table_uri}: index {self.name}'s own server keeps its data in the table's "
                "folder, which must be local; give --set "
                f"{URL_KEY}=redis://HOST:PORT for a table on another file system")

    @contextlib.contextmanager
    def resources(self, table) -> Iterator[None]:
        """The table's server while a command works on it: started on first use
        (:meth:`store_url`), stopped by PID when the outermost scope ends, on error and
        on Ctrl-C too. Nested scopes share it."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        local = isinstance(table.fs, pafs.LocalFileSystem)
        self._depth, self._table_root = 1, table.root if local else None
        try:
            yield
        finally:
            self._depth = 0
            self._close()

    def _close(self) -> None:
        srv, self._server = self._server, None
        self._url = None
        if srv is not None:
            srv.stop()

    def store_url(self) -> str:
        """The server this index talks to: the given one, or the table's own (started
        now if it is not running)."""
        if self.params["url"]:
            return self.params["url"]
        if self._url is not None:
            return self._url
        if not self._depth:
            raise IndexBenchError(f"internal: index {self.name} used outside "
                                  "index.resources(table)")
        if self._table_root is None:
            raise IndexBenchError(f"index {self.name}: the table is not on the local file "
                                  f"system; give --set {URL_KEY}=redis://HOST:PORT")
        self._server = server.RedisServer(server.data_dir(self._table_root))
        try:
            self._url = self._server.start()
        except BaseException:
            self._server.stop()
            self._server = None
            raise
        return self._url

    @property
    def server_pid(self) -> int | None:
        """PID of the server this index started and still runs (None: none)."""
        return self._server.pid if self._server is not None else None

    def __getstate__(self) -> dict:
        """Tasks get the parameters and the URL of the server in use, never the process;
        shipping the index to tasks inside a command's scope is a use: the server starts
        if it has not yet (a query's lookup tasks)."""
        url = self._url
        if url is None and self._depth and not self.params["url"]:
            url = self.store_url()
        return {"params": self.params, "url": url}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state["params"])
        self._url = state.get("url")

    # ---- the read side: a point lookup asks the store -----------------------------
    def lookup_candidates(self, table, view, partition, keys, stats, counts) -> Candidates:
        """The file group the store names for each key (a valid entry), one multi-get
        per ``get.batch.size`` keys."""
        from indexes.external_kv.store import KvStore

        record_keys = keys.column(view.record_key_field).combine_chunks()
        rows = core.entry_keys(pa.repeat(pa.scalar(partition, pa.string()), len(record_keys)),
                               record_keys, self.prefix)
        store = KvStore(self.store_url(), self.prefix)
        completed = core.instant_codes(view.completed)
        fids = []
        try:
            for lo, hi in core.batch_bounds(len(rows), self.params["get_batch_size"]):
                fids.append(core.tag_values(store.get(rows.slice(lo, hi - lo)), completed)
                            .file_ids)
        finally:
            store.close()
        for k, v in store.counts.as_dict().items():
            counts[k] += v
        found = pa.chunked_array(fids, pa.string()).combine_chunks() if fids else \
            pa.array([], pa.string())
        idx = np.flatnonzero(found.is_valid().to_numpy(zero_copy_only=False))
        return Candidates.from_rows(idx, found.take(pa.array(idx)).to_numpy(
            zero_copy_only=False).astype(object))
