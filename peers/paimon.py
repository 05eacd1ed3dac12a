"""The ``paimon`` peer: the identical batches written to Apache Paimon primary-key tables
(``pypaimon``), one with fixed buckets and one with dynamic buckets.

Paimon is an LSM table: a write appends sorted level-0 files to the key's bucket and
never reads the table, readers merge the files (merge-on-read); pypaimon has no
compaction, so nothing is rewritten. Two series, one table each, in one filesystem
catalog under the run's ``tables/paimon`` (database ``indexbench``):

- ``paimon-fixed``: ``bucket`` = simple-bucket's ``hoodie.bucket.index.num.buckets``
  (its ``--set`` in the run, else its default): Paimon's HASH_FIXED mode, the bucket is
  a hash of the key modulo ``bucket``;
- ``paimon-dynamic``: ``bucket = -1`` and ``dynamic-bucket.target-row-num`` =
  dynamic-rli's ``hoodie.bucket.index.dynamic.max.records``: Paimon's HASH_DYNAMIC mode,
  a key keeps the bucket it was first assigned, a new key goes to a bucket with fewer
  than ``target-row-num`` keys, and a new bucket is opened when all are full; the
  ``key hash → bucket`` map is kept as one HASH index file per bucket (4 bytes per key
  hash, rewritten whole when the bucket gets new keys).

Both: primary key (``dt``, ``key``), partitioned by ``dt``, ``merge-engine =
deduplicate``, ``sequence.field = ts``: of the records of one key the larger ``ts``
wins, and on equal ``ts`` the later written one (Paimon's own sequence number, in
arrival order): Hudi's pre-combine and ``DefaultHoodieRecordPayload`` rule, applied by
Paimon to the raw batch (no pre-combine here; the writer's buffer merges a batch's
duplicates before it writes). A workload with deletes gets ``rowkind.field =
_row_kind``: the delete flag becomes the row kind (``-D`` for a delete, ``+I``
otherwise), and a ``-D`` that wins on ``ts`` removes the key. ``_row_kind`` is a column
of the table, as Paimon's ``rowkind.field`` requires (``+I`` in every stored row).

The writer is pypaimon's native (Rust, ``pypaimon-rust``) writer when that package is
installed (``write.native.enabled = true``), else its pure-Python writer; which one
wrote is read off the writer after each batch (``peer_writer``), and recorded in
run.json. One stream writer stays open for the whole run, as a Flink job's writer does,
so the dynamic bucket assigner keeps its partitions' ``hash → bucket`` maps between
batches (as dynamic-rli keeps its caches); each batch is one commit (commit identifier =
batch number, snapshot properties = workload fingerprint and batch, for resuming).

Rows (``index`` = the series, ``run_mode = "peer"``), every figure read from the table:
files, bytes and records written and partitions touched from the new snapshot's delta
manifests; ``files_in_table``, ``table_bytes``, ``buckets`` and ``buckets_created`` from
its manifests; ``index_disk_bytes`` (HASH index files of the snapshot; 0 for fixed
buckets, which have none), ``peer_index_entries``, ``peer_index_files_written`` and
``peer_index_bytes_written`` from its index manifest; ``table_records`` and the records
per bucket (``bucket_records_*``) by reading the table back, one split (= bucket) at a
time, untimed (``peer_read_s``). Paimon's write looks no key up, so it cannot tell an
insert from an update: ``inserts``, ``updates`` and ``deletes`` stay empty, ``records``
is what it wrote (after merging the batch's duplicates, delete rows included) and
``records_rewritten`` is 0 (no compaction). ``index_mem_bytes`` is 0 for fixed buckets
(no map) and empty for dynamic ones: the native writer's map lives in Rust's heap
(docs/peers.md gives a measurement).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes.base import bucket_fill
from metrics.rows import peer_upsert_row
from tableformat.errors import TableConfigError
from workloads import Workload
from workloads import generator as G

NAME = "paimon"
SERIES = ("paimon-fixed", "paimon-dynamic")
FIXED, DYNAMIC = SERIES
KEY, PARTITION, ORDERING = "key", "dt", "ts"
DELETED = G.DELETE_COLUMN  # the batch's delete flag (workloads with deletes only)
ROW_KIND = "_row_kind"  # the rowkind.field column of a table with deletes
INSERT, DELETE = "+I", "-D"
DATABASE = "indexbench"
CATALOG_DIR = "paimon"  # the warehouse under a run's tables/
WORKLOAD_KEY = "indexbench.workload"
BATCH_KEY = "indexbench.batch"
HASH_INDEX = "HASH"
# series → (Paimon option, the index whose parameter sets it, that parameter)
MIRRORS: dict[str, tuple[str, str, str]] = {
    FIXED: ("bucket", "simple-bucket", "num_buckets"),
    DYNAMIC: ("dynamic-bucket.target-row-num", "dynamic-rli", "max_records"),
}


def native_available() -> bool:
    """Whether pypaimon's native (Rust) writer and reader can run (``pypaimon-rust``)."""
    try:
        from pypaimon.write.native_write import native_write_available
    except ImportError:  # pragma: no cover - an older pypaimon
        return False
    return bool(native_write_available())


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def mirrored_value(series: str, index_params: Mapping[str, Mapping[str, Any]] | None) -> int:
    """The index parameter a series' table mirrors, as the run resolves it."""
    import indexes

    _option, index, param = MIRRORS[series]
    return int(indexes.get(index, **dict((index_params or {}).get(index) or {})).params[param])


