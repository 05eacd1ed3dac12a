"""The one builder of metrics rows (docs/metrics.md): upserts and rescales, real or simulated.

The Spark driver, the rescale operation and the simulator all hand their *counted* work
here, so a column means the same thing whichever engine filled it. Measured and
modelled figures never share a name: a simulated row's byte counts and seconds come
from a model, so they are written as ``model_<column>`` and the measured column stays
empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Columns of the driver's rows that hold measured bytes or seconds in a real run; a
# model fills them in sim. An index declares its own (``Metric(measured=True)``).
MEASURED_ONLY = ("bytes_read", "bytes_written", "merge_bytes_read", "log_bytes_written",
                 "log_bytes_compacted",
                 "write_amplification", "generate_s",
                 "validate_s", "precombine_s", "tag_s", "write_s",
                 "commit_s", "total_s", "write_task_max_s", "shuffle_bytes",
                 "shuffle_read_bytes",
                 "index_disk_bytes", "bytes_read_needed", "bytes_read_fp_only",
                 "avg_record_size")


@dataclass(frozen=True)
class WriteTotals:
    """What the file-group writes of one commit did, summed over its write stats."""

    files_written: int = 0
    records_written: int = 0  # records in the new base files (numWrites)
    # keys the index's footer indexed: every record of a new base file that carries index
    # bytes (a bloom filter is built from all of a rewritten file's keys, not the batch's)
    footer_keys_written: int = 0
    # new base files whose footer carries such index bytes: each one's filter is built,
    # serialized and written once, whatever its keys (the cost a small file pays)
    footer_filters_written: int = 0
    inserts: int = 0
    updates: int = 0
    deletes: int = 0  # stored records removed by a delete (numDeletes)
    bytes_written: float = 0
    merge_files_read: int = 0
    merge_bytes_read: float = 0
    # merge-on-read: the log files among the files written (stats with a log version)
    log_files_written: int = 0
    log_blocks_written: int = 0
    log_bytes_written: float = 0
    incoming_bytes: float = 0  # the records handed to the writers (Arrow bytes)
    # the slowest file group's write handle (seconds): the straggler task of the write
    write_task_max_s: float | None = None

    @property
    def write_amplification(self) -> float | None:
        """Bytes written per byte of incoming records."""
        return self.bytes_written / self.incoming_bytes if self.incoming_bytes else None

    @classmethod
    def from_stats(cls, stats: list[dict]) -> WriteTotals:
        """Totals of Hudi-style write stats (one per file group written)."""
        logs = [s for s in stats if s.get("logVersion") is not None]
        footed = [s for s in stats if _has_footer(s)]
        handles = [(int(s.get("totalCreateTime") or 0) + int(s.get("totalUpsertTime") or 0))
                   / 1000 for s in stats
                   if s.get("totalCreateTime") is not None or s.get("totalUpsertTime") is not None]
        return cls(
            write_task_max_s=max(handles) if handles else None,
            log_files_written=len(logs),
            log_blocks_written=sum(int(s.get("totalLogBlocks") or 0) for s in logs),
            log_bytes_written=sum(int(s["totalWriteBytes"]) for s in logs),
            incoming_bytes=sum(int(s.get("incomingBytes") or 0) for s in stats),
            files_written=len(stats),
            records_written=sum(int(s["numWrites"]) for s in stats),
            footer_keys_written=sum(int(s["numWrites"]) for s in footed),
            footer_filters_written=len(footed),
            inserts=sum(int(s["numInserts"]) for s in stats),
            updates=sum(int(s["numUpdateWrites"]) for s in stats),
            deletes=sum(int(s.get("numDeletes") or 0) for s in stats),
            bytes_written=sum(int(s["totalWriteBytes"]) for s in stats),
            merge_files_read=sum(int(s.get("mergeFilesRead") or 0) for s in stats),
            merge_bytes_read=sum(int(s.get("mergeBytesRead") or 0) for s in stats),
        )


def _has_footer(stat: dict) -> bool:
    """A new base file (not a log) whose footer carries index bytes (a bloom filter)."""
    return stat.get("logVersion") is None and int(stat.get("indexBytes") or 0) > 0


def _as_float(value: Any) -> float | None:
    """A counter summed exactly (a ``Fraction``: the same whatever order tasks finished
    in) as the float the row keeps."""
    return None if value is None else float(value)


def footer_totals(slices: Iterable[Any]) -> dict[str, int]:
    """Keys the index's footers indexed in new base files, and the files whose footers
    carry them (slices with ``num_records`` and ``index_bytes``, as the simulator writes
    them): what ``from_stats`` counts, as :class:`WriteTotals`' keyword arguments."""
    footed = [s for s in slices if s.index_bytes > 0]
    return {"footer_keys_written": sum(int(s.num_records) for s in footed),
            "footer_filters_written": len(footed)}


