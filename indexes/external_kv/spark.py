"""external-kv on Spark: lookups and puts from the executors, never through the driver.

- ``tagLocation``: the batch is repartitioned by partition path and each task streams
  its Arrow batches (``mapInArrow``) through one buffer per partition, sending a
  multi-get whenever ``get.batch.size`` keys of a partition are buffered and the rest at
  the end. A request never mixes partitions, so the requests of a batch are
  ``sum(ceil(records of p / batch size))`` whatever Spark's slicing: the simulator
  counts the same. Hudi's tagging sends its batches per Spark partition of the input,
  as it comes; the repartition is the price of an exact count (a shuffle of the batch,
  in ``tag_s``), and it keeps one partition's lookups in one task.
- ``updateLocation``: the inserts, each with the file group the planner wrote it to,
  are grouped by file group (Hudi loops over write statuses, one per file group) and
  put ``put.batch.size`` entries per request, after the data files are written and
  before the commit.
- ``rollbackCommit`` (``rollback.sync``): the puts of an instant are journaled in the
  store; the next tagging deletes the entries of journaled instants that were rolled
  back (Hudi deletes them in the rollback action itself).
- ``after_commit``: the batch's figures are read (latencies measured in the tasks, the
  server's memory report).

Work counters travel in Spark accumulators (the tagged batch is persisted and counted
once by the driver, so each task's counts arrive once); latencies of every lookup
request come back as one list (8 bytes per request).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import functions as F

from indexes.base import BUCKET_COL, FILE_ID_COL, CommitContext, SparkAdapter, TagContext
from indexes.bucket.spark_routing import tagged_schema
from indexes.external_kv import ExternalKvIndex, core
from indexes.external_kv.store import Counts, KvStore
from indexes.roles import VerifiesIndex
from tableformat.basefile import IS_DELETED, RECORD_KEY
from tableformat.slice_reader import read_file_group

MAX_REPORTED = 20  # verify: example keys per kind of problem


class ListSum(AccumulatorParam):
    """Accumulate lists by concatenation (the tasks' request latencies)."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:  # noqa: N802 (Spark's name)
        a.extend(b)
        return a


