"""simple-bucket in the simulator: the same hash and file-group naming as on Spark.

Routing needs the index key of every record (hashed in numpy by :mod:`indexes.hashing`,
Hudi's Java hash), nothing of the table but its file names: per (partition, bucket) the
adapter counts new and existing keys; every touched bucket's file group is rewritten
(:class:`indexes.bucket.sim.BucketSim`).
"""

from __future__ import annotations

from indexes.bucket.sim import BucketSim


class SimpleBucketSim(BucketSim):
    """Counts records per (partition, bucket) as the Spark tasks route them."""
