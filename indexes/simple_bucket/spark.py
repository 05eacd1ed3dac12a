"""simple-bucket on Spark: the hash-bucket tagging tasks (:mod:`indexes.bucket.spark_routing`)."""

from __future__ import annotations

from indexes.bucket.spark_routing import BucketRoutingSpark


class SimpleBucketSpark(BucketRoutingSpark):
    """Tag by hash in the tasks; only the snapshot's file names are broadcast."""
