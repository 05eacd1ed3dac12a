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

from indexes.extendible_hash.core import Directory, parse_directory
from tableformat import fs as tfs

METADATA_DIR = ".hoodie/.bucket_index/extendible_hashing_metadata"
SUFFIX = ".hashing_meta"


def directory_path(table, partition: str, instant: str) -> str:
    folder = f"{METADATA_DIR}/{partition}" if partition else METADATA_DIR
    return table.abs_path(f"{folder}/{instant}{SUFFIX}")


def write_directory(table, directory: Directory) -> int:
    """Write one partition's directory version; returns the bytes written."""
    path = directory_path(table, directory.partition, directory.instant)
    table.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    tfs.write_bytes_atomic(table.fs, path, directory.stored)
    return len(directory.stored)


def stored_directory(table, partition: str, completed: set[str]) -> Directory | None:
    """The latest ``.hashing_meta`` of ``partition`` whose instant completed (None: none)."""
    folder = table.abs_path(f"{METADATA_DIR}/{partition}" if partition else METADATA_DIR)
    if not tfs.exists(table.fs, folder):
        return None
    names = sorted((i.base_name for i in tfs.list_files(table.fs, folder)
                    if i.base_name.endswith(SUFFIX)), reverse=True)
    for name in names:
        if name[:-len(SUFFIX)] in completed:
            return parse_directory(tfs.read_bytes(table.fs, f"{folder}/{name}").decode())
    return None


__all__ = ["METADATA_DIR", "SUFFIX", "directory_path", "stored_directory", "write_directory"]
