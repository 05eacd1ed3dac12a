"""The simulator's model table: a timeline and a snapshot, with no data files.

It holds exactly what a real table's commit metadata would say — one
:class:`~tableformat.table.FileSlice` per file group (record count, modelled bytes),
completed instants and their extraMetadata — so index code that reads a snapshot
(bucket counts and their rescale history, bucket fill, the rescale policy, file sizes
for a bytes capacity) runs unchanged on it. Byte sizes are a model: records × the
workload's modelled record size (``record_bytes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tableformat.sizing import CommitTotals
from tableformat.table import FIRST_INSTANT, FileSlice, Snapshot, format_instant, parse_instant


@dataclass
class ModelTable:
    """A copy-on-write table as commit metadata only."""

    record_bytes: float  # modelled bytes of one record in a base file
    key_bytes: float = 36.0  # modelled bytes of one record key (key-column reads)
    snapshot: Snapshot = field(default_factory=lambda: Snapshot({}, [], 0, None, {}))
    _last: int = field(default_factory=lambda: parse_instant(FIRST_INSTANT))

    def new_instant(self) -> str:
        """Strictly increasing 17-digit instants (1 ms apart, from a fixed start)."""
        self._last += 1
        return format_instant(self._last)

    @property
    def latest(self) -> str | None:
        return self.snapshot.latest_instant

    def commit(self, instant: str, written: list[FileSlice],
               replaced: dict[str, list[str]] | None = None,
               extra: dict[str, str] | None = None) -> None:
        """Complete ``instant``: replaced file groups leave, written slices become latest."""
        snap = self.snapshot
        for partition, ids in (replaced or {}).items():
            for fid in ids:
                snap.slices.pop((partition, fid), None)
        for s in written:
            snap.slices[(s.partition, s.file_id)] = s
        snap.physical_files += len(written)
        snap.completed.append(instant)
        snap.commits.append(CommitTotals(
            instant, "replacecommit" if replaced else "commit",
            sum(s.size_bytes for s in written), sum(s.num_records for s in written)))
        snap.extra[instant] = dict(extra or {})

    def slice_of(self, partition: str, file_id: str, instant: str, num_records: int,
                 index_bytes: int = 0) -> FileSlice:
        """A new base file's slice with modelled bytes."""
        return FileSlice(partition=partition, file_id=file_id,
                         path=f"{partition}/{file_id}_sim_{instant}.parquet", instant=instant,
                         num_records=int(num_records),
                         size_bytes=int(round(num_records * self.record_bytes)),
                         index_bytes=int(index_bytes))
