"""Hudi's create handle rolls a new file group over: where one planned file becomes several.

Inserts the planner sends to a new file group are written by Hudi's
``HoodieCreateHandle`` through ``CopyOnWriteInsertHandler``: before each record it asks
``canWrite()``, and on false it closes the file and opens the next file group,
``<prefix>-1``, ``<prefix>-2``, ... (``getNextFileId``). ``HoodieBaseParquetWriter``
answers from its Parquet writer's own size estimate, checked only at record counts it
schedules: at ``n >= next`` records, with ``size`` the writer's data size,
``avg = max(size / n, 1)``; false when ``size > maxFileSize - 2 * avg``, else
``next = n + min(max(100, (maxFileSize / avg - n) / 2), 10000)`` (``next`` starts at
100, all long division). ``maxFileSize`` is ``hoodie.parquet.max.file.size`` plus
``round(max × hoodie.parquet.compression.ratio)``.

The writer's data size, before its first page or row group is flushed (1 MB and
120 MB, Hudi's defaults, so always at these file sizes), is the sum of its columns'
buffered sizes: parquet-mr's ``FallbackValuesWriter`` counts the raw plain size of every
value it was given, dictionary or not (a string ``len + 4``, a long or double 8, an int
or float 4), and the definition levels of a column without nulls buffer nothing
(:func:`raw_bytes`). Measured on Hudi 1.2's own merge-on-read bloom table of the
default comparison: every file it rolled over (445 records) is where :func:`roll_over`
puts the cut from that file's rows.

A bucket index's layout fixes its file groups (``determinesNumberOfFiles``), so Hudi
never rolls its files over; only the planner's new file groups do. The meta columns'
values are modelled as our writer writes them, except the write task's Spark partition,
which the planner cannot know: taken as ``0`` (docs/fidelity.md, "Bloom on merge-on-read").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from writeclient.sizing import COMPRESSION_RATIO

FIRST_CHECK = 100  # HoodieBaseParquetWriter: the first size check, and the least step
MAX_CHECK_STEP = 10000  # ... and the largest
_BINARY_OVERHEAD = 4  # PLAIN's length prefix, which the raw size counts
_TASK_PARTITION = "0"  # the write task's partition in the meta columns' model


def max_file_size(max_size: int, ratio: float = COMPRESSION_RATIO) -> int:
    """``HoodieBaseParquetWriter``'s ``maxFileSize``: the configured one plus
    ``Math.round(max × ratio)`` (Java rounds half up)."""
    return int(max_size) + int(np.floor(max_size * ratio + 0.5))


def column_raw_bytes(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each value's raw plain size as parquet-mr buffers it (0 for a null)."""
    t = col.type
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t):
        lengths = pc.fill_null(pc.binary_length(col), 0).to_numpy(zero_copy_only=False)
        return np.where(valid, lengths.astype(np.int64) + _BINARY_OVERHEAD, 0)
    if pa.types.is_boolean(t):  # bit-packed: an eighth of a byte, counted as none
        return np.zeros(len(col), np.int64)
    width = t.bit_width // 8
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        width = 8
    return np.where(valid, width, 0).astype(np.int64)


def raw_bytes(records: pa.Table, key_field: str, partition: str, instant: str,
              file_id: str, data_columns: list[str]) -> np.ndarray:
    """Each record's raw size in a new base file of ``file_id``, the sequence number's
    record-number digits left out (:func:`roll_over` adds them, as they restart in each
    rolled-over file): Hudi's five meta columns as our writer fills them, then
    ``data_columns``."""
    n = records.num_rows
    meta = (len(instant) + _BINARY_OVERHEAD  # _hoodie_commit_time
            + len(f"{instant}_{_TASK_PARTITION}_") + _BINARY_OVERHEAD  # _hoodie_commit_seqno
            + len(partition) + _BINARY_OVERHEAD  # _hoodie_partition_path
            + len(f"{file_id}_{_TASK_PARTITION}-0-0_{instant}.parquet")
            + _BINARY_OVERHEAD)  # _hoodie_file_name
    out = np.full(n, meta, np.int64)
    out += column_raw_bytes(pc.cast(records.column(key_field), pa.string()))  # record key
    for name in data_columns:
        out += column_raw_bytes(records.column(name))
    return out


