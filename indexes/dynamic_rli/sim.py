"""dynamic-rli in the simulator: the same writer core, hashing and RLI accounting.

Keys are hashed with Spark's own ``hash()`` (Murmur3, seed 42) re-implemented bit for
bit in numpy, or Java's ``String.hashCode`` — the index's ``hash_function`` — so the
caches hold exactly the hashes the Spark run holds. The RLI is the
(hash, bucket) entries each commit appended per partition (one "file" per commit,
partition and assigner with new keys, one more per assigner for colliding keys, as the
Spark adapter's assigner tasks write them), spilled to
local files as an RLI is, and read back by a lazy bootstrap; its bytes are modelled.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from indexes.bucket.files import existing_bucket_files, new_bucket_file_id
from indexes.dynamic_rli import ASSIGNERS_KEY, rli
from indexes.dynamic_rli.assigner import assigner_of, count_values
from indexes.dynamic_rli.cache import hash_order
from indexes.dynamic_rli.core import bucket_file_sizes
from indexes.hashing import java_string_hash, spark_murmur3_hash
from indexes.roles import SimCommitMetadata
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions

RLI_ENTRY_BYTES = 60  # modelled: key (~36 B) + hash + bucket + file id, compressed


class DynamicRliSim(SimCommitMetadata, SimAdapter):
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
        np.savez(path, h=np.asarray(hashes, np.int32), b=np.asarray(buckets, np.int16))
        self.entries[path] = len(hashes)
        return path

    def _write_shares(self, partition: str, hashes: np.ndarray, buckets: np.ndarray
                      ) -> list[str]:
        """One RLI "file" per assigner with entries (the share files of a real run)."""
        P = self.core.num_assigners
        if P == 1:
            return [self._write_rli(partition, hashes, buckets)]
        owner = assigner_of(hashes, P)
        return [self._write_rli(partition, hashes[owner == a], buckets[owner == a])
                for a in np.flatnonzero(np.bincount(owner, minlength=P))]

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

    def _group(self, p: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Sorted unique hashes of the partition's records, with new / existing record
        counts per hash (uint8; existing is None in a bulk load). No per-record array
        survives: a bulk load hashes one partition and sorts it in place."""
        parts = self.parts.pop(p)
        if self.batch.bulk:  # hash into one array sized by a first pass (no concatenation)
            n = sum(len(c.ordinals) for c in self.batch.partition_records(p))
            h, pos = np.empty(n, np.int32), 0
            for c in self.batch.partition_records(p):
                h[pos:pos + len(c.ordinals)] = self.hashes(c.ordinals)
                pos += len(c.ordinals)
            self.counts["keys_hashed"] += n
            parts = [(h, None)]
        h = parts[0][0] if len(parts) == 1 else np.concatenate([x[0] for x in parts])
        order_new = None
        if any(x[1] is not None for x in parts):
            is_new = np.concatenate([np.ones(len(x[0]), bool) if x[1] is None else x[1]
                                     for x in parts])
            order = hash_order(h)  # = stable argsort, ~3x faster
            h, order_new = h[order], is_new[order]
        else:
            h.sort()
        del parts
        first = np.empty(len(h), bool)
        first[:1] = True
        np.not_equal(h[1:], h[:-1], out=first[1:])
        uniq = h[first]
        # records per hash: 1, plus one per repeat (rare: 32-bit hash collisions)
        repeats = np.flatnonzero(~first)
        at = repeats - np.arange(1, len(repeats) + 1)  # index in uniq of each repeat
        # one byte per hash unless 255 keys share one (then four)
        small = np.uint8 if not len(at) or np.bincount(at).max() < 255 else np.int32
        if order_new is None:
            n_new = np.ones(len(uniq), small)
            np.add.at(n_new, at, 1)
            return uniq, n_new, None
        n_new = order_new[first].astype(small)
        n_old = (~order_new[first]).astype(small)
        np.add.at(n_new, at, order_new[repeats].astype(small))
        np.add.at(n_old, at, (~order_new[repeats]).astype(small))
        return uniq, n_new, n_old

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
            size = int(buckets.max()) + 1 if len(buckets) else 0
            # RLI entries of new keys: those with a new hash, then the colliding ones
            for mask, distinct in ((new_mask, int(new_mask.sum())), (~new_mask, None)):
                k = np.where(mask, n_new, 0).astype(n_new.dtype)
                if k.any():
                    per = count_values(buckets, size, k)
                    nz = np.flatnonzero(per)
                    self.core.record_rli_entries(p, int(per.sum()), dict(zip(
                        nz.tolist(), per[nz].tolist(), strict=True)), distinct)
                    if mask.all() and k.max() == 1:  # one key per hash: the arrays as they are
                        entries = (uniq, buckets)
                    else:
                        entries = (np.repeat(uniq, k), np.repeat(buckets, k))
                    self.appended.setdefault(p, []).extend(self._write_shares(p, *entries))
                    del entries
                del k
            self.core.release(p)
            ins = count_values(buckets, size, n_new)
            upd = count_values(buckets, size, n_old) if n_old is not None else 0 * ins
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
