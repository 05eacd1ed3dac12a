"""A Hudi table, copy-on-write or merge-on-read: properties, timeline, snapshot, lock and rollback.

Layout and names follow Hudi table version 6 (docs/table-format.md): ``hoodie.properties`` with
Hudi's keys (:mod:`tableformat.hoodie_properties`), instants as ``requested`` →
``inflight`` → completed files, completed instants as Hudi's commit metadata JSON
(:mod:`tableformat.commit_metadata`), a ``.hoodie_partition_metadata`` in every partition
(:mod:`tableformat.partition_meta`). A snapshot is built from the completed instants'
commit metadata, never from a directory listing, so files of an instant that did not
complete are invisible; the next writer deletes them (rollback).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from tableformat import fs as tfs
from tableformat import hoodie_properties as hp
from tableformat import partition_meta
from tableformat.abort import delete_instant_files, delete_timeline_files
from tableformat.commit_metadata import (
    COMMIT,
    DELTA_COMMIT,
    REPLACE,
    CommitTotals,
    hoodie_commit_metadata,
    spark_schema,
)
from tableformat.errors import IndexBenchError, TableConfigError
from tableformat.hudi_log.names import LogFileName, is_log_file
from tableformat.layout import HOODIE, PROPERTIES
from tableformat.lock import LOCK, WriterLock
from tableformat.markers import delete_markers, marked_files
from tableformat.table_type import COPY_ON_WRITE, TABLE_TYPE, check_table_type
from tableformat.write_config import WriteConfig

INFLIGHT = "inflight"
REQUESTED = "requested"
ROLLBACK = "rollback"

KEY_FIELD = "hoodie.table.recordkey.fields"
PARTITION_FIELD = "hoodie.table.partition.fields"
ORDERING_FIELD = "hoodie.table.precombine.field"
# Hudi 1.x writes the ordering field(s) under this key (table version 6 included), and
# no precombine key: how this project opens a table Hudi's own writer made
HUDI_ORDERING_FIELDS = "hoodie.table.ordering.fields"
INDEX_TYPE = "hoodie.index.type"
INDEX_NAME = "indexbench.index.name"
# What identifies a record: "partition" = (partition path, record key), Hudi's
# non-global indexes. The only scope written; ``verify`` checks uniqueness under it.
KEY_SCOPE = "indexbench.record.key.scope"
# An index parameter named by a Hudi write key (``hoodie.parquet.max.file.size``) is kept
# as ``indexbench.param.<key>``: Hudi keeps no write config in hoodie.properties, and its
# writer refuses a write whose options differ from a hoodie.* key there ("Config
# conflict"), which bloom's stored sizes (before indexbench.scale) would. Tables written
# before keep their bare keys and are read as before.
PARAM_PREFIX = "indexbench.param."
KEY_SCOPES = ("partition",)
# Index parameters are table config too, but a table of the same index may be opened
# with other run-time settings; only these identify the table.
# One write stat per file group written (Spark DDL; Hudi's HoodieWriteStat names, then
# the project's; the commit adds the HoodieWriteStat fields a base file write leaves at
# their defaults: tableformat.commit_metadata).
WRITE_STATS_SCHEMA = (
    "partitionPath string, fileId string, path string, prevCommit string, numWrites long, "
    "numInserts long, numUpdateWrites long, numDeletes long, totalWriteBytes long, "
    "indexBytes long, mergeFilesRead long, mergeBytesRead long, minRecordKey string, "
    "maxRecordKey string, bucketId int"
)
# The upsert writers' stat row: the above, HoodieDeltaWriteStat's fields (a log file's;
# null for a base file; logFiles comma-joined), the Arrow bytes of the records the
# writer was handed (write amplification) and the milliseconds its handle took, as
# Hudi's ``RuntimeStats`` (a new base file: create; a merge or a log append: upsert).
UPSERT_STATS_SCHEMA = WRITE_STATS_SCHEMA + (
    ", logVersion int, logOffset long, baseFile string, logFiles string, "
    "totalLogBlocks long, totalLogRecords long, incomingBytes long, "
    "totalCreateTime long, totalUpsertTime long")

IDENTITY_KEYS = (KEY_FIELD, PARTITION_FIELD, ORDERING_FIELD, INDEX_NAME, TABLE_TYPE)
# completed actions on the timeline (a compaction completes as a ``commit``)
COMPLETED_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE)


# The first instant of a table, and of the simulator's model table: instants come from a
# benchmark clock, not the wall clock (Table.new_instant says why).
FIRST_INSTANT = "20260101000000000"


def format_instant(ms: int) -> str:
    """``yyyyMMddHHmmssSSS`` in UTC, as Hudi's instant times."""
    dt = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return dt.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