def _digits(n: int) -> np.ndarray:
    """Decimal digits of 0 .. n-1 (a sequence number's record number)."""
    return np.floor(np.log10(np.maximum(np.arange(n), 1))).astype(np.int64) + 1


def roll_over(raw: np.ndarray, max_size: int, ratio: float = COMPRESSION_RATIO) -> list[int]:
    """The records each file of one create handle gets, in order, for records of
    ``raw`` bytes each (:func:`raw_bytes`) written in that order: Hudi's ``canWrite``
    at the counts it schedules. One cumulative sum, then one loop step per size check
    (a few per file)."""
    raw = np.asarray(raw, np.int64)
    limit = max_file_size(max_size, ratio)
    total = np.concatenate(([0], np.cumsum(raw)))  # bytes of the first i records
    digits = np.cumsum(_digits(len(raw)))  # record numbers restart in every file
    sizes: list[int] = []
    start = 0
    while start < len(raw):
        left, check = len(raw) - start, FIRST_CHECK
        while True:
            n = min(check, left)
            if n == left:
                break
            size = int(total[start + n] - total[start] + digits[n - 1])
            avg = max(size // n, 1)
            if size > limit - 2 * avg:
                break
            check = n + min(max(FIRST_CHECK, (limit // avg - n) // 2), MAX_CHECK_STEP)
        sizes.append(n)
        start += n
    return sizes


def rolled_file_id(file_id: str, k: int) -> str:
    """The k-th file group a create handle opened from ``file_id`` (k = 0 is itself):
    Hudi's ``getNextFileId``, the prefix before the last ``-`` and the count after it."""
    return file_id if k == 0 else f"{file_id.rsplit('-', 1)[0]}-{k}"


def rollover_order(hashes: np.ndarray, keys: pa.Array) -> np.ndarray:
    """The order a new file group's records reach its create handle: Hudi writes them
    as its shuffle delivers them, in no key order, so ours take the order of their
    insert hash (the planner's MD5 draw), ties by key, sorted in Arrow. Rolled-over
    files then overlap in key range, as Hudi's do, and the simulator can find a key's
    file from its hash."""
    t = pa.table({"h": np.asarray(hashes, np.int64), "k": pc.cast(keys, pa.string())})
    return pc.sort_indices(t, sort_keys=[("h", "ascending"), ("k", "ascending")]
                           ).to_numpy()


def rolled_file_ids(records: pa.Table, bucket: np.ndarray, hashes: np.ndarray,
                    file_ids: list[str], first_new: int, key_field: str, partition: str,
                    instant: str, data_columns: list[str], max_size: int,
                    ratio: float = COMPRESSION_RATIO) -> pa.Array:
    """The file group of each of a partition's inserts, drawn into planned ``bucket``s
    of ``file_ids``: a bucket from ``first_new`` on is a new file group, whose create
    handle rolls over (:func:`roll_over`) in :func:`rollover_order`; the small files
    before it are merged into, never rolled over."""
    ids = list(file_ids)
    out = np.asarray(bucket, np.int64).copy()  # each record's index into ids
    keys = records.column(key_field)
    for b in np.unique(out[out >= first_new]).tolist():
        rows = np.flatnonzero(out == b)
        if len(rows) <= FIRST_CHECK:  # no size check before the 100th record
            continue
        order = rows[rollover_order(hashes[rows], keys.take(pa.array(rows)))]
        raw = raw_bytes(records.take(pa.array(order)), key_field, partition, instant,
                        file_ids[b], data_columns)
        sizes = roll_over(raw, max_size, ratio)
        ends = np.cumsum(sizes)
        for k in range(1, len(sizes)):
            out[order[ends[k - 1]:ends[k]]] = len(ids)
            ids.append(rolled_file_id(file_ids[b], k))
    return pa.array(ids, pa.string()).take(pa.array(out))
