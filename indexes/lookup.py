"""The read side of an index, engine-neutral: which file groups may hold a looked-up key.

A point lookup is Hudi's ``HoodieReadClient.readROView``: the index locates each key's
file group (``tagLocation``), then only those files are read. Each index answers with
:meth:`indexes.roles.PointLookups.lookup_candidates` over a :class:`ReadView` (the
committed snapshot, small and picklable, so a Spark task or an in-process caller gets
the same one); the reads and their counting are :mod:`indexbench.query.lookup`'s.
Nothing here imports pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from indexes import roles
from tableformat.basefile import read_parquet
from tableformat.slice_reader import read_slice


@dataclass(frozen=True)
class ReadView:
    """What a reader may use: committed file groups per partition and timeline facts."""

    table_uri: str
    record_key_field: str
    # partition -> ((file id, path relative to the table), ...) of the latest slices
    files: dict[str, tuple[tuple[str, str], ...]]
    bucket_counts: dict[str, int] = field(default_factory=dict)  # bucket indexes only
    completed: tuple[str, ...] = ()
    # partition -> visible files of the index's own (dynamic-rli: the RLI), relative paths
    index_files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # partition -> the index's own routing state as of the snapshot, in plain tuples
    # (a ring's nodes, a directory's pointers): what its lookups hash keys through
    routing: dict[str, Any] = field(default_factory=dict)
    # merge-on-read: the slices with log files, read merged (tableformat.slice_reader);
    # a log-only slice has no base path in ``files`` (None)
    merged: dict[tuple[str, str], Any] = field(default_factory=dict)
    ordering_field: str = ""
    # Hudi's read_optimized query (tableformat.query_type): base files only, so ``files``
    # leaves log-only slices out and nothing is merged
    read_optimized: bool = False

    @classmethod
    def of(cls, table, snapshot, index, read_optimized: bool = False) -> ReadView:
        """The view of ``table``'s committed ``snapshot`` for ``index``'s readers: every
        file slice merged with its logs (a snapshot query), or with ``read_optimized``
        the base files alone."""
        files: dict[str, list[tuple[str, str]]] = {}
        for (partition, fid), s in sorted(snapshot.slices.items()):
            if s.path is not None or not read_optimized:
                files.setdefault(partition, []).append((fid, s.path))
        layout = roles.hash_layout(index, snapshot) or {}
        merged = {} if read_optimized else \
            {k: s for k, s in snapshot.slices.items() if s.logs}
        return cls(table.uri, table.config.record_key_field,
                   {p: tuple(v) for p, v in files.items()}, layout,
                   tuple(snapshot.completed), merged=merged,
                   ordering_field=table.config.ordering_field,
                   read_optimized=read_optimized, **roles.read_view_extra(index, snapshot))

    def holds(self, partition: str, file_id: str) -> bool:
        """Whether the view reads the file group (a read-optimized view does not read a
        log-only one, which an index that locates keys in logs may still name)."""
        return any(fid == file_id for fid, _ in self.files.get(partition, ()))

    def read_group(self, table, partition: str, file_id: str, stats, log_stats=None,
                   columns: list[str] | None = None) -> pa.Table:
        """One file group's records: its base file, or its slice merged with its logs."""
        s = self.merged.get((partition, file_id))
        if s is None:
            path = dict(self.files.get(partition, ()))[file_id]
            return read_parquet(table.fs, table.abs_path(path), stats, columns)
        return read_slice(table.fs, table.root, s, self.record_key_field,
                          self.ordering_field, stats=stats, log_stats=log_stats,
                          columns=columns)


@dataclass
class Candidates:
    """(key, file) pairs an index says to read: ``file_ids[file_idx[i]]`` may hold key
    ``key_idx[i]``; a file appears once however many keys point at it."""

    file_ids: list[str]
    key_idx: np.ndarray
    file_idx: np.ndarray

    @classmethod
    def none(cls) -> Candidates:
        return cls([], np.empty(0, np.int64), np.empty(0, np.int64))

    @classmethod
    def from_rows(cls, key_idx: np.ndarray, file_ids_per_pair: np.ndarray) -> Candidates:
        """From one file id per pair (object array): distinct files, each pair's index."""
        if not len(key_idx):
            return cls.none()
        names, inverse = np.unique(np.asarray(file_ids_per_pair, dtype=object),
                                   return_inverse=True)
        return cls(list(names), np.asarray(key_idx, np.int64), inverse.reshape(-1))


def scan_candidates(files: tuple[tuple[str, str], ...], keys: pa.Array) -> Candidates:
    """No index: every file of the partition for every key (a full partition scan)."""
    n, f = len(keys), len(files)
    return Candidates([fid for fid, _ in files], np.tile(np.arange(n), f),
                      np.repeat(np.arange(f), n))


__all__ = ["Candidates", "ReadView", "scan_candidates"]
