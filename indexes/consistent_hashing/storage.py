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

from indexes.bucket.hashing_meta import SUFFIX, latest_meta, write_meta
from indexes.consistent_hashing.ring import Ring

METADATA_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"


def write_ring(table, ring: Ring) -> None:
    """Write one partition's ring version (pretty JSON, as Hudi's object mapper)."""
    write_meta(table, METADATA_DIR, ring.partition, ring.instant,
               json.dumps(ring.to_json(), indent=2).encode())


def stored_ring(table, partition: str, completed: set[str]) -> Ring | None:
    """The latest ``.hashing_meta`` of ``partition`` whose instant completed (None: none)."""
    data = latest_meta(table, METADATA_DIR, partition, completed)
    return None if data is None else Ring.from_json(json.loads(data))


__all__ = ["METADATA_DIR", "SUFFIX", "stored_ring", "write_ring"]
