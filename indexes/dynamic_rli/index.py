"""dynamic-rli: buckets that grow online, routed by a partitioned record-level index.

Where the caches live (the choice this module makes): the per-partition
``hash -> bucket`` caches stay in the *driver process* for the whole run, modelling the
long-lived bucket-assigner operators of the design (Spark has no operator state that
survives across batch jobs). Per batch only int32 key hashes travel:

1. executors hash the record keys; the distinct hashes of each data partition come to
   the driver as one int32 array per partition (``collect_set``), never rows;
2. the driver bootstraps untouched partitions from the RLI, looks every hash up and
   assigns the new ones (:mod:`indexes.dynamic_rli.assigner`);
3. one broadcast of sorted ``(hash int32, bucket int16)`` arrays per partition (6 bytes
   per distinct key of the batch) plus ``bucket -> file id`` lets executors tag rows.

Memory and limits: the driver holds ~6 bytes per resident key (sorted arrays + a small
delta, measured from ``nbytes``) plus ~10 bytes per distinct key of the batch in flight;
100M resident keys are ~0.6 GB of driver memory, and every executor receives the batch's
broadcast. On a cluster the driver is thus the one assigner process (the P assigners are
id-space partitions, not parallel tasks): assignment does not scale out, and the
driver's memory bounds the resident keys. Partitioning the batch by assigner and keeping
caches in long-lived executor processes would lift that, at the price of state Spark
does not manage. Concurrent writers are refused by the table's writer lock.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import functions as F
from pyspark.sql import types as T

from indexbench import basefile as bf
from indexbench.errors import IndexBenchError, TableConfigError
from indexbench.fs import IOStats
from indexes.base import (
    BUCKET_COL,
    FILE_ID_COL,
    CommitContext,
    Param,
    RecordIndex,
    TagContext,
    bucket_fill,
)
from indexes.dynamic_rli import rli
from indexes.dynamic_rli.assigner import BYTES, RECORDS, Capacity, PartitionIndex
from indexes.dynamic_rli.eviction import PartitionCaches
from indexes.simple_bucket import existing_bucket_files

HASH_COL = "__dyn_key_hash"
ASSIGNERS_KEY = "indexbench.dynamic.numAssigners"
MAX_REPORTED = 20
HASH_FUNCTIONS = ("murmur3", "java")
BATCH_COUNTERS = ("keys_bootstrapped", "bootstrap_s", "rli_files_read", "rli_bytes_read",
                  "partitions_bootstrapped", "evictions", "buckets_created", "hash_collisions",
                  "rli_entries_written", "rli_compactions")


def hash_column(key_field: str, function: str):
    """The record key's 32-bit hash as a Spark column.

    ``murmur3``: Spark's ``hash()`` (Murmur3_x86_32, seed 42), computed in the JVM.
    ``java``: ``String.hashCode`` as Hudi's ``recordKey.hashCode()``, in a pandas UDF.
    """
    if function == "murmur3":
        return F.hash(F.col(key_field))

    @F.pandas_udf("int")
    def java_hash(keys: pd.Series) -> pd.Series:
        from indexes.hashing import java_string_hash

        return pd.Series(java_string_hash(keys), index=keys.index)

    return java_hash(F.col(key_field))


def _member(sorted_values: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions of ``q`` in ``sorted_values`` and whether each is present."""
    if len(sorted_values) == 0:
        return np.zeros(len(q), np.int64), np.zeros(len(q), bool)
    pos = np.minimum(np.searchsorted(sorted_values, q), len(sorted_values) - 1)
    return pos, sorted_values[pos] == q