def table_options(series: str, index_params: Mapping[str, Mapping[str, Any]] | None = None,
                  *, deletes: bool = False, native: bool | None = None) -> dict[str, str]:
    """The Paimon table options of a series (Paimon's own option names)."""
    native = native_available() if native is None else native
    option, _index, _param = MIRRORS[series]
    value = mirrored_value(series, index_params)
    opts = {"bucket": str(value) if series == FIXED else "-1",
            "merge-engine": "deduplicate", "sequence.field": ORDERING,
            "file.format": "parquet",
            "write.native.enabled": str(native).lower(),
            "read.native.enabled": str(native).lower()}
    if series == DYNAMIC:
        opts[option] = str(value)
    if deletes:
        opts["rowkind.field"] = ROW_KIND
    return opts


def describe(series: str = FIXED) -> dict[str, Any]:
    """What the peer does, for run.json and the report (the table adds what it resolved)."""
    option, index, param = MIRRORS[series]
    return {"peer": NAME, "engine": "Apache Paimon primary-key table (pypaimon)",
            "pypaimon": _version("pypaimon"), "pypaimon-rust": _version("pypaimon-rust"),
            "bucket_mode": "HASH_FIXED" if series == FIXED else "HASH_DYNAMIC",
            "mirrors": f"{option} = {index}'s {param}",
            "primary_key": [PARTITION, KEY], "partition_by": PARTITION,
            "merge": f"deduplicate, sequence.field = {ORDERING} (larger wins, later "
                     "write on ties)",
            "deletes": f"rowkind.field = {ROW_KIND} ({DELETE} when {DELETED})"}


def location(tables_dir: str, series: str = FIXED) -> str:
    """The catalog (warehouse) holding the series' table: ``<tables_dir>/paimon``."""
    return os.path.join(tables_dir, CATALOG_DIR)


def identifier(series: str) -> str:
    """The table's identifier in the catalog (``indexbench.paimon_dynamic``)."""
    return f"{DATABASE}.{series.replace('-', '_')}"


def to_paimon(batch: pa.Table) -> pa.Table:
    """A generated batch as the table's rows: the delete flag (if any) as the row kind."""
    if DELETED not in batch.column_names:
        return batch
    kind = pc.if_else(batch[DELETED], pa.scalar(DELETE), pa.scalar(INSERT))
    i = batch.column_names.index(DELETED)
    return batch.set_column(i, pa.field(ROW_KIND, pa.string(), nullable=False), kind)


def schema(w: Workload) -> pa.Schema:
    """The table's schema for a workload's batches."""
    return to_paimon(G.arrow_schema(w).empty_table()).schema


def _entries(table, manifest_metas) -> list:
    from pypaimon.manifest.manifest_file_manager import ManifestFileManager

    if not manifest_metas:
        return []
    return ManifestFileManager(table).read_entries_parallel(manifest_metas, max_workers=2)


def data_files(table, snapshot) -> list:
    """The live data files of a snapshot (manifest entries)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return _entries(table, ManifestListManager(table).read_all(snapshot))


def added_files(table, snapshot) -> list:
    """The data files the snapshot's commit added (its delta manifests)."""
    from pypaimon.manifest.manifest_list_manager import ManifestListManager

    return [e for e in _entries(table, ManifestListManager(table).read_delta(snapshot))
            if e.kind == 0]


def hash_index_files(table, snapshot) -> list:
    """The HASH index files of a snapshot (index manifest entries)."""
    from pypaimon.index.index_file_handler import IndexFileHandler

    if snapshot is None:
        return []
    return IndexFileHandler(table).scan(
        snapshot, lambda e: e.index_file.index_type == HASH_INDEX)


