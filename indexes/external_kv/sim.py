"""external-kv in the simulator: the store's work counted exactly, its latency modelled.

The model holds no entry: an existing key's entry names the file group the insert
planner put it in, found again from its insert batch's route
(:class:`~indexes.insert_routes.InsertRoutes`, as the bloom simulator finds a key's
file), and a new key has none. Inserts are planned by the driver's sizing functions on
the same snapshot. So, exactly as a real run counts them: every record is looked up
(``kv_gets``), in ``ceil(records of p / get.batch.size)`` requests per partition; every
insert is put, in ``ceil(inserts of f / put.batch.size)`` requests per file group; a
simulated writer never dies, so no entry is stale and nothing is rolled back.

Modelled (``model_*`` in the rows): the request latency, a round trip plus a cost per
key (``kv_round_trip_s``, ``kv_key_s`` and the p99/p50 ``kv_tail_ratio`` of the cost
profile: measured on a real server, refitted to a real run by ``indexbench
calibrate``), and the server's memory, ``kv_base_bytes + kv_entry_bytes x entries``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from indexes import roles
from indexes.external_kv.core import RequestModel, round_trips
from indexes.insert_routes import InsertRoutes, roll_over_model
from indexes.md5_hash import hudi_insert_hash
from indexes.simulation import GroupWrites, SimAdapter, SimBatch, SimChunk, SimOptions
from writeclient import sizing

# The model's constants when no cost profile is given (the defaults of
# indexbench.sim.cost's profiles, measured on this project's machine: see
# README.md here).
DEFAULT_MODEL = RequestModel(round_trip_s=82e-6, key_s=2.2e-6, tail_ratio=18.0)
DEFAULT_BASE_BYTES = 0.96e6
DEFAULT_ENTRY_BYTES = 171.0


class ExternalKvSim(SimAdapter):
    """Lookups per partition, puts per file group, as the Spark adapter sends them."""

    def __init__(self, index, model, options: SimOptions | None = None):
        super().__init__(index, model, options)
        self.files: dict[str, InsertRoutes] = {}
        self.entries = 0
        prof = getattr(self.options, "cost_profile", None)
        self.requests = RequestModel(
            getattr(prof, "kv_round_trip_s", DEFAULT_MODEL.round_trip_s),
            getattr(prof, "kv_key_s", DEFAULT_MODEL.key_s),
            getattr(prof, "kv_tail_ratio", DEFAULT_MODEL.tail_ratio))
        self.base_bytes = getattr(prof, "kv_base_bytes", DEFAULT_BASE_BYTES)
        self.entry_bytes = getattr(prof, "kv_entry_bytes", DEFAULT_ENTRY_BYTES)

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)
        self.per_partition: Counter = Counter()  # records looked up per partition
        self.updates: dict[str, Counter] = {}  # partition -> file index -> updates
        self.new: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.puts = self.put_requests = 0

    def add(self, chunk: SimChunk) -> None:
        counts = np.bincount(chunk.part, minlength=len(self.batch.partitions))
        for pi in np.flatnonzero(counts):
            self.per_partition[self.batch.partitions[pi]] += int(counts[pi])
        if self.batch.bulk:  # every key is new: finish reads each partition's keys
            return
        keys = self.batch.keys
        hashes_all = hudi_insert_hash(keys.record_keys(chunk.ordinals))
        for pi in chunk.parts():
            p = self.batch.partitions[pi]
            sel = chunk.part == pi
            ords, hashes, new = chunk.ordinals[sel], hashes_all[sel], chunk.is_new[sel]
            self.new.setdefault(p, []).append(hashes[new])
            old = ~new
            if old.any():  # found: the entry names the file group the key was put in
                f = self.files[p].file_of(ords[old], hashes[old])
                found = self.updates.setdefault(p, Counter())
                for fi, n in zip(*np.unique(f, return_counts=True), strict=True):
                    found[int(fi)] += int(n)

    def finish(self) -> GroupWrites:
        out = GroupWrites()
        b_get = self.index.params["get_batch_size"]
        b_put = self.index.params["put_batch_size"]
        self.counts["kv_gets"] += sum(self.per_partition.values())
        self.counts["kv_get_round_trips"] += round_trips(list(self.per_partition.values()),
                                                         b_get)
        self.counts["kv_stale_entries"] += 0  # a simulated writer never dies
        cfg = roles.sizing_of(self.index)
        roll = roll_over_model(cfg, self.model)  # Hudi's create handles
        snap = self.model.snapshot  # before this commit, as the driver's planner sees it
        avg = sizing.average_record_size(snap.commits, cfg)
        seq = len(snap.completed)
        smalls = sizing.small_file_candidates(snap.slices.values(), self.model.table_type,
                                              self.index.CAN_INDEX_LOG_FILES, cfg)
        for p in sorted(self.per_partition):
            routes = self.files.setdefault(p, InsertRoutes())
            groups: dict[int, list[int]] = {f: [0, n] for f, n in
                                            self.updates.get(p, Counter()).items()}
            parts = self.new.pop(p, []) if not self.batch.bulk else [
                self._new_keys(c.ordinals) for c in self.batch.partition_records(p)]
            hashes = np.concatenate(parts or [np.empty(0, np.int64)])
            del parts
            if len(hashes):
                plan = sizing.plan_partition(
                    len(hashes), smalls.get(p, []), avg, cfg,
                    lambda b, p=p: sizing.new_file_id(seq, p, b))
                self.counts["small_files_topped_up"] += plan.topped_up
                self.counts["small_file_inserts"] += plan.small_file_inserts
                files, drawn, ids = routes.add(self.batch.inserts_before, hashes, plan,
                                               roll)
                planned = set(plan.file_ids)
                for f, k, fid in zip(files.tolist(), drawn.tolist(), ids, strict=True):
                    if f >= 0 and fid in planned:  # the plan's groups: base_writes
                        out.planned.add((p, fid))
                    if k:  # a bucket drawn no key writes no file
                        groups.setdefault(f, [0, 0])[0] += k
            for f, (ins, upd) in sorted(groups.items()):
                out.add(p, routes.file_ids[f], None, ins, upd)
            inserts = [ins for ins, _ in groups.values() if ins]
            self.puts += sum(inserts)
            self.put_requests += round_trips(inserts, b_put)
        self.counts["avg_record_size"] = avg
        return out

    def _new_keys(self, ordinals: np.ndarray) -> np.ndarray:
        """The new keys' Hudi insert hashes (all the planner's draw needs)."""
        return hudi_insert_hash(self.batch.keys.record_keys(ordinals))

    def after_commit(self, ok: bool) -> dict[str, float]:
        if not ok:
            return {}
        self.entries += self.puts
        gets, get_rts = self.counts["kv_gets"], self.counts["kv_get_round_trips"]
        per_request = gets / get_rts if get_rts else 0.0
        # rollback.sync: the journals the Spark adapter keeps (read at tagging; opened
        # before the puts and closed after the commit when the batch has inserts)
        other = (1 + 2 * (self.puts > 0)) if self.index.params["rollback_sync"] else 0
        return {
            "kv_puts": self.puts, "kv_put_round_trips": self.put_requests,
            "kv_round_trips": get_rts + self.put_requests + other, "kv_rollback_deletes": 0,
            "kv_entries": self.entries,
            # measured in a real run, modelled here (model_* once the row is built)
            "kv_get_p50_ms": self.requests.p50_ms(per_request) if get_rts else None,
            "kv_get_p99_ms": self.requests.p99_ms(per_request) if get_rts else None,
            "kv_server_bytes": self.base_bytes + self.entry_bytes * self.entries,
        }
