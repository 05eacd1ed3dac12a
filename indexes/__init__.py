"""Index registry: ``indexes.get("bloom", **params)``; adding an index is one line here."""

from __future__ import annotations

import importlib
from typing import Any

from indexes import base
from indexes.base import IndexFigure, RecordIndex, ServiceOption, TableService
from indexes.roles import (
    DEFINITION_ROLES,
    DeclaredFigures,
    adapter_problems,
    plays,
    role_problems,
    services,
)
from tableformat.errors import TableConfigError

_REGISTRY: dict[str, str] = {
    "bloom": "indexes.bloom:BloomIndex",
    "simple-bucket": "indexes.simple_bucket:SimpleBucketIndex",
    "multiple-rehash": "indexes.multiple_rehash:MultipleRehashIndex",
    "partition-bucket": "indexes.partition_bucket:PartitionBucketIndex",
    "consistent-hashing": "indexes.consistent_hashing:ConsistentHashingIndex",
    "dynamic-rli": "indexes.dynamic_rli:DynamicRliIndex",
    "external-kv": "indexes.external_kv:ExternalKvIndex",
    "multi-fg-bucket": "indexes.multi_fg_bucket:MultiFgBucketIndex",
    "extendible-hash": "indexes.extendible_hash:ExtendibleHashIndex",
}

# the index ``run`` and ``simulate`` use when none is named
DEFAULT_INDEX = "bloom"


def names() -> list[str]:
    """Registered index names, in registry order."""
    return list(_REGISTRY)


def register(name: str, path: str) -> None:
    """Register an index defined outside this package: ``path`` is
    ``"package.module:Class"`` (importable; loaded on first use). The one call an index
    kept elsewhere needs (docs/adding-an-index.md)."""
    if name in _REGISTRY and _REGISTRY[name] != path:
        raise ValueError(f"index {name!r} is already registered as {_REGISTRY[name]}")
    _REGISTRY[name] = path


def unregister(name: str) -> None:
    """Forget an index registered with :func:`register` (tests)."""
    _REGISTRY.pop(name, None)


def metric_columns() -> set[str]:
    """Every metrics column the registered indexes declare (``METRICS``)."""
    return {m.name for n in _REGISTRY for m in index_class(n).METRICS}


def declared_figures() -> list[IndexFigure]:
    """The report figures the registered indexes declare (``FIGURES``), once each."""
    out: dict[str, IndexFigure] = {}
    for n in _REGISTRY:
        for f in (index_class(n).FIGURES if plays(index_class(n), DeclaredFigures) else ()):
            out.setdefault(f.file, f)
    return list(out.values())


def declared_panels(role: type, member: str) -> list[tuple]:
    """What the registered indexes playing ``role`` declare as ``member`` (tuples whose
    first item is a column: a report panel's), in registry order, each column once."""
    out: dict[str, tuple] = {}
    for n in _REGISTRY:
        cls = index_class(n)
        for t in (getattr(cls, member) if plays(cls, role) else ()):
            out.setdefault(t[0], t)
    return list(out.values())


def measured_columns() -> set[str]:
    """Declared columns of measured bytes and seconds (``model_<name>`` in sim rows)."""
    return {c for n in _REGISTRY for c in index_class(n).measured_columns()}


def command_services(command: str) -> list[tuple[str, TableService]]:
    """(index name, service) of every registered index whose service runs as ``command``
    (e.g. ``indexbench rescale``)."""
    return [(name, s) for name in _REGISTRY for s in services(index_class(name))
            if s.command == command]


def command_options(command: str) -> dict[str, list[tuple[str, ServiceOption]]]:
    """Every option of ``command`` by destination: (index, its declaration) for each
    index taking it (the CLI builds its parser from these)."""
    out: dict[str, list[tuple[str, ServiceOption]]] = {}
    for name, service in command_services(command):
        for opt in service.options:
            out.setdefault(opt.dest, []).append((name, opt))
    return out


def index_class(name: str) -> type[RecordIndex]:
    try:
        module, _, cls = _REGISTRY[name].partition(":")
    except KeyError:
        from indexes.suggest import did_you_mean
        from tableformat.errors import IndexBenchError

        raise IndexBenchError(
            f"unknown index {name!r}{did_you_mean(name, _REGISTRY)}; known: "
            f"{', '.join(_REGISTRY)} (`indexbench list` shows each with its parameters)"
        ) from None
    return _checked(getattr(importlib.import_module(module), cls))


_CHECKED: set[type] = set()
base.ADAPTER_CHECK = adapter_problems  # adapters are checked on first use (indexes.base)


def _checked(cls: type[RecordIndex]) -> type[RecordIndex]:
    """The class, refused at once if it defines a role's member without playing the
    role (generic code would never call it) or plays a role without its required
    members (:func:`indexes.roles.role_problems`)."""
    if cls not in _CHECKED:
        problems = role_problems(cls, DEFINITION_ROLES)
        if problems:
            raise TypeError("; ".join(problems) + " (docs/adding-an-index.md, roles)")
        _CHECKED.add(cls)
    return cls


def get(name: str, **params: Any) -> RecordIndex:
    """An index instance by registry name, with parameters by name or Hudi key."""
    return index_class(name)(**params)


def from_table_config(config) -> RecordIndex:
    """The index a table was created with, with its stored parameters."""
    if config.written_by_hudi:
        raise TableConfigError(f"table {config.name!r} was written by Hudi's own writer "
                               "(--peers hudi), not by an indexbench index: `indexbench "
                               "verify` checks it; this command needs one of our indexes")
    cls = index_class(config.index_name)
    return cls(**{k: v for k, v in config.index_params.items() if k in cls.param_keys()})
