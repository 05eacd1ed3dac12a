"""The directories on disk: ``.hoodie/.bucket_index/extendible_hashing_metadata``.

Laid out as Hudi keeps consistent hashing's rings (``consistent_hashing_metadata/
<partition>/<instant>.hashing_meta``): one ``<instant>.hashing_meta`` per partition and
directory version, written by the split before its replacecommit completes, so a
version takes effect exactly with its replacecommit; a reader takes the latest one whose
instant completed, and a rolled-back split's file goes with its instant
(:mod:`tableformat.abort` deletes ``.bucket_index`` files named after it). The initial
directory is not written: it is a pure function of ``hoodie.bucket.index.num.buckets``.
The bytes are those of :attr:`Directory.stored`, which the replacecommit's
extraMetadata also holds, so ``verify`` compares the two.
"""

from __future__ import annotations

from indexes.bucket.hashing_meta import SUFFIX, latest_meta, write_meta
from indexes.extendible_hash.core import Directory, parse_directory

METADATA_DIR = ".hoodie/.bucket_index/extendible_hashing_metadata"


def write_directory(table, directory: Directory) -> int:
    """Write one partition's directory version; returns the bytes written."""
    return write_meta(table, METADATA_DIR, directory.partition, directory.instant,
                      directory.stored)


def stored_directory(table, partition: str, completed: set[str]) -> Directory | None:
    """The latest ``.hashing_meta`` of ``partition`` whose instant completed (None: none)."""
    data = latest_meta(table, METADATA_DIR, partition, completed)
    return None if data is None else parse_directory(data.decode())


__all__ = ["METADATA_DIR", "SUFFIX", "stored_directory", "write_directory"]
