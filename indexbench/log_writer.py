"""Merge-on-read write of one file group: append the batch's records to a new log file.

What Hudi's ``HoodieAppendHandle`` does on a file system without append (a local or
object store: every delta commit starts a new log file version): the file group's
incoming records, pre-combined, become one data block (Avro by default, Parquet with
``hoodie.logfile.data.block.format=parquet``) with Hudi's meta columns, and its deletes
one delete block (key, partition, ordering value). Nothing of the file slice is read:
that is merge-on-read's cheaper write, paid back on read and at compaction.

Counts follow the append handle: a record to a file group that already exists is an
update (the index located it), one to a new file group an insert. An index that does
not read the file group cannot tell more (Hudi's bucket indexes cannot either).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from indexbench.writer import MergeSpec, handle_millis, meta_columns, precombine
from tableformat import basefile as bf
from tableformat import hudi_log
from tableformat.fs import resolve
from tableformat.hudi_log.constants import BASE_LOG_VERSION
from tableformat.hudi_log.names import LogFileName
from tableformat.markers import create_marker
from writeclient.faults import hang_if

HANG_IN_LOG_APPEND = "log_append_in_task"  # fault injection: a task hangs after its log file


@dataclass(frozen=True)
class LogTarget:
    """Where a file group's next log file goes: the slice's base instant (this instant
    for a new file group), the next log version, and whether the group exists."""

    base_instant: str
    version: int = BASE_LOG_VERSION
    exists: bool = False
    base_file: str | None = None  # the slice's base file name, for the write stat
    log_files: tuple[str, ...] = ()  # the slice's log file names, for the write stat


def append_file_group(spec: MergeSpec, partition: str, file_id: str, incoming: pa.Table,
                      target: LogTarget, write_token: str, block_format: str,
                      avro_schema: str, bucket_id: int | None = None) -> dict | None:
    """Write the file group's new log file; its ``HoodieDeltaWriteStat`` (None when
    there is nothing to write: deletes only, to a file group that does not exist)."""
    started = time.perf_counter()
    key, order = spec.key_field, spec.ordering_field
    with_marker = spec.data_schema.append(pa.field(bf.IS_DELETED, pa.bool_())) \
        if bf.IS_DELETED in incoming.column_names else spec.data_schema
    fresh = precombine(incoming, key, order, with_marker)
    deletes = np.zeros(fresh.num_rows, dtype=bool)
    if bf.IS_DELETED in fresh.column_names:
        deletes = fresh.column(bf.IS_DELETED).fill_null(False).to_numpy(zero_copy_only=False)
        fresh = fresh.drop_columns([bf.IS_DELETED])
    upserts = fresh.filter(pa.array(~deletes))
    removed = fresh.filter(pa.array(deletes))
    if not target.exists and upserts.num_rows == 0:
        return None
    blocks = []
    if upserts.num_rows:
        task_part = write_token.split("-")[0]
        records = meta_columns(spec, upserts, partition, file_id, task_part)
        blocks.append(hudi_log.encode_data_block(records, avro_schema, spec.instant,
                                                 block_format))
    if removed.num_rows:
        blocks.append(hudi_log.encode_delete_block(
            removed.column(key), pa.repeat(pa.scalar(partition), removed.num_rows),
            removed.column(order), spec.instant, avro_schema))
    name = LogFileName(file_id, target.base_instant, target.version, write_token).name
    rel_path = f"{partition}/{name}" if partition else name
    fs, root = resolve(spec.table_uri)
    create_marker(fs, root, spec.instant, rel_path)
    fs.create_dir(f"{root}/{partition}" if partition else root, recursive=True)
    size = hudi_log.write_log_file(fs, f"{root}/{rel_path}", blocks)
    hang_if(HANG_IN_LOG_APPEND)
    n = upserts.num_rows
    return {
        "partitionPath": partition, "fileId": file_id, "path": rel_path,
        "prevCommit": target.base_instant, "numWrites": n,
        "numInserts": 0 if target.exists else n, "numUpdateWrites": n if target.exists else 0,
        "numDeletes": removed.num_rows, "totalWriteBytes": size, "indexBytes": 0,
        "mergeFilesRead": 0, "mergeBytesRead": 0,
        "minRecordKey": None, "maxRecordKey": None, "bucketId": bucket_id,
        # HoodieDeltaWriteStat's own fields
        "logVersion": target.version, "logOffset": 0,
        "baseFile": target.base_file or "",
        "logFiles": ",".join([*target.log_files, name]),
        "totalLogBlocks": len(blocks), "totalLogRecords": n + removed.num_rows,
        "incomingBytes": fresh.nbytes,
        # Hudi's HoodieAppendHandle times an append as an upsert
        "totalCreateTime": 0, "totalUpsertTime": handle_millis(started),
    }
