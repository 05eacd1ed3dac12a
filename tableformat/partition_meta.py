"""``<partition>/.hoodie_partition_metadata``: Hudi's marker of a partition folder.

Why: Hudi finds a table's partitions without its metadata table by listing folders that
hold this file (``FSUtils.getAllPartitionPaths``), and reads the partition depth from it.
The text form is a Java properties file (``commitTime``, ``partitionDepth``), written as
``HoodiePartitionMetadata.trySave`` writes it: once, by the first instant that writes
into the partition, atomically (temporary name, then rename). It is not data: anything
that lists a partition's files skips names starting with :data:`PREFIX`.
"""

from __future__ import annotations

import pyarrow.fs as pafs

from tableformat import fs as tfs
from tableformat import hoodie_properties as hp

PREFIX = ".hoodie_partition_metadata"
FILE_NAME = PREFIX  # the properties-file form has no extension


def is_partition_metafile(name: str) -> bool:
    """Whether a file name (base name) is a partition metafile or its temporary form."""
    return name.rsplit("/", 1)[-1].startswith(PREFIX)


def partition_depth(partition: str) -> int:
    """Folders between the table root and the partition (``2026/01/02`` → 3)."""
    return len([p for p in partition.split("/") if p])


def render(instant: str, partition: str) -> bytes:
    """The file's text, as Java's ``Properties.store(out, "partition metadata")``."""
    return hp.store({"commitTime": instant, "partitionDepth": str(partition_depth(partition))},
                    "partition metadata").encode()


def ensure(fs: pafs.FileSystem, root: str, partition: str, instant: str,
           names: set[str] | None = None) -> bool:
    """Write the partition's metafile unless it exists; returns whether it was written.

    ``names`` are the partition's file names when the caller has just listed it (saves
    a call per partition on object stores)."""
    present = FILE_NAME in names if names is not None else \
        tfs.exists(fs, tfs.join(root, partition, FILE_NAME))
    if present:
        return False
    folder = tfs.join(root, partition) if partition else root
    fs.create_dir(folder, recursive=True)
    tfs.write_bytes_atomic(fs, tfs.join(folder, FILE_NAME), render(instant, partition))
    return True


def missing(fs: pafs.FileSystem, root: str, partitions: list[str]) -> list[str]:
    """Problems for ``verify``: partitions without their metafile (tables written before
    the project wrote them), which Hudi's listing without a metadata table cannot find."""
    return [f"partition {p!r} has no {FILE_NAME} (Hudi's file listing would not find it)"
            for p in partitions if not tfs.exists(fs, tfs.join(root, p, FILE_NAME))]
