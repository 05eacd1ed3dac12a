"""``.hoodie/.bucket_index/<kind>/<partition>/<instant>.hashing_meta``: versioned routing
state on disk, laid out as Hudi keeps consistent hashing's rings.

One file per partition and version, written before its replacecommit completes, so a
version takes effect exactly with its instant; a reader takes the latest one whose
instant completed, and a rolled-back instant's file goes with it
(:mod:`tableformat.abort` deletes ``.bucket_index`` files named after the instant).
consistent-hashing keeps its rings here, extendible-hash its directories; each owns
its folder and bytes.
"""

from __future__ import annotations

from tableformat import fs as tfs

SUFFIX = ".hashing_meta"


def meta_folder(table, metadata_dir: str, partition: str) -> str:
    """The absolute folder of ``partition``'s versions under ``metadata_dir``."""
    return table.abs_path(f"{metadata_dir}/{partition}" if partition else metadata_dir)


def write_meta(table, metadata_dir: str, partition: str, instant: str, data: bytes) -> int:
    """Write one version of ``partition``'s state, atomically; returns the bytes written."""
    folder = meta_folder(table, metadata_dir, partition)
    table.fs.create_dir(folder, recursive=True)
    tfs.write_bytes_atomic(table.fs, f"{folder}/{instant}{SUFFIX}", data)
    return len(data)


def latest_meta(table, metadata_dir: str, partition: str, completed: set[str]
                ) -> bytes | None:
    """The bytes of ``partition``'s latest version whose instant completed (None: none)."""
    folder = meta_folder(table, metadata_dir, partition)
    if not tfs.exists(table.fs, folder):
        return None
    names = sorted((i.base_name for i in tfs.list_files(table.fs, folder)
                    if i.base_name.endswith(SUFFIX)), reverse=True)
    for name in names:
        if name[:-len(SUFFIX)] in completed:
            return tfs.read_bytes(table.fs, f"{folder}/{name}")
    return None


__all__ = ["SUFFIX", "latest_meta", "meta_folder", "write_meta"]
