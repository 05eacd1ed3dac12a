"""bloom in the simulator: range pruning and key checks by the same core as on Spark.

The model keeps, per partition, every file's min/max key as an order-preserving 64-bit
code (``order_codes``: pruning only compares keys) and its fill, and per insert batch the
plan's cumulative weights: inserts are planned by the driver's sizing functions
(:mod:`writeclient.sizing`, small files first) and drawn into buckets by the same Hudi
MD5 draw, so the file of any existing key is its insert batch's draw again and no
per-key state is held. Two bloom modes (``bloom_mode``):

- ``exact`` (tables up to ``exact_max_keys`` keys): each file's filter is built from its
  real keys with the index's own footer code and probed by
  :func:`indexes.bloom.core.check_keys`, the function the Spark tasks call — false
  positives bit for bit the real run's.
- ``modelled``: per (file, batch) the false positives are drawn, seeded, from a
  binomial over the file's non-matching candidates at the filter's own theoretical
  rate at its fill (:meth:`HoodieBloomFilter.theoretical_fpp`); pruning, true matches,
  candidate counts and file reads stay exact and no key × file pair is materialized.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from indexes.bloom.core import (
    FileRanges,
    candidate_slices,
    check_keys,
)
from indexes.bloom_filter.key_check import count_file_read, count_key_check, count_theory
from indexes.bloom_filter.metrics import count_range_job
from indexes.bloom_filter.serialization import text_length
from indexes.insert_routes import InsertRoutes, RollOver, draw_inserts, roll_over_model
from indexes.md5_hash import hudi_insert_hash
from indexes.roles import SimFooterBytes
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions
from writeclient import sizing


@dataclass
class PartitionFiles(InsertRoutes):
    """The bloom model of one partition's base files: their key ranges and fills, and
    how each insert batch was routed (:class:`~indexes.insert_routes.InsertRoutes`, so
    the file of any existing key is found from its hash and insert batch, with no
    per-key state)."""

    mins: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    maxs: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    nkeys: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    ordinals: list[np.ndarray] = field(default_factory=list)  # exact mode: keys of each file

    def add_inserts(self, first_ordinal: int, hashes: np.ndarray, codes: np.ndarray,
                    ordinals: np.ndarray | None, plan: sizing.InsertPlan,
                    roll: RollOver | None = None
                    ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Route one batch's inserts by the plan, as the driver's planner does: each key
        drawn into a bucket by its Hudi hash, new file groups rolled over as Hudi's
        create handle rolls them. Returns the file index of each bucket (existing small
        files keep theirs; new file groups are appended; -1: a new bucket drawn no key,
        no file), the keys each was drawn and each bucket's file id."""
        order, starts, bounds, ids, splits = draw_inserts(hashes, plan, roll)
        drawn = bounds - starts
        files, grow = self.place(ids, drawn)
        self.mins = np.concatenate([self.mins, np.full(grow, np.iinfo(np.uint64).max, np.uint64)])
        self.maxs = np.concatenate([self.maxs, np.zeros(grow, np.uint64)])
        self.nkeys = np.concatenate([self.nkeys, np.zeros(grow, np.int64)])
        if ordinals is not None:
            self.ordinals += [np.empty(0, np.int64) for _ in range(grow)]
        for b, f in enumerate(files):
            sel = order[starts[b]:bounds[b]]
            if not len(sel):
                continue
            part = codes[sel]
            self.mins[f] = min(self.mins[f], part.min())
            self.maxs[f] = max(self.maxs[f], part.max())
            self.nkeys[f] += len(sel)
            if ordinals is not None:
                self.ordinals[f] = np.concatenate([self.ordinals[f], ordinals[sel]])
        self.record(first_ordinal, plan, files, splits)
        return files, drawn, ids


