"""The simulator's model table: a timeline and a snapshot, with no data files.

It holds exactly what a real table's commit metadata would say — one
:class:`~tableformat.table.FileSlice` per file group (record count, modelled bytes and,
on a merge-on-read table, its :class:`~tableformat.table.LogFile` list), completed
instants with their action, operationType and extraMetadata — so index code that reads
a snapshot (bucket counts and their rescale history, bucket fill, the rescale policy,
file sizes for a bytes capacity, the insert planner's small files) and the table type's
compaction rule (:mod:`tableformat.compaction_plan`) run unchanged on it. Byte sizes
are a model: a base file of n records is ``file_bytes + n × record_bytes`` plus its
index footer, a log file ``log_file_bytes + n × log_record_bytes`` (the simulator
measures these on a sample of the workload's rows, ``indexbench.sim.record_size``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tableformat.commit_metadata import COMMIT, DELTA_COMMIT, REPLACE, CommitTotals
from tableformat.hudi_log.constants import BASE_LOG_VERSION
from tableformat.hudi_log.names import LogFileName
from tableformat.table import (
    FIRST_INSTANT,
    FileSlice,
    LogFile,
    SliceMap,
    Snapshot,
    format_instant,
    parse_instant,
)
from tableformat.table_type import COPY_ON_WRITE, MERGE_ON_READ

SIM_WRITE_TOKEN = "0-0-0"  # a log file name's write token (no Spark task wrote it)


@dataclass(frozen=True)
class LogAppend:
    """One log file an upsert appends to a file group: its records (upserts after the
    pre-combine) and how many of them are keys the group did not hold (what a merged
    read of the slice gains: a compaction's record count). ``base_instant``: the slice
    it joins when that is not the group's latest — a pending resize's child, whose slice
    starts at the resize's instant: the log stays hidden until that instant completes,
    as :meth:`tableformat.table.Table.snapshot` hides it."""

    partition: str
    file_id: str
    records: int
    new_keys: int
    base_instant: str | None = None


@dataclass
class ModelTable:
    """A copy-on-write or merge-on-read table as commit metadata only."""

    record_bytes: float  # modelled bytes of one more record in a base file
    key_bytes: float = 36.0  # modelled bytes of one record key (key-column reads)
    file_bytes: float = 0.0  # modelled bytes of a base file beyond its records
    log_record_bytes: float = 0.0  # one more record in a log data block (0: record_bytes)
    log_file_bytes: float = 0.0  # a log file beyond its records (framing, schema header)
    arrow_record_bytes: float = 0.0  # a record handed to a writer (write amplification)
    raw_record_bytes: int = 0  # a record in a Parquet writer's size estimate (0: unknown)
    table_type: str = COPY_ON_WRITE
    snapshot: Snapshot = field(default_factory=lambda: Snapshot(SliceMap(), [], 0, None, {}))
    _last: int = field(default_factory=lambda: parse_instant(FIRST_INSTANT))
    # records a merged read of each file group's slice holds (distinct keys): a base
    # file's records, plus the new keys its logs brought (a compaction writes this many)
    merged: dict[tuple[str, str], int] = field(default_factory=dict)
    # log files of slices whose base instant has not completed, by that instant: they
    # join their slices when it completes (a pending resize's dual writes, merge-on-read)
    hidden: dict[str, list[tuple[tuple[str, str], LogFile, int]]] = field(
        default_factory=dict)

    def new_instant(self) -> str:
        """Strictly increasing 17-digit instants (1 ms apart, from a fixed start)."""
        self._last += 1
        return format_instant(self._last)

    @property
    def latest(self) -> str | None:
        return self.snapshot.latest_instant

    @property
    def merge_on_read(self) -> bool:
        return self.table_type == MERGE_ON_READ

    def commit(self, instant: str, written: list[FileSlice],
               replaced: dict[str, list[str]] | None = None,
               extra: dict[str, str] | None = None, logs: list[LogAppend] | None = None,
               action: str | None = None, operation: str | None = None) -> list[LogFile]:
        """Complete ``instant``: replaced file groups leave, written slices become latest,
        the hidden logs of slices ``instant`` starts join them, and each of ``logs``
        becomes a log file of its group's slice (a group with no slice starts a log-only
        one, its base instant this one; a log of a slice whose base instant is pending
        waits for it, hidden). ``action`` defaults to
        what the real writer completes: ``replacecommit`` when groups are replaced, a
        ``deltacommit`` on merge-on-read, else ``commit``. Returns the log files."""
        snap = self.snapshot
        for partition, ids in (replaced or {}).items():
            for fid in ids:
                snap.slices.pop((partition, fid), None)
                self.merged.pop((partition, fid), None)
        for s in written:
            snap.slices[(s.partition, s.file_id)] = s
            self.merged[(s.partition, s.file_id)] = s.num_records
        for key, log, new_keys in self.hidden.pop(instant, ()):  # now visible
            self._attach(key, instant, log, new_keys)
        appended = [self._append(instant, a) for a in logs or ()]
        snap.physical_files += len(written) + len(appended)
        if action is None:
            action = REPLACE if replaced else DELTA_COMMIT if self.merge_on_read else COMMIT
        snap.completed.append(instant)
        # Hudi's average record size reads base files only (as Table.snapshot counts)
        snap.commits.append(CommitTotals(
            instant, action, sum(s.size_bytes for s in written),
            sum(s.num_records for s in written), len(written)))
        snap.operations[instant] = operation or ("CLUSTER" if replaced else "UPSERT")
        snap.extra[instant] = dict(extra or {})
        return appended

    def _append(self, instant: str, a: LogAppend) -> LogFile:
        key = (a.partition, a.file_id)
        base = a.base_instant
        if base is not None and base != instant and base not in self.snapshot.completed:
            waiting = self.hidden.setdefault(base, [])
            version = BASE_LOG_VERSION + sum(k == key for k, _, _ in waiting)
            log = self._log_file(a, base, version, instant)
            waiting.append((key, log, int(a.new_keys)))
            return log
        current = self.snapshot.slices.get(key)
        start = current.instant if current is not None else instant
        log = self._log_file(a, start, BASE_LOG_VERSION + (len(current.logs) if current else 0),
                             instant)
        self._attach(key, instant, log, int(a.new_keys))
        return log

    def _log_file(self, a: LogAppend, base: str, version: int, instant: str) -> LogFile:
        name = LogFileName(a.file_id, base, version, SIM_WRITE_TOKEN).name
        return LogFile(path=f"{a.partition}/{name}" if a.partition else name,
                       instant=instant, num_records=int(a.records), num_deletes=0,
                       size_bytes=self.log_bytes(a.records))

    def _attach(self, key: tuple[str, str], base: str, log: LogFile, new_keys: int) -> None:
        """``log`` joins the group's slice; a group with no slice starts a log-only one
        at ``base``."""
        current = self.snapshot.slices.get(key)
        if current is None:  # a new file group on merge-on-read starts log-only
            current = FileSlice(partition=key[0], file_id=key[1], path=None, instant=base,
                                num_records=0, size_bytes=0)
        self.snapshot.slices[key] = current.with_log(log)
        self.merged[key] = self.merged.get(key, 0) + new_keys

    def base_bytes(self, num_records: int, index_bytes: int = 0) -> int:
        """Modelled bytes of a base file: the records, the file's own overhead, and the
        index's footer (a bloom filter is in the file, as on storage)."""
        return int(round(self.file_bytes + num_records * self.record_bytes)) + int(index_bytes)

    def log_bytes(self, num_records: int) -> int:
        """Modelled bytes of a log file of one data block of ``num_records`` records."""
        per = self.log_record_bytes or self.record_bytes
        return int(round(self.log_file_bytes + num_records * per))

    def slice_of(self, partition: str, file_id: str, instant: str, num_records: int,
                 index_bytes: int = 0) -> FileSlice:
        """A new base file's slice with modelled bytes."""
        return FileSlice(partition=partition, file_id=file_id,
                         path=f"{partition}/{file_id}_sim_{instant}.parquet", instant=instant,
                         num_records=int(num_records),
                         size_bytes=self.base_bytes(num_records, index_bytes),
                         index_bytes=int(index_bytes))

    def merged_records(self, partition: str, file_id: str) -> int:
        """Records a merged read of the group's slice holds (what a compaction writes)."""
        return self.merged.get((partition, file_id), 0)
