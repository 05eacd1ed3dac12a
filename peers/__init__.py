"""Peer yardsticks: the same batches through another table format's own upsert.

A peer is not a record index: it is what a user without one (or with another system's
own) would run instead, applied to the identical batches an index run gets
(``workloads.generator``, a pure function of the workload), timed the same way and
written as one or more series of ``compare``'s metrics file. Each peer is one module
here and one line in ``PEERS``; its third-party package is imported only when the peer
runs, so the project works without it.

    peers.names()              # ["delta", "paimon"]
    peers.check(["paimon"])    # one clear error (unknown name, missing package) or None
    peers.runs(["paimon"])     # [("paimon", "paimon-fixed"), ("paimon", "paimon-dynamic")]
    peers.get("paimon")        # the peer module (see below)

A name on ``--peers`` is a peer (all its series) or one series of a peer
(``paimon-dynamic``). A peer module has ``SERIES`` (the ``index`` values of its rows),
``describe(series)``, ``location(tables_dir, series)`` (where the series' table lives
under a run's ``tables/``) and ``open_table(location, fingerprint, *, series,
index_params)``: a table with ``committed_batches()``, ``upsert(workload, batch)`` (one
metrics row), ``describe()`` (what it resolved: options, writer) and ``close()``.
``index_params`` are the run's index parameters (index → ``--set`` overrides), for a
peer whose table mirrors an index's settings.

Layer: ``tableformat`` ← ``indexes`` ← ``workloads`` ← ``peers`` ← ``reports`` ←
``indexbench`` (a peer needs the generator and the metrics-row builder, and may resolve
an index's parameters; the CLI and API use it).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from tableformat.errors import IndexBenchError


@dataclass(frozen=True)
class Peer:
    """A registered peer: its module, the distribution it needs, the extra that installs
    it, the series it writes (known without importing the module) and the indexes whose
    parameters its tables mirror (checked with the run's ``--set`` before it starts)."""

    module: str
    package: str
    extra: str
    series: tuple[str, ...]
    mirrors: tuple[str, ...] = ()


PEERS: dict[str, Peer] = {
    "delta": Peer("peers.delta", "deltalake", "peers", ("delta-merge",)),
    "paimon": Peer("peers.paimon", "pypaimon", "peers", ("paimon-fixed", "paimon-dynamic"),
                   mirrors=("simple-bucket", "dynamic-rli")),
}


class PeerUnavailableError(IndexBenchError):
    """A peer was asked for but cannot run here (unknown name or package missing)."""


def names() -> list[str]:
    """The registered peers."""
    return list(PEERS)


def _peer_of(name: str) -> tuple[str, tuple[str, ...]]:
    """(peer, the series asked for) of a peer name or of one peer's series name."""
    if name in PEERS:
        return name, PEERS[name].series
    for peer, p in PEERS.items():
        if name in p.series:
            return peer, (name,)
    known = [*PEERS, *(s for p in PEERS.values() for s in p.series)]
    raise PeerUnavailableError(f"unknown peer {name!r}; known peers: {', '.join(known)}")


def _require(name: str) -> Peer:
    peer, _series = _peer_of(name)
    p = PEERS[peer]
    if not installed(p.package):
        raise PeerUnavailableError(
            f"peer {peer!r} needs the {p.package!r} package, which is not installed: "
            f"pip install -e \".[{p.extra}]\" (or pip install {p.package})")
    return p


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


def runs(peer_names: Iterable[str]) -> list[tuple[str, str]]:
    """(peer, series) to run for the names given, in order, each series once."""
    out: list[tuple[str, str]] = []
    for name in peer_names:
        peer, series = _peer_of(name)
        out += [(peer, s) for s in series if (peer, s) not in out]
    return out


def mirrored_indexes(peer_names: Iterable[str]) -> list[str]:
    """The indexes whose parameters the named peers' tables mirror."""
    out: list[str] = []
    for name in peer_names:
        out += [i for i in PEERS[_peer_of(name)[0]].mirrors if i not in out]
    return out


def get(name: str) -> ModuleType:
    """The module of a peer (or of the peer a series belongs to)."""
    return importlib.import_module(_require(name).module)


def parse(text: str | None) -> list[str]:
    """``delta`` / ``delta,paimon-fixed`` → names (no check; see ``check``)."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


__all__ = ["PEERS", "Peer", "PeerUnavailableError", "check", "get", "installed",
           "mirrored_indexes", "names", "parse", "runs"]