class BloomSim(SimFooterBytes, SimAdapter):
    """Hudi's bloom tagging over the model: footers, pruning, probes, key checks."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.exact = self.options.table_keys <= self.options.option("exact_bloom_keys")
        self.files: dict[str, PartitionFiles] = {}
        self.rng = np.random.default_rng([self.options.seed, 0xB100])
        self.filters: dict[tuple[str, int], object] = {}
        self.template = index.new_filter()

    @property
    def mode(self) -> str:
        return "exact" if self.exact else "modelled"

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        self.cand: dict[str, np.ndarray] = {}
        self.true: dict[str, np.ndarray] = {}
        # per partition: the new keys' (routing hashes, codes, ordinals if exact)
        self.new: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]] = {}
        self.probe: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.touched: set[str] = set()

    def add(self, chunk: SimChunk) -> None:
        if self.batch.bulk:  # nothing to probe; finish reads each partition's keys
            self.touched.update(self.batch.partitions[pi] for pi in chunk.parts())
            return
        keys = self.batch.keys
        codes_all = keys.order_codes(chunk.ordinals)
        hashes_all = hudi_insert_hash(keys.record_keys(chunk.ordinals))
        for pi in chunk.parts():
            p = self.batch.partitions[pi]
            self.touched.add(p)
            sel = chunk.part == pi
            ords, codes, new = chunk.ordinals[sel], codes_all[sel], chunk.is_new[sel]
            hashes = hashes_all[sel]
            self.new.setdefault(p, []).append(
                (hashes[new], codes[new], ords[new] if self.exact else None))
            pf = self.files.get(p)
            if pf is None or not pf.file_ids:
                continue
            n = len(pf.file_ids)
            cand = self.cand.setdefault(p, np.zeros(n, np.int64))
            if self.index.params["prune_by_ranges"]:
                order = np.argsort(codes, kind="stable")
                lo, hi = candidate_slices(codes[order],
                                          FileRanges(np.asarray(pf.file_ids, dtype=object),
                                                     pf.mins, pf.maxs))
                cand += hi - lo
            else:
                cand += len(codes)
            old = ~new
            if old.any():
                f = pf.file_of(ords[old], hashes[old])
                self.true.setdefault(p, np.zeros(n, np.int64))
                self.true[p] += np.bincount(f, minlength=n)
            if self.exact:
                self.probe.setdefault(p, []).append((codes, ords))

    # ---- the key check per candidate file ---------------------------------------
    def _filter(self, p: str, f: int):
        key = (p, f)
        if key not in self.filters:
            o = self.files[p].ordinals[f]
            # in record-key order, as the writer adds a file's sorted keys (a DYNAMIC_V0
            # filter's rows depend on the order of adds)
            keys = self.batch.keys.record_keys(o[np.argsort(self.batch.keys.order_codes(o),
                                                            kind="stable")])
            bloom = self.index.new_filter()
            bloom.add_keys(keys)
            self.filters[key] = bloom
        return self.filters[key]

    def _check_exact(self, p: str, pf: PartitionFiles, cand: np.ndarray) -> np.ndarray:
        """The core's key check on real filters; returns files read (key column)."""
        codes = np.concatenate([c for c, _ in self.probe[p]])
        ords = np.concatenate([o for _, o in self.probe[p]])
        order = np.argsort(codes, kind="stable")
        codes, ords = codes[order], ords[order]
        read = np.zeros(len(pf.file_ids), bool)
        if self.index.params["prune_by_ranges"]:
            lo, hi = candidate_slices(codes, FileRanges(np.asarray(pf.file_ids, dtype=object),
                                                        pf.mins, pf.maxs))
        else:
            lo, hi = np.zeros(len(cand), np.int64), np.full(len(cand), len(codes))
        files = np.flatnonzero(cand)
        if not len(files):
            return read
        # hash, once, only the keys some candidate file's range holds
        edges = np.zeros(len(codes) + 1, np.int64)
        np.add.at(edges, lo[files], 1)
        np.add.at(edges, hi[files], -1)
        covered = np.cumsum(edges[:-1]) > 0
        at = np.cumsum(covered) - 1  # a covered key's column in the prehashed positions
        keys = self.batch.keys.record_keys(ords[covered])
        words = self.template.prehash(keys, all_slices=True)
        for f in files:
            def file_keys(f=f):
                read[f] = True
                return self.batch.keys.record_keys(pf.ordinals[f])

            n = int(hi[f] - lo[f])
            start = int(at[lo[f]]) if n else 0
            check_keys(self._filter(p, f), keys.slice(start, n), self.counts, file_keys,
                       words[:, start:start + n])
        return read

    @lru_cache(maxsize=4096)  # noqa: B019 - one adapter per run, keyed by file fill
    def _fpp(self, n: int) -> float:
        return self.template.theoretical_fpp(n)

    def _check_modelled(self, pf: PartitionFiles, cand: np.ndarray, true: np.ndarray
                        ) -> np.ndarray:
        """False positives drawn at each filter's theoretical rate; returns files read."""
        fpp = np.array([self._fpp(int(n)) for n in pf.nkeys])
        fp = self.rng.binomial(np.maximum(cand - true, 0), np.minimum(fpp, 1.0))
        pos = true + fp
        for f in np.flatnonzero(cand):
            count_key_check(self.counts, cand[f], pos[f], true[f])
            count_theory(self.counts, int(cand[f] - true[f]), float(fpp[f]), int(pf.nkeys[f]))
        return pos > 0

    def finish(self) -> GroupWrites:
        out = GroupWrites()
        key_bytes = self.model.key_bytes
        cfg = self.index.sizing()
        roll = roll_over_model(cfg, self.model)  # Hudi's create handles
        snap = self.model.snapshot  # before this commit, as the driver's planner sees it
        avg = sizing.average_record_size(snap.commits, cfg)
        seq = len(snap.completed)  # this commit's place on the timeline (file ids)
        # the driver's small-file candidates (on merge-on-read: base files without logs)
        smalls = sizing.small_file_candidates(snap.slices.values(), self.model.table_type,
                                              self.index.CAN_INDEX_LOG_FILES, cfg)
        for p in sorted(self.touched):
            pf = self.files.setdefault(p, PartitionFiles())
            n = len(pf.file_ids)
            self.counts["range_footers_read"] += n
            groups: dict[int, list[int]] = {}  # file index → [inserts, updates]
            if n:
                cand = self.cand.get(p, np.zeros(n, np.int64))
                true = self.true.get(p, np.zeros(n, np.int64))
                read = (self._check_exact(p, pf, cand) if self.exact
                        else self._check_modelled(pf, cand, true))
                self.counts["check_footers_read"] += int(np.count_nonzero(cand))  # one each
                self.counts["files_read"] += int(read.sum())
                for f in np.flatnonzero(read):
                    count_file_read(self.counts, bool(true[f]), float(pf.nkeys[f] * key_bytes))
                # modelled bytes: every footer read holds the file's filter, then the key
                # column of each file read (the real run counts both, as its reader saw them)
                footer = np.array([self.footer_bytes(int(k)) for k in pf.nkeys], np.float64)
                self.counts["bytes_read"] += float(footer.sum() + footer[cand > 0].sum()
                                                   + pf.nkeys[read].sum() * key_bytes)
                for f in np.flatnonzero(true):
                    groups[int(f)] = [0, int(true[f])]
            parts = self.new.pop(p, []) if not self.batch.bulk else [
                self._new_keys(c.ordinals) for c in self.batch.partition_records(p)]
            hashes = np.concatenate([h for h, _, _ in parts] or [np.empty(0, np.int64)])
            codes = np.concatenate([c for _, c, _ in parts] or [np.empty(0, np.uint64)])
            ords = np.concatenate([o for _, _, o in parts]) if self.exact and parts else None
            del parts
            if len(codes):
                plan = sizing.plan_partition(
                    len(codes), smalls.get(p, []), avg, cfg,
                    lambda b, p=p: sizing.new_file_id(seq, p, b))
                self.counts["small_files_topped_up"] += plan.topped_up
                self.counts["small_file_inserts"] += plan.small_file_inserts
                files, drawn, ids = pf.add_inserts(self.batch.inserts_before, hashes, codes,
                                                   ords, plan, roll)
                planned = set(plan.file_ids)
                for f, k, fid in zip(files.tolist(), drawn.tolist(), ids, strict=True):
                    if f >= 0 and fid in planned:  # the plan's groups: base_writes
                        out.planned.add((p, fid))
                    if k:  # a bucket drawn no key writes no file
                        groups.setdefault(f, [0, 0])[0] += k
                        self.filters.pop((p, f), None)  # its keys changed: rebuilt
            for f, (ins, upd) in sorted(groups.items()):
                out.add(p, pf.file_ids[f], None, ins, upd)
        self.counts["avg_record_size"] = avg
        count_range_job(self.counts)
        return out

    def _new_keys(self, ordinals: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                       np.ndarray | None]:
        keys = self.batch.keys
        return (hudi_insert_hash(keys.record_keys(ordinals)), keys.order_codes(ordinals),
                ordinals if self.exact else None)

    def file_index_bytes(self, partition: str, file_id: str, num_records: int) -> int:
        return self.footer_bytes(num_records)

    @lru_cache(maxsize=4096)  # noqa: B019 - one adapter per run, keyed by file fill
    def footer_bytes(self, num_records: int) -> int:
        """Footer text of a file's filter (Hudi's DYNAMIC_V0 grows in rows): its length
        from the serialization's layout, as the real index counts it (``indexBytes``)."""
        rows = len(self.template.row_counts_after(num_records))
        return text_length(self.index.params["filter_type"], rows,
                           self.template.bits_per_row)

    def after_commit(self, ok: bool) -> dict[str, float]:
        return {"bloom_mode": self.mode}

