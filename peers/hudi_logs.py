"""Hudi's own counters, read from what Hudi wrote or logged, never recomputed here.

Four sources, each parsed by one function so tests can run them on captured output:

- the bloom lookup: ``HoodieKeyLookupHandle`` logs at INFO, per (file, key batch) it
  checks, ``Read bloom filter from (<partition>,<fileId>) in N ms`` and then ``Total
  records (N), bloom filter candidates (C)/fp(F), actual matches (M)``, where N counts
  the keys probed against that file's filter, C the probes it passed, F the ones whose
  key the file did not hold and M the ones it did (``lookup_counters``);
- the commit: each completed instant's ``HoodieCommitMetadata`` with one
  ``HoodieWriteStat`` per file written (``commit_figures``), JSON in table version 6's
  ``.hoodie/<instant>.<action>``, Avro in version 8+'s ``.hoodie/timeline/``
  (``completed_instants``, ``read_instant``);
- the metadata table: where an index lives there (the record-level index's
  ``record_index`` partition), what the metadata table's delta commit of the same
  instant appended to it (``metadata_figures``);
- the phases: Hudi names its Spark jobs (``HoodieEngineContext.setJobStatus``: the
  job description ``<Class>:<what>``), and Spark's event log has each job's description,
  submission and completion time (``job_phases``).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import fastavro

LOOKUP_LINE = re.compile(r"Total records \((\d+)\), bloom filter candidates \((\d+)\)/fp\((\d+)\), "
                         r"actual matches \((\d+)\)")
READ_FILTER_LINE = re.compile(r"Read bloom filter from \(([^,]*),([^)]*)\)")

# completed actions of a Hudi timeline (a pending one ends in .requested / .inflight)
WRITE_ACTIONS = ("commit", "deltacommit", "replacecommit")
COMPLETED_ACTIONS = (*WRITE_ACTIONS, "clean", "rollback")
_V6_NAME = re.compile(r"^(\d{14,17})\.(" + "|".join(COMPLETED_ACTIONS) + r")$")
_V8_NAME = re.compile(r"^(\d{14,17})_(\d{14,17})\.(" + "|".join(COMPLETED_ACTIONS) + r")$")


def lookup_counters(lines: Iterable[str]) -> dict[str, int]:
    """Hudi's bloom lookup, summed over the handles of one write.

    ``candidate_files``: handles whose filter was probed (one per file and key batch);
    ``footers_read``: bloom filters read; ``bloom_checks``: keys probed; ``bloom_positives``:
    probes that passed; ``false_positives`` and ``true_positives`` split those by whether
    the file held the key; ``files_read``: handles that read the file's keys (Hudi reads
    them only for a handle with a candidate)."""
    out = dict.fromkeys(("candidate_files", "footers_read", "bloom_checks", "bloom_positives",
                         "false_positives", "true_positives", "files_read"), 0)
    for line in lines:
        m = LOOKUP_LINE.search(line)
        if m:
            total, candidates, fp, matches = map(int, m.groups())
            out["candidate_files"] += 1
            out["bloom_checks"] += total
            out["bloom_positives"] += candidates
            out["false_positives"] += fp
            out["true_positives"] += matches
            out["files_read"] += candidates > 0
        elif READ_FILTER_LINE.search(line):
            out["footers_read"] += 1
    return out


def _job_table(description: str) -> tuple[str, str]:
    """(the class that named the job, what it said) of ``<Class>:<what>``."""
    who, sep, what = description.partition(":")
    return (who, what.strip()) if sep and " " not in who else ("", description.strip())


TAG_JOBS = ("Tagging", "Obtain key ranges", "Load latest base files", "Compute all comparisons",
            "Building workload profile")
WRITE_JOBS = ("Doing partition and writing data", "Committing stats", "Commit write status",
              "Getting small files")
COMMIT_JOBS = ("marker", "Committing to metadata", "clean", "Clean", "archiv", "Archiv",
               "rollback", "Rollback")


def phase_of(description: str | None, table_name: str) -> str:
    """The phase a Hudi job belongs to: ``tag`` (the index lookup: the tagging jobs, and
    "Building workload profile", inside which the lazy lookup runs), ``write`` (the
    data files; Hudi 1.x writes lazily inside "Committing stats"), ``commit`` (markers,
    the metadata table, cleaning, archiving), ``service`` (inline compaction and
    clustering), else ``other``. The metadata table's own upserts are ``commit``."""
    if not description:
        return "other"
    who, what = _job_table(description)
    if "Metadata" in who or f"{table_name}_metadata" in what or "metadata table" in what:
        return "commit"
    if "ompact" in who or "ompact" in what or "luster" in who or "luster" in what:
        return "service"
    if what.startswith(TAG_JOBS) or "Index" in who:
        return "tag"
    if what.startswith(WRITE_JOBS):
        return "write"
    if any(word in what or word in who for word in COMMIT_JOBS):
        return "commit"
    return "other"


def job_phases(events: Iterable[str], table_name: str) -> dict[str, float]:
    """Seconds per phase (:func:`phase_of`) over the jobs of Spark event-log lines, from
    each job's submission to its completion, and ``jobs``: how many."""
    started: dict[int, tuple[float, str | None]] = {}
    out = {"tag": 0.0, "write": 0.0, "commit": 0.0, "service": 0.0, "other": 0.0, "jobs": 0}
    for line in events:
        if '"SparkListenerJob' not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:  # a line the writer is still appending
            continue
        if e.get("Event") == "SparkListenerJobStart":
            props = e.get("Properties") or {}
            started[e["Job ID"]] = (e["Submission Time"], props.get("spark.job.description"))
        elif e.get("Event") == "SparkListenerJobEnd" and e.get("Job ID") in started:
            t0, description = started.pop(e["Job ID"])
            out[phase_of(description, table_name)] += (e["Completion Time"] - t0) / 1000
            out["jobs"] += 1
    return out


