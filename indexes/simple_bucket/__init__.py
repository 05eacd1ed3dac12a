"""simple-bucket: ``hash(index key) % N`` picks the bucket; no data file is read to tag.

Engine-neutral definition: the hash-bucket index of :mod:`indexes.bucket` with a fixed
``N`` per partition (its routing core :mod:`indexes.bucket.routing`, its file groups
:mod:`indexes.bucket.files`); the Spark adapter :mod:`indexes.simple_bucket.spark`, the
simulator's :mod:`indexes.simple_bucket.sim`.
"""

from __future__ import annotations

from indexes.bucket.advice import bucket_count_candidates
from indexes.bucket.files import assign_file_ids, existing_bucket_files
from indexes.bucket.index import BucketIndex
from indexes.hudi_counterpart import HudiCounterpart
from indexes.roles import AdvisedSettings, Candidate, HudiCounterpartRole, TableShape

__all__ = ["SimpleBucketIndex", "assign_file_ids", "existing_bucket_files"]


class SimpleBucketIndex(AdvisedSettings, HudiCounterpartRole, BucketIndex):
    """Hudi's simple bucket index (``hoodie.index.type=BUCKET``, engine SIMPLE)."""

    ADVICE_TRADEOFF = ("a fixed bucket count per partition: buckets grow with the table, "
                       "and changing the count rewrites every file of it")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        return bucket_count_candidates(shape)


    name = "simple-bucket"
    index_type = "BUCKET"
    assigns_inserts = True
    SPARK_ADAPTER = "indexes.simple_bucket.spark:SimpleBucketSpark"
    SIM_ADAPTER = "indexes.simple_bucket.sim:SimpleBucketSim"
    HUDI = HudiCounterpart(lambda index: index.hudi_bucket_options(), same_placement=True)