def _bucket_id(entry) -> tuple:
    return (tuple(entry.partition.values), int(entry.bucket))


def _index_file_id(entry) -> tuple:
    return (*_bucket_id(entry), entry.index_file.file_name)


def read_back(table) -> tuple[int, np.ndarray, float]:
    """(records, records per bucket, seconds): the table read as a reader sees it (files
    merged), one split (= bucket) at a time, the key columns only."""
    t0 = time.perf_counter()
    rb = table.new_read_builder().with_projection([PARTITION, KEY])
    read = rb.new_read()
    counts = np.array([read.to_arrow([s]).num_rows for s in rb.new_scan().plan().splits()],
                      dtype=np.int64)
    return int(counts.sum()), counts, time.perf_counter() - t0


def read_table(warehouse: str, series: str) -> pa.Table:
    """Every row of the series' table, merged (tests and notebooks: small tables)."""
    from pypaimon import CatalogFactory

    table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier(series))
    rb = table.new_read_builder()
    out = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return out.drop_columns([ROW_KIND]) if ROW_KIND in out.column_names else out


def bucket_counts(warehouse: str, series: str) -> list[int] | None:
    """Records per bucket of the series' latest snapshot (reports; None if unreadable)."""
    try:
        from pypaimon import CatalogFactory

        table = CatalogFactory.create({"warehouse": warehouse}).get_table(identifier(series))
        return [int(c) for c in read_back(table)[1]]
    except Exception:  # noqa: BLE001 - a moved or partial table: the report uses metrics
        return None