class DynamicRliIndex(RecordIndex):
    """The partitioned-RLI dynamic bucket index (Hudi discussion 18514)."""

    name = "dynamic-rli"
    index_type = "BUCKET"
    assigns_inserts = True
    PARAMS = (
        Param("num_assigners", "hoodie.bucket.index.dynamic.num.assigners", int, 0,
              "bucket assigners P = initial buckets per partition (0: Spark default "
              "parallelism at the table's first commit, then fixed)"),
        Param("capacity_mode", "hoodie.bucket.index.dynamic.capacity.mode", str, RECORDS,
              "when a bucket is full: 'records' (keys) or 'bytes' (latest base file size)",
              choices=(RECORDS, BYTES)),
        Param("max_records", "hoodie.bucket.index.dynamic.max.records", int, 2000,
              "records mode: keys per bucket (2000 matches bloom's default insert split, "
              "so the default comparison writes files of similar size)"),
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
              "compact a partition's RLI into one file (own replacecommit) once it has more "
              "than this many files; 0 = never"),
    )

    def __init__(self, **params: Any):
        super().__init__(**params)
        self.caches = PartitionCaches(keep_accessed=self.params["keep_accessed"])
        self.num_assigners: int | None = None
        self._table = None
        self._spark = None
        self._new: dict[str, np.ndarray] = {}
        self._routing: dict[str, tuple] = {}
        self._cleanup: list = []
        self._pending: str | None = None  # instant tagged but not yet reported complete
        self.batch: dict[str, float] = dict.fromkeys(BATCH_COUNTERS, 0)
        self.totals: dict[str, float] = dict.fromkeys(BATCH_COUNTERS, 0)

    def __getstate__(self) -> dict:
        """Tasks pickle the index (its footer hook): ship parameters, never the caches."""
        return {"params": self.params}

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state["params"])

    def validate(self) -> None:
        p = self.params
        if p["num_assigners"] < 0:
            raise IndexBenchError("hoodie.bucket.index.dynamic.num.assigners must be >= 0")
        self.capacity()

    def capacity(self) -> Capacity:
        p = self.params
        return Capacity(p["capacity_mode"], p["max_records"], p["max_file_bytes"],
                        float(p["record_size_estimate"]))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "engine": "DYNAMIC_RLI",
                "resolved_num_assigners": self.num_assigners}

    # ---- assigners and bootstrap ---------------------------------------------
    def resolve_assigners(self, spark, snapshot) -> int:
        """P: the table's recorded value, else the parameter, else Spark's parallelism."""
        if self.num_assigners is None:
            recorded = next((int(snapshot.extra[i][ASSIGNERS_KEY])
                             for i in reversed(snapshot.completed)
                             if ASSIGNERS_KEY in snapshot.extra.get(i, {})), None)
            want = self.params["num_assigners"]
            if recorded and want and want != recorded:
                raise TableConfigError(f"the table's buckets were assigned by {recorded} "
                                       f"assigners; num.assigners cannot become {want}")
            self.num_assigners = recorded or want or spark.sparkContext.defaultParallelism
        return self.num_assigners

    def partition_index(self, table, snapshot, partition: str) -> PartitionIndex:
        """The partition's cache, bootstrapped from its RLI on first touch (lazy)."""
        if partition in self.caches:
            return self.caches[partition]
        t0 = time.perf_counter()
        stats = IOStats()
        entries = rli.read_record_index_locations(
            table, partition, snapshot.completed, rli.replaced_files(snapshot.extra),
            columns=["key_hash", "bucket"], stats=stats)
        pidx = PartitionIndex.bootstrap(
            self.resolve_assigners(self._spark, snapshot),
            entries.column("key_hash").to_numpy(), entries.column("bucket").to_numpy())
        self.caches[partition] = pidx
        self._count(keys_bootstrapped=entries.num_rows, rli_files_read=stats.files_read,
                    rli_bytes_read=stats.bytes_read, partitions_bootstrapped=1,
                    bootstrap_s=time.perf_counter() - t0)
        return pidx

    def _count(self, **values: float) -> None:
        for k, v in values.items():
            self.batch[k] += v
            self.totals[k] += v

    # ---- tagging ---------------------------------------------------------------
    def tag_location(self, batch, ctx: TagContext):
        """Hashes to the driver, assignment there, (hash, bucket) arrays broadcast back."""
        self._table, self._spark = ctx.table, ctx.spark
        if self._pending is not None:  # the last checkpoint never completed (no hook call)
            self.after_commit(self._pending, ok=False)
        self.batch = dict.fromkeys(BATCH_COUNTERS, 0)
        self._pending = ctx.instant
        self._new, self._routing = {}, {}
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        P = self.resolve_assigners(ctx.spark, ctx.snapshot)
        cap = self.capacity()
        hashed = batch.withColumn(HASH_COL, hash_column(key, self.params["hash_function"]))
        hashed = hashed.persist(StorageLevel.MEMORY_AND_DISK)
        self._cleanup.append(hashed.unpersist)
        per_part = (hashed.groupBy(part).agg(F.collect_set(HASH_COL).alias("h")).toArrow())
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        routing = {}
        for i in range(per_part.num_rows):
            p = per_part.column(0)[i].as_py()
            hashes = np.unique(per_part.column(1)[i].values.to_numpy().astype(np.int32))
            pidx = self.partition_index(ctx.table, ctx.snapshot, p)
            slices = ctx.snapshot.in_partitions([p])
            file_bytes = {bf.bucket_of_file_id(s.file_id): s.size_bytes for s in slices}
            recs = sum(s.num_records for s in slices)
            per_record = sum(s.size_bytes for s in slices) / recs if recs else None
            buckets, new_mask, created = pidx.assign(hashes, cap, file_bytes, per_record)
            self._new[p] = hashes[new_mask]
            ub = np.unique(buckets).astype(np.int32)
            fids = np.array([existing.get((p, int(b)))
                             or bf.bucket_file_id(int(b), f"{ctx.instant}/{p}/{b}")
                             for b in ub], dtype=object)
            routing[p] = (hashes, buckets.astype(np.int16), ub, fids)
            self._count(buckets_created=len(created))
        assert P == self.num_assigners
        self._routing = routing
        bc = ctx.spark.sparkContext.broadcast(routing)
        self._cleanup.append(bc.destroy)
        schema = T.StructType(batch.schema.fields + [
            T.StructField(FILE_ID_COL, T.StringType(), False),
            T.StructField(BUCKET_COL, T.IntegerType(), False)])

        def tag(frames):
            table = bc.value
            for pdf in frames:
                h = pdf[HASH_COL].to_numpy(dtype=np.int32)
                parts = pdf[part].to_numpy(dtype=object)
                buckets = np.empty(len(pdf), np.int32)
                fids = np.empty(len(pdf), dtype=object)
                for p in pd.unique(parts):
                    sel = parts == p
                    hs, bs, ub, fid = table[p]
                    pos, ok = _member(hs, h[sel])
                    if not ok.all():
                        raise IndexBenchError(f"internal: unrouted key hash in {p!r}")
                    b = bs[pos].astype(np.int32)
                    buckets[sel] = b
                    fids[sel] = fid[np.searchsorted(ub, b)]
                pdf = pdf.drop(columns=HASH_COL)
                pdf[FILE_ID_COL] = fids
                pdf[BUCKET_COL] = buckets
                yield pdf

        return hashed.mapInPandas(tag, schema)

    # ---- the RLI write (same instant as the data) ---------------------------------
    def update_location(self, ctx: CommitContext) -> dict:
        """Append the RLI entries of this instant's new keys, then run the checkpoint's
        eviction flow; the entries become visible only when the instant completes."""
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        instant, uri = ctx.instant, ctx.table.uri
        written: list[dict] = []
        new = {p: h for p, h in self._new.items() if len(h)}
        if new:
            bc_new = ctx.spark.sparkContext.broadcast(new)
            self._cleanup.append(bc_new.destroy)
            rows = ctx.tagged.select(part, key, FILE_ID_COL, BUCKET_COL,
                                     hash_column(key, self.params["hash_function"])
                                     .alias(HASH_COL))
            schema = rows.schema

            def only_new(frames):
                newh = bc_new.value
                for pdf in frames:
                    keep = np.zeros(len(pdf), bool)
                    parts = pdf[part].to_numpy(dtype=object)
                    h = pdf[HASH_COL].to_numpy(dtype=np.int32)
                    for p in pd.unique(parts):
                        if p in newh:
                            sel = np.flatnonzero(parts == p)
                            keep[sel] = _member(newh[p], h[sel])[1]
                    yield pdf[keep]

            def write(pdf):
                from indexbench.table import Table

                p = pdf[part].iat[0]
                entries = rli.entries_table(pdf[key], pdf[HASH_COL], pdf[BUCKET_COL],
                                            pdf[FILE_ID_COL], instant)
                rel, size = rli.write_file(Table(uri), p, instant, entries)
                per_bucket = pdf.groupby(BUCKET_COL).size()
                return pd.DataFrame([{
                    "partition": p, "path": rel, "bytes": size, "entries": len(pdf),
                    "hashes": int(pdf[HASH_COL].nunique()),
                    "per_bucket": json.dumps({int(b): int(n) for b, n in per_bucket.items()}),
                }])

            out = (rows.mapInPandas(only_new, schema).groupBy(part)
                   .applyInPandas(write, "partition string, path string, bytes long, "
                                         "entries long, hashes long, per_bucket string")
                   .collect())  # ok: one row per data partition
            written = [r.asDict() for r in out]
        written += self._collided_keys(ctx, written)
        self._after_rli_write(written)
        completed = ctx.table.completed_instants()
        evicted = self.caches.snapshot(instant, completed[-1][0] if completed else None)
        self._count(evictions=len(evicted),
                    rli_entries_written=sum(w["entries"] for w in written))
        return {ASSIGNERS_KEY: str(self.num_assigners),
                rli.FILES_KEY: json.dumps([{"path": w["path"], "bytes": w["bytes"]}
                                           for w in sorted(written, key=lambda w: w["path"])])}

    def _collided_keys(self, ctx: CommitContext, written: list[dict]) -> list[dict]:
        """New keys whose hash an existing key already had (the cache saw a hit): the
        writer counted them as inserts, so find and index them, per affected file group."""
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        from_new: dict[tuple[str, int], int] = {}
        for w in written:
            for b, n in json.loads(w["per_bucket"]).items():
                from_new[(w["partition"], int(b))] = n
        suspects = []
        for s in ctx.write_stats:
            b = s["bucketId"]
            if s["numInserts"] > from_new.get((s["partition"], b), 0):
                suspects.append((s["partition"], s["fileId"]))
        if not suspects:
            return []
        before = ctx.table.snapshot()  # this instant is not complete: pre-write slices
        prev = {(p, f): before.slices[(p, f)].path for p, f in suspects
                if (p, f) in before.slices}
        fids = sorted({f for _, f in suspects})
        new = self._new
        uri, instant = ctx.table.uri, ctx.instant
        rows = (ctx.tagged.where(F.col(FILE_ID_COL).isin(fids))
                .select(part, key, FILE_ID_COL, BUCKET_COL,
                        hash_column(key, self.params["hash_function"]).alias(HASH_COL)))

        def find(pdf):
            from indexbench.table import Table

            p, fid = pdf[part].iat[0], pdf[FILE_ID_COL].iat[0]
            h = pdf[HASH_COL].to_numpy(dtype=np.int32)
            hit = ~_member(new.get(p, np.empty(0, np.int32)), h)[1]
            old = np.empty(0, dtype=object)
            if (p, fid) in prev:
                t = Table(uri)
                old = bf.read_record_keys(t.fs, t.abs_path(prev[(p, fid)])).to_numpy(
                    zero_copy_only=False)
            fresh = hit & ~np.isin(pdf[key].to_numpy(dtype=object), old)
            return pdf[fresh]

        found = (rows.groupBy(part, FILE_ID_COL).applyInPandas(find, rows.schema)
                 .toPandas())  # bounded by hash collisions: rare by construction
        out = []
        table = ctx.table
        for p, g in found.groupby(part):
            entries = rli.entries_table(g[key], g[HASH_COL], g[BUCKET_COL], g[FILE_ID_COL],
                                        instant)
            rel, size = rli.write_file(table, p, instant, entries, tag="x")
            per_bucket = g.groupby(BUCKET_COL).size()
            out.append({"partition": p, "path": rel, "bytes": size, "entries": len(g),
                        "hashes": 0, "collided": len(g),
                        "per_bucket": json.dumps({int(b): int(n) for b, n in
                                                  per_bucket.items()})})
        return out

    def _after_rli_write(self, written: list[dict]) -> None:
        """Count collisions and true keys per bucket (a shared hash holds two keys)."""
        collisions = 0
        for w in written:
            if "collided" in w:
                collisions += w["collided"]
                counted: dict = {}
            else:
                collisions += w["entries"] - w["hashes"]
                hs, bs, _, _ = self._routing[w["partition"]]
                newh = self._new[w["partition"]]
                nb = bs[_member(hs, newh)[0]] if len(newh) else np.empty(0, np.int16)
                counted = dict(zip(*np.unique(nb, return_counts=True), strict=True))
            if w["partition"] in self.caches:
                pidx = self.caches[w["partition"]]
                pidx.collisions += w["entries"] - w["hashes"] if "collided" not in w \
                    else w["collided"]
                for b, n in json.loads(w["per_bucket"]).items():
                    extra = n - int(counted.get(int(b), 0))
                    if extra > 0:
                        pidx.keys_per_bucket[int(b)] += extra
        self._count(hash_collisions=collisions)

    # ---- the checkpoint's completion -------------------------------------------
    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """Checkpoint complete (``ok``) or failed: a failure drops the caches holding
        mappings that never reached a committed RLI, so they re-bootstrap (failover)."""
        for fn in self._cleanup:
            try:
                fn()
            except Exception:  # noqa: BLE001 - cleanup must not mask the commit outcome
                pass
        self._cleanup = []
        self._pending = None
        if not ok:
            if self._table is not None:
                completed = self._table.completed_instants()
                self.caches.invalidate_uncommitted(completed[-1][0] if completed else None)
            return {}
        limit = self.params["rli_compact_files"]
        if limit and self._table is not None and self._spark is not None:
            if compact_rli(self._spark, self._table, limit):
                self._count(rli_compactions=1)
        return self.cache_metrics()

    def cache_metrics(self) -> dict[str, float]:
        """What the caches hold now and what this batch did."""
        return {
            "index_mem_bytes": self.caches.nbytes,
            "resident_partitions": len(self.caches),
            "resident_keys": self.caches.keys(),
            "resident_collisions": sum(self.caches[p].collisions for p in self.caches),
            "num_assigners": self.num_assigners or 0,
            **{k: self.batch[k] for k in BATCH_COUNTERS},
            "buckets_created_total": self.totals["buckets_created"],
            "evictions_total": self.totals["evictions"],
        }

    def table_metrics(self, snapshot) -> dict[str, float]:
        counts = np.array([s.num_records for s in snapshot.slices.values()])
        return {**bucket_fill(counts), "index_mem_bytes": self.caches.nbytes,
                "resident_partitions": len(self.caches),
                "index_disk_bytes": rli_disk_bytes(snapshot)}

    # ---- verify ------------------------------------------------------------------
    def verify(self, spark, table, snapshot) -> list[str]:
        """Every snapshot key has exactly one RLI entry whose bucket is its file's bucket,
        with its key's hash; no RLI entry is orphaned; one file group per bucket."""
        return verify_rli(spark, table, snapshot, self.params["hash_function"])


