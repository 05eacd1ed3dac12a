"""The simulator's options that indexes declare, gathered over the registry.

An index whose simulator adapter takes settings of its own plays the role
:class:`indexes.roles.SimulatorOptions` and lists them as :class:`indexes.roles.SimOption`
(a flag, a type, a default, a help text). Generic code knows none of them by name: the
``sim`` command adds one flag per declared option, :func:`indexbench.sim.driver.simulate`
takes them as keywords and keeps their values in run.json, and each adapter reads its own
with ``self.options.option(name)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import indexes
from indexes.roles import SimOption, SimulatorOptions, plays
from tableformat.errors import IndexBenchError


def declared_options() -> dict[str, SimOption]:
    """Every simulator option the registered indexes declare, by name, in registry order.

    Indexes that share an option declare the same one (one :class:`SimOption`, equal in
    name, flag, type, default and help): two different declarations of one name, or two
    names with one flag, are refused."""
    found: dict[str, tuple[SimOption, str]] = {}
    flags: dict[str, str] = {}
    for index in indexes.names():
        cls = indexes.index_class(index)
        if not plays(cls, SimulatorOptions):
            continue
        for opt in cls.SIM_OPTIONS:
            seen = found.get(opt.name)
            if seen is not None:
                if seen[0] != opt:
                    raise IndexBenchError(
                        f"simulator option {opt.name!r} is declared differently by indexes "
                        f"{seen[1]!r} ({seen[0]}) and {index!r} ({opt}): indexes sharing an "
                        "option must declare the same SimOption")
                continue
            if opt.flag in flags:
                raise IndexBenchError(
                    f"simulator options {flags[opt.flag]!r} and {opt.name!r} (index "
                    f"{index!r}) both declare the flag {opt.flag}")
            found[opt.name] = (opt, index)
            flags[opt.flag] = opt.name
    return {name: opt for name, (opt, _) in found.items()}


def option_values(given: Mapping[str, Any]) -> dict[str, Any]:
    """The value of every declared option: as ``given``, else its default. A name no
    registered index declares is a :class:`TypeError`, as an unknown keyword is."""
    declared = declared_options()
    unknown = [name for name in given if name not in declared]
    if unknown:
        raise TypeError(f"unknown simulator option(s) {', '.join(map(repr, unknown))}; the "
                        f"indexes declare: {', '.join(declared) or 'none'}")
    return {name: given.get(name, opt.default) for name, opt in declared.items()}
