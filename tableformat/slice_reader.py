"""Read one file slice as its records: the base file, merged with its log files.

A copy-on-write slice is its base file. A merge-on-read slice folds its log files over
the base file in the order they were committed (:func:`tableformat.merge.fold`): data
blocks upsert, delete blocks delete, rollback command blocks void the blocks of the
instant they name (Hudi's ``HoodieMergedLogRecordScanner``). Blocks of an instant that
is not completed are skipped: a reader never sees an unfinished delta commit. Every
byte is counted: log files read and their bytes apart from the base file's, and the
seconds the merge took, so merge-on-read's read amplification is measured, not modelled.

``read_optimized``: the base file only (Hudi's read-optimized query), which misses
whatever the logs hold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from tableformat import basefile as bf
from tableformat import hudi_log
from tableformat.fs import IOStats
from tableformat.merge import fold
from tableformat.precombine import precombine


@dataclass
class LogReadStats:
    """What reading the logs of file slices cost."""

    log_files_read: int = 0
    log_bytes_read: int = 0
    log_blocks_read: int = 0
    log_records_read: int = 0
    merge_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


def read_log_blocks(fs: pafs.FileSystem, path: str, stats: IOStats | None = None,
                    log_stats: LogReadStats | None = None) -> list:
    """The blocks of one log file, every byte counted (by the codec's reader)."""
    io = IOStats()
    blocks = hudi_log.read_log_file(fs, path, stats=io)
    if stats is not None:
        stats.files_read += io.files_read
        stats.bytes_read += io.bytes_read
        stats.paths += io.paths
    if log_stats is not None:
        log_stats.log_files_read += io.files_read
        log_stats.log_bytes_read += io.bytes_read
    return blocks


def read_slice(fs: pafs.FileSystem, root: str, file_slice, key: str, order: str,
               completed: set[str] | None = None, stats: IOStats | None = None,
               log_stats: LogReadStats | None = None, columns: list[str] | None = None,
               read_optimized: bool = False) -> pa.Table:
    """The slice's records (Hudi's meta columns, then the data), sorted by record key
    when logs were merged. ``completed``: the completed instants (None: every block's
    instant counts as completed, e.g. a snapshot taken under the writer lock)."""
    base = None
    if file_slice.path is not None:
        base = bf.read_base_file(fs, f"{root}/{file_slice.path}", stats)
    if read_optimized or not file_slice.logs:
        if base is None:
            return pa.table({})
        return base.select(columns) if columns else base
    t0 = time.perf_counter()
    layers = []
    for log in file_slice.logs:
        layers += read_log_blocks(fs, f"{root}/{log.path}", stats, log_stats)
    blocks = live_blocks(layers, completed)
    if log_stats is not None:
        log_stats.log_blocks_read += len(blocks)
        log_stats.log_records_read += sum(b.records.num_rows for b in blocks
                                          if isinstance(b, hudi_log.DataBlock))
    state = merge_blocks(base, blocks, order)
    if state is None:
        return pa.table({})
    state = state.take(pc.sort_indices(state.column(bf.RECORD_KEY)))
    if log_stats is not None:
        log_stats.merge_s += time.perf_counter() - t0
    return state.select(columns) if columns else state


def merge_blocks(base: pa.Table | None, blocks: list, order: str) -> pa.Table | None:
    """The records left after applying ``blocks`` in order over ``base``.

    Without delete blocks the fold is one pre-combine over the base and every data
    block in commit order (the larger ordering value wins, the later record on ties:
    exactly what folding block by block gives), one sort for the whole slice. A delete
    forgets the key's ordering value (a later record of any value comes back), which a
    single pre-combine cannot express, so slices with deletes fold block by block."""
    data = [b.records for b in blocks if isinstance(b, hudi_log.DataBlock)]
    schema = base.schema if base is not None else (data[0].schema if data else None)
    if schema is None:
        return None
    data = [d if d.schema == schema else d.select(schema.names).cast(schema) for d in data]
    if not any(isinstance(b, hudi_log.DeleteBlock) for b in blocks):
        layers = ([base] if base is not None else []) + data
        return precombine(pa.concat_tables(layers), [bf.RECORD_KEY], order)
    state = base if base is not None else schema.empty_table()
    no_keys, no_order = pa.array([], pa.string()), pa.array([], schema.field(order).type)
    records = iter(data)
    for block in blocks:
        if isinstance(block, hudi_log.DataBlock):
            upserts = precombine(next(records), [bf.RECORD_KEY], order)
            state = fold(state, upserts, no_keys, no_order, bf.RECORD_KEY, order)
        else:
            state = fold(state, schema.empty_table(), block.keys, block.ordering_values,
                         bf.RECORD_KEY, order)
    return state


def live_blocks(blocks: list, completed: set[str] | None) -> list:
    """The blocks a reader applies, in order: those of completed instants, minus those
    a rollback command block voids (``TARGET_INSTANT_TIME``)."""
    rolled_back = {b.target_instant for b in blocks if isinstance(b, hudi_log.CommandBlock)}
    return [b for b in blocks if isinstance(b, (hudi_log.DataBlock, hudi_log.DeleteBlock))
            and b.instant not in rolled_back
            and (completed is None or b.instant in completed)]


def read_file_group(table, file_slice, stats: IOStats | None = None,
                    log_stats: LogReadStats | None = None) -> pa.Table:
    """A committed file slice's records, whatever the table type: the base file, or
    the base file merged with the slice's logs (what a rescale, a resize or a check
    must read on a merge-on-read table, not the base file alone)."""
    if not file_slice.logs:
        return bf.read_base_file(table.fs, table.abs_path(file_slice.path), stats)
    cfg = table.config
    return read_slice(table.fs, table.root, file_slice, cfg.record_key_field,
                      cfg.ordering_field, stats=stats, log_stats=log_stats)
