"""Peer yardsticks: the same batches through another table format's own upsert.

A peer is not a record index: it is what a user without one would run instead, applied
to the identical batches an index run gets (``workloads.generator``, a pure function of
the workload), timed the same way and written as one more series of ``compare``'s
metrics file. Each peer is one module here and one line in ``PEERS``; its third-party
package is imported only when the peer runs, so the project works without it.

    peers.names()            # ["delta"]
    peers.check(["delta"])   # one clear error (unknown name, missing package) or None
    peers.get("delta")       # the peer module: SERIES, describe(), open_table(uri, fingerprint)

Layer: ``tableformat`` ← ``indexes`` ← ``workloads`` ← ``peers`` ← ``reports`` ←
``indexbench`` (a peer needs the generator and the metrics-row builder; the CLI and API
use it).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from types import ModuleType

from tableformat.errors import IndexBenchError

# name → (module, distribution it needs, the extra that installs it)
PEERS: dict[str, tuple[str, str, str]] = {
    "delta": ("peers.delta", "deltalake", "peers"),
}


class PeerUnavailableError(IndexBenchError):
    """A peer was asked for but cannot run here (unknown name or package missing)."""


def names() -> list[str]:
    """The registered peers."""
    return list(PEERS)


def _require(name: str) -> tuple[str, str, str]:
    if name not in PEERS:
        raise PeerUnavailableError(
            f"unknown peer {name!r}; known peers: {', '.join(names())}")
    module, package, extra = PEERS[name]
    if not installed(package):
        raise PeerUnavailableError(
            f"peer {name!r} needs the {package!r} package, which is not installed: "
            f"pip install -e \".[{extra}]\" (or pip install {package})")
    return module, package, extra


def installed(package: str) -> bool:
    """Whether ``package`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def check(peer_names: Iterable[str]) -> None:
    """Raise ``PeerUnavailableError`` for the first peer that cannot run here.

    Cheap (no import of the peer's package), so commands call it before anything runs.
    """
    for name in peer_names:
        _require(name)


def get(name: str) -> ModuleType:
    """The peer's module (``SERIES``, ``describe()``, ``open_table(uri, fingerprint)``)."""
    module, _package, _extra = _require(name)
    return importlib.import_module(module)


def parse(text: str | None) -> list[str]:
    """``delta`` / ``delta,other`` → names (no check; see ``check``)."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


__all__ = ["PEERS", "PeerUnavailableError", "check", "get", "installed", "names", "parse"]
