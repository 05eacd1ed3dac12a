"""partition-bucket in the simulator: simple-bucket's routing with the per-partition
counts of the rule version in force on the model table's timeline (read from commit
metadata only, as the model has no ``.hashing_meta`` files); each commit records the
version and the counts of the partitions it wrote, as the Spark adapter does. The
offline rescale is not simulated."""

from __future__ import annotations

from indexes.bucket.sim import BucketSim
from indexes.partition_bucket.core import HashingConfig, commit_metadata
from indexes.roles import SimCommitMetadata
from indexes.simulation import GroupWrites, SimBatch


class PartitionBucketSim(SimCommitMetadata, BucketSim):
    """Counts records per (partition, bucket) under the partition's rule count."""

    def begin(self, batch: SimBatch) -> None:
        super().begin(batch)  # counts from index.bucket_counts: the version in force
        self.config: HashingConfig = self.index.config_in_force(self.model.snapshot)
        self.written: set[str] = set()

    def finish(self) -> GroupWrites:
        out = super().finish()
        self.written = set(out.partition)
        return out

    def commit_extra(self) -> dict[str, str]:
        return commit_metadata(self.config, self.written)
