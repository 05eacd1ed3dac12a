"""consistent-hashing: Hudi's consistent hashing bucket index (RFC-42).

``hoodie.index.type=BUCKET`` with ``hoodie.index.bucket.engine=CONSISTENT_HASHING``:
each partition has a hash ring (:mod:`indexes.consistent_hashing.ring`) that starts with
``hoodie.bucket.index.num.buckets`` nodes; a key's file group is its ring node's, found
by hashing (XXH32, :mod:`indexes.xxhash32`) — no data file is read to tag. Buckets are
resized by clustering: a file group larger than ``split.threshold × max file size`` is
split in two, neighbours below ``merge.threshold × max file size`` are merged
(:mod:`indexes.consistent_hashing.plan`); the resize is a replacecommit, and while it is
pending, records of a bucket being resized are written both to the old file group and
to the child that will replace it (dual write; on merge-on-read to a log file of the
child, as RFC-42 has it). The Spark adapter is
:mod:`indexes.consistent_hashing.spark`, the simulator's :mod:`indexes.consistent_hashing.sim`.
"""

from __future__ import annotations

import numpy as np

from indexes.base import BUCKET_COUNT_TOTAL, Metric, Param, RecordIndex, TableService, bucket_fill
from indexes.bucket.advice import buckets
from indexes.bucket.rescale_rows import RESCALE_METRICS
from indexes.consistent_hashing.plan import plan_resize
from indexes.consistent_hashing.ring import Ring, committed_rings, locate
from indexes.hudi_counterpart import HudiCounterpart, flag
from indexes.lookup import Candidates
from indexes.roles import (
    AdvisedSettings,
    Bucketed,
    Candidate,
    HudiCounterpartRole,
    PointLookups,
    RescalePanels,
    TableFigures,
    TableServices,
    TableShape,
)
from indexes.xxhash32 import consistent_hash
from tableformat.errors import IndexBenchError
from writeclient import sizing

ENGINE = "CONSISTENT_HASHING"


# Hudi's consistent-bucket resizing: clustering with these strategies (RFC-42)
_CLUSTERING = "org.apache.hudi.client.clustering"
HUDI_RESIZE = {
    "hoodie.clustering.plan.strategy.class":
        f"{_CLUSTERING}.plan.strategy.SparkConsistentBucketClusteringPlanStrategy",
    "hoodie.clustering.execution.strategy.class":
        f"{_CLUSTERING}.run.strategy.SparkConsistentBucketClusteringExecutionStrategy",
    "hoodie.clustering.updates.strategy":
        f"{_CLUSTERING}.update.strategy.SparkConsistentBucketDuplicateUpdateStrategy",
}


def _hudi_options(index: ConsistentHashingIndex) -> dict[str, str]:
    """BUCKET/CONSISTENT_HASHING with the same ring bounds and thresholds; resizing (our
    inline service) is Hudi's inline clustering after every commit."""
    p = index.params
    out = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": ENGINE,
           "hoodie.bucket.index.num.buckets": str(p["num_buckets"]),
           "hoodie.bucket.index.max.num.buckets": str(p["max_num_buckets"]),
           "hoodie.bucket.index.min.num.buckets": str(p["min_num_buckets"] or p["num_buckets"]),
           "hoodie.bucket.index.split.threshold": repr(p["split_threshold"]),
           "hoodie.bucket.index.merge.threshold": repr(p["merge_threshold"]),
           "hoodie.parquet.max.file.size": str(p["max_file_size"]),
           "hoodie.clustering.inline": flag(p["resize_enabled"])}
    if p["hash_field"]:
        out["hoodie.bucket.index.hash.field"] = p["hash_field"]
    if p["resize_enabled"]:
        out.update(HUDI_RESIZE, **{"hoodie.clustering.inline.max.commits": "1"})
    return out


