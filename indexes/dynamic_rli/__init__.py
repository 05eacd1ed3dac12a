"""dynamic-rli: buckets that grow online, routed by a partitioned record-level index.

Engine-neutral definition. The Spark-free cores are the cache
(:mod:`~indexes.dynamic_rli.cache`), the assigners (:mod:`~indexes.dynamic_rli.assigner`)
and a partition's per-assigner shares (:mod:`~indexes.dynamic_rli.shares`),
the eviction flow (:mod:`~indexes.dynamic_rli.eviction`), the RLI store
(:mod:`~indexes.dynamic_rli.rli`) and the writer state that drives them
(:mod:`~indexes.dynamic_rli.core`); :mod:`~indexes.dynamic_rli.spark` distributes them on
Spark (shares held by assigner tasks, :mod:`~indexes.dynamic_rli.executor`; the driver's
metadata, :mod:`~indexes.dynamic_rli.ledger`) and :mod:`~indexes.dynamic_rli.sim` runs
them in the simulator.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import numpy as np

from indexes.base import (
    BUCKET_COUNT_TOTAL,
    Metric,
    Param,
    Price,
    RecordIndex,
    TableService,
    bucket_fill,
)
from indexes.dynamic_rli import rli
from indexes.dynamic_rli.assigner import BYTES, RECORDS, Capacity, PartitionIndex, assigner_of
from indexes.dynamic_rli.cache import HashBucketMap
from indexes.dynamic_rli.core import DynamicRliCore, capacity_of
from indexes.dynamic_rli.eviction import PartitionCaches
from indexes.hudi_counterpart import HudiCounterpart
from indexes.roles import (
    AdvisedSettings,
    Candidate,
    HudiCounterpartRole,
    PointLookups,
    SimulatorOptions,
    StreamPanels,
    TableFigures,
    TableServices,
    TableShape,
)
from tableformat.errors import IndexBenchError

__all__ = ["Capacity", "DynamicRliIndex", "HashBucketMap", "PartitionCaches", "PartitionIndex",
           "assigner_of", "rli_disk_bytes"]

ASSIGNERS_KEY = "indexbench.dynamic.numAssigners"
HASH_FUNCTIONS = ("murmur3", "java")


class DynamicRliIndex(AdvisedSettings, TableFigures, TableServices, PointLookups, SimulatorOptions,
                      HudiCounterpartRole, StreamPanels, RecordIndex):
    """The partitioned-RLI dynamic bucket index (Hudi discussion 18514)."""

    ADVICE_TRADEOFF = ("keeps a record-level index (RLI files) whose shares are loaded "
                       "into the bucket assigners: memory and index storage grow with keys")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """Buckets opened as files reach Hudi's target size, records sized as stored."""
        return (Candidate("buckets of target file size",
                          {"capacity_mode": "bytes", "max_file_bytes": shape.file_bytes,
                           "record_size_estimate": max(1, round(shape.record_bytes))}),)


    # the stream timeline: the assigners' cache bytes, evictions and bootstraps marked
    STREAM_CACHE = (("assigner_mem_bytes_total", "assigners, total", "--"),
                    ("assigner_mem_bytes_max", "largest assigner", ":"))
    STREAM_EVENTS = (("evictions", "eviction", "v"),
                     ("partitions_bootstrapped", "bootstrap", "^"),
                     ("assigner_bootstraps", "assigner bootstrap", "^"))

    name = "dynamic-rli"
    index_type = "BUCKET"
    assigns_inserts = True
    # its RLI maps every key to its file group, whether the record is in a log or not
    CAN_INDEX_LOG_FILES = True
    SPARK_ADAPTER = "indexes.dynamic_rli.spark:DynamicRliSpark"
    SIM_ADAPTER = "indexes.dynamic_rli.sim:DynamicRliSim"
    SIM_MEMORY_HEAVY = True  # its caches: the memory-heavy run at a billion keys
    # the storage the seed builds on: Hudi's partitioned record-level index in the
    # metadata table (its dynamic bucket assigner is Flink-only in Hudi)
    HUDI = HudiCounterpart(
        lambda index: {"hoodie.index.type": "RECORD_LEVEL_INDEX",
                       "hoodie.metadata.enable": "true",
                       "hoodie.metadata.record.level.index.enable": "true"},
        note="Hudi's Spark writer has no dynamic bucket assigner (Flink only): its "
             "partitioned record-level index finds existing keys, and new keys go to new "
             "or small file groups by Hudi's file sizing, not to buckets",
        requires=(("hoodie.metadata.enable", "true"),),
        requires_why="Hudi's record-level index lives in the metadata table",
        # where records go differs by design (buckets against Hudi's file sizing): every
        # layout figure is shown beside Hudi's, none judged (docs/fidelity.md)
        judged=(),
        # Hudi's writer would look keys up in its metadata table's record index, which our
        # writer keeps none of (ours is the partitioned RLI under .hoodie/); measured: with
        # the metadata table on it refuses the table's properties (index type), off its
        # record index cannot run (docs/fidelity.md#hudi-continues-our-tables)
        continue_refusal=lambda index: (
            "its key -> bucket map is its own partitioned RLI, which Hudi's writer does not "
            "read; Hudi's record-level index lives in a metadata table this table has none "
            "of"),
        # Hudi's record-level index is its metadata table's record_index partition: the
        # entries, log files and bytes each commit appends to it are Hudi's own figures
        # of the work our RLI counts as rli_entries_written, _files_ and _bytes_written
        metadata_figures=(("record_index", "rli_entries_written", "records"),
                          ("record_index", "rli_files_written", "files"),
                          ("record_index", "rli_bytes_written", "bytes")),
        # and Hudi's writer appends them by an upsert of the metadata table: Spark jobs of
        # its own at the commit (tagging the entries to the index's file groups, writing
        # their log blocks), measured 1.0-1.1 s a batch more commit than its bloom index
        # at 300,000 records (docs/choosing-an-index.md, "Measured with Hudi's own
        # writer as a profile");
        # ours writes its RLI files with the data, in no job of their own
        hudi_prices=(("rli_entries_written", Price("commit", "index_job_s", "job")),
                     ("rli_entries_written", Price("commit", "index_job_record_s",
                                                   "per_core"))))
    METRICS = (
        Metric("resident_partitions", "partitions whose cache is loaded"),
        # index_mem_bytes (contract column): the resident shares' bytes as the seed's
        # long-lived assigners hold them (Spark: as the assigner tasks last reported them)
        Metric("driver_index_mem_bytes", "bytes of key -> bucket state in the driver (0)",
               measured=True),
        Metric("assigner_mem_bytes_max", "largest assigner task's resident share bytes",
               measured=True),
        Metric("assigner_mem_bytes_total", "resident share bytes over the assigner tasks",
               measured=True),
        # which worker a task lands in decides whether its copy is warm: placement
        Metric("assigner_cache_hits", "shares a task found warm and current in its worker",
               measured=True, placement=True),
        Metric("assigner_bootstraps", "shares a task loaded from its RLI files",
               measured=True, placement=True),
        Metric("assigner_keys_loaded", "keys those loads read", measured=True,
               placement=True),
        Metric("assigner_bootstrap_s", "task seconds of those loads", measured=True,
               placement=True),
        Metric("resident_keys", "keys held by the loaded caches"),
        Metric("resident_collisions", "key hashes of the caches shared by several keys"),
        Metric("keys_bootstrapped", "keys loaded from the RLI into caches this batch"),
        Metric("partitions_bootstrapped", "partitions bootstrapped this batch"),
        Metric("bootstrap_s", "seconds of bootstrapping", measured=True),
        Metric("evictions", "partitions evicted at this checkpoint"),
        Metric("evictions_total", "partitions evicted so far"),
        # buckets_created (a contract column): buckets opened this batch (all full)
        Metric("buckets_created_total", "buckets opened so far"),
        Metric("hash_collisions", "new keys whose hash an existing key has"),
        Metric("num_assigners", "bucket assigners P"),
        Metric("rli_files_read", "RLI files read by bootstraps",
               priced=(Price("tag", "read_latency_s"),)),
        Metric("rli_bytes_read", "RLI bytes read by bootstraps", measured=True,
               priced=(Price("tag", "read_byte_s", "bytes"),)),
        Metric("rli_entries_written", "RLI entries appended (new keys)"),
        Metric("rli_files_written", "RLI files appended", counter=True,
               priced=(Price("commit", "write_latency_s"),)),
        Metric("rli_bytes_written", "RLI bytes appended", counter=True, measured=True,
               priced=(Price("commit", "write_byte_s", "bytes"),)),
        Metric("rli_compactions", "RLI compactions (service rows: 1)"),
        Metric("rli_entries", "entries of the visible RLI files"),
        Metric("rli_dead_entries", "RLI entries of deleted keys"),
        BUCKET_COUNT_TOTAL,
    )
    SERVICES = (
        TableService("rli-compaction", "compact a partition's RLI files into one per share "
                     "once a share has more than hoodie.bucket.index.dynamic.rli.compact.files",
                     operation="rli_compaction", inline=True),
    )
    PARAMS = (
        Param("num_assigners", "hoodie.bucket.index.dynamic.num.assigners", int, 0,
              "bucket assigners P = initial buckets per partition (0: Spark default "
              "parallelism at the table's first commit, then fixed)"),
        Param("capacity_mode", "hoodie.bucket.index.dynamic.capacity.mode", str, RECORDS,
              "when a bucket is full: 'records' (keys) or 'bytes' (latest base file size)",
              choices=(RECORDS, BYTES)),
        Param("max_records", "hoodie.bucket.index.dynamic.max.records", int, 2000,
              "records mode: keys per bucket before a new bucket is opened"),
        Param("max_file_bytes", "hoodie.bucket.index.dynamic.max.file.bytes", int,
              120 * 1024 * 1024, "bytes mode: latest base file size per bucket"),
        Param("record_size_estimate", "hoodie.copyonwrite.record.size.estimate", int, 1024,
              "bytes mode: bytes per record until committed stats exist"),
        Param("hash_function", "hoodie.bucket.index.dynamic.hash.function", str, "murmur3",
              "record-key hash: 'murmur3' (Spark hash, JVM) or 'java' (String.hashCode)",
              choices=HASH_FUNCTIONS),
        Param("keep_accessed", "hoodie.bucket.index.dynamic.cache.keep.accessed", bool, False,
              "also keep partitions only looked up in a checkpoint (default: the design's "
              "flow, which keeps only partitions with new keys)"),
        Param("rli_compact_files", "hoodie.bucket.index.dynamic.rli.compact.files", int, 0,
              "compact a partition's RLI into one file per share (own replacecommit) once "
              "a share has more than this many files; 0 = never"),
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.core = DynamicRliCore(self.params)

    @property
    def caches(self) -> PartitionCaches:
        return self.core.caches

    @property
    def num_assigners(self) -> int | None:
        return self.core.num_assigners

    def validate(self) -> None:
        p = self.params
        if p["num_assigners"] < 0:
            raise IndexBenchError("hoodie.bucket.index.dynamic.num.assigners must be >= 0")
        self.capacity()

    def capacity(self) -> Capacity:
        return capacity_of(self.params)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "engine": "DYNAMIC_RLI",
                "resolved_num_assigners": self.core.num_assigners}

    def recorded_assigners(self, snapshot) -> int | None:
        """P as the table's commits recorded it (None before the first commit)."""
        return next((int(snapshot.extra[i][ASSIGNERS_KEY]) for i in reversed(snapshot.completed)
                     if ASSIGNERS_KEY in snapshot.extra.get(i, {})), None)

    def read_view_extra(self, snapshot) -> dict[str, Any]:
        """The visible RLI files per data partition (from the commits: no listing)."""
        out: dict[str, list[str]] = {}
        for f in visible_rli_files(snapshot):
            partition = f["path"][len(rli.RLI_DIR) + 1:].rsplit("/", 1)[0]
            out.setdefault(partition, []).append(f["path"])
        return {"index_files": {p: tuple(sorted(v)) for p, v in out.items()}}

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """RLI lookup: the partition's RLI entries of the keys name their file groups."""
        return rli.lookup_candidates(table, view.index_files.get(partition, ()),
                                     keys.column(view.record_key_field), stats, counts)

    def plan_service(self, service, table, snapshot, options) -> list | None:
        """RLI compaction: every partition one of whose shares (an assigner's files) has
        more than ``rli.compact.files`` visible RLI files, with the partition's files
        (None: none has, or compaction is off)."""
        limit = self.params["rli_compact_files"]
        if not limit:
            return None
        replaced = rli.replaced_files(snapshot.extra)
        todo = []
        for p in rli.rli_partitions(table):
            files = rli.visible_files(table, p, snapshot.completed, replaced)
            per_share = Counter(rli.share_of(f.path) for f in files)
            if max(per_share.values(), default=0) > limit:
                todo.append((p, [f.path for f in files]))
        return todo or None

    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = np.array([s.num_records for s in snapshot.slices.values()])
        return {**bucket_fill(counts), "index_mem_bytes": self.core.caches.nbytes,
                "resident_partitions": len(self.core.caches),
                "index_disk_bytes": rli_disk_bytes(snapshot), **rli_dead_entries(snapshot)}


def visible_rli_files(snapshot) -> list[dict]:
    """The visible RLI files as the commits' metadata records them (path, bytes, and
    entries since deletes came): no listing."""
    replaced = rli.replaced_files(snapshot.extra)
    return [f for inst in snapshot.completed
            for f in json.loads(snapshot.extra.get(inst, {}).get(rli.FILES_KEY, "[]"))
            if f["path"] not in replaced]


def rli_disk_bytes(snapshot) -> int:
    """Bytes of the visible RLI files."""
    return sum(int(f["bytes"]) for f in visible_rli_files(snapshot))


def rli_dead_entries(snapshot) -> dict[str, int]:
    """RLI entries of visible files (counted when they were written) and how many name
    no live record: a deleted key keeps its entry (and its cache slot), so a re-insert
    goes back to its bucket. Empty for tables written before commits recorded entry
    counts."""
    files = visible_rli_files(snapshot)
    if any("entries" not in f for f in files):
        return {}
    entries = sum(int(f["entries"]) for f in files)
    live = sum(s.num_records for s in snapshot.slices.values())
    return {"rli_entries": entries, "rli_dead_entries": entries - live}