def rli_disk_bytes(snapshot) -> int:
    """Bytes of the visible RLI files, from the commits' metadata (no listing)."""
    replaced = rli.replaced_files(snapshot.extra)
    total = 0
    for inst in snapshot.completed:
        for f in json.loads(snapshot.extra.get(inst, {}).get(rli.FILES_KEY, "[]")):
            if f["path"] not in replaced:
                total += int(f["bytes"])
    return total


def compact_rli(spark, table, min_files: int, partitions: list[str] | None = None) -> str | None:
    """Compact every partition with more than ``min_files`` visible RLI files into one
    file, as its own replacecommit; old files are deleted once it completes (readers
    already ignore them). Returns the instant, or None when nothing needed compacting.
    The caller holds the writer lock."""
    snapshot = table.snapshot()
    replaced = rli.replaced_files(snapshot.extra)
    todo = []
    for p in partitions or rli.rli_partitions(table):
        files = rli.visible_files(table, p, snapshot.completed, replaced)
        if len(files) > min_files:
            todo.append((p, json.dumps([f.path for f in files])))
    if not todo:
        return None
    instant = table.start_instant("replacecommit")
    uri = table.uri

    def run(pdf):
        from indexbench.table import Table

        t = Table(uri)
        out = []
        for p, files in zip(pdf["partition"], pdf["files"], strict=True):
            rel, size, rows = rli.compact_partition(t, p, json.loads(files), instant)
            out.append({"path": rel, "bytes": size, "rows": rows})
        return pd.DataFrame(out, columns=["path", "bytes", "rows"])

    df = spark.createDataFrame(pd.DataFrame(todo, columns=["partition", "files"]))
    made = (df.repartition(max(1, min(len(todo), spark.sparkContext.defaultParallelism)))
            .groupBy("partition").applyInPandas(run, "path string, bytes long, rows long")
            .collect())  # ok: one row per compacted partition
    old = sorted(f for _, files in todo for f in json.loads(files))
    table.complete_instant(instant, {
        "operationType": "COMPACT_RECORD_INDEX", "partitionToWriteStats": {},
        "partitionToReplaceFileIds": {},
        "extraMetadata": {rli.FILES_KEY: json.dumps([{"path": r["path"], "bytes": r["bytes"]}
                                                     for r in made]),
                          rli.REPLACED_KEY: json.dumps(old)},
    }, action="replacecommit")
    for rel in old:  # a cleaner with zero retention
        table.fs.delete_file(table.abs_path(rel))
    return instant


