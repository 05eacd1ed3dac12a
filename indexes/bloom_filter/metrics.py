"""Columns every index probing Hudi bloom filters declares (bloom, multi-fg-bucket)."""

from __future__ import annotations

from indexes.base import Metric

# The footers read to tag, in the two parts the contract's ``footers_read`` sums
# (Hudi's ``HoodieRangeInfoHandle`` reads a footer for the key range, then
# ``HoodieKeyLookupHandle`` one to load the filter it probes).
FOOTER_METRICS = (
    Metric("range_footers_read", "footers read to prune candidate files by key range",
           part_of="footers_read"),
    Metric("check_footers_read", "footers read to load the bloom filters probed",
           part_of="footers_read"),
)


def count_range_job(counts) -> None:
    """A simulated batch that read footers for key ranges ran the one Spark job the
    Spark adapters run for it (``spark_ranges.read_key_ranges`` counts it there):
    ``tag_jobs`` (``indexes.base.TAG_JOBS``)."""
    if counts.get("range_footers_read"):
        counts["tag_jobs"] += 1
