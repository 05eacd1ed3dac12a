""""Did you mean …?" for a mistyped name: an index, a ``--set`` key, a workload preset.

Bottom layer (no project imports), so the registry, the index parameters, the workload
loader and the command line all phrase a typo's error the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The choices nearest ``word`` (difflib's ratio ≥ 0.6), best first; a choice that
    ends like ``word`` (a Hudi key typed without its prefix) counts as near."""
    choices = list(dict.fromkeys(choices))
    near = difflib.get_close_matches(word, choices, n=n, cutoff=0.6)
    tails = [c for c in choices if word and c.endswith("." + word) and c not in near]
    return (near + tails)[:n]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean bloom?)`` or ``" (did you mean a, b or c?)"``; empty if none is near."""
    near = closest(word, choices)
    if not near:
        return ""
    if len(near) == 1:
        return f" (did you mean {near[0]}?)"
    return f" (did you mean {', '.join(near[:-1])} or {near[-1]}?)"
