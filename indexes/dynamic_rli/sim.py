"""dynamic-rli in the simulator: the same writer core, hashing and RLI accounting.

Keys are hashed with Spark's own ``hash()`` (Murmur3, seed 42) re-implemented bit for
bit in numpy, or Java's ``String.hashCode`` — the index's ``hash_function`` — so the
caches hold exactly the hashes the Spark run holds. The RLI is the
(hash, bucket) entries each commit appended per partition (one "file" per commit and
partition, one more for colliding keys, as the Spark adapter writes them), spilled to
local files as an RLI is, and read back by a lazy bootstrap; its bytes are modelled.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from indexes.dynamic_rli import ASSIGNERS_KEY, rli
from indexes.dynamic_rli.core import bucket_file_sizes
from indexes.hashing import java_string_hash, spark_murmur3_hash
from indexes.simple_bucket.core import existing_bucket_files, new_bucket_file_id
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions

RLI_ENTRY_BYTES = 60  # modelled: key (~36 B) + hash + bucket + file id, compressed


class DynamicRliSim(SimAdapter):
    """The design's bucket assigners, checkpoints and RLI over the model table."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.core = index.core
        self.rli: dict[str, list[str]] = {}  # partition -> committed RLI files
        self.spill: tempfile.TemporaryDirectory | None = None
        self.entries: dict[str, int] = {}  # RLI file -> entries

    def hashes(self, ordinals: np.ndarray) -> np.ndarray:
        keys = self.batch.keys.record_keys(ordinals)
        if self.index.params["hash_function"] == "murmur3":
            return spark_murmur3_hash(keys)
        return java_string_hash(keys)

    def _load(self, partition: str):
        """Bootstrap loader: the partition's committed RLI "files", read back."""
        files = [np.load(f) for f in self.rli.get(partition, [])]
        h = np.concatenate([f["h"] for f in files] or [np.empty(0, np.int32)])
        b = np.concatenate([f["b"] for f in files] or [np.empty(0, np.int16)])
        return h, b, len(files), len(h) * RLI_ENTRY_BYTES

    def _write_rli(self, partition: str, hashes: np.ndarray, buckets: np.ndarray) -> str:
        """Spill one RLI "file" (an RLI is files: the model keeps it on disk, not in RAM)."""
        if self.spill is None:
            self.spill = tempfile.TemporaryDirectory(prefix="indexbench-sim-rli-")
        path = os.path.join(self.spill.name, f"{len(os.listdir(self.spill.name))}.npz")
        np.savez(path, h=hashes.astype(np.int32), b=buckets.astype(np.int16))
        self.entries[path] = len(hashes)
        return path

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        self.core.begin(batch.instant, lambda: batch.latest_successful)
        snap = self.model.snapshot
        self.core.resolve_assigners(self.index.recorded_assigners(snap),
                                    self.options.parallelism)
        self.parts: dict[str, list[tuple[np.ndarray, np.ndarray | None]]] = {}

    def add(self, chunk: SimChunk) -> None:
        if self.batch.bulk:  # hashed one partition at a time in finish (bounded memory)
            for pi in chunk.parts():
                self.parts.setdefault(self.batch.partitions[pi], [])
            return
        h = self.hashes(chunk.ordinals)
        self.counts["keys_hashed"] += len(h)
        for pi in chunk.parts():
            sel = chunk.part == pi
            new = chunk.is_new[sel]
            self.parts.setdefault(self.batch.partitions[pi], []).append(
                (h[sel], None if new.all() else new))  # None: all new (a bulk load)

    def _group(self, p: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Sorted unique hashes of the partition's records, with new / existing record
        counts per hash (no per-record array survives: a bulk load sorts in place)."""
        parts = self.parts.pop(p)
        if self.batch.bulk:
            parts = [(self.hashes(c.ordinals), None) for c in self.batch.partition_records(p)]
            self.counts["keys_hashed"] += sum(len(x[0]) for x in parts)
        h = np.concatenate([x[0] for x in parts])
        if all(x[1] is None for x in parts):
            h.sort()
            order_new = None
        else:
            is_new = np.concatenate([np.ones(len(x[0]), bool) if x[1] is None else x[1]
                                     for x in parts])
            order = np.argsort(h, kind="stable")
            h, order_new = h[order], is_new[order]
        del parts
        first = np.concatenate(([True], h[1:] != h[:-1]))
        uniq = h[first]
        # records per hash: 1, plus one per repeat (rare: 32-bit hash collisions)
        repeats = np.flatnonzero(~first)
        at = repeats - np.arange(1, len(repeats) + 1)  # index in uniq of each repeat
        n_all = np.ones(len(uniq), np.int64)
        np.add.at(n_all, at, 1)
        if order_new is None:
            return uniq, n_all, np.zeros(len(uniq), np.int64)
        n_new = order_new[first].astype(np.int64)
        np.add.at(n_new, at, order_new[repeats].astype(np.int64))
        return uniq, n_new, n_all - n_new

    def finish(self) -> GroupWrites:
        snap, instant = self.model.snapshot, self.batch.instant
        existing = existing_bucket_files(snap.in_partitions(list(self.parts)))
        out = GroupWrites()
        self.appended: dict[str, list[str]] = {}
        for p in sorted(self.parts):
            uniq, n_new, n_old = self._group(p)
            file_bytes, per_record = bucket_file_sizes(snap.in_partitions([p]))
            buckets, new_mask = self.core.route(p, uniq, lambda p=p: self._load(p),
                                                file_bytes, per_record)
            buckets = buckets.astype(np.int64)
            # RLI entries of new keys: those with a new hash, then the colliding ones
            for mask, distinct in ((new_mask, int(new_mask.sum())), (~new_mask, None)):
                k = n_new * mask
                if k.any():
                    per = np.bincount(buckets, weights=k)
                    nz = np.flatnonzero(per)
                    self.core.record_rli_entries(p, int(k.sum()), dict(zip(
                        nz.tolist(), per[nz].astype(np.int64).tolist(), strict=True)), distinct)
                    self.appended.setdefault(p, []).append(self._write_rli(
                        p, np.repeat(uniq, k), np.repeat(buckets, k)))
            ins = np.bincount(buckets, weights=n_new).astype(np.int64)
            upd = np.bincount(buckets, weights=n_old, minlength=len(ins)).astype(np.int64)
            for b in np.flatnonzero(ins + upd):
                fid = existing.get((p, int(b))) or new_bucket_file_id(instant, p, int(b))
                out.add(p, fid, int(b), ins[b], upd[b])
        entries = self.core.batch["rli_entries_written"]
        self.counts["rli_files_written"] += sum(len(v) for v in self.appended.values())
        self.counts["rli_bytes_written"] += RLI_ENTRY_BYTES * entries
        self.core.checkpoint(instant, self.batch.latest_successful)
        return out

    def commit_extra(self) -> dict[str, str]:
        files = [{"path": f"{rli.partition_rel(p)}/sim-{i}_{self.batch.instant}",
                  "bytes": RLI_ENTRY_BYTES * self.entries[f]}
                 for p, v in sorted(self.appended.items()) for i, f in enumerate(v)]
        return {ASSIGNERS_KEY: str(self.core.num_assigners), rli.FILES_KEY: json.dumps(files)}

    def after_commit(self, ok: bool) -> dict[str, float]:
        if not ok:
            self.core.fail(self.batch.latest_successful)
            return {}
        for p, files in self.appended.items():  # the RLI entries are visible now
            self.rli.setdefault(p, []).extend(files)
        self.core.complete()
        return self.core.cache_metrics()
