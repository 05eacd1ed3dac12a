"""multi-fg-bucket in the simulator: the same routing, insert plan and key checks.

The model table's commit metadata gives each partition's file groups
(:func:`~indexes.multi_fg_bucket.layout.partition_groups`, the Spark driver's call) and
the plan is the same function (:func:`~indexes.multi_fg_bucket.plan.plan_inserts`). What
the commit metadata does not say, the adapter keeps per partition, without per-key state:

- each group's min and max key (as order codes plus the key's ordinal, so a tie of codes
  is settled on the key text, exactly as the real footer range compares);
- per insert batch, the first key of each run its plan cut (:class:`Route`): a key
  stays in the group it was inserted into (no service moves keys), so an existing key's
  group is one search in its insert batch's runs;
- in ``exact`` mode (tables up to ``exact_bloom_keys`` keys), each group's key ordinals:
  its filter is built from its keys in record-key order (the writer's) and probed by
  :func:`~indexes.bloom_filter.key_check.check_filter`, the Spark tasks' function, so false
  positives are the real run's bit for bit. In ``modelled`` mode they are drawn, seeded,
  at each filter's theoretical rate, as bloom's simulator draws them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from indexes.bloom_filter.key_check import (
    check_filter,
    count_file_read,
    count_key_check,
    count_theory,
)
from indexes.bloom_filter.metrics import count_range_job
from indexes.bloom_filter.serialization import text_length
from indexes.hashing import bucket_ids
from indexes.multi_fg_bucket.core import expand
from indexes.multi_fg_bucket.layout import PartitionGroups, partition_groups
from indexes.multi_fg_bucket.plan import plan_counters, plan_inserts, records_per_group
from indexes.roles import SimFooterBytes
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions
from writeclient import sizing

PAIR = np.dtype([("b", "<i8"), ("c", "<u8")])  # (bucket, key order code): sort order


def pack(buckets: np.ndarray, codes: np.ndarray) -> np.ndarray:
    out = np.empty(len(codes), PAIR)
    out["b"], out["c"] = buckets, codes
    return out


class KeyText:
    """Record keys of ordinals, built only where two order codes tie."""

    def __init__(self, keys) -> None:
        self.keys = keys

    def __call__(self, ordinals: np.ndarray) -> list[str]:
        return self.keys.record_keys(np.asarray(ordinals, np.int64)).to_pylist()

    def order(self, buckets: np.ndarray, codes: np.ndarray, ordinals: np.ndarray
              ) -> np.ndarray:
        """Permutation sorting records by (bucket, record key in byte order): by codes,
        then by the text of the (rare) records whose bucket and code tie."""
        order = np.lexsort((codes, buckets))
        b, c = buckets[order], codes[order]
        tie = np.flatnonzero((b[1:] == b[:-1]) & (c[1:] == c[:-1]))
        if len(tie):
            starts = tie[np.concatenate(([True], np.diff(tie) > 1))]
            for s in starts:  # one short run of equal codes each
                e = s + 1
                while e + 1 < len(order) and b[e + 1] == b[s] and c[e + 1] == c[s]:
                    e += 1
                run = order[s:e + 1]
                text = self(ordinals[run])
                order[s:e + 1] = run[np.argsort(np.array(text, dtype=object), kind="stable")]
        return order

    def less(self, codes: np.ndarray, ords: np.ndarray, other_codes: np.ndarray,
             other_ords: np.ndarray) -> np.ndarray:
        """Element-wise key < other key (codes first, the text only where they tie)."""
        out = codes < other_codes
        tie = np.flatnonzero(codes == other_codes)
        if len(tie):
            a = np.array(self(ords[tie]), dtype=object)
            b = np.array(self(other_ords[tie]), dtype=object)
            out[tie] = a < b
        return out


@dataclass
class Route:
    """One insert batch's runs in one partition: the (bucket, code) and ordinal of the
    first key of each run, sorted, and the group each run went to."""

    firsts: np.ndarray  # PAIR
    first_ords: np.ndarray  # int64
    groups: np.ndarray  # int64: group numbers of the partition state

    def locate(self, buckets: np.ndarray, codes: np.ndarray, ords: np.ndarray,
               text: KeyText) -> np.ndarray:
        """Group of keys this batch inserted: the last run starting at or before them."""
        q = pack(buckets, codes)
        i = np.searchsorted(self.firsts, q, side="right") - 1
        while True:  # a run starting with the key's own code: compare the key text
            at = np.maximum(i, 0)
            tie = np.flatnonzero((i >= 0) & (self.firsts[at] == q))
            if not len(tie):
                break
            before = text.less(codes[tie], ords[tie], self.firsts["c"][at[tie]],
                               self.first_ords[at[tie]])
            if not before.any():
                break
            i[tie[before]] -= 1
        assert (i >= 0).all(), "a key routed to an insert batch that did not insert it"
        return self.groups[i]


@dataclass
class PartitionState:
    """The simulator's memory of one partition's file groups, by group number."""

    number: dict[str, int] = field(default_factory=dict)  # file id → group number
    lo_code: list[int] = field(default_factory=list)
    lo_ord: list[int] = field(default_factory=list)
    hi_code: list[int] = field(default_factory=list)
    hi_ord: list[int] = field(default_factory=list)
    nkeys: list[int] = field(default_factory=list)
    ordinals: list[np.ndarray] = field(default_factory=list)  # exact mode only
    routes: dict[int, Route] = field(default_factory=dict)  # by the batch's first ordinal

    def group(self, file_id: str) -> int:
        """The number of a group, a new one for a file id not seen before."""
        if file_id not in self.number:
            self.number[file_id] = len(self.nkeys)
            self.lo_code.append(0)
            self.lo_ord.append(-1)
            self.hi_code.append(0)
            self.hi_ord.append(-1)
            self.nkeys.append(0)
            self.ordinals.append(np.empty(0, np.int64))
        return self.number[file_id]

    def locate(self, ords: np.ndarray, buckets: np.ndarray, codes: np.ndarray,
               text: KeyText) -> np.ndarray:
        """Group number of existing keys: their insert batch's route."""
        firsts = np.array(sorted(self.routes), dtype=np.int64)
        batch = firsts[np.searchsorted(firsts, ords, side="right") - 1]
        out = np.empty(len(ords), np.int64)
        for first in np.unique(batch):
            sel = batch == first
            out[sel] = self.routes[int(first)].locate(buckets[sel], codes[sel], ords[sel], text)
        return out


