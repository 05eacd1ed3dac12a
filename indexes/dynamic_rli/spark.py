"""dynamic-rli on Spark: P bucket-assigner tasks hold the caches; the driver holds none.

Per batch (:meth:`DynamicRliSpark.tag_location`):

1. the record key is hashed in the JVM and the rows go to P tasks by the seed's rule
   (``repartitionById`` on the key's assigner: task ``a`` gets exactly assigner ``a``'s
   rows, of every data partition);
2. one broadcast plan says per data partition of the batch whether the seed's flow
   bootstraps it now (not resident), each share's *token* (the tag of its committed
   state), its visible RLI files (from the commits: no listing), its committed file
   group ids and, in bytes mode, its latest base file sizes — no key state;
3. each task (:mod:`~indexes.dynamic_rli.executor`) finds its (partition, assigner)
   shares in its Python worker's registry and trusts one only if its tag equals the
   token; otherwise (another worker changed it, a failed instant, a retry or recompute
   of this instant) it reloads the share from its own RLI files (``rli-[acx]<a>_*``).
   It assigns new keys, tags the rows, writes its RLI file of new keys and a stats file
   (counts, created buckets, per-bucket new keys, share bytes, hits, loads).

:meth:`~DynamicRliSpark.update_location` reads the P stats files, finds keys whose hash
collided with an existing key (rare; written as ``rli-x<a>`` files), and runs the seed's
eviction flow on the per-partition flags (:mod:`~indexes.dynamic_rli.ledger`); a task
drops shares of evicted partitions the next time it runs. A committed instant turns the
tasks' tags into tokens; a failed one distrusts the shares it touched.

Memory: the driver holds a few numbers per resident (partition, share)
(``driver_index_mem_bytes`` = 0, measured); each assigner task holds its shares,
~6 bytes per resident key (``assigner_mem_bytes_max`` / ``_total``). Why a bootstrap
and not engine state or pinned executors: README.md here ("On the
executors"). Concurrent writers are refused by the table's writer lock.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from indexes.base import (
    BUCKET_COL,
    FILE_ID_COL,
    CommitContext,
    ServiceWork,
    SparkAdapter,
    TagContext,
)
from indexes.bucket.files import existing_bucket_files
from indexes.bucket.spark_routing import tagged_schema
from indexes.dynamic_rli import ASSIGNERS_KEY, DynamicRliIndex, rli, visible_rli_files
from indexes.dynamic_rli.assigner import assigner_of
from indexes.dynamic_rli.core import bucket_file_sizes
from indexes.dynamic_rli.executor import (
    HASH_COL,
    AssignPlan,
    PartitionPlan,
    assign_task,
    delete_stats,
    read_stats,
)
from indexes.dynamic_rli.ledger import (
    apply_task_stats,
    commit_tags,
    distrust,
    driver_key_bytes,
    record_collided,
)
from indexes.roles import ServiceExecutor, VerifiesIndex
from tableformat import basefile as bf
from tableformat.basefile import IS_DELETED
from tableformat.slice_reader import read_file_group

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


def assigner_column(hash_col, num_assigners: int):
    """The key's assigner as Spark computes it, equal to :func:`assigner_of`."""
    if num_assigners & (num_assigners - 1) == 0:
        return hash_col.bitwiseAND(F.lit(num_assigners - 1))
    return F.pmod(hash_col.bitwiseAND(F.lit(0x7FFFFFFF)), F.lit(num_assigners))


