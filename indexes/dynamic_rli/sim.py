"""dynamic-rli in the simulator: the same writer core, hashing and RLI accounting.

Keys are hashed with Spark's own ``hash()`` (Murmur3, seed 42) re-implemented bit for
bit in numpy, or Java's ``String.hashCode`` — the index's ``hash_function`` — so the
caches hold exactly the hashes the Spark run holds. The RLI is kept in memory as the
(hash, bucket) entries each commit appended per partition (one "file" per commit and
partition, one more for colliding keys, as the Spark adapter writes them), which is
what a lazy bootstrap reads back; its bytes are modelled.
"""

from __future__ import annotations

import json

import numpy as np

from indexes.dynamic_rli import ASSIGNERS_KEY, rli
from indexes.dynamic_rli.core import bucket_file_sizes, member
from indexes.hashing import java_string_hash, spark_murmur3_hash
from indexes.simple_bucket.core import existing_bucket_files, new_bucket_file_id
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions

RLI_ENTRY_BYTES = 60  # modelled: key (~36 B) + hash + bucket + file id, compressed


class DynamicRliSim(SimAdapter):
    """The design's bucket assigners, checkpoints and RLI over the model table."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.core = index.core
        self.rli: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    def hashes(self, ordinals: np.ndarray) -> np.ndarray:
        keys = self.batch.keys.record_keys(ordinals)
        if self.index.params["hash_function"] == "murmur3":
            return spark_murmur3_hash(keys)
        return java_string_hash(keys)

    def _load(self, partition: str):
        files = self.rli.get(partition, [])
        h = np.concatenate([f[0] for f in files] or [np.empty(0, np.int32)])
        b = np.concatenate([f[1] for f in files] or [np.empty(0, np.int16)])
        return h, b, len(files), len(h) * RLI_ENTRY_BYTES

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        self.core.begin(batch.instant, lambda: batch.latest_successful)
        snap = self.model.snapshot
        self.core.resolve_assigners(self.index.recorded_assigners(snap),
                                    self.options.parallelism)
        self.parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}

    def add(self, chunk: SimChunk) -> None:
        h = self.hashes(chunk.ordinals)
        self.counts["keys_hashed"] += len(h)
        for pi in np.unique(chunk.part):
            sel = chunk.part == pi
            self.parts.setdefault(self.batch.partitions[pi], []).append((h[sel],
                                                                        chunk.is_new[sel]))

    def finish(self) -> GroupWrites:
        snap, instant = self.model.snapshot, self.batch.instant
        existing = existing_bucket_files(snap.in_partitions(list(self.parts)))
        out = GroupWrites()
        self.appended: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        for p in sorted(self.parts):
            h = np.concatenate([x[0] for x in self.parts[p]])
            is_new = np.concatenate([x[1] for x in self.parts[p]])
            uniq = np.unique(h)
            file_bytes, per_record = bucket_file_sizes(snap.in_partitions([p]))
            buckets, _ = self.core.route(p, uniq, lambda p=p: self._load(p), file_bytes,
                                         per_record)
            row_b = buckets[member(uniq, h)[0]].astype(np.int64)
            new_b, old_b = row_b[is_new], row_b[~is_new]
            # RLI entries of new keys: those with a new hash, then the collided ones
            fresh = member(self.core.new[p], h[is_new])[1]
            for mask, distinct in ((fresh, len(self.core.new[p])), (~fresh, None)):
                if mask.any():
                    bs, ns = np.unique(new_b[mask], return_counts=True)
                    self.core.record_rli_entries(p, int(mask.sum()),
                                                 dict(zip(bs.tolist(), ns.tolist(),
                                                          strict=True)), distinct)
                    self.appended.setdefault(p, []).append(
                        (h[is_new][mask].astype(np.int32), new_b[mask].astype(np.int16)))
            ins = np.bincount(new_b, minlength=int(row_b.max()) + 1 if len(row_b) else 0)
            upd = np.bincount(old_b, minlength=len(ins))
            for b in np.flatnonzero(ins + upd):
                fid = existing.get((p, int(b))) or new_bucket_file_id(instant, p, int(b))
                out.add(p, fid, int(b), ins[b], upd[b])
        self.counts["rli_files_written"] += sum(len(v) for v in self.appended.values())
        self.counts["rli_bytes_written"] += RLI_ENTRY_BYTES * sum(
            len(e[0]) for v in self.appended.values() for e in v)
        self.core.checkpoint(instant, self.batch.latest_successful)
        return out

    def commit_extra(self) -> dict[str, str]:
        files = [{"path": f"{rli.partition_rel(p)}/sim-{i}_{self.batch.instant}",
                  "bytes": RLI_ENTRY_BYTES * len(e[0])}
                 for p, v in sorted(self.appended.items()) for i, e in enumerate(v)]
        return {ASSIGNERS_KEY: str(self.core.num_assigners), rli.FILES_KEY: json.dumps(files)}

    def after_commit(self, ok: bool) -> dict[str, float]:
        if not ok:
            self.core.fail(self.batch.latest_successful)
            return {}
        for p, files in self.appended.items():  # the RLI entries are visible now
            self.rli.setdefault(p, []).extend(files)
        self.core.complete()
        return self.core.cache_metrics()