def log_write_figures(writes: WriteTotals) -> dict[str, Any]:
    """What a write put into log files (0 on copy-on-write), and its amplification."""
    return {"log_files_written": writes.log_files_written,
            "log_blocks_written": writes.log_blocks_written,
            "log_bytes_written": writes.log_bytes_written,
            "write_amplification": writes.write_amplification}


def measured_fp_rate(counts: Mapping[str, float]) -> float:
    """False positives over probes of keys that were not in the probed file."""
    rate = _per_negative_probe(counts, "false_positives")
    return float("nan") if rate is None else rate


def _per_negative_probe(counts: Mapping[str, float], name: str) -> float | None:
    """A counter over the probes of keys not in the probed file (None: no such probe)."""
    negatives = counts.get("bloom_checks", 0) - counts.get("true_positives", 0)
    return counts.get(name, 0) / negatives if negatives else None


def as_modelled(row: dict[str, Any], measured: Iterable[str] = ()) -> dict[str, Any]:
    """Move byte and second figures of a simulated row to their ``model_`` names
    (the driver's, and ``measured``: the ones its index declares)."""
    for col in (*MEASURED_ONLY, *measured):
        if col in row:
            value = row.pop(col)
            if value is not None:
                row[f"model_{col}"] = value
    return row


def table_figures(snapshot) -> dict[str, Any]:
    """Size of the committed table after the operation."""
    slices = snapshot.slices
    if hasattr(slices, "sizes"):  # kept up to date by the map (tableformat.table.SliceMap)
        records, in_logs, logs = slices.sizes()
    else:
        records = sum(s.num_records for s in slices.values())
        in_logs = sum(s.num_records - s.base_records for s in slices.values())
        logs = sum(len(s.logs) for s in slices.values())
    return {"files_in_table": snapshot.physical_files, "file_groups": len(slices),
            "table_records": records,
            # merge-on-read: upserts waiting in log files for a compaction
            "records_in_logs": in_logs, "log_files_in_table": logs}


# Counters of the contract only indexes doing that work count: copied when counted,
# else empty. ``true_positives``: filter probes of keys in the probed file (the false
# positive rate's complement, as Hudi's HoodieKeyLookupHandle logs its actual matches).
# (``buckets_created``, buckets opened online, is the contract's too: an index that opens
# buckets reports it with its table figures, a Paimon peer from its bucket files.)
COPIED_WHEN_COUNTED = ("true_positives",)


def _summed(counts: Mapping[str, float], parts: Iterable[str]) -> float:
    return sum((counts.get(p, 0) for p in parts), 0)


