"""Undo an instant that failed in the writer that started it, leaving no trace.

Why apart from :meth:`Table.rollback_pending`: that one cleans up after a writer that
died, on the next writer's start, and records a ``.rollback`` instant as Hudi does. A
write that fails while its writer is alive (a Spark task raised, a refusal only a task
could see) is undone on the spot and the table is left byte-for-byte as it was: the
instant's base files and index files, the partition metafiles it created, its
``requested``/``inflight`` timeline files and the folders it made are removed. Nothing
of the instant was ever visible (its commit file was never written), so no reader can
tell it existed.
"""

from __future__ import annotations

import pyarrow.fs as pafs

from tableformat import fs as tfs
from tableformat import hoodie_properties as hp
from tableformat import partition_meta
from tableformat.errors import IndexBenchError
from tableformat.hudi_log.names import LogFileName
from tableformat.layout import HOODIE
from tableformat.markers import delete_markers, marked_files


def abort_instant(table, instant: str) -> list[str]:
    """Delete every file ``instant`` wrote; returns their table-relative paths.

    The caller holds the writer lock and the instant has not completed."""
    table._require_lock()
    if instant in {i for i, _ in table.completed_instants()}:
        raise IndexBenchError(f"internal: instant {instant} completed; it cannot be aborted")
    deleted, folders = delete_instant_files(table, [instant], own_metafiles=True)
    delete_timeline_files(table, [instant])
    _remove_empty_folders(table, folders)
    return deleted


# Folders under .hoodie whose files belong to an instant: the metadata table's files
# (named like base files), and the bucket indexes' versioned metadata under
# ``.bucket_index``, named ``<instant>.<suffix>`` — RFC-89's
# ``partition_bucket_index_meta/configs/<instant>.hashing_config`` and RFC-42's
# ``consistent_hashing_metadata/<partition>/<instant>.hashing_meta`` — which a
# rolled-back instant must not leave behind.
INSTANT_METADATA_DIRS = (".hoodie/metadata/", ".hoodie/.bucket_index/")


def delete_instant_files(table, instants: list[str], own_metafiles: bool = False
                         ) -> tuple[list[str], set[str]]:
    """Delete the base, log and RLI files of ``instants`` (and the log files of slices
    they start) and temporary partition metafiles
    (with ``own_metafiles``, also metafiles those instants created): one recursive
    listing. Returns the deleted table-relative paths and the folders they were in.
    Shared by the abort here and :meth:`Table.rollback_pending`."""
    suffixes = tuple(f"_{i}.parquet" for i in instants)
    deleted: list[str] = []
    folders: set[str] = set()
    for instant in instants:  # log files: their names do not say their instant
        for rel in marked_files(table.fs, table.root, instant):
            path = table.abs_path(rel)
            if tfs.exists(table.fs, path):
                table.fs.delete_file(path)
                deleted.append(rel)
                folders.add(path.rsplit("/", 1)[0])
        delete_markers(table.fs, table.root, instant)
    for info in tfs.list_files(table.fs, table.root, recursive=True):
        rel = info.path[len(table.root):].lstrip("/")
        name = info.base_name
        if rel.startswith(HOODIE + "/") and not rel.startswith(INSTANT_METADATA_DIRS):
            continue  # the timeline: delete_timeline_files
        if rel.startswith(INSTANT_METADATA_DIRS[1:]):  # <instant>.hashing_config / _meta
            if name[:17] in instants and name[17:18] == ".":
                table.fs.delete_file(info.path)
                deleted.append(rel)
                folders.add(info.path.rsplit("/", 1)[0])
            continue
        # a file named after another (pending) instant whose write token starts with one
        # of these: a dual write into a resize's child file group (consistent-hashing);
        # a log file of a slice one of these starts: on merge-on-read, such a dual write
        # (a completed delta commit lists it; the slice dies with the resize)
        ours = name.endswith(suffixes) or any(f"_{i}-" in name for i in instants) \
            or _log_base_instant(name) in instants
        if partition_meta.is_partition_metafile(name):
            ours = name != partition_meta.FILE_NAME or (
                own_metafiles and _metafile_instant(table, info) in instants)
        if ours:
            table.fs.delete_file(info.path)
            deleted.append(rel)
            folders.add(info.path.rsplit("/", 1)[0])
    return sorted(deleted), folders


def _log_base_instant(name: str) -> str | None:
    """The base instant in a log file's name (None: not a log file)."""
    try:
        return LogFileName.parse(name).base_instant
    except ValueError:
        return None


def delete_timeline_files(table, instants: list[str]) -> None:
    """The requested and inflight files of ``instants`` and their temporary names."""
    for name in sorted(i.base_name for i in tfs.list_files(table.fs, table.meta)):
        if name[:17] in instants and name[17:18] == ".":
            table.fs.delete_file(tfs.join(table.meta, name))


def _metafile_instant(table, info: pafs.FileInfo) -> str | None:
    try:
        return hp.parse(tfs.read_bytes(table.fs, info.path).decode()).get("commitTime")
    except (OSError, UnicodeDecodeError):
        return None


def _remove_empty_folders(table, folders: set[str]) -> None:
    """Folders the instant's files were in, and their parents, once empty (never the
    table root or ``.hoodie``)."""
    keep = {table.root.rstrip("/"), table.meta.rstrip("/")}
    for folder in sorted(folders, key=len, reverse=True):
        while folder.rstrip("/") not in keep and folder.startswith(table.root):
            sel = pafs.FileSelector(folder, allow_not_found=True)
            if table.fs.get_file_info(sel):
                break
            table.fs.delete_dir(folder)
            folder = folder.rsplit("/", 1)[0]
