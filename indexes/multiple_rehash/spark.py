"""Bucket rescale of a multiple-rehash table: rehash (split locally) or overwrite (reshuffle).

RFC-29 names two remedies for a fixed bucket count. **rehash** grows a partition N → k·N:
bucket ``b`` holds exactly the records that go to ``b, b+N, …, b+(k−1)·N`` under ``% kN``
(since ``(h % kN) % N == h % N``), so one Spark task per old bucket reads that bucket's
base file once and writes its children; no table row crosses an Exchange. **overwrite**
(the naive baseline) reads every file of the partition, repartitions the rows by new
bucket (a real shuffle) and rewrites them; it accepts any new count ≥ 1.

Either way the result is one replacecommit, published atomically like a commit: the old
file groups leave the snapshot only when it completes, and a crash leaves files of an
inflight instant that the next writer rolls back. The new per-partition counts go into
the replacecommit's extraMetadata (see :mod:`indexes.multiple_rehash`). The jobs are
the bucket indexes' shared ones (:mod:`indexes.bucket.slices`); the replacecommit, its
timers and its undo are the service runner's (:mod:`indexbench.services`).
"""

from __future__ import annotations

from indexes.bucket.slices import BucketRescaleSpark


class MultipleRehashSpark(BucketRescaleSpark):
    """multiple-rehash on Spark: hash-bucket tagging (and its verify) plus the rescale
    service's jobs (planned by :meth:`MultipleRehashIndex.plan_service`, run by the
    service runner after commits — the auto-rescale policy — and by ``indexbench
    rescale``)."""
