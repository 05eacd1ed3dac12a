"""Index registry: ``indexes.get("bloom", **params)``; adding an index is one line here."""

from __future__ import annotations

import importlib
from typing import Any

from indexes.base import RecordIndex

_REGISTRY: dict[str, str] = {
    "bloom": "indexes.bloom:BloomIndex",
    "simple-bucket": "indexes.simple_bucket:SimpleBucketIndex",
    "multiple-rehash": "indexes.multiple_rehash:MultipleRehashIndex",
    "partition-bucket": "indexes.partition_bucket:PartitionBucketIndex",
    "consistent-hashing": "indexes.consistent_hashing:ConsistentHashingIndex",
    "dynamic-rli": "indexes.dynamic_rli:DynamicRliIndex",
}


def names() -> list[str]:
    """Registered index names, in registry order."""
    return list(_REGISTRY)


def index_class(name: str) -> type[RecordIndex]:
    try:
        module, _, cls = _REGISTRY[name].partition(":")
    except KeyError:
        from tableformat.errors import IndexBenchError

        raise IndexBenchError(f"unknown index {name!r}; known: {', '.join(_REGISTRY)}") from None
    return getattr(importlib.import_module(module), cls)


def get(name: str, **params: Any) -> RecordIndex:
    """An index instance by registry name, with parameters by name or Hudi key."""
    return index_class(name)(**params)


def from_table_config(config) -> RecordIndex:
    """The index a table was created with, with its stored parameters."""
    cls = index_class(config.index_name)
    return cls(**{k: v for k, v in config.index_params.items() if k in cls.param_keys()})
