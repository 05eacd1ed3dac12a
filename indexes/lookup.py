"""The read side of an index, engine-neutral: which file groups may hold a looked-up key.

A point lookup is Hudi's ``HoodieReadClient.readROView``: the index locates each key's
file group (``tagLocation``), then only those files are read. Each index answers with
:meth:`indexes.base.RecordIndex.lookup_candidates` over a :class:`ReadView` (the
committed snapshot, small and picklable, so a Spark task or an in-process caller gets
the same one); the reads and their counting are :mod:`indexbench.query.lookup`'s.
Nothing here imports pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa


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
    # partition -> (node values, node file ids) of its ring (consistent-hashing)
    rings: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = field(default_factory=dict)

    @classmethod
    def of(cls, table, snapshot, index) -> ReadView:
        """The view of ``table``'s committed ``snapshot`` for ``index``'s readers."""
        files: dict[str, list[tuple[str, str]]] = {}
        for (partition, fid), s in sorted(snapshot.slices.items()):
            files.setdefault(partition, []).append((fid, s.path))
        layout = index.hash_layout(snapshot) or {}
        return cls(table.uri, table.config.record_key_field,
                   {p: tuple(v) for p, v in files.items()}, layout,
                   tuple(snapshot.completed), **index.read_view_extra(snapshot))


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