class MultiFgBucketSim(SimFooterBytes, SimAdapter):
    """Hash buckets, bounded bloom lookups and the insert plan over the model table."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.exact = self.options.table_keys <= self.options.option("exact_bloom_keys")
        self.state: dict[str, PartitionState] = {}
        self.filters: dict[tuple[str, int], object] = {}
        self.rng = np.random.default_rng([self.options.seed, 0x3F6B])
        self.template = index.new_filter()

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        snap = self.model.snapshot
        counts = self.index.bucket_counts(snap, batch.partitions)
        self.num = np.array([counts[p] for p in batch.partitions], dtype=np.int64)
        self.fields = self.index.hash_fields(batch.key_field)
        self.groups = partition_groups(snap.in_partitions(batch.partitions),
                                       self.model.table_type)
        self.text = KeyText(batch.keys)
        self.pending: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def _buckets(self, ordinals: np.ndarray, part: np.ndarray) -> np.ndarray:
        cols = [self.batch.keys.column(f, ordinals) for f in self.fields]
        return bucket_ids(cols, self.num[part]).astype(np.int64)

    def add(self, chunk: SimChunk) -> None:
        if self.batch.bulk:  # routed one partition at a time in finish (bounded memory)
            for pi in chunk.parts():
                self.pending.setdefault(self.batch.partitions[pi], [])
            return
        buckets = self._buckets(chunk.ordinals, chunk.part)
        for pi in chunk.parts():
            sel = chunk.part == pi
            self.pending.setdefault(self.batch.partitions[pi], []).append(
                (chunk.ordinals[sel], buckets[sel], chunk.is_new[sel]))

    def _records(self, p: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The partition's records of the batch: ordinals, buckets, new or not."""
        parts = self.pending.pop(p)
        if self.batch.bulk:
            pi = self.batch.partitions.index(p)
            parts = [(c.ordinals, self._buckets(c.ordinals, np.full(len(c.ordinals), pi)),
                      c.is_new) for c in self.batch.partition_records(p)]
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, bool)
        return tuple(np.concatenate([x[i] for x in parts]) for i in range(3))

    def finish(self) -> GroupWrites:
        snap, keys = self.model.snapshot, self.batch.keys
        cfg = self.index.sizing()
        avg = sizing.average_record_size(snap.commits, cfg)
        records = {p: self._records(p) for p in sorted(self.pending)}
        inserts: dict[tuple[str, int], int] = {}
        for p, (_, buckets, new) in records.items():
            b, n = np.unique(buckets[new], return_counts=True)
            inserts.update({(p, int(x)): int(y) for x, y in zip(b, n, strict=True)})
        plans = plan_inserts(inserts, self.groups, records_per_group(cfg, avg),
                             self.batch.instant)
        self.counts.update(plan_counters(plans))
        self.counts["avg_record_size"] = avg
        # as the Spark adapter: the insert count is a job of its own, the routed rows are
        # persisted when there are groups to look up, the located ones always
        self.counts["tag_jobs"] += 1
        persisted = 2 if any(p in self.groups for p in records) else 1
        out = GroupWrites()
        for p, (ords, buckets, new) in records.items():
            self.counts["keys_hashed"] += len(ords)
            self.counts["tag_rows_persisted"] += persisted * len(ords)
            st = self.state.setdefault(p, PartitionState())
            codes = keys.order_codes(ords)
            writes: dict[str, list[int]] = {}  # file id → [inserts, updates]
            pg = self.groups.get(p)
            if pg is not None and len(pg):
                self._look_up(p, st, pg, ords, buckets, codes, ~new, writes)
            self._insert(p, st, plans, ords[new], buckets[new], codes[new], writes)
            for fid, (ins, upd) in sorted(writes.items()):
                out.add(p, fid, int(fid[:8]), ins, upd)
                if ins:  # the plan's groups, as the Spark adapter's insert_groups
                    out.planned.add((p, fid))
        count_range_job(self.counts)
        return out

    # ---- the lookup inside each key's bucket ------------------------------------------
    def _look_up(self, p: str, st: PartitionState, pg: PartitionGroups, ords: np.ndarray,
                 buckets: np.ndarray, codes: np.ndarray, old: np.ndarray,
                 writes: dict[str, list[int]]) -> None:
        """Candidates, probes and key reads of the batch's keys among their bucket's
        groups; updates counted to the group that holds them."""
        prune = self.index.params["prune_by_ranges"]
        num = np.array([st.number[f] for f in pg.file_ids], dtype=np.int64)
        self.counts["keys_looked_up"] += int((pg.span(buckets)[1] > 0).sum())
        if prune:
            self.counts["range_footers_read"] += len(pg)
        # keys in (bucket, key) order: a group's candidates are one slice of them
        order = self.text.order(buckets, codes, ords)
        lo, hi = self._slices(st, pg, num, buckets[order], codes[order], ords[order], prune)
        j, at = expand(lo, hi - lo)
        k = order[at]
        cand = np.bincount(j, minlength=len(pg))
        true = np.zeros(len(pg), np.int64)
        if old.any():
            holder = st.locate(ords[old], buckets[old], codes[old], self.text)
            index_of = np.full(len(st.nkeys), -1, np.int64)
            index_of[num] = np.arange(len(pg))
            true = np.bincount(index_of[holder], minlength=len(pg))
            for i in np.flatnonzero(true):
                writes.setdefault(str(pg.file_ids[i]), [0, 0])[1] += int(true[i])
        key_bytes = self.model.key_bytes
        nkeys = np.array(st.nkeys, np.int64)[num]
        if self.exact:
            read = np.zeros(len(pg), bool)
            bounds = np.searchsorted(j, np.arange(len(pg) + 1))  # j is grouped (expand)
            for i in np.flatnonzero(cand):
                probe = ords[k[bounds[i]:bounds[i + 1]]]
                g = int(num[i])

                def file_keys(i=i, g=g):
                    read[i] = True
                    return self.batch.keys.record_keys(st.ordinals[g])

                check_filter(self._filter(p, st, g), self.batch.keys.record_keys(probe),
                            self.counts, file_keys)
        else:
            fpp = np.array([self._fpp(int(n)) for n in nkeys])
            fp = self.rng.binomial(np.maximum(cand - true, 0), np.minimum(fpp, 1.0))
            read = (true + fp) > 0
            for i in np.flatnonzero(cand):
                count_key_check(self.counts, cand[i], true[i] + fp[i], true[i])
                count_theory(self.counts, int(cand[i] - true[i]), float(fpp[i]), int(nkeys[i]))
        self.counts["check_footers_read"] += int(np.count_nonzero(cand))
        self.counts["files_read"] += int(read.sum())
        for i in np.flatnonzero(read):
            count_file_read(self.counts, bool(true[i]), float(nkeys[i] * key_bytes))
        footer = np.array([self.footer_bytes(int(n)) for n in nkeys], np.float64)
        self.counts["bytes_read"] += float((footer.sum() if prune else 0.0)
                                           + footer[cand > 0].sum()
                                           + nkeys[read].sum() * key_bytes)

    def _slices(self, st: PartitionState, pg: PartitionGroups, num: np.ndarray,
                buckets: np.ndarray, codes: np.ndarray, ords: np.ndarray, prune: bool
                ) -> tuple[np.ndarray, np.ndarray]:
        """Per group, the slice of the (bucket, key)-sorted keys it is compared with: its
        bucket's, narrowed to its [min, max] when pruning (two searches per group; a
        key whose code ties a bound is settled on the key text)."""
        lo = np.searchsorted(buckets, pg.buckets, side="left")
        hi = np.searchsorted(buckets, pg.buckets, side="right")
        if not prune:
            return lo, hi
        for i in np.flatnonzero(hi > lo):
            g = int(num[i])
            if st.lo_ord[g] < 0:
                continue  # a group without keys has no range: every key of its bucket
            run = codes[lo[i]:hi[i]]
            a = int(lo[i] + np.searchsorted(run, np.uint64(st.lo_code[g]), side="left"))
            b = int(lo[i] + np.searchsorted(run, np.uint64(st.hi_code[g]), side="right"))
            while a < b and codes[a] == st.lo_code[g] and self._less(
                    codes[a], ords[a], st.lo_code[g], st.lo_ord[g]):
                a += 1  # below the min key, with the min's code
            while b > a and codes[b - 1] == st.hi_code[g] and self._less(
                    st.hi_code[g], st.hi_ord[g], codes[b - 1], ords[b - 1]):
                b -= 1  # above the max key, with the max's code
            lo[i], hi[i] = a, max(a, b)
        return lo, hi

    def _filter(self, p: str, st: PartitionState, g: int):
        """A group's filter from its keys in record-key order (the writer's adds)."""
        if (p, g) not in self.filters:
            o = st.ordinals[g]
            order = self.text.order(np.zeros(len(o), np.int64), self.batch.keys.order_codes(o), o)
            bloom = self.index.new_filter()
            bloom.add_keys(self.batch.keys.record_keys(o[order]))
            self.filters[(p, g)] = bloom
        return self.filters[(p, g)]

    # ---- inserts ----------------------------------------------------------------------
    def _insert(self, p: str, st: PartitionState, plans, ords: np.ndarray,
                buckets: np.ndarray, codes: np.ndarray, writes: dict[str, list[int]]) -> None:
        """The batch's new keys of ``p`` by (bucket, key), cut at each bucket's plan."""
        if not len(ords):
            return
        order = self.text.order(buckets, codes, ords)
        ords, buckets, codes = ords[order], buckets[order], codes[order]
        firsts, first_ords, groups = [], [], []
        for lo in np.concatenate(([0], np.flatnonzero(np.diff(buckets)) + 1)):
            plan = plans[(p, int(buckets[lo]))]
            starts = np.concatenate(([0], plan.bounds[:-1])) + lo
            for fid, s, e in zip(plan.file_ids, starts, plan.bounds + lo, strict=True):
                g = st.group(fid)
                self._grow(p, st, g, ords[s:e], codes[s], ords[s], codes[e - 1], ords[e - 1])
                writes.setdefault(fid, [0, 0])[0] += int(e - s)
                firsts.append((int(buckets[s]), int(codes[s])))
                first_ords.append(int(ords[s]))
                groups.append(g)
        pairs = np.array(firsts, dtype=PAIR)
        st.routes[self.batch.inserts_before] = Route(pairs, np.array(first_ords, np.int64),
                                                     np.array(groups, np.int64))

    def _grow(self, p: str, st: PartitionState, g: int, ords: np.ndarray, lo_code: int,
              lo_ord: int, hi_code: int, hi_ord: int) -> None:
        """A run of sorted new keys joins group ``g``: its range, size and keys."""
        if st.lo_ord[g] < 0 or self._less(lo_code, lo_ord, st.lo_code[g], st.lo_ord[g]):
            st.lo_code[g], st.lo_ord[g] = int(lo_code), int(lo_ord)
        if st.hi_ord[g] < 0 or self._less(st.hi_code[g], st.hi_ord[g], hi_code, hi_ord):
            st.hi_code[g], st.hi_ord[g] = int(hi_code), int(hi_ord)
        st.nkeys[g] += len(ords)
        if self.exact:
            st.ordinals[g] = np.concatenate([st.ordinals[g], ords])
        self.filters.pop((p, g), None)  # its keys changed: rebuilt when probed

    def _less(self, code: int, ordinal: int, other_code: int, other_ordinal: int) -> bool:
        """One key < another (codes first, their text on a tie)."""
        return bool(self.text.less(np.array([code], np.uint64), np.array([ordinal]),
                                   np.array([other_code], np.uint64),
                                   np.array([other_ordinal]))[0])

    # ---- modelled sizes and the checkpoint ------------------------------------------
    @lru_cache(maxsize=4096)  # noqa: B019 - one adapter per run, keyed by group fill
    def _fpp(self, n: int) -> float:
        return self.template.theoretical_fpp(n)

    @lru_cache(maxsize=4096)  # noqa: B019 - one adapter per run, keyed by group fill
    def footer_bytes(self, num_records: int) -> int:
        """Footer text of a group's filter (its length from the serialization's layout)."""
        rows = len(self.template.row_counts_after(num_records))
        return text_length(self.index.params["filter_type"], rows, self.template.bits_per_row)

    def file_index_bytes(self, partition: str, file_id: str, num_records: int) -> int:
        return self.footer_bytes(num_records)

    def after_commit(self, ok: bool) -> dict[str, float]:
        looked = self.counts.get("keys_looked_up", 0)
        return {"candidates_per_key": self.counts.get("bloom_checks", 0) / looked if looked
                else None}
