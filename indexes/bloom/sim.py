"""bloom in the simulator: range pruning and key checks by the same core as on Spark.

The model keeps, per partition, every file's min/max key as an order-preserving 64-bit
code (``order_codes``: pruning only compares keys) and, per insert batch, the first
code of each of its files — inserts are sliced into files in key order, exactly as the
driver's planner does, so the file of any existing key is one binary search away and
no per-key state is held. Two bloom modes (``bloom_mode``):

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

import hashlib
import math
import uuid
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from indexes.bloom.core import FileRanges, candidate_slices, check_keys, count_key_check
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions


def insert_file_id(instant: str, partition: str, group: int) -> str:
    """A new insert file group's id, a pure function of (instant, partition, slice)."""
    digest = hashlib.sha256(f"{instant}/{partition}/{group}".encode()).hexdigest()
    return f"{uuid.UUID(digest[:32])}-0"


@dataclass
class PartitionFiles:
    """The bloom model of one partition's base files (append-only: no file ever moves)."""

    file_ids: list[str] = field(default_factory=list)
    mins: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    maxs: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))
    nkeys: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    # per insert batch (by its first ordinal): index of its first file, its files' min codes
    groups: dict[int, tuple[int, np.ndarray]] = field(default_factory=dict)
    ordinals: list[np.ndarray] = field(default_factory=list)  # exact mode: keys of each file

    def add_files(self, first_ordinal: int, codes: np.ndarray, ordinals: np.ndarray | None,
                  split: int, instant: str, partition: str) -> list[tuple[str, int]]:
        """Slice sorted new keys into files of ``split``; returns (file id, keys) each."""
        starts = np.arange(0, len(codes), split)
        ends = np.minimum(starts + split, len(codes))
        first = len(self.file_ids)
        ids = [insert_file_id(instant, partition, g) for g in range(len(starts))]
        self.file_ids += ids
        self.mins = np.concatenate([self.mins, codes[starts]])
        self.maxs = np.concatenate([self.maxs, codes[ends - 1]])
        self.nkeys = np.concatenate([self.nkeys, ends - starts])
        self.groups[first_ordinal] = (first, codes[starts])
        if ordinals is not None:
            self.ordinals += [ordinals[a:b] for a, b in zip(starts, ends, strict=True)]
        return list(zip(ids, (ends - starts).tolist(), strict=True))

    def file_of(self, ordinals: np.ndarray, codes: np.ndarray, firsts: np.ndarray
                ) -> np.ndarray:
        """File index of existing keys: their insert batch's group, then its slice."""
        g = firsts[np.searchsorted(firsts, ordinals, side="right") - 1]
        out = np.empty(len(ordinals), np.int64)
        for first in np.unique(g):
            sel = g == first
            start, mins = self.groups[int(first)]
            out[sel] = start + np.searchsorted(mins, codes[sel], side="right") - 1
        return out


class BloomSim(SimAdapter):
    """Hudi's bloom tagging over the model: footers, pruning, probes, key checks."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.exact = self.options.table_keys <= self.options.exact_bloom_keys
        self.files: dict[str, PartitionFiles] = {}
        self.firsts: list[int] = []  # first ordinal of every insert batch seen
        self.rng = np.random.default_rng([self.options.seed, 0xB100])
        self.filters: dict[tuple[str, int], object] = {}
        self.template = index.new_filter()

    @property
    def mode(self) -> str:
        return "exact" if self.exact else "modelled"

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        self.firsts.append(batch.inserts_before)
        self.cand: dict[str, np.ndarray] = {}
        self.true: dict[str, np.ndarray] = {}
        self.new: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.probe: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.touched: set[str] = set()

    def add(self, chunk: SimChunk) -> None:
        if self.batch.bulk:  # nothing to probe; finish reads each partition's keys
            self.touched.update(self.batch.partitions[pi] for pi in chunk.parts())
            return
        keys = self.batch.keys
        codes_all = keys.order_codes(chunk.ordinals)
        firsts = np.array(self.firsts, dtype=np.int64)
        for pi in chunk.parts():
            p = self.batch.partitions[pi]
            self.touched.add(p)
            sel = chunk.part == pi
            ords, codes, new = chunk.ordinals[sel], codes_all[sel], chunk.is_new[sel]
            self.new.setdefault(p, []).append((codes[new], ords[new] if self.exact else None))
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
                f = pf.file_of(ords[old], codes[old], firsts[:-1])
                self.true.setdefault(p, np.zeros(n, np.int64))
                self.true[p] += np.bincount(f, minlength=n)
            if self.exact:
                self.probe.setdefault(p, []).append((codes, ords))

    # ---- the key check per candidate file ---------------------------------------
    def _filter(self, p: str, f: int):
        key = (p, f)
        if key not in self.filters:
            keys = self.batch.keys.record_keys(self.files[p].ordinals[f])
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
        return pos > 0

    def finish(self) -> GroupWrites:
        out = GroupWrites()
        split = self.index.params["max_records_per_file"]
        key_bytes = self.model.key_bytes
        for p in sorted(self.touched):
            pf = self.files.setdefault(p, PartitionFiles())
            n = len(pf.file_ids)
            self.counts["range_footers_read"] += n
            if n:
                cand = self.cand.get(p, np.zeros(n, np.int64))
                true = self.true.get(p, np.zeros(n, np.int64))
                read = (self._check_exact(p, pf, cand) if self.exact
                        else self._check_modelled(pf, cand, true))
                self.counts["check_footers_read"] += int(np.count_nonzero(cand))  # one each
                self.counts["files_read"] += int(read.sum())
                # modelled bytes: every footer read holds the file's filter, then the key
                # column of each file read (the real run counts both, as its reader saw them)
                footer = np.array([self.footer_bytes(int(k)) for k in pf.nkeys], np.float64)
                self.counts["bytes_read"] += float(footer.sum() + footer[cand > 0].sum()
                                                   + pf.nkeys[read].sum() * key_bytes)
                for f in np.flatnonzero(true):
                    out.add(p, pf.file_ids[f], None, 0, true[f])
            parts = self.new.pop(p, []) if not self.batch.bulk else [
                (self.batch.keys.order_codes(c.ordinals), c.ordinals if self.exact else None)
                for c in self.batch.partition_records(p)]
            codes = np.concatenate([c for c, _ in parts] or [np.empty(0, np.uint64)])
            if len(codes):
                ords = None
                if self.exact:  # the files' keys are kept to build their real filters
                    order = np.argsort(codes, kind="stable")
                    codes, ords = codes[order], np.concatenate([o for _, o in parts])[order]
                else:
                    codes.sort()  # in place: a billion-key load holds only its codes
                del parts
                made = pf.add_files(self.batch.inserts_before, codes, ords, split,
                                    self.batch.instant, p)
                for fid, k in made:
                    out.add(p, fid, None, k, 0)
        return out

    def file_index_bytes(self, partition: str, file_id: str, num_records: int) -> int:
        return self.footer_bytes(num_records)

    @lru_cache(maxsize=4096)  # noqa: B019 - one adapter per run, keyed by file fill
    def footer_bytes(self, num_records: int) -> int:
        """Modelled footer text of a file's filter (Hudi's DYNAMIC_V0 grows in rows)."""
        rows = len(self.template.row_counts_after(num_records))
        return 4 * math.ceil(rows * math.ceil(self.template.bits_per_row / 8) / 3)

    def after_commit(self, ok: bool) -> dict[str, float]:
        return {"bloom_mode": self.mode}