class ConsistentHashingIndex(AdvisedSettings, TableFigures, Bucketed, TableServices, PointLookups,
                             HudiCounterpartRole, RescalePanels, RecordIndex):
    """Per-partition hash rings whose buckets split and merge by clustering."""

    ADVICE_TRADEOFF = ("buckets split and merge by clustering, a table service that "
                       "rewrites the file groups it resizes (Hudi: merge-on-read only)")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """Buckets sized for now, split at Hudi's file size: at a larger size the table
        starts with the buckets it would have split into by then."""
        now = shape.buckets_for(shape.records_now)
        return (Candidate(f"{buckets(now)} now, split by size",
                          {"num_buckets": shape.buckets_for(shape.grown_to),
                           "max_file_size": shape.file_bytes}),)


    # the rescale figure: what a pending resize's dual writes cost
    RESCALE_PANELS = (("dual_written_bytes", "dual-written bytes (MiB)", 1024 * 1024),)

    name = "consistent-hashing"
    index_type = "BUCKET"
    HUDI = HudiCounterpart(
        _hudi_options, table_types=("MERGE_ON_READ",),
        refused="Hudi's write client refuses it: \"Consistent hashing bucket index does "
                "not work with COW table. Use simple bucket index or an MOR table.\"",
        same_placement=True,
        explained=tuple((check, "mor", "Hudi's inline consistent-bucket clustering rewrites the "
                         "file groups of the partitions it plans after every commit, the "
                         "ring unchanged (docs/fidelity.md#consistent-hashing); ours "
                         "rewrites a group only to split or merge it")
                        for check in ("base files per partition", "records per file group",
                                      "log files compacted")))
    assigns_inserts = True
    # a bucket index (HoodieSparkConsistentBucketIndex extends HoodieBucketIndex)
    CAN_INDEX_LOG_FILES = True
    SPARK_ADAPTER = "indexes.consistent_hashing.spark:ConsistentHashingSpark"
    SIM_ADAPTER = "indexes.consistent_hashing.sim:ConsistentHashingSim"
    METRICS = (
        Metric("ring_lookups", "keys looked up in a ring (dual writes look up twice)",
               counter=True),
        Metric("dual_written_records", "records also written to a pending resize's "
               "children", counter=True),
        Metric("dual_written_files", "children's files written by dual writes (base "
               "files on copy-on-write, log files on merge-on-read)", counter=True),
        Metric("dual_written_bytes", "bytes of those files", counter=True, measured=True),
        Metric("dual_merge_bytes_read", "bytes of children's base files the dual writes "
               "merged (0 on merge-on-read: a log append reads nothing)", counter=True,
               measured=True),
        Metric("splits", "resize: file groups split"),
        Metric("merges", "resize: file groups merged"),
        Metric("resize_pending_commits", "resize: commits it stayed pending"),
        Metric("resize_execute_s", "resize: seconds of its planning and execution",
               measured=True),
        BUCKET_COUNT_TOTAL,
        *RESCALE_METRICS,
    )
    SERVICES = (
        TableService("resize", "split and merge file groups by clustering (RFC-42)",
                     operation="rescale", inline=True, may_stay_pending=True),
    )
    PARAMS = (
        Param("engine", "hoodie.index.bucket.engine", str, ENGINE,
              "bucket index engine (this index is the CONSISTENT_HASHING one)",
              choices=(ENGINE,)),
        Param("num_buckets", "hoodie.bucket.index.num.buckets", int, 16,
              "initial ring nodes per partition (Hudi's default is 256; 16 as simple-bucket)"),
        Param("hash_field", "hoodie.bucket.index.hash.field", str, "",
              "comma-separated index-key fields (default: the record key)"),
        Param("max_num_buckets", "hoodie.bucket.index.max.num.buckets", int, 4096,
              "no split beyond this many nodes per partition"),
        Param("min_num_buckets", "hoodie.bucket.index.min.num.buckets", int, 0,
              "no merge below this many nodes per partition (0 = the initial count)"),
        Param("split_threshold", "hoodie.bucket.index.split.threshold", float, 2.0,
              "split a file group larger than this × hoodie.parquet.max.file.size"),
        Param("merge_threshold", "hoodie.bucket.index.merge.threshold", float, 0.2,
              "merge neighbours smaller than this × hoodie.parquet.max.file.size"),
        Param("max_file_size", "hoodie.parquet.max.file.size", int, sizing.MAX_FILE_SIZE,
              "the file size the split and merge thresholds are fractions of"),
        Param("resize_enabled", "indexbench.resize.enabled", bool, True,
              "plan a resize after every commit (Hudi: consistent-bucket clustering)"),
        Param("pending_commits", "indexbench.resize.pending.commits", int, 1,
              "commits a resize stays pending (records of resized buckets dual-written) "
              "before its replacecommit completes; 0 = inline clustering"),
    )

    def validate(self) -> None:
        p = self.params
        if p["num_buckets"] < 1:
            raise IndexBenchError("hoodie.bucket.index.num.buckets must be >= 1")
        if p["max_num_buckets"] < p["num_buckets"]:
            raise IndexBenchError("hoodie.bucket.index.max.num.buckets must be >= "
                                  "hoodie.bucket.index.num.buckets")
        if p["min_num_buckets"] < 0 or p["min_num_buckets"] > p["num_buckets"]:
            raise IndexBenchError("hoodie.bucket.index.min.num.buckets must be between 0 "
                                  "and hoodie.bucket.index.num.buckets")
        if not 0 < p["merge_threshold"] < p["split_threshold"]:
            raise IndexBenchError("hoodie.bucket.index.merge.threshold must be > 0 and below "
                                  "hoodie.bucket.index.split.threshold")
        if p["max_file_size"] < 1:
            raise IndexBenchError("hoodie.parquet.max.file.size must be >= 1")
        if p["pending_commits"] < 0:
            raise IndexBenchError("indexbench.resize.pending.commits must be >= 0")

    # ---- configuration ------------------------------------------------------
    def hash_fields(self, record_key_field: str) -> list[str]:
        fields = [f.strip() for f in self.params["hash_field"].split(",") if f.strip()]
        return fields or [record_key_field]

    @property
    def min_buckets(self) -> int:
        return self.params["min_num_buckets"] or self.params["num_buckets"]

    @property
    def split_size(self) -> int:
        return int(self.params["max_file_size"] * self.params["split_threshold"])

    @property
    def merge_size(self) -> int:
        return int(self.params["max_file_size"] * self.params["merge_threshold"])

    def rings(self, snapshot, partitions) -> dict[str, Ring]:
        """Each partition's committed ring (default ring until a resize changed it)."""
        return committed_rings(snapshot, partitions, self.params["num_buckets"])

    def plan_service(self, service, table, snapshot, options):
        """The resize (clustering) plan of every partition whose file groups are too
        large or too small (None: none, or resizing is off)."""
        if not self.params["resize_enabled"]:
            return None
        rings = self.rings(snapshot, snapshot.partitions())
        return plan_resize(snapshot, rings, self.split_size, self.merge_size,
                           self.params["max_num_buckets"], self.min_buckets)

    # ---- figures and invariants ----------------------------------------------
    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = [s.num_records for s in snapshot.slices.values()]
        rings = self.rings(snapshot, snapshot.partitions())
        return {**bucket_fill(np.array(counts)), "index_mem_bytes": 0, "index_disk_bytes": 0,
                "bucket_count_total": int(sum(r.num_buckets for r in rings.values()))}

    def node_of_rows(self, data, ring: Ring, record_key_field: str) -> np.ndarray:
        """Ring node index of every row of ``data`` (a table with the hash fields)."""
        cols = [data[f] for f in self.hash_fields(record_key_field)]
        return ring.locate(consistent_hash(cols))

    def misplaced(self, data, partition: str, file_id: str, config, snapshot) -> str | None:
        """Rows of a base file whose key the committed ring sends to another file group."""
        ring = self.rings(snapshot, [partition])[partition]
        node = ring.node_of_file(file_id)
        if node is None:
            return f"file group {file_id} of {partition!r} is no node of its ring"
        wrong = int((self.node_of_rows(data, ring, config.record_key_field) != node).sum())
        return f"{wrong} records of file group {file_id} belong to other ring nodes" \
            if wrong else None

    def ring_problems(self, snapshot) -> list[str]:
        """Rings well formed; one file group per node, each a node of its ring."""
        problems = []
        rings = self.rings(snapshot, snapshot.partitions())
        for p, ring in rings.items():
            problems += ring.problems()
            nodes = set(ring.file_ids)
            stray = [s.file_id for s in snapshot.in_partitions([p]) if s.file_id not in nodes]
            problems += [f"file group {f} of {p!r} is no node of its ring" for f in stray]
        return problems

    # ---- read side -------------------------------------------------------------
    def query_key_fields(self, record_key_field: str) -> list[str]:
        return self.hash_fields(record_key_field)

    def read_view_extra(self, snapshot) -> dict:
        rings = self.rings(snapshot, snapshot.partitions())
        return {"routing": {p: (tuple(r.values.tolist()), tuple(r.file_ids))
                            for p, r in rings.items()}}

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """Hash → ring node → its file group (if it has one): no file is read to locate."""
        files = dict(view.files.get(partition, ()))
        if not files:
            return Candidates.none()
        values, fids = view.routing[partition]  # the ring's nodes
        h = consistent_hash([keys.column(f) for f in self.hash_fields(view.record_key_field)])
        node_fids = np.asarray(fids, dtype=object)
        has_file = np.isin(node_fids, np.asarray(list(files), dtype=object))
        idx = locate(values, h)
        per_key = node_fids[idx]
        located = np.flatnonzero(has_file[idx])
        counts["ring_lookups"] += len(h)
        counts["candidate_files"] += len(set(per_key[located].tolist()))
        return Candidates.from_rows(located, per_key[located])


__all__ = ["ConsistentHashingIndex"]