class ExternalKvSpark(VerifiesIndex, SparkAdapter):
    """Hudi's SparkHoodieHBaseIndex: tagLocation, updateLocation, rollbackCommit."""

    index: ExternalKvIndex

    def __init__(self, index: ExternalKvIndex):
        super().__init__(index)
        self._reset()

    def _reset(self) -> None:
        self._tag_counts: Any = None  # the batch's counters accumulator (ctx.counters)
        self._latencies: Any = None
        self._driver = Counts()  # requests the driver made for this batch
        self._puts = Counts()
        self._journal: str | None = None  # the instant whose puts are journaled

    def _store(self) -> KvStore:
        return KvStore(self.index.store_url(), self.index.prefix)

    # ---- tagLocation -----------------------------------------------------------------
    def tag_location(self, batch, ctx: TagContext):
        self._reset()
        if self.index.params["rollback_sync"]:
            self._settle_journals(ctx)
        cfg = ctx.table.config
        part_field, key_field = cfg.partition_field, cfg.record_key_field
        url, prefix = self.index.store_url(), self.index.prefix
        size = self.index.params["get_batch_size"]
        completed = core.instant_codes(ctx.snapshot.completed)
        acc = ctx.counters
        lat = ctx.spark.sparkContext.accumulator([], ListSum())
        self._tag_counts, self._latencies = acc, lat
        schema = tagged_schema(batch.schema, nullable=True)

        def lookup(batches):
            """One task: per partition, buffer rows; a full buffer is one multi-get."""
            store = KvStore(url, prefix)
            pending: dict[str, list[pa.RecordBatch]] = {}
            held: Counter = Counter()
            stale = 0

            def send(rows: pa.Table):
                """One multi-get of these rows' keys; the rows tagged (Arrow batches)."""
                nonlocal stale
                keys = core.entry_keys(rows.column(part_field).combine_chunks(),
                                       rows.column(key_field).combine_chunks(), prefix)
                tagged = core.tag_values(store.get(keys), completed)
                stale += tagged.stale
                out = rows.append_column(pa.field(FILE_ID_COL, pa.string()), tagged.file_ids)
                out = out.append_column(pa.field(BUCKET_COL, pa.int32()),
                                        pa.nulls(rows.num_rows, pa.int32()))
                yield from out.combine_chunks().to_batches()

            def drain(p: str, everything: bool):
                rows = pa.Table.from_batches(pending.pop(p))
                while rows.num_rows >= size or (everything and rows.num_rows):
                    yield from send(rows.slice(0, size))
                    rows = rows.slice(size)
                held[p] = rows.num_rows
                if rows.num_rows:
                    pending[p] = rows.to_batches()

            try:
                for rb in batches:
                    parts = rb.column(part_field)
                    for p in pc.unique(parts).to_pylist():
                        rows = rb.filter(pc.equal(parts, p))
                        pending.setdefault(p, []).append(rows)
                        held[p] += rows.num_rows
                        if held[p] >= size:
                            yield from drain(p, everything=False)
                for p in list(pending):
                    yield from drain(p, everything=True)
            finally:
                store.close()
                c = store.counts
                acc.add({"kv_gets": c.gets, "kv_get_round_trips": c.get_round_trips,
                         "kv_stale_entries": stale})
                lat.add(list(c.get_seconds))

        return batch.repartition(F.col(part_field)).mapInArrow(lookup, schema)

    def _settle_journals(self, ctx: TagContext) -> None:
        """``rollback.sync``: instants whose puts were journaled and that are neither
        completed nor pending any more were rolled back (the writer that started them
        died): their entries go now; a completed one's journal is dropped."""
        store = self._store()
        try:
            completed = set(ctx.snapshot.completed)
            pending = set(ctx.table.pending_instants())
            for instant in store.journaled():
                if instant in completed:
                    store.close_journal(instant)
                elif instant not in pending:
                    store.rollback(instant)
        finally:
            store.close()
            self._driver = store.counts

    # ---- updateLocation --------------------------------------------------------------
    def update_location(self, ctx: CommitContext) -> dict:
        """Put an entry for every insert (a record the lookup found no valid entry for),
        naming this instant and its file group; updates keep their entries, as Hudi's."""
        if ctx.inserts is None:
            return {}
        cfg = ctx.table.config
        part_field, key_field = cfg.partition_field, cfg.record_key_field
        url, prefix = self.index.store_url(), self.index.prefix
        size = self.index.params["put_batch_size"]
        instant = ctx.instant
        inserts = ctx.inserts
        if IS_DELETED in inserts.columns:  # a delete is never an insert; to be sure
            inserts = inserts.where(~F.col(IS_DELETED))
        inserts = inserts.select(part_field, key_field, FILE_ID_COL)
        journal = None
        if self.index.params["rollback_sync"]:
            store = self._store()
            try:
                journal = store.open_journal(instant)
            finally:
                store.close()
                self._driver.other_round_trips += store.counts.other_round_trips
            self._journal = instant

        def put(group: pa.Table) -> pa.Table:
            """One file group's inserts, ``put.batch.size`` entries per request."""
            store = KvStore(url, prefix)
            try:
                keys = core.entry_keys(group.column(part_field).combine_chunks(),
                                       group.column(key_field).combine_chunks(), prefix)
                values = core.entry_values(instant, group.column(FILE_ID_COL).combine_chunks())
                for lo, hi in core.batch_bounds(len(keys), size):
                    store.put(keys.slice(lo, hi - lo), values.slice(lo, hi - lo), journal)
            finally:
                store.close()
            c = store.counts
            return pa.table({"puts": [c.puts], "round_trips": [c.put_round_trips]})

        done = (inserts.groupBy(part_field, FILE_ID_COL)
                .applyInArrow(put, "puts long, round_trips long")
                .agg(F.sum("puts").alias("puts"), F.sum("round_trips").alias("rts"))
                .first())  # ok: one row of two sums
        self._puts.puts = int(done["puts"] or 0)
        self._puts.put_round_trips = int(done["rts"] or 0)
        return {}

    # ---- the checkpoint: commit or rollback --------------------------------------------
    def after_commit(self, instant: str, ok: bool) -> dict[str, float]:
        """A committed instant's journal goes; returns the batch's figures. A failed
        instant's entries stay for now: with ``rollback.sync`` its journal is settled
        by the next tagging, once the instant is rolled back (undone on the spot, or by
        the next writer after a crash or Ctrl-C), and counted in that batch's row; the
        server may be the reason it failed."""
        if not ok:
            self._reset()
            return {}
        store = self._store()
        try:
            if self._journal == instant:
                store.close_journal(instant)
            figures = self._figures(store)
        finally:
            store.close()
            self._reset()
        return figures

    def _figures(self, store: KvStore) -> dict[str, float]:
        tag = dict(self._tag_counts.value) if self._tag_counts is not None else {}
        seconds = list(self._latencies.value) if self._latencies is not None else []
        other = self._driver.other_round_trips + store.counts.other_round_trips
        get_rts = int(tag.get("kv_get_round_trips", 0))
        pct = core.percentiles_ms(seconds)
        return {
            "kv_puts": self._puts.puts,
            "kv_put_round_trips": self._puts.put_round_trips,
            "kv_round_trips": get_rts + self._puts.put_round_trips + other,
            "kv_rollback_deletes": self._driver.rollback_deletes,
            "kv_get_p50_ms": pct["p50"], "kv_get_p99_ms": pct["p99"],
            "kv_server_bytes": store.memory_bytes(),
            "kv_entries": store.entries(),
        }

    # ---- verify: every live record has a valid entry naming its file group -------------
    def verify(self, spark, table, snapshot) -> list[str]:
        slices = list(snapshot.slices.values())
        if not slices:
            return []
        url, prefix = self.index.store_url(), self.index.prefix
        size = self.index.params["get_batch_size"]
        completed = core.instant_codes(snapshot.completed)
        uri = table.uri
        rows = spark.createDataFrame([(i,) for i in range(len(slices))], "slice long")
        n = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 2))

        def check(frames):
            """Each slice's live keys looked up: how many have no valid entry, how many
            one naming another file group (a few of each as examples)."""
            import pandas as pd

            from tableformat.table import Table

            t = Table(uri)
            store = KvStore(url, prefix)
            try:
                for pdf in frames:
                    out = []
                    for i in pdf["slice"]:
                        s = slices[int(i)]
                        keys = read_file_group(t, s).column(RECORD_KEY).combine_chunks()
                        parts = pa.repeat(pa.scalar(s.partition, pa.string()), len(keys))
                        rk = core.entry_keys(parts, keys, prefix)
                        fids = [core.tag_values(store.get(rk.slice(lo, hi - lo)), completed)
                                .file_ids for lo, hi in core.batch_bounds(len(rk), size)]
                        got = pa.chunked_array(fids, pa.string()).combine_chunks() if fids \
                            else pa.array([], pa.string())
                        missing = pc.is_null(got)
                        wrong = pc.fill_null(pc.not_equal(got, s.file_id), False)
                        out.append((s.partition, s.file_id,
                                    int(pc.sum(missing).as_py() or 0),
                                    int(pc.sum(wrong).as_py() or 0),
                                    keys.filter(missing).slice(0, MAX_REPORTED).to_pylist(),
                                    keys.filter(wrong).slice(0, MAX_REPORTED).to_pylist()))
                    yield pd.DataFrame(out, columns=["partition", "file_id", "missing",
                                                     "wrong", "missing_keys", "wrong_keys"])
            finally:
                store.close()

        found = (rows.repartition(n).mapInPandas(
            check, "partition string, file_id string, missing long, wrong long, "
                   "missing_keys array<string>, wrong_keys array<string>")
            .where("missing > 0 or wrong > 0").limit(MAX_REPORTED).collect())  # ok: bounded
        problems = []
        for r in found:
            if r["missing"]:
                problems.append(
                    f"{self.index.name}: {r['missing']} record(s) of {r['partition']}/"
                    f"{r['file_id']} have no entry of a committed instant in the store "
                    f"(e.g. {', '.join(map(repr, r['missing_keys'][:3]))}): their next "
                    "upsert would be an insert, a duplicate")
            if r["wrong"]:
                problems.append(
                    f"{self.index.name}: {r['wrong']} record(s) of {r['partition']}/"
                    f"{r['file_id']} have an entry naming another file group "
                    f"(e.g. {', '.join(map(repr, r['wrong_keys'][:3]))})")
        return problems
