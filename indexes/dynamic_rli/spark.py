"""dynamic-rli on Spark: where the caches live and what travels.

The per-partition ``hash -> bucket`` caches (:class:`~indexes.dynamic_rli.core.DynamicRliCore`)
stay in the *driver process* for the whole run, modelling the long-lived bucket-assigner
operators of the design (Spark has no operator state that survives across batch jobs).
Per batch only int32 key hashes travel:

1. executors hash the record keys; the distinct hashes of each data partition come to
   the driver as one int32 array per partition (``collect_set``), never rows;
2. the driver bootstraps untouched partitions from the RLI, looks every hash up and
   assigns the new ones (the core);
3. one broadcast of sorted ``(hash int32, bucket int16)`` arrays per partition (6 bytes
   per distinct key of the batch) plus ``bucket -> file id`` lets executors tag rows.

Memory and limits: the driver holds ~6 bytes per resident key (sorted arrays + a small
delta, measured from ``nbytes``) plus ~10 bytes per distinct key of the batch in flight;
100M resident keys are ~0.6 GB of driver memory, and every executor receives the batch's
broadcast. On a cluster the driver is thus the one assigner process (the P assigners are
id-space partitions, not parallel tasks): assignment does not scale out, and the
driver's memory bounds the resident keys. Concurrent writers are refused by the table's
writer lock.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import functions as F

from indexes.base import (
    BUCKET_COL,
    FILE_ID_COL,
    CommitContext,
    ServiceWork,
    SparkAdapter,
    TagContext,
)
from indexes.bucket.files import existing_bucket_files, new_bucket_file_id
from indexes.bucket.spark_routing import tagged_schema
from indexes.dynamic_rli import ASSIGNERS_KEY, DynamicRliIndex, rli
from indexes.dynamic_rli.cache import sorted_distinct
from indexes.dynamic_rli.core import bucket_file_sizes, member
from tableformat import basefile as bf
from tableformat.basefile import IS_DELETED
from tableformat.errors import IndexBenchError
from tableformat.slice_reader import read_file_group

HASH_COL = "__dyn_key_hash"
MAX_REPORTED = 20


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


class DynamicRliSpark(SparkAdapter):
    """dynamic-rli's tagLocation/updateLocation on Spark around the driver-side core."""

    def __init__(self, index: DynamicRliIndex):
        super().__init__(index)
        self.core = index.core
        self._table = None
        self._routing: dict[str, tuple] = {}
        self._cleanup: list = []

    def _latest_successful(self) -> str | None:
        completed = self._table.completed_instants() if self._table is not None else []
        return completed[-1][0] if completed else None

    # ---- tagging ---------------------------------------------------------------
    def tag_location(self, batch, ctx: TagContext):
        """Hashes to the driver, assignment there, (hash, bucket) arrays broadcast back."""
        self._table = ctx.table
        if self.core.pending is not None:  # the last checkpoint never completed
            self.after_commit(self.core.pending, ok=False)
        self.core.begin(ctx.instant, self._latest_successful)
        self._routing = {}
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        self.core.resolve_assigners(self.index.recorded_assigners(ctx.snapshot),
                                    ctx.spark.sparkContext.defaultParallelism)
        hashed = batch.withColumn(HASH_COL, hash_column(key, self.index.params["hash_function"]))
        hashed = hashed.persist(StorageLevel.MEMORY_AND_DISK)
        self._cleanup.append(hashed.unpersist)
        has_deletes = IS_DELETED in batch.columns
        deleted = F.coalesce(F.col(IS_DELETED), F.lit(False)) if has_deletes else F.lit(False)
        per_part = (hashed.groupBy(part).agg(
            F.collect_set(F.when(~deleted, F.col(HASH_COL))).alias("h"),
            F.collect_set(F.when(deleted, F.col(HASH_COL))).alias("d")).toArrow())
        existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
        routing = {}
        for i in range(per_part.num_rows):
            p = per_part.column(0)[i].as_py()
            hashes = sorted_distinct(per_part.column(1)[i].values.to_numpy().astype(np.int32))
            file_bytes, per_record = bucket_file_sizes(ctx.snapshot.in_partitions([p]))
            load = lambda p=p: rli.bootstrap_entries(ctx.table, ctx.snapshot, p)  # noqa: E731
            if not len(hashes) and not file_bytes and p not in self.core.caches:
                # only deletes, in a partition the table never had: nothing to look up
                routing[p] = (hashes, np.empty(0, np.int16), np.empty(0, np.int32),
                              np.empty(0, dtype=object))
                continue
            buckets, _ = self.core.route(p, hashes, load, file_bytes, per_record)
            # deletes are located, never assigned: one of an unknown key gets no location
            dels = sorted_distinct(per_part.column(2)[i].values.to_numpy().astype(np.int32))
            dels = dels[~member(hashes, dels)[1]]
            if len(dels):
                found = self.core.locate(p, dels, load)
                known = found >= 0
                hashes = np.concatenate([hashes, dels[known]])
                buckets = np.concatenate([buckets, found[known].astype(buckets.dtype)])
                order = np.argsort(hashes, kind="stable")
                hashes, buckets = hashes[order], buckets[order]
            ub = sorted_distinct(buckets).astype(np.int32)
            fids = np.array([existing.get((p, int(b))) or new_bucket_file_id(ctx.instant, p, b)
                             for b in ub], dtype=object)
            routing[p] = (hashes, buckets.astype(np.int16), ub, fids)
        self._routing = routing
        bc = ctx.spark.sparkContext.broadcast(routing)
        self._cleanup.append(bc.destroy)
        schema = tagged_schema(batch.schema, has_deletes)  # null: a delete of an unknown key

        acc = ctx.counters

        def tag(frames):
            table = bc.value
            for pdf in frames:
                acc.add({"keys_hashed": len(pdf)})  # hashed in the JVM for these rows
                h = pdf[HASH_COL].to_numpy(dtype=np.int32)
                parts = pdf[part].to_numpy(dtype=object)
                dels = pdf[IS_DELETED].fillna(False).to_numpy(dtype=bool) if has_deletes \
                    else np.zeros(len(pdf), bool)
                buckets = np.full(len(pdf), -1, np.int32)
                fids = np.full(len(pdf), None, dtype=object)
                for p in pd.unique(parts):
                    sel = np.flatnonzero(parts == p)
                    hs, bs, ub, fid = table[p]
                    pos, ok = member(hs, h[sel])
                    if not (ok | dels[sel]).all():
                        raise IndexBenchError(f"internal: unrouted key hash in {p!r}")
                    sel, pos = sel[ok], pos[ok]
                    b = bs[pos].astype(np.int32)
                    buckets[sel] = b
                    fids[sel] = fid[np.searchsorted(ub, b)]
                pdf = pdf.drop(columns=HASH_COL)
                pdf[FILE_ID_COL] = fids
                pdf[BUCKET_COL] = pd.array(np.where(buckets >= 0, buckets, 0), dtype="Int32")
                pdf.loc[buckets < 0, BUCKET_COL] = pd.NA
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
        new = {p: h for p, h in self.core.new.items() if len(h)}
        if new:
            bc_new = ctx.spark.sparkContext.broadcast(new)
            self._cleanup.append(bc_new.destroy)
            rows = ctx.tagged.select(part, key, FILE_ID_COL, BUCKET_COL,
                                     hash_column(key, self.index.params["hash_function"])
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
                            keep[sel] = member(newh[p], h[sel])[1]
                    yield pdf[keep]

            def write(pdf):
                from tableformat.table import Table

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
        for w in written:
            self.core.record_rli_entries(
                w["partition"], w["entries"],
                {int(b): n for b, n in json.loads(w["per_bucket"]).items()},
                None if "collided" in w else w["hashes"])
        self.core.checkpoint(instant, self._latest_successful())
        return {ASSIGNERS_KEY: str(self.core.num_assigners),
                rli.FILES_KEY: json.dumps([{"path": w["path"], "bytes": w["bytes"],
                                            "entries": w["entries"]}
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
            if s["numInserts"] > from_new.get((s["partitionPath"], b), 0):
                suspects.append((s["partitionPath"], s["fileId"]))
        if not suspects:
            return []
        before = ctx.table.snapshot()  # this instant is not complete: pre-write slices
        prev = {(p, f): before.slices[(p, f)] for p, f in suspects
                if (p, f) in before.slices}
        completed, replaced = before.completed, rli.replaced_files(before.extra)
        deleted_in = partitions_with_deletes(ctx.table)
        fids = sorted({f for _, f in suspects})
        new = self.core.new
        uri, instant = ctx.table.uri, ctx.instant
        rows = (ctx.tagged.where(F.col(FILE_ID_COL).isin(fids))
                .select(part, key, FILE_ID_COL, BUCKET_COL,
                        hash_column(key, self.index.params["hash_function"]).alias(HASH_COL)))

        def find(pdf):
            from tableformat.table import Table

            p, fid = pdf[part].iat[0], pdf[FILE_ID_COL].iat[0]
            h = pdf[HASH_COL].to_numpy(dtype=np.int32)
            hit = ~member(new.get(p, np.empty(0, np.int32)), h)[1]
            old = np.empty(0, dtype=object)
            if (p, fid) in prev:
                t = Table(uri)
                old = read_file_group(t, prev[(p, fid)]).column(bf.RECORD_KEY).to_numpy()
            keys = pdf[key].to_numpy(dtype=object)
            fresh = hit & ~np.isin(keys, old)
            if fresh.any() and p in deleted_in:
                # a re-insert of a deleted key: its RLI entry was kept, not a collision
                t = Table(uri)
                entries = rli.read_record_index_locations(
                    t, p, completed, replaced, columns=["key_hash", "record_key"])
                asked = pa.array(h[fresh]).cast(entries.schema.field("key_hash").type)
                known = entries.filter(pc.is_in(entries.column("key_hash"), value_set=asked))
                indexed = pc.is_in(pa.array(keys[fresh], pa.string()),
                                   value_set=known.column("record_key").combine_chunks())
                fresh[np.flatnonzero(fresh)] = ~indexed.to_numpy(zero_copy_only=False)
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
        if not ok:
            self.core.fail(self._latest_successful())
            return {}
        self.core.complete()
        return self.core.cache_metrics()

    # ---- table service: RLI compaction (run by indexbench.services) -----------------
    def service_request(self, service, plan) -> dict:
        return {"operationType": "INDEX", "partitions": [p for p, _ in plan]}

    def execute_service(self, service, plan, spark, table, instant, counters) -> ServiceWork:
        """One task per partition copies the entries of its RLI files into one file of
        ``instant``; the commit lists it and hides the old files, deleted once it
        completes (a cleaner with zero retention; readers already ignore them)."""
        made = compact_rli(spark, table, plan, instant, counters)
        old = sorted(f for _, files in plan for f in files)
        # Hudi's nearest operation is its indexer's INDEX (Hudi compacts an index
        # inside its metadata table's own timeline; this RLI lives on the data table's)
        return ServiceWork(
            operation_type="INDEX",
            extra_metadata={rli.FILES_KEY: json.dumps([{"path": r["path"], "bytes": r["bytes"],
                                                        "entries": r["rows"]} for r in made]),
                            rli.REPLACED_KEY: json.dumps(old)},
            figures={"mode": service.name, "partitions_touched": len(plan),
                     "rli_compactions": 1,
                     "rli_entries_written": sum(int(r["rows"]) for r in made),
                     "rli_bytes_written": sum(int(r["bytes"]) for r in made)},
            on_complete=lambda: [table.fs.delete_file(table.abs_path(rel)) for rel in old])

    def verify(self, spark, table, snapshot) -> list[str]:
        """Every snapshot key has exactly one RLI entry whose bucket is its file's bucket,
        with its key's hash; no RLI entry is orphaned; one file group per bucket."""
        return verify_rli(spark, table, snapshot, self.index.params["hash_function"])


def compact_rli(spark, table, plan: list[tuple[str, list[str]]], instant: str,
                counters) -> list[dict]:
    """Compact each planned partition's RLI files into one file of ``instant`` (one
    task per partition); returns (path, bytes, rows) of the new files. The files read
    are counted in ``counters``."""
    uri = table.uri
    todo = [(p, json.dumps(files)) for p, files in plan]

    def run(pdf):
        from tableformat.table import Table

        t = Table(uri)
        out = []
        for p, files in zip(pdf["partition"], pdf["files"], strict=True):
            paths = json.loads(files)
            rel, size, rows = rli.compact_partition(t, p, paths, instant)
            counters.add({"files_read": len(paths),
                          "bytes_read": sum(t.fs.get_file_info(t.abs_path(f)).size
                                            for f in paths)})
            out.append({"path": rel, "bytes": size, "rows": rows})
        return pd.DataFrame(out, columns=["path", "bytes", "rows"])

    df = spark.createDataFrame(pd.DataFrame(todo, columns=["partition", "files"]))
    return [r.asDict() for r in
            df.repartition(max(1, min(len(todo), spark.sparkContext.defaultParallelism)))
            .groupBy("partition").applyInPandas(run, "path string, bytes long, rows long")
            .collect()]  # ok: one row per compacted partition


def verify_rli(spark, table, snapshot, hash_function: str) -> list[str]:
    """The RLI invariants as one Spark job over data files and RLI files; only problems
    (at most a few dozen) come back to the driver."""
    from collections import Counter

    problems = []
    # entries of deleted keys stay (docs/driver.md, "Deletes"): orphans then are dead entries
    deleted_in = sorted(partitions_with_deletes(table))
    per_bucket = Counter((s.partition, bf.bucket_of_file_id(s.file_id))
                         for s in snapshot.slices.values())
    problems += [f"bucket {b} of {p!r} has {n} file groups" for (p, b), n in per_bucket.items()
                 if n > 1]
    uri = table.uri
    data_files = [(s.partition, s.file_id, bf.bucket_of_file_id(s.file_id))
                  for s in snapshot.slices.values()]
    by_id = {(s.partition, s.file_id): s for s in snapshot.slices.values()}
    rli_files = [(f.partition, f.path) for f in rli.all_visible_files(table, snapshot)]
    if not data_files and not rli_files:
        return problems
    par = max(1, spark.sparkContext.defaultParallelism)

    def read_keys(frames):
        from tableformat.table import Table

        t = Table(uri)
        for pdf in frames:
            for p, path, b in zip(pdf["partition"], pdf["path"], pdf["bucket"], strict=True):
                keys = read_file_group(t, by_id[(p, path)]).column(bf.RECORD_KEY).to_numpy()
                yield pd.DataFrame({"partition": p, "record_key": keys, "file_bucket": int(b)})

    def read_rli(frames):
        from tableformat.table import Table

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
           .when(F.col("n") > 1, F.concat(key, F.lit(" has "), F.col("n").cast("string"),
                                          F.lit(" RLI entries")))
           .when(F.col("file_bucket").isNull() & ~F.col("partition").isin(deleted_in),
                 F.concat(F.lit("orphan RLI entry: "), key, F.lit(" is in no base file")))
           .when(F.col("bucket") != F.col("file_bucket"),
                 F.concat(key, F.lit(": RLI bucket "), F.col("bucket").cast("string"),
                          F.lit(", base file bucket "), F.col("file_bucket").cast("string")))
           .when(F.col("key_hash") != expected_hash,
                 F.concat(key, F.lit(": RLI key hash is not the key's hash"))))
    problems += [r[0] for r in j.select(msg.alias("problem")).where("problem is not null")
                 .limit(MAX_REPORTED).collect()]  # ok: bounded by limit()
    return problems


def partitions_with_deletes(table) -> set[str]:
    """Partitions where a committed instant deleted records (from the commit metadata):
    only there can a key's kept RLI entry outlive its record."""
    out = set()
    for inst, action in table.completed_instants():
        for part, stats in table.read_commit(inst, action).get(
                "partitionToWriteStats", {}).items():
            if any(int(st.get("numDeletes") or 0) for st in stats):
                out.add(part)
    return out