def verify_rli(spark, table, snapshot, hash_function: str) -> list[str]:
    """The RLI invariants as one Spark job over data files and RLI files; only problems
    (at most a few dozen) come back to the driver."""
    from collections import Counter

    problems = []
    per_bucket = Counter((s.partition, bf.bucket_of_file_id(s.file_id))
                         for s in snapshot.slices.values())
    problems += [f"bucket {b} of {p!r} has {n} file groups" for (p, b), n in per_bucket.items()
                 if n > 1]
    uri = table.uri
    data_files = [(s.partition, s.path, bf.bucket_of_file_id(s.file_id))
                  for s in snapshot.slices.values()]
    rli_files = [(f.partition, f.path) for f in rli.all_visible_files(table, snapshot)]
    if not data_files and not rli_files:
        return problems
    par = max(1, spark.sparkContext.defaultParallelism)

    def read_keys(frames):
        from indexbench.table import Table

        t = Table(uri)
        for pdf in frames:
            for p, path, b in zip(pdf["partition"], pdf["path"], pdf["bucket"], strict=True):
                keys = bf.read_record_keys(t.fs, t.abs_path(path)).to_numpy(zero_copy_only=False)
                yield pd.DataFrame({"partition": p, "record_key": keys, "file_bucket": int(b)})

    def read_rli(frames):
        from indexbench.table import Table

        t = Table(uri)
        for pdf in frames:
            for p, path in zip(pdf["partition"], pdf["path"], strict=True):
                e = rli.read_file(t, path, ["record_key", "key_hash", "bucket"]).to_pandas()
                e.insert(0, "partition", p)
                e["bucket"] = e["bucket"].astype("int32")
                yield e

    data = (spark.createDataFrame(data_files or [("", "", 0)][:0],
                                  "partition string, path string, bucket int")
            .repartition(par)
            .mapInPandas(read_keys, "partition string, record_key string, file_bucket int"))
    entries = (spark.createDataFrame(rli_files or [("", "")][:0], "partition string, path string")
               .repartition(par)
               .mapInPandas(read_rli, "partition string, record_key string, key_hash int, "
                                      "bucket int"))
    grouped = entries.groupBy("partition", "record_key").agg(
        F.count(F.lit(1)).alias("n"), F.min("bucket").alias("bucket"),
        F.max("bucket").alias("bucket_max"), F.min("key_hash").alias("key_hash"))
    j = data.join(grouped, ["partition", "record_key"], "full_outer")
    key = F.concat(F.lit("key '"), F.col("record_key"), F.lit("' of '"), F.col("partition"),
                   F.lit("'"))
    expected_hash = hash_column("record_key", hash_function)
    msg = (F.when(F.col("n").isNull(), F.concat(key, F.lit(" has no RLI entry")))
           .when(F.col("file_bucket").isNull(),
                 F.concat(F.lit("orphan RLI entry: "), key, F.lit(" is in no base file")))
           .when(F.col("n") > 1, F.concat(key, F.lit(" has "), F.col("n").cast("string"),
                                          F.lit(" RLI entries")))
           .when(F.col("bucket") != F.col("file_bucket"),
                 F.concat(key, F.lit(": RLI bucket "), F.col("bucket").cast("string"),
                          F.lit(", base file bucket "), F.col("file_bucket").cast("string")))
           .when(F.col("key_hash") != expected_hash,
                 F.concat(key, F.lit(": RLI key hash is not the key's hash"))))
    problems += [r[0] for r in j.select(msg.alias("problem")).where("problem is not null")
                 .limit(MAX_REPORTED).collect()]  # ok: bounded by limit()
    return problems
