"""Fault injection for crash-safety tests: a writer process dies at a named point."""

from __future__ import annotations

import os

CRASH_ENV = "INDEXBENCH_CRASH_AT"  # after_write | before_commit | rescale_* points


def crash_if(point: str) -> None:
    """Kill this process (as ``kill -9`` would) when the test asked for ``point``."""
    if os.environ.get(CRASH_ENV) == point:
        os._exit(137)
