"""Hudi's on-disk copy of the rings: ``.hoodie/.bucket_index/consistent_hashing_metadata``.

Hudi keeps one ``<instant>.hashing_meta`` (``HoodieConsistentHashingMetadata`` JSON) per
partition and ring version; a reader takes the latest one whose instant completed. The
harness writes them for every resize before its replacecommit completes (so a version
takes effect exactly with its replacecommit; rollback deletes an unfinished one, see
:mod:`tableformat.abort`), and ``verify`` checks they agree with the rings the
replacecommits recorded (:data:`indexes.consistent_hashing.ring.RINGS_KEY`). A
partition's default ring is not written (Hudi writes ``00000000000000.hashing_meta``
when it first loads a partition): it is a pure function of the partition and
``hoodie.bucket.index.num.buckets``.
"""

from __future__ import annotations

import json

from indexes.consistent_hashing.ring import Ring
from tableformat import fs as tfs

METADATA_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"
SUFFIX = ".hashing_meta"


def ring_path(table, partition: str, instant: str) -> str:
    folder = f"{METADATA_DIR}/{partition}" if partition else METADATA_DIR
    return table.abs_path(f"{folder}/{instant}{SUFFIX}")


def write_ring(table, ring: Ring) -> None:
    """Write one partition's ring version (pretty JSON, as Hudi's object mapper)."""
    path = ring_path(table, ring.partition, ring.instant)
    table.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    tfs.write_bytes_atomic(table.fs, path, json.dumps(ring.to_json(), indent=2).encode())


def stored_ring(table, partition: str, completed: set[str]) -> Ring | None:
    """The latest ``.hashing_meta`` of ``partition`` whose instant completed (None: none)."""
    folder = table.abs_path(f"{METADATA_DIR}/{partition}" if partition else METADATA_DIR)
    if not tfs.exists(table.fs, folder):
        return None
    names = sorted((i.base_name for i in tfs.list_files(table.fs, folder)
                    if i.base_name.endswith(SUFFIX)), reverse=True)
    for name in names:
        if name[:-len(SUFFIX)] in completed:
            return Ring.from_json(json.loads(tfs.read_bytes(table.fs, f"{folder}/{name}")))
    return None