def upsert_row(*, batch_no: int, instant: str, input_records: int, records: int,
               partitions_touched: int, counts: Mapping[str, float], writes: WriteTotals,
               after, timings: Mapping[str, float | None],
               index_counters: Iterable[str] = (),
               index_parts: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    """The metrics row of one upsert batch from the work its code counted;
    ``index_counters``: the counters the index declares (copied when counted);
    ``index_parts``: contract counters the index counts in parts (each the parts' sum)."""
    parts = index_parts or {}
    row: dict[str, Any] = {
        "operation": "upsert", "batch": batch_no, "instant": instant,
        "input_records": input_records, "records": records,
        "inserts": writes.inserts, "updates": writes.updates, "deletes": writes.deletes,
        "generate_s": timings.get("generate_s"), "validate_s": timings.get("validate_s"),
        "precombine_s": timings.get("precombine_s"),
        "tag_s": timings.get("tag_s"), "write_s": timings.get("write_s"),
        "commit_s": timings.get("commit_s"), "total_s": timings.get("total_s"),
        "partitions_touched": partitions_touched,
        **table_figures(after),
        "candidate_files": counts.get("candidate_files", 0),
        "files_read": counts.get("files_read", 0),
        "bytes_read": counts.get("bytes_read", 0),
        "footers_read": _summed(counts, parts.get("footers_read", ())),
        "bloom_checks": counts.get("bloom_checks", 0),
        "bloom_positives": counts.get("bloom_positives", 0),
        "false_positives": counts.get("false_positives", 0),
        "fp_rate": measured_fp_rate(counts) if counts.get("bloom_checks") else None,
        # files whose keys were read: ones holding a true match (a read the index needed)
        # and ones read only because of false positives (the FP cost)
        "files_read_needed": counts.get("files_read_needed", 0),
        "files_read_fp_only": counts.get("files_read_fp_only", 0),
        "bytes_read_needed": counts.get("bytes_read_needed", 0),
        "bytes_read_fp_only": counts.get("bytes_read_fp_only", 0),
        # reference, not a measurement: Σ over probed filters of negatives × the filter's
        # theoretical fpp at its row fill (what the measured FP should be close to)
        "fp_theory": _as_float(counts.get("fp_theory")),
        "probed_keys_per_file": _per_negative_probe(counts, "probed_file_keys"),
        "small_files_topped_up": counts.get("small_files_topped_up", 0),
        "small_file_inserts": counts.get("small_file_inserts", 0),
        "avg_record_size": counts.get("avg_record_size"),
        "files_written": writes.files_written, "bytes_written": writes.bytes_written,
        "records_written": writes.records_written,
        "records_rewritten": writes.records_written - writes.inserts - writes.updates,
        "footer_keys_written": writes.footer_keys_written,
        "footer_filters_written": writes.footer_filters_written,
        "merge_files_read": writes.merge_files_read,
        "merge_bytes_read": writes.merge_bytes_read,
        **log_write_figures(writes),
        "write_task_max_s": writes.write_task_max_s,
        "keys_hashed": counts.get("keys_hashed", 0),
        **{k: counts[k] for k in (*COPIED_WHEN_COUNTED, *index_counters) if k in counts},
    }
    return row


# Contract (and driver) columns a peer without a record index cannot see: it has no index,
# no file groups, no separate tag or commit phase. Empty in its rows, never 0
# (docs/metrics.md), unless the peer passes one it does see (a Paimon table has buckets,
# index files and a commit of its own) in ``timings`` or ``extra``.
PEER_UNSEEN = ("tag_s", "commit_s", "file_groups", "candidate_files", "files_read",
               "bytes_read", "footers_read", "bloom_checks", "bloom_positives",
               "false_positives", "fp_rate", "buckets", "bucket_records_max",
               "bucket_records_mean", "index_mem_bytes", "index_disk_bytes", "keys_hashed",
               "merge_files_read", "merge_bytes_read")


def peer_upsert_row(*, batch_no: int, input_records: int, records: int,
                    partitions_touched: int, inserts: int | None, updates: int | None,
                    records_written: int, files_written: int, bytes_written: float,
                    files_in_table: int, table_records: int, table_bytes: float,
                    timings: Mapping[str, float | None],
                    records_rewritten: int | None = None,
                    extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The metrics row of one batch a peer (another table format's own upsert, e.g.
    delta-rs MERGE) applied: ``run_mode = "peer"``; only what it can see is filled, with
    the meaning the columns have for the driver (``records`` after pre-combining,
    ``updates`` = incoming records whose key existed, ``records_rewritten`` = records
    copied unchanged into rewritten files: ``records_written - inserts - updates`` unless
    given); ``PEER_UNSEEN`` stay empty unless given. A peer that cannot tell inserts
    from updates (an LSM write looks no key up) passes None for both."""
    if records_rewritten is None and inserts is not None and updates is not None:
        records_rewritten = records_written - inserts - updates
    row: dict[str, Any] = {
        "operation": "upsert", "run_mode": "peer", "batch": batch_no,
        "input_records": input_records, "records": records, "inserts": inserts,
        "updates": updates, "write_s": timings.get("write_s"),
        "total_s": timings.get("total_s"), "partitions_touched": partitions_touched,
        "files_in_table": files_in_table, "table_records": table_records,
        "table_bytes": table_bytes, "files_written": files_written,
        "bytes_written": bytes_written, "records_written": records_written,
        "records_rewritten": records_rewritten,
        **{c: None for c in PEER_UNSEEN},
        **{k: v for k, v in timings.items() if k not in ("write_s", "total_s")},
        **dict(extra or {}),
    }
    return row


def service_row(*, operation: str, batch_no: int | None, instant: str,
                figures: Mapping[str, Any], files_read: int, bytes_read: float,
                writes: WriteTotals, after, timings: Mapping[str, float | None],
                shuffle_bytes: float | None, shuffle_read_bytes: float | None,
                spark_jobs: int | None) -> dict[str, Any]:
    """The metrics row of one table service instant (a rescale, a resize, an index
    compaction): it tags nothing and rewrites every record it writes; ``figures`` are
    the service's own columns (a bucket rescale's: :mod:`indexes.bucket.rescale_rows`)."""
    row: dict[str, Any] = {
        "operation": operation, "batch": batch_no, "instant": instant,
        "records": writes.records_written, "inserts": 0, "updates": 0, "tag_s": None,
        "write_s": timings.get("write_s"), "commit_s": timings.get("commit_s"),
        "total_s": timings.get("total_s"), "partitions_touched": 0,
        **table_figures(after),
        "candidate_files": 0, "files_read": files_read, "bytes_read": bytes_read,
        "bloom_checks": 0, "bloom_positives": 0, "false_positives": 0, "fp_rate": None,
        "files_written": writes.files_written, "bytes_written": writes.bytes_written,
        "records_written": writes.records_written,
        "records_rewritten": writes.records_written,
        "footer_keys_written": writes.footer_keys_written,
        "footer_filters_written": writes.footer_filters_written, "shuffle_bytes": shuffle_bytes,
        "shuffle_read_bytes": shuffle_read_bytes, "spark_jobs": spark_jobs,
        **figures,
    }
    return row


QUERY_KINDS = ("lookup", "groupby", "join")


def query_row(*, query: str, plan: str, table: str, table_records: int,
              figures: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics row of one query of one table (``indexbench query``): what the reading
    code counted (``figures``); a read writes nothing, and has no tag/write/commit phase.
    A counter the query did not count stays empty (``to_frame`` does not zero-fill query
    rows): Spark's default plan reads bytes this project cannot count, and a query has
    no index size."""
    if query not in QUERY_KINDS:
        raise ValueError(f"query must be one of {QUERY_KINDS}, not {query!r}")
    work_not_done = {c: 0 for c in ("candidate_files", "files_read", "bloom_checks",
                                    "bloom_positives", "false_positives")}
    return {"operation": "query", "query": query, "plan": plan, "batch": None,
            "table": table, "table_records": table_records, "records": None, "inserts": 0,
            "updates": 0, "tag_s": None, "write_s": None, "commit_s": None,
            "files_written": 0, "bytes_written": 0, "records_rewritten": 0,
            **work_not_done, **figures}
