"""Copy-on-write merge of one file group: the Spark-free core every write task runs.

Records of a batch are grouped by target file group; each group is merged with the
group's current base file (larger ordering value wins, ties go to the incoming record,
as Hudi's DefaultHoodieRecordPayload) and written as a new base file with Hudi's meta
columns and footer metadata.

Why Arrow end to end: the merge is a hash lookup of the incoming keys in the old file's
key column (``pyarrow.compute.index_in``), one vectorized ordering comparison, two
``take``s and one sort of the result by record key. No pandas object columns and no
per-row Python, so the merge costs about the Parquet I/O it wraps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from tableformat import basefile as bf
from tableformat.fs import IOStats
from tableformat.merge import resolve
from tableformat.precombine import precombine as combine
from tableformat.table import UPSERT_STATS_SCHEMA

_DDL_TYPES = {"string": pa.string(), "long": pa.int64(), "int": pa.int32()}
# The write stat row in Arrow (Spark's applyInArrow needs the exact types).
WRITE_STATS_ARROW = pa.schema([
    pa.field(name, _DDL_TYPES[kind]) for name, kind in
    (part.split() for part in UPSERT_STATS_SCHEMA.split(","))])


@dataclass(frozen=True)
class MergeSpec:
    """Everything a write task needs, small enough to ship inside the task closure."""

    table_uri: str
    instant: str
    key_field: str
    partition_field: str
    ordering_field: str
    data_schema: pa.Schema

    @property
    def file_schema(self) -> pa.Schema:
        """Hudi's five string meta columns, then the data columns."""
        return pa.schema([pa.field(c, pa.string()) for c in bf.META_COLUMNS]
                         + list(self.data_schema))


def _as_arrow(records: pa.Table | pd.DataFrame, schema: pa.Schema) -> pa.Table:
    """The data columns of ``records`` in the table's schema (pandas accepted for callers
    outside the hot path)."""
    if isinstance(records, pd.DataFrame):
        return pa.Table.from_pandas(records[schema.names], schema=schema, preserve_index=False)
    return records.select(schema.names).cast(schema)


def base_file_footer(records: pa.Table,
                     footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]] | None
                     ) -> tuple[dict[str, str], int, str | None, str | None]:
    """A base file's footer (the index's entries and Hudi's min/max record key), the
    index's bytes in it, and the key range. ``records`` are sorted by record key; every
    record deleted gives an empty base file with no range, as Hudi's merge handle.
    ``footer_fn``: the index's footer entries (None: it keeps none)."""
    keys = records.column(bf.RECORD_KEY).combine_chunks()
    footer, index_bytes = footer_fn(keys) if footer_fn is not None else ({}, 0)
    min_key, max_key = (keys[0].as_py(), keys[-1].as_py()) if len(keys) else (None, None)
    if len(keys):
        footer = {bf.MIN_KEY_FOOTER: min_key, bf.MAX_KEY_FOOTER: max_key, **footer}
    return footer, index_bytes, min_key, max_key


def handle_millis(started: float) -> int:
    """Milliseconds since ``started`` (``time.perf_counter``): a write handle's time, as
    Hudi's ``RuntimeStats`` keeps it (``totalCreateTime`` / ``totalUpsertTime``)."""
    return round((time.perf_counter() - started) * 1000)


def meta_columns(spec: MergeSpec, records: pa.Table, partition: str, file_name: str,
                 task_part: str) -> pa.Table:
    """Hudi's five meta columns, then the data columns: a base file's records, or a log
    block's (whose ``_hoodie_file_name`` is the file id, as Hudi's append handle sets
    it). The sequence number is ``{instant}_{task partition}_{record number}``."""
    n = records.num_rows
    seqno = pc.binary_join_element_wise(
        pa.scalar(f"{spec.instant}_{task_part}"),
        pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), "_")
    return pa.Table.from_arrays(
        [pa.repeat(pa.scalar(spec.instant), n), seqno,
         pc.cast(records.column(spec.key_field), pa.string()),
         pa.repeat(pa.scalar(partition), n), pa.repeat(pa.scalar(file_name), n),
         *records.select(spec.data_schema.names).columns], schema=spec.file_schema)


