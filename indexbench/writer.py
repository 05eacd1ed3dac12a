"""Copy-on-write merge of one file group: the Spark-free core every write task runs.

Records of a batch are grouped by target file group; each group is merged with the
group's current base file (larger ordering value wins, ties go to the incoming record,
as Hudi's DefaultHoodieRecordPayload) and written as a new base file with Hudi's meta
columns and footer metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from tableformat import basefile as bf
from tableformat.fs import IOStats
from tableformat.table import WRITE_STATS_SCHEMA  # noqa: F401 (re-exported)


@dataclass(frozen=True)
class MergeSpec:
    """Everything a write task needs, small enough to ship inside the task closure."""

    table_uri: str
    instant: str
    key_field: str
    partition_field: str
    ordering_field: str
    data_schema: pa.Schema


def precombine(records: pd.DataFrame, key_field: str, ordering_field: str) -> pd.DataFrame:
    """One record per key: the one with the larger ordering value (later arrival on ties)."""
    ordered = records.assign(_arrival=np.arange(len(records)))
    ordered = ordered.sort_values([ordering_field, "_arrival"], kind="stable")
    return ordered.drop_duplicates(key_field, keep="last").drop(columns="_arrival")


def merge_file_group(
    spec: MergeSpec,
    partition: str,
    file_id: str,
    incoming: pd.DataFrame,
    prev_path: str | None,
    write_token: str,
    footer_fn: Callable[[pa.Array], tuple[dict[str, str], int]],
    bucket_id: int | None = None,
) -> dict:
    """Merge ``incoming`` into the file group's base file and write the new slice."""
    from tableformat.table import Table

    table = Table(spec.table_uri)
    key, order = spec.key_field, spec.ordering_field
    data_cols = spec.data_schema.names
    incoming = precombine(incoming[data_cols], key, order)
    merge_stats = IOStats()
    if prev_path is not None:
        old = bf.read_base_file(table.fs, table.abs_path(prev_path), merge_stats).to_pandas()
        old_keys = old[key].to_numpy(dtype=object)
    else:
        old = pd.DataFrame(columns=bf.META_COLUMNS + data_cols)
        old_keys = np.empty(0, dtype=object)
    is_update = np.isin(incoming[key].to_numpy(dtype=object), old_keys)

    file_name = bf.BaseFileName(file_id, write_token, spec.instant).name
    rel_path = f"{partition}/{file_name}" if partition else file_name
    task_part = write_token.split("-")[0]
    fresh = incoming.copy()
    fresh.insert(0, bf.COMMIT_TIME, spec.instant)
    fresh.insert(1, bf.COMMIT_SEQNO, [f"{spec.instant}_{task_part}_{i}" for i in range(len(fresh))])
    fresh.insert(2, bf.RECORD_KEY, fresh[key].astype(str))
    fresh.insert(3, bf.PARTITION_PATH, partition)
    fresh.insert(4, bf.FILE_NAME, file_name)

    both = pd.concat([old.assign(_src=0), fresh.assign(_src=1)], ignore_index=True)
    both = both.sort_values([key, order, "_src"], kind="stable")
    merged = both.drop_duplicates(key, keep="last").drop(columns="_src")
    merged[bf.FILE_NAME] = file_name
    merged = merged.sort_values(bf.RECORD_KEY, kind="stable").reset_index(drop=True)

    schema = pa.schema([pa.field(c, pa.string()) for c in bf.META_COLUMNS]
                       + list(spec.data_schema))
    out = pa.Table.from_pandas(merged[bf.META_COLUMNS + data_cols], schema=schema,
                               preserve_index=False)
    keys = out.column(bf.RECORD_KEY).combine_chunks()
    footer, index_bytes = footer_fn(keys)
    min_key, max_key = merged[bf.RECORD_KEY].iat[0], merged[bf.RECORD_KEY].iat[-1]
    footer = {bf.MIN_KEY_FOOTER: min_key, bf.MAX_KEY_FOOTER: max_key, **footer}
    table.fs.create_dir(table.abs_path(partition), recursive=True)
    size = bf.write_base_file(table.fs, table.abs_path(rel_path), out, footer)
    return {
        "partition": partition, "fileId": file_id, "path": rel_path,
        "prevCommit": bf.BaseFileName.parse(prev_path).instant if prev_path else "null",
        "numWrites": len(merged), "numInserts": int((~is_update).sum()),
        "numUpdateWrites": int(is_update.sum()), "numDeletes": 0, "totalWriteBytes": size,
        "indexBytes": index_bytes, "mergeFilesRead": merge_stats.files_read,
        "mergeBytesRead": merge_stats.bytes_read, "minRecordKey": min_key,
        "maxRecordKey": max_key, "bucketId": bucket_id,
    }
