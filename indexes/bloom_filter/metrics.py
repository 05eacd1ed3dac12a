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