def completed_instants(table: str) -> list[tuple[str, str, str]]:
    """(instant, action, file) of every completed instant, oldest first: table version
    6's ``.hoodie/<instant>.<action>`` and version 8+'s
    ``.hoodie/timeline/<instant>_<completion>.<action>``."""
    out = []
    hoodie = os.path.join(table, ".hoodie")
    for folder, pattern in ((hoodie, _V6_NAME), (os.path.join(hoodie, "timeline"), _V8_NAME)):
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            continue
        for name in names:
            m = pattern.match(name)
            if m:
                out.append((m.group(1), m.group(m.lastindex), os.path.join(folder, name)))
    return sorted(out)


def read_instant(path: str) -> dict[str, Any]:
    """A completed instant's metadata: Hudi's JSON (version 6) or Avro (version 8+)."""
    with open(path, "rb") as f:
        data = f.read()
    if not data:
        return {}
    if data[:4] == b"Obj\x01":
        records = list(fastavro.reader(io.BytesIO(data)))
        return records[0] if records else {}
    return json.loads(data)


def write_stats(metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ``HoodieWriteStat`` of a commit, whatever its partition."""
    return [dict(s) for stats in (metadata.get("partitionToWriteStats") or {}).values()
            for s in (stats or [])]


def _n(stat: Mapping[str, Any], key: str) -> int:
    return int(stat.get(key) or 0)


def _merged(stat: Mapping[str, Any]) -> bool:
    """A base file Hudi wrote by merging into the file group's previous base file (its
    ``HoodieMergeHandle``: ``prevCommit`` names that file's instant); a new file's is
    ``"null"``, a log append's names the slice's base instant but reads no base file."""
    prev = stat.get("prevCommit")
    return not _is_log(stat) and prev not in (None, "", "null")


def _is_log(stat: Mapping[str, Any]) -> bool:
    return ".log." in os.path.basename(str(stat.get("path") or ""))


def commit_figures(stats: list[dict[str, Any]], footers: bool = False) -> dict[str, int]:
    """What one commit wrote, from its write stats: records written, inserts, updates,
    deletes, base and log files, bytes, file groups and partitions touched, log records,
    the compaction counters a compaction's stats carry, and the base files it merged
    into their groups' previous base files (``merge_files_read``; Hudi logs no bytes
    read). ``footers``: Hudi wrote a bloom filter into every base file's footer (index
    type BLOOM, or ``hoodie.parquet.bloom.filter.enabled``), so ``footer_keys_written``
    is every record of its new base files (``numWrites``) and ``footer_filters_written``
    every new base file, else 0."""
    base = [s for s in stats if not _is_log(s)]
    return {
        "records_written": sum(_n(s, "numWrites") for s in stats),
        "inserts": sum(_n(s, "numInserts") for s in stats),
        "updates": sum(_n(s, "numUpdateWrites") for s in stats),
        "deletes": sum(_n(s, "numDeletes") for s in stats),
        "files_written": len(stats),
        "base_files_written": len(base),
        "log_files_written": sum(_is_log(s) for s in stats),
        "bytes_written": sum(_n(s, "totalWriteBytes") for s in stats),
        "file_groups_written": len({s.get("fileId") for s in stats}),
        "partitions_touched": len({s.get("partitionPath") for s in stats}),
        "log_records_written": sum(_n(s, "numWrites") for s in stats if _is_log(s)),
        "log_records_compacted": sum(_n(s, "totalLogRecords") for s in stats),
        "log_files_compacted": sum(_n(s, "totalLogFilesCompacted") for s in stats),
        "merge_files_read": sum(_merged(s) for s in stats),
        "footer_keys_written": sum(_n(s, "numWrites") for s in base) if footers else 0,
        "footer_filters_written": len(base) if footers else 0,
    }


def metadata_figures(table: str, instant: str,
                     wanted: Iterable[tuple[str, str, str]]) -> dict[str, int]:
    """What the metadata table's delta commit of ``instant`` wrote to its partitions, as
    ``wanted`` asks (metadata partition, column, ``records``/``files``/``bytes`` of its
    write stats: numWrites, how many, totalWriteBytes); {} when the metadata table has no
    such commit (the metadata table off)."""
    found = [p for i, a, p in completed_instants(os.path.join(table, ".hoodie", "metadata"))
             if i == instant and a == "deltacommit"]
    if not found:
        return {}
    by_partition: dict[str, list[dict[str, Any]]] = {}
    for s in write_stats(read_instant(found[0])):
        by_partition.setdefault(str(s.get("partitionPath")), []).append(s)
    out = {}
    for partition, column, what in wanted:
        stats = by_partition.get(partition, [])
        out[column] = (sum(_n(s, "numWrites") for s in stats) if what == "records" else
                       len(stats) if what == "files" else
                       sum(_n(s, "totalWriteBytes") for s in stats))
    return out


__all__ = ["COMPLETED_ACTIONS", "LOOKUP_LINE", "WRITE_ACTIONS", "commit_figures",
           "completed_instants", "job_phases", "lookup_counters", "metadata_figures", "phase_of",
           "read_instant",
           "write_stats"]