def precombine(records: pa.Table | pd.DataFrame, key_field: str, ordering_field: str,
               schema: pa.Schema | None = None) -> pa.Table:
    """One record per key: the one with the larger ordering value (later arrival on ties).

    Returns the survivors sorted by key.
    """
    table = records if isinstance(records, pa.Table) else \
        pa.Table.from_pandas(records, preserve_index=False)
    if schema is not None:
        table = _as_arrow(table, schema)
    return combine(table, [key_field], ordering_field)


def merge_file_group(
    spec: MergeSpec,
    partition: str,
    file_id: str,
    incoming: pa.Table | pd.DataFrame,
    prev_path: str | None,
    write_token: str,
    footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]] | None,
    bucket_id: int | None = None,
    name_as: tuple[str, str] | None = None,
) -> dict | None:
    """Merge ``incoming`` into the file group's base file and write the new slice.

    Rows of ``incoming`` with ``_hoodie_is_deleted`` true remove their key when they win
    (their ordering value is not older than the stored one, or they have none). Returns
    the write stat, or None when nothing was written (deletes only, no base file yet).
    ``name_as`` = (write token, instant) names the file after another instant: a dual
    write into a file group whose base instant is a pending resize's."""
    from tableformat.table import Table

    started = time.perf_counter()
    table = Table(spec.table_uri)
    key, order = spec.key_field, spec.ordering_field
    schema = spec.file_schema
    names = incoming.column_names if isinstance(incoming, pa.Table) else list(incoming.columns)
    with_marker = spec.data_schema.append(pa.field(bf.IS_DELETED, pa.bool_())) \
        if bf.IS_DELETED in names else spec.data_schema
    fresh = precombine(incoming, key, order, with_marker)
    incoming_bytes = fresh.nbytes
    deletes = np.zeros(fresh.num_rows, dtype=bool)
    if bf.IS_DELETED in names:
        deletes = fresh.column(bf.IS_DELETED).fill_null(False).to_numpy(zero_copy_only=False)
        fresh = fresh.drop_columns([bf.IS_DELETED])
    merge_stats = IOStats()
    if prev_path is not None:
        old = bf.read_base_file(table.fs, table.abs_path(prev_path), merge_stats)
        old = old.select(schema.names).cast(schema)
    else:
        old = schema.empty_table()

    token_for_name, instant_for_name = name_as or (write_token, spec.instant)
    file_name = bf.BaseFileName(file_id, token_for_name, instant_for_name).name
    rel_path = f"{partition}/{file_name}" if partition else file_name
    fresh_keys = fresh.column(key).combine_chunks()
    fresh = meta_columns(spec, fresh, partition, file_name, write_token.split("-")[0])

    r = resolve(old.column(key).combine_chunks(), old.column(order), fresh_keys,
                fresh.column(order), deletes)
    keep_old, keep_new, is_update, deleted = r.keep_old, r.keep_new, r.is_update, r.deleted
    if prev_path is None and not keep_new.any():
        return None  # only deletes of keys this new file group never had
    merged = pa.concat_tables([old.filter(pa.array(keep_old)),
                               fresh.filter(pa.array(keep_new))])
    merged = merged.take(pc.sort_indices(merged.column(bf.RECORD_KEY)))
    merged = merged.set_column(
        schema.get_field_index(bf.FILE_NAME), schema.field(bf.FILE_NAME),
        pa.repeat(pa.scalar(file_name), merged.num_rows))

    footer, index_bytes, min_key, max_key = base_file_footer(merged, footer_fn)
    table.fs.create_dir(table.abs_path(partition), recursive=True)
    size = bf.write_base_file(table.fs, table.abs_path(rel_path), merged, footer)
    millis = handle_millis(started)
    return {
        "partitionPath": partition, "fileId": file_id, "path": rel_path,
        "prevCommit": bf.BaseFileName.parse(prev_path).instant if prev_path else "null",
        "numWrites": merged.num_rows, "numInserts": int((~is_update & ~deletes).sum()),
        "numUpdateWrites": int((is_update & ~deletes).sum()),
        "numDeletes": int(deleted.sum()), "totalWriteBytes": size,
        "indexBytes": index_bytes, "mergeFilesRead": merge_stats.files_read,
        "mergeBytesRead": merge_stats.bytes_read, "minRecordKey": min_key,
        "maxRecordKey": max_key, "bucketId": bucket_id, "incomingBytes": incoming_bytes,
        "totalCreateTime": 0 if prev_path else millis,
        "totalUpsertTime": millis if prev_path else 0,
    }