class PaimonTable:
    """One series' Paimon table, the batches of one workload written batch after batch.

    Resumes like the index runs' tables: each snapshot carries the workload fingerprint
    and batch number (snapshot properties); a table of another workload is refused.
    """

    def __init__(self, warehouse: str, fingerprint: str, series: str,
                 index_params: Mapping[str, Mapping[str, Any]] | None = None,
                 native: bool | None = None):
        from pypaimon import CatalogFactory

        if series not in SERIES:
            raise TableConfigError(f"unknown Paimon series {series!r}; known: {SERIES}")
        self.warehouse, self.fingerprint, self.series = str(warehouse), fingerprint, series
        self.index_params = index_params
        self.native = native_available() if native is None else native
        os.makedirs(self.warehouse, exist_ok=True)
        self.catalog = CatalogFactory.create({"warehouse": self.warehouse})
        self.catalog.create_database(DATABASE, True)
        self.ident = identifier(series)
        self._writer = self._commit = None
        self._last_writer: str | None = None

    # ---- the table ------------------------------------------------------------------
    def _exists(self) -> bool:
        return self.ident.split(".", 1)[1] in self.catalog.list_tables(DATABASE)

    def _table(self):
        return self.catalog.get_table(self.ident)

    def _create(self, w: Workload) -> None:
        from pypaimon import Schema

        opts = table_options(self.series, self.index_params,
                             deletes=DELETED in G.columns(w), native=self.native)
        self.catalog.create_table(self.ident, Schema.from_pyarrow_schema(
            schema(w), partition_keys=[PARTITION], primary_keys=[PARTITION, KEY],
            options=opts), False)

    @property
    def path(self) -> str:
        """The table's directory inside the warehouse."""
        return os.path.join(self.warehouse, f"{DATABASE}.db", self.ident.split(".", 1)[1])

    def options(self) -> dict[str, str]:
        """The table's options as stored in its schema (empty before it exists)."""
        return dict(self._table().table_schema.options) if self._exists() else {}

    def describe(self) -> dict[str, Any]:
        """What this table resolved: its options, which writer wrote, where it is."""
        return {"options": self.options(), "table_path": self.path,
                "writer": self._last_writer or ("native" if self.native else "python")}

    def committed_batches(self) -> int:
        """Batches of this workload already committed (0 for a new table)."""
        if not self._exists():
            return 0
        done = -1
        for snap in self._table().snapshot_manager().list_snapshots():
            props = snap.properties or {}
            if WORKLOAD_KEY in props:
                if props[WORKLOAD_KEY] != self.fingerprint:
                    raise TableConfigError(
                        f"Paimon table {self.path} holds batches of another workload; "
                        "use another --out")
                done = max(done, int(props[BATCH_KEY]))
        return done + 1

    # ---- writing --------------------------------------------------------------------
    def _open_writer(self, w: Workload) -> None:
        if not self._exists():
            self._create(w)
        builder = self._table().new_stream_write_builder()
        self._writer, self._commit = builder.new_write(), builder.new_commit()

    def _writer_kind(self) -> str:
        """Which writer wrote the batch: pypaimon's native one may hand over to Python."""
        from pypaimon.write.native_write import NativeTableWrite

        native = isinstance(self._writer, NativeTableWrite) and \
            getattr(self._writer, "_python_writer", None) is None
        return "native" if native else "python"

    def close(self) -> None:
        """Close the stream writer (the next batch opens one, restored from the table)."""
        for part in (self._writer, self._commit):
            if part is not None:
                part.close()
        self._writer = self._commit = None

    def upsert(self, w: Workload, batch_no: int) -> dict[str, Any]:
        """Generate one batch, write and commit it; its metrics row."""
        t_start = time.perf_counter()
        batch = G.batch_table(w, batch_no)
        t0 = time.perf_counter()
        if self._writer is None:
            self._open_writer(w)
        self._writer.write_arrow(to_paimon(batch))
        messages = self._writer.prepare_commit(batch_no)
        t1 = time.perf_counter()
        self._commit.commit(messages, batch_no, snapshot_properties={
            WORKLOAD_KEY: self.fingerprint, BATCH_KEY: str(batch_no)})
        t2 = time.perf_counter()
        self._last_writer = self._writer_kind()
        timings = {"generate_s": t0 - t_start, "write_s": t1 - t0, "commit_s": t2 - t1,
                   "total_s": t2 - t_start}
        return self._row(batch, batch_no, timings)

    def _row(self, batch: pa.Table, batch_no: int, timings: dict[str, float]) -> dict[str, Any]:
        """The row of the batch just committed, from the table (not timed)."""
        table = self._table()
        snapshots = table.snapshot_manager()
        snap = snapshots.get_latest_snapshot()
        before = snapshots.get_snapshot_by_id(snap.id - 1) if snap.id > 1 else None
        added = added_files(table, snap)
        live = data_files(table, snap)
        index = hash_index_files(table, snap)
        index_before = {_index_file_id(e) for e in hash_index_files(table, before)}
        index_added = [e for e in index if _index_file_id(e) not in index_before]
        buckets = {_bucket_id(e) for e in live}
        buckets_before = {_bucket_id(e) for e in data_files(table, before)} if before else set()
        records, per_bucket, read_s = read_back(table)
        files_per_bucket: dict[tuple, int] = {}
        for e in live:
            files_per_bucket[_bucket_id(e)] = files_per_bucket.get(_bucket_id(e), 0) + 1
        written = sum(int(e.file.row_count) for e in added)
        fill = bucket_fill(per_bucket)
        return peer_upsert_row(
            batch_no=batch_no, input_records=batch.num_rows, records=written,
            partitions_touched=len({tuple(e.partition.values) for e in added}),
            inserts=None, updates=None, records_written=written,
            records_rewritten=0,  # an LSM append; pypaimon never compacts
            files_written=len(added), bytes_written=sum(int(e.file.file_size) for e in added),
            files_in_table=len(live), table_records=records,
            table_bytes=sum(int(e.file.file_size) for e in live), timings=timings,
            extra={**fill, "deletes": None,  # which -D removed a key: not seen
                   "buckets_created": len(buckets - buckets_before),
                   "index_disk_bytes": sum(int(e.index_file.file_size) for e in index),
                   # a fixed bucket is a hash modulo N: no map in memory; the
                   # dynamic assigner's lives in the writer (Rust's heap): not counted
                   "index_mem_bytes": 0 if self.series == FIXED else None,
                   "peer_index_entries": sum(int(e.index_file.row_count) for e in index),
                   "peer_index_files_written": len(index_added),
                   "peer_index_bytes_written": sum(int(e.index_file.file_size)
                                                   for e in index_added),
                   "peer_delete_rows_written": sum(int(e.file.delete_row_count or 0)
                                                   for e in added),
                   "peer_files_per_bucket_max": max(files_per_bucket.values(), default=0),
                   "peer_snapshot_id": snap.id, "peer_read_s": read_s,
                   "peer_writer": self._last_writer})


def open_table(warehouse: str, fingerprint: str, *, series: str = FIXED,
               index_params: Mapping[str, Mapping[str, Any]] | None = None,
               native: bool | None = None) -> PaimonTable:
    """The series' table in the catalog at ``warehouse`` (created at its first batch)."""
    return PaimonTable(warehouse, fingerprint, series, index_params, native)
