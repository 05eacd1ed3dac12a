"""partition-bucket: a bucket count per partition from regex rules (Hudi RFC-89).

Hudi's partition-level bucket index (``hoodie.index.type=BUCKET``, engine SIMPLE):
``hoodie.bucket.index.partition.expressions`` ``regex1,N1;regex2,N2`` gives a partition
the count of the first rule whose regex matches its path, else
``hoodie.bucket.index.num.buckets``. Hashing, file naming and the one-file-group-per-
bucket layout are simple-bucket's (:mod:`indexes.bucket`). The rules are versioned
(``.hoodie/.bucket_index/partition_bucket_index_meta/configs/<instant>.hashing_config``,
Hudi's folder); a new version is made only by the offline rescale
(``indexbench rescale TABLE --expressions ...``), one replacecommit that overwrites the
partitions whose count changes. Every commit records the version it routed with and the
counts of the partitions it wrote, so ``verify`` checks the timeline against the rules.
Parsing, versions and planning: :mod:`indexes.partition_bucket.core`; Spark:
:mod:`indexes.partition_bucket.spark`; simulator: :mod:`indexes.partition_bucket.sim`.
"""

from __future__ import annotations

from indexes.base import BUCKET_COUNT_TOTAL, Param, ServiceOption, TableService
from indexes.bucket.advice import bucket_count_candidates
from indexes.bucket.index import BucketIndex
from indexes.bucket.rescale_rows import RESCALE_METRICS
from indexes.hudi_counterpart import HudiCounterpart
from indexes.partition_bucket.core import (
    EXPRESSIONS_KEY,
    HASHING_CONFIG_KEY,
    HASHING_INSTANT_KEY,
    RULE_TYPE_KEY,
    HashingConfig,
    bucket_count,
    checked_config,
    config_in_force,
    history_problems,
    new_config,
    parse_expressions,
    plan_partition_rescale,
    rule_type,
)
from indexes.roles import AdvisedSettings, Candidate, HudiCounterpartRole, TableServices, TableShape

ENGINE = "SIMPLE"


class PartitionBucketIndex(AdvisedSettings, TableServices, HudiCounterpartRole, BucketIndex):
    """Simple-bucket routing with per-partition counts from versioned regex rules."""

    ADVICE_TRADEOFF = ("bucket counts fixed per partition rule: a partition that outgrows "
                       "its count needs a rescale, a rewrite of that partition")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        return bucket_count_candidates(shape)


    name = "partition-bucket"
    index_type = "BUCKET"
    SPARK_ADAPTER = "indexes.partition_bucket.spark:PartitionBucketSpark"
    SIM_ADAPTER = "indexes.partition_bucket.sim:PartitionBucketSim"
    METRICS = (BUCKET_COUNT_TOTAL, *RESCALE_METRICS)
    HUDI = HudiCounterpart(
        lambda index: index.hudi_options(),
        note="Hudi's partition-level bucket index (RFC-89) with the same regex rules and "
             "default count", same_placement=True)
    SERVICES = (
        TableService(
            "rescale", "make new regex rules the version in force and overwrite the "
            "partitions whose count they change (RFC-89)",
            operation="rescale", command="rescale",
            usage="--expressions 'regex,N;...' [--buckets DEFAULT], which overwrites every "
                  "partition whose count the new rules change",
            options=(
                ServiceOption("--expressions", "expressions", "the new rules (RFC-89); "
                              "partitions whose count they change are overwritten",
                              metavar="'REGEX,N;...'"),
                ServiceOption("--buckets", "num_buckets", "the new default count", type=int,
                              metavar="N"),
            )),
    )
    PARAMS = BucketIndex.PARAMS + (
        Param("engine", "hoodie.index.bucket.engine", str, ENGINE,
              "bucket index engine (RFC-89's partition-level counts are the SIMPLE engine's)",
              choices=(ENGINE,)),
        Param("partition_expressions", EXPRESSIONS_KEY, str, "",
              "regex1,N1;regex2,N2: the first regex found in a partition path gives its "
              "bucket count, else hoodie.bucket.index.num.buckets (empty: simple-bucket)"),
        Param("partition_rule_type", RULE_TYPE_KEY, str, "regex",
              "rule parser of the expressions (Hudi has regex only)"),
    )

    def hudi_options(self) -> dict[str, str]:
        """BUCKET/SIMPLE with the rules as Hudi's partition-level keys (no rules: a
        plain simple bucket index, as ours is then)."""
        out = self.hudi_bucket_options()
        if self.params["partition_expressions"]:
            out[RULE_TYPE_KEY] = self.params["partition_rule_type"]
            out[EXPRESSIONS_KEY] = self.params["partition_expressions"]
        return out

    def validate(self) -> None:
        super().validate()
        bucket_count(self.params["num_buckets"], "hoodie.bucket.index.num.buckets")
        self.params["partition_rule_type"] = rule_type(self.params["partition_rule_type"])
        self.params["partition_expressions"] = self.params["partition_expressions"].strip()
        parse_expressions(self.params["partition_expressions"])

    def plan_service(self, service, table, snapshot, options):
        """The offline rescale (RFC-89): the given rules (and default count) as the next
        version, and the overwrite of every partition whose count they change."""
        current = checked_config(table, snapshot, self.initial_config())
        new = new_config(current, options.get("expressions"), options.get("num_buckets"))
        return plan_partition_rescale(snapshot, current, new)

    def initial_config(self) -> HashingConfig:
        """Version 0: the table's properties (``00000000000000000.hashing_config``)."""
        return HashingConfig(self.params["partition_expressions"], self.params["num_buckets"],
                             self.params["partition_rule_type"])

    def config_in_force(self, snapshot, at: str | None = None) -> HashingConfig:
        """The rule version of the latest completed rescale, else version 0."""
        return config_in_force(snapshot, self.initial_config(), at)

    def bucket_counts(self, snapshot, partitions: list[str]) -> dict[str, int]:
        """Each partition's count under the rule version in force."""
        return self.config_in_force(snapshot).counts(partitions)

    def table_metrics(self, snapshot) -> dict[str, float]:
        out = super().table_metrics(snapshot)
        out["bucket_count_total"] = int(sum(
            self.bucket_counts(snapshot, snapshot.partitions()).values()))
        return out

    def bucket_problems(self, snapshot) -> list[str]:
        """Simple-bucket's invariants under the counts in force, plus the timeline's
        recorded versions and counts against the rules."""
        return super().bucket_problems(snapshot) + history_problems(snapshot,
                                                                    self.initial_config())


__all__ = ["HASHING_CONFIG_KEY", "HASHING_INSTANT_KEY", "HashingConfig",
           "PartitionBucketIndex"]
