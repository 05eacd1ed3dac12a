"""extendible-hash: a directory of ``2^d`` pointers per partition, buckets split alone.

RFC-29 lists extendible hashing among the ways to scale a bucket index; Hudi never built
it (``BucketIndexEngineType`` has SIMPLE and CONSISTENT_HASHING only). Here the low
``d`` bits of simple-bucket's hash (Hudi's Java ``List<String>.hashCode``) pick a
directory entry, the entry a bucket, the bucket id its file group (RFC-29's file id): no
data file is read to tag, and with ``hoodie.bucket.index.num.buckets = 2^d`` the table
starts as simple-bucket's. After every commit each bucket over capacity (records, or
bytes of its latest base file) splits on its own — local depth + 1, the directory
doubles only when the local depth was the global depth — as its own replacecommit
through the service runner, reading and rewriting only that bucket's file group; the
new directory is recorded in that replacecommit and in a ``.hashing_meta`` file beside
consistent-hashing's. The directory, routing and plans: :mod:`~indexes.extendible_hash.core`;
its files: :mod:`~indexes.extendible_hash.storage`; Spark: :mod:`~indexes.extendible_hash.spark`;
the simulator: :mod:`~indexes.extendible_hash.sim`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.base import (
    BUCKET_COUNT_TOTAL,
    Metric,
    Param,
    ServiceOption,
    TableService,
    bucket_fill,
)
from indexes.bucket.advice import buckets, power_of_two_at_least
from indexes.bucket.files import bucket_problems
from indexes.bucket.index import BucketIndex
from indexes.bucket.rescale_rows import RESCALE_METRICS
from indexes.extendible_hash.core import (
    BYTES,
    MAX_DEPTH,
    RECORDS,
    Capacity,
    Directory,
    Router,
    SplitPlanner,
    committed_directories,
    depth_of,
    history_problems,
    masked_hash,
    plan_requested_split,
    plan_split,
)
from indexes.lookup import Candidates
from indexes.roles import AdvisedSettings, Candidate, TableServices, TableShape
from tableformat.basefile import bucket_of_file_id
from tableformat.errors import IndexBenchError

ENGINE = "EXTENDIBLE_HASHING"  # the engine name Hudi would give it; Hudi has none


class ExtendibleHashIndex(AdvisedSettings, TableServices, BucketIndex):
    """Extendible hashing over Hudi's bucket hash: per-partition directories whose
    buckets split one at a time."""

    ADVICE_TRADEOFF = ("no Hudi counterpart: a bucket over capacity splits on its own (one "
                       "replacecommit each), and routing reads the partition's directory")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """A power of two of buckets sized for now, split at Hudi's file size: at a larger
        size the table starts with the buckets it would have split into by then."""
        n = power_of_two_at_least(shape.buckets_for(shape.records_now))
        grown = power_of_two_at_least(shape.buckets_for(shape.grown_to))
        return (Candidate(f"{buckets(n)} now, split by size",
                          {"num_buckets": grown, "capacity_mode": "bytes",
                           "max_file_bytes": shape.file_bytes}),)


    name = "extendible-hash"
    index_type = "BUCKET"
    assigns_inserts = True
    # a key's bucket names its file group, whether its record is in a log or a base file
    CAN_INDEX_LOG_FILES = True
    SPARK_ADAPTER = "indexes.extendible_hash.spark:ExtendibleHashSpark"
    SIM_ADAPTER = "indexes.extendible_hash.sim:ExtendibleHashSim"
    METRICS = (
        Metric("splits", "split: buckets split (1 on a split's row)"),
        Metric("directory_doublings", "split: 1 when it doubled its partition's directory"),
        Metric("records_moved", "split: records that moved to the new bucket"),
        Metric("directory_bytes", "split: bytes of the directory version it wrote"),
        Metric("global_depth", "split: its partition's global depth d after it"),
        Metric("local_depth", "split: the local depth of its two buckets after it"),
        Metric("directory_entries", "directory entries (2^d) over all partitions"),
        Metric("global_depth_max", "the largest global depth of any partition"),
        BUCKET_COUNT_TOTAL,
        *RESCALE_METRICS,
    )
    SERVICES = (
        TableService(
            "split", "split each bucket over capacity on its own (local depth + 1; the "
            "directory doubles when it must), one replacecommit per split",
            operation="rescale", inline=True, repeat=True, command="rescale",
            usage="[--partition P [--bucket B]] (one bucket split)",
            options=(
                ServiceOption("--partition", "partitions", "partition whose bucket splits "
                              "(repeatable; default: all)", repeatable=True, metavar="P"),
                ServiceOption("--bucket", "bucket", "the bucket to split (with one "
                              "--partition; default: the largest)", type=int, metavar="B"),
            )),
    )
    PARAMS = (
        Param("engine", "hoodie.index.bucket.engine", str, ENGINE,
              "bucket index engine (this index is the EXTENDIBLE_HASHING one; Hudi has no "
              "such engine)", choices=(ENGINE,)),
        Param("num_buckets", "hoodie.bucket.index.num.buckets", int, 16,
              "initial buckets per partition, a power of two 2^d (d: the initial global "
              "depth): simple-bucket's table of that many buckets"),
        Param("hash_field", "hoodie.bucket.index.hash.field", str, "",
              "comma-separated index-key fields (default: the record key)"),
        Param("max_num_buckets", "hoodie.bucket.index.max.num.buckets", int, 4096,
              "no split makes a partition's directory larger than this many entries (a "
              "power of two; a partition never has more buckets than entries)"),
        Param("capacity_mode", "hoodie.bucket.index.extendible.capacity.mode", str, RECORDS,
              "when a bucket is over capacity: 'records' (its file slice's) or 'bytes' "
              "(its latest base file's)", choices=(RECORDS, BYTES)),
        Param("max_records", "hoodie.bucket.index.extendible.max.records", int, 2000,
              "records mode: a bucket holding more records splits"),
        Param("max_file_bytes", "hoodie.bucket.index.extendible.max.file.bytes", int,
              120 * 1024 * 1024, "bytes mode: a bucket whose latest base file is larger "
              "splits"),
        Param("split_enabled", "indexbench.split.enabled", bool, True,
              "split the buckets over capacity after every commit (inline)"),
    )

    def validate(self) -> None:
        p = self.params
        for key, name in (("hoodie.bucket.index.num.buckets", "num_buckets"),
                          ("hoodie.bucket.index.max.num.buckets", "max_num_buckets")):
            n = p[name]
            if n < 1 or n & (n - 1) or n > 1 << MAX_DEPTH:
                raise IndexBenchError(f"{key} must be a power of two from 1 to 2^{MAX_DEPTH} "
                                      f"(extendible hashing doubles directories), not {n}")
        if p["max_num_buckets"] < p["num_buckets"]:
            raise IndexBenchError("hoodie.bucket.index.max.num.buckets must be >= "
                                  "hoodie.bucket.index.num.buckets")
        if p["max_records"] < 1 or p["max_file_bytes"] < 1:
            raise IndexBenchError("hoodie.bucket.index.extendible.max.records and "
                                  "max.file.bytes must be >= 1")

    # ---- the directories ---------------------------------------------------------
    @property
    def initial_depth(self) -> int:
        return depth_of(self.params["num_buckets"])

    def capacity(self) -> Capacity:
        p = self.params
        return Capacity(p["capacity_mode"], p["max_records"], p["max_file_bytes"])

    def directories(self, snapshot, partitions) -> dict[str, Directory]:
        """Each partition's committed directory (the initial one until a split)."""
        return committed_directories(snapshot, partitions, self.params["num_buckets"])

    def router(self, snapshot, partitions) -> Router:
        return Router.of(self.directories(snapshot, partitions))

    def bucket_counts(self, snapshot, partitions: list[str]) -> dict[str, int]:
        """Directory entries per partition: every bucket id is below it."""
        return {p: d.size for p, d in self.directories(snapshot, partitions).items()}

    def hash_layout(self, snapshot) -> dict[str, int] | None:
        """``h % 2^d`` places every record only while no partition has buckets of mixed
        local depths (then bucket ``i`` is entry ``i``); else None."""
        dirs = self.directories(snapshot, snapshot.partitions())
        if any(set(d.local_depths.values()) != {d.global_depth} for d in dirs.values()):
            return None
        return {p: d.size for p, d in dirs.items()}

    # ---- the split service ---------------------------------------------------------
    def plan_service(self, service, table, snapshot, options: dict[str, Any]):
        """Inline (no options): the bucket most over capacity that may split (None:
        none). ``indexbench rescale``: the bucket asked for, or the largest."""
        dirs = self.directories(snapshot, snapshot.partitions())
        limit = self.params["max_num_buckets"]
        if not options:
            if not self.params["split_enabled"]:
                return None
            return plan_split(snapshot, dirs, self.capacity(), limit)
        return plan_requested_split(snapshot, dirs, options.get("partitions"),
                                    options.get("bucket"), limit)

    def split_planner(self, snapshot) -> SplitPlanner | None:
        """The inline policy of :meth:`plan_service` as a planner that keeps its state
        from one split to the next (the simulator's loop: the same plans, without a scan
        of the table per split); None when splits are off."""
        if not self.params["split_enabled"]:
            return None
        return SplitPlanner(snapshot, self.directories(snapshot, snapshot.partitions()),
                            self.capacity(), self.params["max_num_buckets"])

    # ---- figures and invariants ----------------------------------------------------
    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = np.array([s.num_records for s in snapshot.slices.values()])
        return self.metrics_of(counts, self.directories(snapshot, snapshot.partitions()))

    def metrics_of(self, counts: np.ndarray, directories: dict[str, Directory]
                   ) -> dict[str, float]:
        """:meth:`table_metrics` from the records of every file group (in the snapshot's
        order) and every partition's directory."""
        dirs = directories.values()
        return {**bucket_fill(counts),
                "index_mem_bytes": int(sum(d.pointers.nbytes for d in dirs)),
                "index_disk_bytes": int(sum(len(d.stored) for d in dirs if d.seq_no)),
                "bucket_count_total": int(sum(d.num_buckets for d in dirs)),
                "directory_entries": int(sum(d.size for d in dirs)),
                "global_depth_max": int(max((d.global_depth for d in dirs),
                                            default=self.initial_depth))}

    def row_buckets(self, data, partition: str, config, snapshot) -> np.ndarray:
        """The bucket each row must be in: its directory entry's."""
        return self.router(snapshot, [partition]).route(
            [data[f] for f in self.hash_fields(config.record_key_field)],
            np.full(len(data), partition, dtype=object))

    def directory_problems(self, snapshot) -> list[str]:
        """Directories well formed, their history coherent, one file group per bucket,
        each file group's bucket one of its directory's (``verify``)."""
        dirs = self.directories(snapshot, snapshot.partitions())
        problems = [p for d in dirs.values() for p in d.problems()]
        problems += history_problems(snapshot, self.params["num_buckets"])
        problems += bucket_problems(snapshot.slices.values(),
                                    {p: d.size for p, d in dirs.items()})
        problems += [f"file group {s.file_id} of {s.partition!r} is bucket "
                     f"{bucket_of_file_id(s.file_id)}, no bucket of its directory"
                     for s in snapshot.slices.values()
                     if bucket_of_file_id(s.file_id) not in dirs[s.partition].local_depths]
        return problems

    # ---- read side -----------------------------------------------------------------
    def read_view_extra(self, snapshot) -> dict[str, Any]:
        dirs = self.directories(snapshot, snapshot.partitions())
        return {"routing": {p: tuple(d.pointers.tolist()) for p, d in dirs.items()}}

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """Hash → directory entry → bucket → its file group: no file is read to locate."""
        files = view.files.get(partition, ())
        if not files:
            return Candidates.none()
        pointers = np.asarray(view.routing[partition], dtype=np.int32)  # the directory
        h = masked_hash([keys.column(f) for f in self.hash_fields(view.record_key_field)])
        buckets = pointers[h & (len(pointers) - 1)]
        of_bucket = np.full(len(pointers), None, dtype=object)  # bucket id -> file id
        for fid, _ in files:
            of_bucket[bucket_of_file_id(fid)] = fid
        fids = of_bucket[buckets]
        located = np.flatnonzero(fids != None)  # noqa: E711 (element-wise)
        counts["keys_hashed"] += len(h)
        counts["candidate_files"] += len({fids[i] for i in located})
        return Candidates.from_rows(located, fids[located])


__all__ = ["ENGINE", "ExtendibleHashIndex"]