def parse_instant(instant: str) -> int:
    dt = datetime.strptime(instant[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000) + int(instant[14:17])


@dataclass
class TableConfig:
    """What ``hoodie.properties`` fixes at creation."""

    name: str
    record_key_field: str
    partition_field: str
    ordering_field: str
    index_name: str
    index_type: str
    index_params: dict[str, str] = field(default_factory=dict)
    key_scope: str = "partition"  # tables written before the key existed: the same
    table_type: str = COPY_ON_WRITE  # hoodie.table.type: COPY_ON_WRITE or MERGE_ON_READ

    def to_properties(self) -> dict[str, str]:
        """Hudi's table properties (version 6), the identity, the index parameters."""
        props = {
            hp.NAME: self.name,
            **hp.HUDI_TABLE_PROPERTIES,
            KEY_FIELD: self.record_key_field,
            PARTITION_FIELD: self.partition_field,
            ORDERING_FIELD: self.ordering_field,
            INDEX_TYPE: self.index_type,
            INDEX_NAME: self.index_name,
            KEY_SCOPE: self.key_scope,
            TABLE_TYPE: check_table_type(self.table_type),
        }
        props.update({(PARAM_PREFIX + k if k.startswith("hoodie.") else k): v
                      for k, v in self.index_params.items()})
        return props

    @property
    def written_by_hudi(self) -> bool:
        """A table Hudi's own writer made (``--peers hudi``): no indexbench index in its
        properties. Readers and ``verify`` open it; commands that need the index refuse."""
        return not self.index_name

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> TableConfig:
        known = {*hp.HUDI_OWNED_KEYS, INDEX_TYPE, KEY_SCOPE, *IDENTITY_KEYS,
                 HUDI_ORDERING_FIELDS}
        if ORDERING_FIELD not in props and props.get(HUDI_ORDERING_FIELDS):
            props = {**props, ORDERING_FIELD: props[HUDI_ORDERING_FIELDS].split(",")[0]}
        foreign = INDEX_NAME not in props and INDEX_TYPE not in props
        needed = (hp.NAME, KEY_FIELD, PARTITION_FIELD, ORDERING_FIELD) \
            + (() if foreign else (INDEX_NAME, INDEX_TYPE))
        missing = [k for k in needed if k not in props]
        if missing:  # neither one of this harness's tables nor one Hudi's writer made
            raise TableConfigError("hoodie.properties lacks " + ", ".join(missing)
                                   + ": not a table written by indexbench or by Hudi")
        scope = props.get(KEY_SCOPE, "partition")
        if scope not in KEY_SCOPES:
            raise TableConfigError(f"{KEY_SCOPE}={scope!r} is not a key scope this version "
                                   f"knows ({', '.join(KEY_SCOPES)})")
        return cls(
            table_type=check_table_type(props.get(TABLE_TYPE, COPY_ON_WRITE)),
            key_scope=scope,
            name=props[hp.NAME],
            record_key_field=props[KEY_FIELD],
            partition_field=props[PARTITION_FIELD],
            ordering_field=props[ORDERING_FIELD],
            index_name=props.get(INDEX_NAME, ""),
            index_type=props.get(INDEX_TYPE, ""),
            index_params={} if foreign else
            {k.removeprefix(PARAM_PREFIX): v for k, v in props.items() if k not in known},
        )


@dataclass(frozen=True)
class LogFile:
    """One committed log file of a file slice (merge-on-read)."""

    path: str  # relative to the table root
    instant: str  # the delta commit that wrote it
    num_records: int  # records in its data blocks (upserts)
    num_deletes: int  # keys in its delete blocks
    size_bytes: int


@dataclass(frozen=True)
class FileSlice:
    """The latest committed slice of one file group: a base file and, on a merge-on-read
    table, the log files written on top of it since (Hudi's ``FileSlice``).

    ``path`` is None for a log-only slice (a merge-on-read file group whose inserts went
    to a log before its first compaction). ``instant`` is the slice's base instant: the
    instant that wrote the base file, or the one in a log-only slice's log file names.
    ``num_records`` counts the base file's records plus the logs' upserts (a key updated
    in a log is counted twice: Hudi sizes file slices the same way, by bytes)."""

    partition: str
    file_id: str
    path: str | None  # the base file, relative to the table root
    instant: str
    num_records: int
    size_bytes: int  # the base file's bytes
    index_bytes: int = 0
    logs: tuple[LogFile, ...] = ()

    @property
    def base_records(self) -> int:
        return self.num_records - sum(lf.num_records for lf in self.logs)

    @property
    def log_bytes(self) -> int:
        return sum(lf.size_bytes for lf in self.logs)

    @property
    def total_bytes(self) -> int:
        return self.size_bytes + self.log_bytes

    @property
    def file_count(self) -> int:
        """Files a merged read of the slice opens: its base file (if any) and its logs."""
        return (self.path is not None) + len(self.logs)

    def with_log(self, log: LogFile) -> FileSlice:
        return replace(self, logs=(*self.logs, log),
                       num_records=self.num_records + log.num_records)


_ABSENT = object()


class SliceMap(dict):
    """A snapshot's slices, ``(partition, file id) -> FileSlice``, that keep the sizes
    :func:`metrics.rows.table_figures` reports up to date as slices come and go:
    the simulator's model table changes one commit at a time and every commit and
    table service reports them, so a pass over every slice per report would make a run
    of thousands of commits (splits, resizes) quadratic. A plain dict otherwise."""

    # class-level zeros: unpickling sets a dict's items before its instance state
    _records = _in_logs = _logs = 0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()
        self.update(*args, **kwargs)

    def sizes(self) -> tuple[int, int, int]:
        """Records of every slice, those in log files, and log files (as summed)."""
        return self._records, self._in_logs, self._logs

    def _count(self, s: FileSlice, sign: int) -> None:
        self._records += sign * s.num_records
        self._in_logs += sign * (s.num_records - s.base_records)
        self._logs += sign * len(s.logs)

    def __setitem__(self, key, value: FileSlice) -> None:
        old = dict.get(self, key, _ABSENT)
        if old is not _ABSENT:
            self._count(old, -1)
        dict.__setitem__(self, key, value)
        self._count(value, 1)

    def __delitem__(self, key) -> None:
        self._count(self[key], -1)
        dict.__delitem__(self, key)

    def pop(self, key, *default):
        if key in self:
            self._count(self[key], -1)
        return dict.pop(self, key, *default)

    def popitem(self):
        key, value = dict.popitem(self)
        self._count(value, -1)
        return key, value

    def clear(self) -> None:
        dict.clear(self)
        self._records = self._in_logs = self._logs = 0

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __ior__(self, other):
        self.update(other)
        return self

    def __reduce__(self):
        return type(self), (dict(self),)


@dataclass
class Snapshot:
    """Latest committed slice per file group, and what the timeline says about it."""

    slices: dict[tuple[str, str], FileSlice]
    completed: list[str]
    physical_files: int
    schema: str | None  # the writer's Spark schema (StructType JSON) of the latest commit
    extra: dict[str, dict] = field(default_factory=dict)
    # what each completed instant wrote, oldest first (Hudi's average record size)
    commits: list[CommitTotals] = field(default_factory=list)
    # each completed instant's operationType (a compaction's is COMPACT: it routes nothing)
    operations: dict[str, str] = field(default_factory=dict)

    def compactions(self) -> set[str]:
        """Instants that compacted log files (merge-on-read)."""
        return {i for i, op in self.operations.items() if op == "COMPACT"}

    def partitions(self) -> list[str]:
        return sorted({p for p, _ in self.slices})

    def in_partitions(self, partitions: Iterable[str]) -> list[FileSlice]:
        wanted = set(partitions)
        return [s for (p, _), s in sorted(self.slices.items()) if p in wanted]

    @property
    def latest_instant(self) -> str | None:
        return self.completed[-1] if self.completed else None


def visible(path: str, instant: str, completed: set[str]) -> bool:
    """Whether a base file a completed ``instant`` lists is visible: Hudi shows a file
    slice only once its base instant (the one in the file name) completed. A commit's
    own files always are; a consistent-hashing dual write lists files of a pending
    resize's child file groups, named after the resize's instant, which stay hidden
    until that replacecommit completes (and lists them itself)."""
    if path.endswith(f"_{instant}.parquet"):
        return True
    from tableformat.basefile import BaseFileName

    try:
        return BaseFileName.parse(path).instant in completed
    except ValueError:  # not a base file name this harness writes: nothing to hide
        return True


def _add_log(slices: dict[tuple[str, str], FileSlice], key: tuple[str, str], stat: dict,
             instant: str, completed: set[str]) -> None:
    """Attach a committed log file to the slice of its base instant (Hudi's file system
    view groups log files by the base instant in their name). A log whose base instant
    is pending (a consistent-hashing child's) stays hidden, as its base file does; one
    whose file group has no slice yet starts a log-only slice."""
    base = LogFileName.parse(stat["path"]).base_instant
    if base != instant and base not in completed:
        return
    log = LogFile(path=stat["path"], instant=instant, num_records=int(stat["numWrites"]),
                  num_deletes=int(stat.get("numDeletes") or 0),
                  size_bytes=int(stat["totalWriteBytes"]))
    current = slices.get(key)
    if current is None or current.instant < base:
        current = FileSlice(partition=key[0], file_id=key[1], path=None, instant=base,
                            num_records=0, size_bytes=0)
    elif current.instant != base:
        return  # a log of an older slice: the latest slice does not read it
    slices[key] = current.with_log(log)


def stats_by_partition(stats: list[dict]) -> dict[str, list[dict]]:
    """Write stats as commit metadata's ``partitionToWriteStats`` (sorted, stable)."""
    out: dict[str, list[dict]] = {}
    for s in sorted(stats, key=lambda s: (s["partitionPath"], s["fileId"])):
        out.setdefault(s["partitionPath"], []).append(s)
    return out


class Table:
    """A table on any pyarrow file system; cheap to construct, reads lazily."""

    def __init__(self, uri: str):
        # absolute: executors resolve a relative path against their own working directory
        self.uri = uri if "://" in uri else os.path.abspath(uri)
        self.fs, self.root = tfs.resolve(uri)
        self.meta = tfs.join(self.root, HOODIE)
        self._lock = WriterLock(self.fs, tfs.join(self.meta, LOCK), self.uri)
        self._last_instant_ms = 0
        self._commit_cache: dict[tuple[str, str], dict] = {}
        # the writer's settings (table type, merge-on-read knobs): set by who opens it
        self.write_config = WriteConfig()
        self.rolled_back: tuple[list[str], list[str]] = ([], [])

    # ---- configuration -------------------------------------------------
    def exists(self) -> bool:
        return tfs.exists(self.fs, tfs.join(self.meta, PROPERTIES))

    @property
    def config(self) -> TableConfig:
        text = tfs.read_bytes(self.fs, tfs.join(self.meta, PROPERTIES)).decode()
        return TableConfig.from_properties(hp.parse(text))

    @classmethod
    def create_or_open(cls, uri: str, config: TableConfig) -> Table:
        """Create the table, or open it if its identity matches ``config``."""
        table = cls(uri)
        if table.exists():
            have = table.config.to_properties()
            want = config.to_properties()
            for key in IDENTITY_KEYS:
                if have.get(key) != want.get(key):
                    raise TableConfigError(
                        f"table {uri} was created with {key}={have.get(key)!r}, "
                        f"not {want.get(key)!r}; use another --table path"
                    )
            return table
        table.fs.create_dir(table.meta, recursive=True)
        tfs.write_bytes_atomic(
            table.fs, tfs.join(table.meta, PROPERTIES),
            hp.render(config.to_properties()).encode()
        )
        return table

    def abs_path(self, rel: str) -> str:
        return tfs.join(self.root, rel)

    # ---- timeline --------------------------------------------------------
    def _timeline_files(self) -> list[str]:
        return sorted(i.base_name for i in tfs.list_files(self.fs, self.meta))

    def completed_instants(self) -> list[tuple[str, str]]:
        """(instant, action) of every completed commit, delta commit or replacecommit."""
        out = []
        for name in self._timeline_files():
            stem, _, action = name.partition(".")
            if action in COMPLETED_ACTIONS and len(stem) == 17 and stem.isdigit():
                out.append((stem, action))
        return out

    def pending_instants(self) -> list[str]:
        """Instants requested or inflight that never completed (to be rolled back)."""
        done = {i for i, _ in self.completed_instants()}
        pending = set()
        for name in self._timeline_files():
            stem, _, action = name.partition(".")
            if action.endswith((INFLIGHT, REQUESTED)) and stem not in done:
                pending.add(stem)
        return sorted(pending)

    def read_commit(self, instant: str, action: str = COMMIT) -> dict:
        """A completed instant's metadata (immutable once written, so cached)."""
        key = (instant, action)
        if key not in self._commit_cache:
            self._commit_cache[key] = json.loads(
                tfs.read_bytes(self.fs, tfs.join(self.meta, f"{instant}.{action}")))
        return self._commit_cache[key]

    def new_instant(self) -> str:
        """A fresh instant: 1 ms after every instant on the timeline (rolled-back ones
        included) and after :data:`FIRST_INSTANT`.

        A benchmark clock, not the wall clock, as Hudi lets a writer choose its instant
        (``startCommitWithTime``): the instant is in every row (``_hoodie_commit_time``,
        ``_hoodie_commit_seqno``), so wall-clock digits changed a file's compressed bytes
        from one run to the next and, through Hudi's byte-based file sizing (average
        record size, small-file top-up), the counts after them. With this clock the same
        workload writes the same bytes, and the same instants as the simulator."""
        last = max((parse_instant(n[:17]) for n in self._timeline_files() if n[:17].isdigit()),
                   default=parse_instant(FIRST_INSTANT))
        ms = max(last + 1, self._last_instant_ms + 1)
        self._last_instant_ms = ms
        return format_instant(ms)

    def start_instant(self, action: str = COMMIT, plan: dict | bytes | None = None) -> str:
        """Write ``<instant>.<action>.requested`` (with ``plan``, e.g. a clustering plan,
        as its body: JSON, or bytes as they are, e.g. an Avro compaction plan), then the
        inflight file, as Hudi does: from here on a crash is rolled back, never seen."""
        self._require_lock()
        instant = self.new_instant()
        body = plan if isinstance(plan, bytes) else \
            json.dumps(plan, indent=2).encode() if plan is not None else b""
        tfs.write_bytes_atomic(self.fs, tfs.join(self.meta, f"{instant}.{action}.{REQUESTED}"),
                               body)
        self.write_inflight(instant, {}, action)
        return instant

    def write_inflight(self, instant: str, body: dict, action: str = COMMIT) -> None:
        """The inflight file's body: what a long-running action has done so far."""
        self._require_lock()
        inflight = INFLIGHT if action == COMMIT else f"{action}.{INFLIGHT}"
        tfs.write_bytes_atomic(self.fs, tfs.join(self.meta, f"{instant}.{inflight}"),
                               json.dumps(body).encode())

    def read_requested(self, instant: str, action: str) -> bytes:
        """The bytes of ``<instant>.<action>.requested`` (the plan of a table service)."""
        return tfs.read_bytes(self.fs, tfs.join(self.meta, f"{instant}.{action}.{REQUESTED}"))

    def read_pending(self, instant: str, action: str) -> tuple[dict, dict]:
        """(requested body, inflight body) of a pending instant ({} when empty)."""
        def body(name: str) -> dict:
            path = tfs.join(self.meta, name)
            raw = tfs.read_bytes(self.fs, path) if tfs.exists(self.fs, path) else b""
            return json.loads(raw) if raw.strip() else {}

        inflight = INFLIGHT if action == COMMIT else f"{action}.{INFLIGHT}"
        return body(f"{instant}.{action}.{REQUESTED}"), body(f"{instant}.{inflight}")

    def pending_actions(self) -> list[tuple[str, str]]:
        """(instant, action) of every pending instant, from its requested file."""
        pending = set(self.pending_instants())
        out = []
        for name in self._timeline_files():
            stem, _, rest = name.partition(".")
            action, _, state = rest.partition(".")
            if stem in pending and state == REQUESTED:
                out.append((stem, action))
        return sorted(out)

    def complete_instant(self, instant: str, metadata: dict, action: str = COMMIT) -> None:
        """Publish an instant atomically: the rename of its commit file is the commit.

        Before it: files of failed task attempts are deleted and every partition written
        gets its ``.hoodie_partition_metadata``. ``metadata`` is converted to Hudi's
        commit metadata (:func:`tableformat.commit_metadata.hoodie_commit_metadata`)."""
        self._require_lock()
        body = hoodie_commit_metadata(metadata, action, self.config.name,
                                      self._latest_spark_schema)
        for partition in body["partitionToWriteStats"]:
            names = self._delete_strays(instant, partition, body)
            partition_meta.ensure(self.fs, self.root, partition, instant, names)
        self._delete_unlisted_logs(instant, body)
        # completed at its own instant: Hudi 1.x takes a version-6 instant's completion
        # time from its file's modification time (InstantGeneratorV1), and this table's
        # benchmark clock (new_instant) is not the wall clock. With the wall clock's
        # mtime every delta commit "completed" after a later compaction was requested,
        # and Hudi's time travel to an instant before that compaction left the logs out
        tfs.write_bytes_atomic(self.fs, tfs.join(self.meta, f"{instant}.{action}"),
                               json.dumps(body, indent=2).encode(),
                               mtime=parse_instant(instant) / 1000)
        delete_markers(self.fs, self.root, instant)

    def _delete_unlisted_logs(self, instant: str, metadata: dict) -> None:
        """Log files ``instant``'s markers name that its commit does not list (a failed
        task attempt's): their names do not say their instant, the markers do."""
        listed = {s["path"] for stats in metadata["partitionToWriteStats"].values()
                  for s in stats}
        for rel in marked_files(self.fs, self.root, instant):
            if rel not in listed and tfs.exists(self.fs, self.abs_path(rel)):
                self.fs.delete_file(self.abs_path(rel))

    def _delete_strays(self, instant: str, partition: str, metadata: dict) -> set[str]:
        """Delete this instant's files in ``partition`` that the commit does not list
        (failed task attempts); returns the names of the files left."""
        listed = {s["path"] for s in metadata["partitionToWriteStats"][partition]}
        left = set()
        for info in tfs.list_files(self.fs, self.abs_path(partition)):
            rel = f"{partition}/{info.base_name}" if partition else info.base_name
            if info.base_name.endswith(f"_{instant}.parquet") and rel not in listed:
                self.fs.delete_file(info.path)
            else:
                left.add(info.base_name)
        return left

    def _latest_spark_schema(self) -> str | None:
        """The Spark schema of the latest completed instant that recorded one."""
        for instant, action in reversed(self.completed_instants()):
            found = spark_schema(self.read_commit(instant, action).get("extraMetadata", {}))
            if found:
                return found
        return None

    # ---- snapshot --------------------------------------------------------
    def snapshot(self, as_of: str | None = None) -> Snapshot:
        """Latest committed file slice per file group, from the commit metadata: base
        files, and on a merge-on-read table the log files written on top of them.
        ``as_of``: the table as it was when that instant completed (time travel: the
        instants after it left out)."""
        slices: dict[tuple[str, str], FileSlice] = {}
        completed, physical, schema = [], 0, None
        extra: dict[str, dict] = {}
        commits: list[CommitTotals] = []
        operations: dict[str, str] = {}
        instants = [(i, a) for i, a in self.completed_instants() if as_of is None or i <= as_of]
        done = {i for i, _ in instants}
        replaced: set[tuple[str, str]] = set()
        for instant, action in instants:
            meta = self.read_commit(instant, action)
            completed.append(instant)
            operations[instant] = meta.get("operationType") or "UNKNOWN"
            written = [s for stats in meta.get("partitionToWriteStats", {}).values()
                       for s in stats]
            # Hudi's average record size reads base files only (log blocks are Avro)
            bases = [s for s in written if not is_log_file(s["path"])]
            commits.append(CommitTotals(instant, action,
                                        sum(int(s["totalWriteBytes"]) for s in bases),
                                        sum(int(s["numWrites"]) for s in bases),
                                        len(bases)))
            for partition, ids in meta.get("partitionToReplaceFileIds", {}).items():
                for fid in ids:
                    slices.pop((partition, fid), None)
                    replaced.add((partition, fid))
            for partition, stats in meta.get("partitionToWriteStats", {}).items():
                for s in stats:
                    key = (partition, s["fileId"])
                    if is_log_file(s["path"]):
                        physical += 1
                        _add_log(slices, key, s, instant, done)
                        continue
                    if s["path"].endswith(f"_{instant}.parquet"):
                        physical += 1  # its own file (a dual write's counts with its base)
                    if not visible(s["path"], instant, done):
                        continue  # a file group's base instant is pending (dual writes)
                    slices[key] = FileSlice(
                        partition=partition, file_id=s["fileId"], path=s["path"],
                        instant=instant, num_records=int(s["numWrites"]),
                        size_bytes=int(s["totalWriteBytes"]),
                        index_bytes=int(s.get("indexBytes", 0)),
                    )
            schema = spark_schema(meta.get("extraMetadata", {})) or schema
            extra[instant] = meta.get("extraMetadata", {})
        # A replaced file group stays replaced (Hudi's isFileGroupReplaced), even when a
        # commit that started before its replacecommit completed wrote it later on the
        # timeline: a consistent-hashing resize's dual writes carry those records over.
        for key in replaced:
            slices.pop(key, None)
        return Snapshot(slices, completed, physical, schema, extra, commits, operations)

    # ---- writer lock and rollback ----------------------------------------
    def acquire_writer_lock(self) -> None:
        """Refuse a second concurrent writer (:mod:`tableformat.lock`): a dead writer's
        lock is free at once on a local file system, best effort elsewhere."""
        self._lock.acquire()

    def release_writer_lock(self) -> None:
        """Give the lock up; a no-op when this object does not hold it."""
        self._lock.release()

    def lock_holder(self) -> dict | None:
        """The lock holder's identity (host, pid, t), or None if nobody (or unknown)."""
        return self._lock.holder()

    def _require_lock(self) -> None:
        if not self._lock.held:
            raise IndexBenchError("internal: writing the timeline without the writer lock")

    def rollback_pending(self) -> list[str]:
        """Delete every file of instants that never completed; returns what was deleted."""
        self._require_lock()
        deleted: list[str] = []
        pending = self.pending_instants()
        if not pending:
            return deleted
        deleted, _ = delete_instant_files(self, pending)
        rb = self.new_instant()
        tfs.write_bytes_atomic(self.fs, tfs.join(self.meta, f"{rb}.{ROLLBACK}"), json.dumps(
            {"rolledBackInstants": pending, "deletedFiles": deleted}, indent=2).encode(),
            mtime=parse_instant(rb) / 1000)  # completed at its instant, as commits
        delete_timeline_files(self, pending)
        return deleted

    def __enter__(self) -> Table:
        self.acquire_writer_lock()
        try:
            pending = self.pending_instants()
            # what this writer rolled back on entering: (instants, files deleted)
            self.rolled_back = (pending, self.rollback_pending())
        except BaseException:
            self.release_writer_lock()  # __exit__ does not run when __enter__ raises
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.release_writer_lock()
