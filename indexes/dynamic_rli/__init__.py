"""dynamic-rli: Spark-free cores (cache, assigners, eviction, RLI store) and the index.

``DynamicRliIndex`` is imported lazily so the cores load without PySpark.
"""

from __future__ import annotations

from typing import Any

from indexes.dynamic_rli.assigner import Capacity, PartitionIndex, assigner_of
from indexes.dynamic_rli.cache import HashBucketMap
from indexes.dynamic_rli.eviction import PartitionCaches

__all__ = ["Capacity", "DynamicRliIndex", "HashBucketMap", "PartitionCaches", "PartitionIndex",
           "assigner_of"]


def __getattr__(name: str) -> Any:
    if name == "DynamicRliIndex":
        from indexes.dynamic_rli.index import DynamicRliIndex

        return DynamicRliIndex
    raise AttributeError(name)
