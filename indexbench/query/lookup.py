"""One partition's point lookup through an index, counted where it reads (no Spark).

Hudi's ``readROView``: the index names the file groups that may hold each key
(:meth:`indexes.roles.PointLookups.lookup_candidates`), then each named base file is read
once (merged with its log files on a merge-on-read table, unless the query is
read-optimized) and its rows of the keys sought are kept. Every figure is counted by the code that
read: data files and their bytes here, footers and index files by the index.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes import roles
from indexes.lookup import ReadView, scan_candidates
from tableformat.basefile import RECORD_KEY
from tableformat.fs import IOStats
from tableformat.slice_reader import LogReadStats


def lookup_partition(index, table, view: ReadView, partition: str, keys: pa.Table
                     ) -> tuple[pa.Table | None, Counter]:
    """The stored rows of ``keys`` (distinct record keys of one partition) and the
    counters of finding them.

    ``false_positives``: (key, file) pairs the index pointed to that the file did not
    hold (for bloom, exactly its false positive probes); ``fp_file_reads``: files read
    that held none of the keys sought in them."""
    counts: Counter = Counter()
    index_stats, data_stats, log_stats = IOStats(), IOStats(), LogReadStats()
    if roles.plays(index, roles.PointLookups):
        cands = index.lookup_candidates(table, view, partition, keys, index_stats, counts)
    else:  # no index: every file of the partition
        cands = scan_candidates(view.files.get(partition, ()), keys)
    record_keys = keys.column(view.record_key_field).combine_chunks() \
        if isinstance(keys.column(view.record_key_field), pa.ChunkedArray) else \
        keys.column(view.record_key_field)
    hits = []
    for j, fid in enumerate(cands.file_ids):
        if not view.holds(partition, fid):  # read-optimized: a log-only group, no base
            continue
        sought = record_keys.take(pa.array(cands.key_idx[cands.file_idx == j]))
        data = view.read_group(table, partition, fid, data_stats, log_stats)
        hit = data.filter(pc.is_in(data.column(RECORD_KEY), value_set=sought))
        counts["false_positives"] += len(sought) - hit.num_rows
        counts["fp_file_reads"] += int(hit.num_rows == 0)
        if hit.num_rows:
            hits.append(hit)
    counts["files_read"] += data_stats.files_read
    counts["index_files_read"] += index_stats.files_read
    counts["footers_read"] += index_stats.footers_read + data_stats.footers_read
    counts["bytes_read"] += index_stats.bytes_read + data_stats.bytes_read
    counts["keys_found"] += sum(h.num_rows for h in hits)
    counts.update(log_counts(log_stats))
    rows = pa.concat_tables(hits, promote_options="permissive") if hits else None
    return rows, counts


def log_counts(log_stats: LogReadStats) -> dict[str, float]:
    """What reading log files cost a query (merge-on-read's read amplification): log
    files and bytes read (also in ``files_read``/``bytes_read``) and the merge's
    seconds, summed over the tasks."""
    return {"log_files_read": log_stats.log_files_read,
            "log_bytes_read": log_stats.log_bytes_read, "merge_s": log_stats.merge_s}


def latency_figures(seconds: list[float]) -> dict[str, float]:
    """p50/p99/max of the per-key-batch latencies (numpy's linear percentiles)."""
    s = np.asarray(seconds, dtype=np.float64)
    if not s.size:
        return {}
    return {"latency_p50_s": float(np.percentile(s, 50)),
            "latency_p99_s": float(np.percentile(s, 99)), "latency_max_s": float(s.max())}
