"""multiple-rehash in the simulator: simple-bucket's routing plus the rescale service.

A rescale is planned by the same core as on Spark (:func:`plan_rescale`), and every old
bucket is split by :func:`~indexes.bucket.rescale.split_rows` over the bucket ids of its
records under the new count — the records are regenerated from their ordinals (a
workload's keys are pure functions of them), so the split is exact; bytes and shuffle
are modelled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexes.bucket.files import new_bucket_file_id, partition_bucket_fill
from indexes.bucket.rescale import rescale_metadata, split_rows
from indexes.bucket.rescale_rows import rescale_row
from indexes.bucket.sim import BucketSim
from indexes.hashing import bucket_ids
from indexes.multiple_rehash.core import plan_rescale
from indexes.roles import SimTableServices
from metrics.rows import WriteTotals, footer_totals
from tableformat.basefile import bucket_of_file_id


class MultipleRehashSim(SimTableServices, BucketSim):
    """Simple-bucket routing with per-partition counts that the policy grows."""

    def table_services(self, batch_no: int) -> list[dict[str, Any]]:
        if not self.index.policy_enabled:
            return []
        over = self.index.oversized_partitions(self.model.snapshot)
        if not over:
            return []
        return [self.rescale(self.index.params["rescale_mode"],
                             self.index.params["rescale_factor"], sorted(over), batch_no)]

    def rescale(self, mode: str, factor: Any, partitions: list[str], batch_no: int | None
                ) -> dict[str, Any]:
        """One replacecommit: split (rehash) or reshuffle (overwrite) the partitions."""
        model, batch = self.model, self.batch
        before = model.snapshot
        plan = plan_rescale(before, self.index, mode, factor, partitions)
        fill_before = partition_bucket_fill(before, list(plan.counts))
        instant = model.new_instant()
        fields = self.index.hash_fields(batch.key_field)
        names = sorted(plan.counts)
        to = np.array([plan.counts[p][1] for p in names], dtype=np.int64)
        # records of every old bucket file, by their new bucket
        per_slice: dict[tuple[str, int], list[np.ndarray]] = {}
        for chunk in batch.existing(names):
            part = np.searchsorted(names, np.asarray(batch.partitions)[chunk.part])
            cols = [batch.keys.column(f, chunk.ordinals) for f in fields]
            new = bucket_ids(cols, to[part])
            old = new % np.array([plan.counts[p][0] for p in names])[part]
            for p in np.unique(part):
                for b in np.unique(old[part == p]):
                    sel = (part == p) & (old == b)
                    per_slice.setdefault((names[p], int(b)), []).append(new[sel])
        written, replaced = [], {}
        files_read = 0
        for s in plan.slices:
            b = bucket_of_file_id(s.file_id)
            new = np.concatenate(per_slice.get((s.partition, b), [np.empty(0, np.int64)]))
            frm, t = plan.counts[s.partition]
            files_read += s.file_count  # its base file and logs, read merged
            replaced.setdefault(s.partition, []).append(s.file_id)
            if mode == "rehash":
                children = split_rows(new, b, frm, t, where=s.path)
            else:  # overwrite: every row goes wherever it hashes now
                children = [(int(c), np.flatnonzero(new == c)) for c in np.unique(new)]
            for child, rows in children:
                written.append(model.slice_of(s.partition,
                                              new_bucket_file_id(instant, s.partition, child),
                                              instant, len(rows)))
        if mode == "overwrite":  # children of several old buckets merge into one file
            merged: dict[tuple[str, str], Any] = {}
            for w in written:
                k = (w.partition, w.file_id)
                merged[k] = w if k not in merged else model.slice_of(
                    w.partition, w.file_id, instant, merged[k].num_records + w.num_records)
            written = list(merged.values())
        model.commit(instant, written, replaced, rescale_metadata(plan, before.schema))
        records = sum(w.num_records for w in written)
        writes = WriteTotals(files_written=len(written),
                             **footer_totals(written),
                             records_written=records,
                             bytes_written=sum(w.size_bytes for w in written))
        row = rescale_row(
            mode=mode, batch_no=batch_no, instant=instant, factor=plan.factor,
            from_buckets=plan.from_buckets, to_buckets=plan.to_buckets,
            partitions_touched=len(plan.counts), files_read=files_read,
            bytes_read=sum(s.total_bytes for s in plan.slices), writes=writes,
            after=model.snapshot, timings={},
            shuffle_bytes=0 if mode == "rehash" else sum(s.total_bytes for s in plan.slices),
            shuffle_read_bytes=None, spark_jobs=None, fill_before=fill_before,
            fill_after=partition_bucket_fill(model.snapshot, list(plan.counts)))
        row.update(self.index.table_metrics(model.snapshot))
        return row