class DynamicRliSpark(VerifiesIndex, ServiceExecutor, SparkAdapter):
    """dynamic-rli's tagLocation/updateLocation: assigner tasks hold the caches."""

    def __init__(self, index: DynamicRliIndex):
        super().__init__(index)
        self.core = index.core  # its caches hold PartitionMeta (flags, share figures)
        self._table = None
        self._plan: AssignPlan | None = None
        self._stats: list[dict] | None = None
        self._tags: dict[tuple[str, int], str] = {}
        self._rli_written: dict[str, int] = {}  # update_location's, read by after_commit
        self._cleanup: list = []

    def _latest_successful(self) -> str | None:
        completed = self._table.completed_instants() if self._table is not None else []
        return completed[-1][0] if completed else None

    # ---- tagging ---------------------------------------------------------------
    def tag_location(self, batch, ctx: TagContext):
        """Rows to their assigner's task; the tasks assign, tag and write the RLI."""
        self._table = ctx.table
        if self.core.pending is not None:  # the last checkpoint never completed
            self.after_commit(self.core.pending, ok=False)
        self.core.begin(ctx.instant, self._latest_successful)
        self._stats, self._tags, self._rli_written = None, {}, {}
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        P = self.core.resolve_assigners(self.index.recorded_assigners(ctx.snapshot),
                                        ctx.spark.sparkContext.defaultParallelism)
        plan = self._plan = self._make_plan(ctx, P)
        bc = ctx.spark.sparkContext.broadcast(plan)
        self._cleanup.append(bc.destroy)
        has_deletes = IS_DELETED in batch.columns
        schema = tagged_schema(batch.schema, has_deletes)  # null: a delete of an unknown key
        hashed = batch.withColumn(HASH_COL, hash_column(key, self.index.params["hash_function"]))
        routed = hashed.repartitionById(P, assigner_column(F.col(HASH_COL), P))
        out_schema = to_arrow_schema(schema)
        acc = ctx.counters

        def run(batches):
            from pyspark import TaskContext

            yield from assign_task(batches, bc.value, TaskContext.get().partitionId(),
                                   part, key, out_schema, acc)

        return routed.mapInArrow(run, schema)

    def _make_plan(self, ctx: TagContext, P: int) -> AssignPlan:
        """Per data partition of the batch: fresh or resident, share tokens, RLI files,
        file groups (and sizes): no key state."""
        snap = ctx.snapshot
        files: dict[str, list[str]] = {}
        for f in visible_rli_files(snap):
            files.setdefault(f["path"][len(rli.RLI_DIR) + 1:].rsplit("/", 1)[0], []).append(
                f["path"])
        existing = existing_bucket_files(snap.in_partitions(ctx.partitions))
        caches = self.core.caches
        parts = {}
        for p in ctx.partitions:
            file_bytes, per_record = bucket_file_sizes(snap.in_partitions([p]))
            parts[p] = PartitionPlan(
                fresh=p not in caches,
                tokens=caches[p].tokens() if p in caches else (None,) * P,
                files=tuple(sorted(files.get(p, ()))),
                file_ids={b: f for (q, b), f in existing.items() if q == p},
                file_bytes=file_bytes if self.index.capacity().mode == "bytes" else {},
                per_record=per_record, has_files=bool(file_bytes))
        return AssignPlan(ctx.table.uri, ctx.instant, P, self.index.capacity(), parts,
                          {p: caches[p].tokens() for p in caches})

    # ---- the RLI write (same instant as the data) ---------------------------------
    def update_location(self, ctx: CommitContext) -> dict:
        """Read the tasks' reports (their RLI files are written), index keys whose hash
        collided, then run the checkpoint's eviction flow; the entries become visible
        only when the instant completes."""
        P = self.core.num_assigners
        self._stats = read_stats(ctx.table, ctx.instant, P)
        delete_stats(ctx.table, ctx.instant, P)
        self._tags, written = apply_task_stats(self.core, self._stats, ctx.instant)
        collided = self._collided_keys(ctx, written)
        for w in collided:
            record_collided(self.core, w["partition"], w["assigner"], w["entries"],
                            self._tags, ctx.instant)
        self.core.checkpoint(ctx.instant, self._latest_successful())
        files = written + collided
        # the RLI files this instant appended (priced at the commit by the time model)
        self._rli_written = {"rli_files_written": len(files),
                             "rli_bytes_written": sum(int(w["bytes"]) for w in files)}
        return {ASSIGNERS_KEY: str(P),
                rli.FILES_KEY: json.dumps([{"path": w["path"], "bytes": w["bytes"],
                                            "entries": w["entries"]}
                                           for w in sorted(files, key=lambda w: w["path"])])}

    def _collided_keys(self, ctx: CommitContext, written: list[dict]) -> list[dict]:
        """New keys whose hash an existing key already had (the cache saw a hit): the
        writer counted them as inserts, so find and index them, per affected file group:
        keys in neither the file group's previous slice nor this instant's RLI files."""
        cfg = ctx.table.config
        part, key = cfg.partition_field, cfg.record_key_field
        from_new: dict[tuple[str, int], int] = {}
        for w in written:
            for b, n in w["per_bucket"].items():
                from_new[(w["partition"], int(b))] = from_new.get((w["partition"], int(b)),
                                                                  0) + n
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
        ours = {}
        for w in written:
            ours.setdefault(w["partition"], []).append(w["path"])
        uri = ctx.table.uri
        rows = (ctx.tagged.where(F.col(FILE_ID_COL).isin(fids))
                .select(part, key, FILE_ID_COL, BUCKET_COL,
                        hash_column(key, self.index.params["hash_function"]).alias(HASH_COL)))

        def find(pdf):
            from tableformat.table import Table

            t = Table(uri)
            p, fid = pdf[part].iat[0], pdf[FILE_ID_COL].iat[0]
            keys = pdf[key].to_numpy(dtype=object)
            asked = pa.array(keys, pa.string())
            indexed = [rli.read_file(t, f, ["record_key"]).column("record_key")
                       for f in ours.get(p, ())]
            fresh = np.ones(len(keys), bool)
            if indexed:
                got = pa.chunked_array(indexed, pa.string()).combine_chunks()
                fresh = ~pc.is_in(asked, value_set=got).to_numpy(zero_copy_only=False)
            if (p, fid) in prev:
                # Arrow's hash set: numpy's isin compares object arrays pair by pair
                # (14 s for 12k batch keys against a 62k-key file group)
                old = (read_file_group(t, prev[(p, fid)]).column(bf.RECORD_KEY)
                       .cast(pa.string()).combine_chunks())
                fresh &= ~pc.is_in(asked, value_set=old).to_numpy(zero_copy_only=False)
            if fresh.any() and p in deleted_in:
                # a re-insert of a deleted key: its RLI entry was kept, not a collision
                h = pdf[HASH_COL].to_numpy(dtype=np.int32)
                entries = rli.read_record_index_locations(
                    t, p, completed, replaced, columns=["key_hash", "record_key"])
                asked = pa.array(h[fresh]).cast(entries.schema.field("key_hash").type)
                known = entries.filter(pc.is_in(entries.column("key_hash"), value_set=asked))
                again = pc.is_in(pa.array(keys[fresh], pa.string()),
                                 value_set=known.column("record_key").combine_chunks())
                fresh[np.flatnonzero(fresh)] = ~again.to_numpy(zero_copy_only=False)
            return pdf[fresh]

        found = (rows.groupBy(part, FILE_ID_COL).applyInPandas(find, rows.schema)
                 .toPandas())  # bounded by hash collisions: rare by construction
        out = []
        P = self.core.num_assigners
        found["__a"] = assigner_of(found[HASH_COL].to_numpy(np.int32), P) if len(found) else []
        for (p, a), g in found.groupby([part, "__a"]):
            entries = rli.entries_table(g[key], g[HASH_COL], g[BUCKET_COL], g[FILE_ID_COL],
                                        ctx.instant)
            rel, size = rli.write_file(ctx.table, p, ctx.instant, entries,
                                       tag=rli.share_tag("x", int(a)))
            out.append({"partition": p, "assigner": int(a), "path": rel, "bytes": size,
                        "entries": len(g)})
        return out

    # ---- the checkpoint's completion -------------------------------------------
    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """Checkpoint complete (``ok``): the tasks' tags become the shares' tokens.
        Failed: the seed's flow drops partitions holding uncommitted mappings (all the
        batch touched if the tasks' reports were never read) and no worker copy of a
        touched share is trusted again (each reloads from committed files)."""
        for fn in self._cleanup:
            try:
                fn()
            except Exception:  # noqa: BLE001 - cleanup must not mask the commit outcome
                pass
        self._cleanup = []
        touched = sorted(self._plan.partitions) if self._plan is not None else []
        if not ok:
            if self._stats is None:
                for p in touched:
                    if p in self.core.caches:
                        self.core.caches[p].updated = True
            self.core.fail(self._latest_successful())
            distrust(self.core, touched)
            self._plan = None
            return {}
        commit_tags(self.core, self._tags)
        self.core.complete()
        stats = self._stats or []
        # what each task holds of the partitions still resident after the checkpoint
        # (it drops the evicted ones when it next runs)
        mem = [sum(int(n) for p, n in t["mem"].items() if p in self.core.caches)
               for t in stats]
        self._plan = None
        written, self._rli_written = self._rli_written, {}
        return {**self.core.cache_metrics(), **written,
                "driver_index_mem_bytes": driver_key_bytes(self.core),
                "assigner_mem_bytes_max": max(mem, default=0),
                "assigner_mem_bytes_total": sum(mem),
                "assigner_cache_hits": sum(int(t["hits"]) for t in stats),
                "assigner_bootstraps": sum(int(t["bootstraps"]) for t in stats),
                "assigner_keys_loaded": sum(int(t["keys_loaded"]) for t in stats),
                "assigner_bootstrap_s": sum(float(t["load_s"]) for t in stats)}

    # ---- table service: RLI compaction (run by indexbench.services) -----------------
    def service_request(self, service, plan) -> dict:
        return {"operationType": "INDEX", "partitions": [p for p, _ in plan]}

    def execute_service(self, service, plan, spark, table, instant, counters) -> ServiceWork:
        """One task per partition copies the entries of its RLI files into one file per
        share of ``instant``; the commit lists them and hides the old files, deleted
        once it completes (a cleaner with zero retention; readers already ignore them).
        Content is unchanged, so the shares' tokens (and warm caches) stay valid."""
        P = self.core.num_assigners or self.index.recorded_assigners(table.snapshot()) or 1
        made = compact_rli(spark, table, plan, instant, counters, P)
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
                counters, num_assigners: int) -> list[dict]:
    """Compact each planned partition's RLI files into one file per share of
    ``instant`` (one task per partition); returns (path, bytes, rows) of the new files.
    The files read are counted in ``counters``."""
    uri = table.uri
    todo = [(p, json.dumps(files)) for p, files in plan]

    def run(pdf):
        from tableformat.table import Table

        t = Table(uri)
        out = []
        for p, files in zip(pdf["partition"], pdf["files"], strict=True):
            paths = json.loads(files)
            for rel, size, rows in rli.compact_partition(t, p, paths, instant,
                                                         num_assigners):
                out.append({"path": rel, "bytes": size, "rows": rows})
            counters.add({"files_read": len(paths),
                          "bytes_read": sum(t.fs.get_file_info(t.abs_path(f)).size
                                            for f in paths)})
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
