"""Hudi's direct write markers: ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>``.

A write task creates a marker before it creates a data file, so a rollback can find
every file an unfinished instant may have written without listing the table (Hudi's
``DirectWriteMarkers``, the default on a local file system). Base files carry their
instant in their name and are found by it; log files do not (their name holds the
*base* instant of their file slice), so every log file is written behind an ``APPEND``
marker. The commit deletes the instant's markers (``quietDeleteMarkerDir``).
"""

from __future__ import annotations

import pyarrow.fs as pafs

from tableformat import fs as tfs
from tableformat.layout import HOODIE

TEMP = ".temp"
APPEND = "APPEND"
CREATE = "CREATE"


def marker_dir(root: str, instant: str) -> str:
    return tfs.join(root, f"{HOODIE}/{TEMP}/{instant}")


def create_marker(fs: pafs.FileSystem, root: str, instant: str, rel_path: str,
                  io_type: str = APPEND) -> None:
    """Mark ``rel_path`` (a table-relative data file path) as written by ``instant``."""
    partition, _, name = rel_path.rpartition("/")
    folder = tfs.join(marker_dir(root, instant), partition) if partition \
        else marker_dir(root, instant)
    fs.create_dir(folder, recursive=True)
    with fs.open_output_stream(tfs.join(folder, f"{name}.marker.{io_type}")):
        pass


def marked_files(fs: pafs.FileSystem, root: str, instant: str) -> list[str]:
    """Table-relative paths of the data files ``instant``'s markers name."""
    top = marker_dir(root, instant)
    if not tfs.exists(fs, top):
        return []
    out = []
    for info in tfs.list_files(fs, top, recursive=True):
        rel = info.path[len(top):].lstrip("/")
        out.append(rel.rsplit(".marker.", 1)[0])
    return sorted(out)


def delete_markers(fs: pafs.FileSystem, root: str, instant: str) -> None:
    """Drop ``instant``'s marker folder (after its commit, or its rollback)."""
    top = marker_dir(root, instant)
    if tfs.exists(fs, top):
        fs.delete_dir(top)
