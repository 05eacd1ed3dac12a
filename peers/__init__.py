"""Peer yardsticks: the same batches through another table format's own upsert.

A peer is not a record index: it is what a user without one (or with another system's
own) would run instead, applied to the identical batches an index run gets
(``workloads.generator``, a pure function of the workload), timed the same way and
written as one or more series of ``compare``'s metrics file. Each peer is one module
here and one line in ``PEERS``; its third-party package is imported only when the peer
runs, so the project works without it.

    peers.names()              # ["delta", "paimon", "hudi"]
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

A peer may also follow the run's indexes (``index_prefix``: its series ``<prefix><index>``
run only for indexes in the run, as ``hudi``'s ``hudi-bloom``), run once per table type
(``per_table_type``: ``open_table`` takes ``table_type``), take settings of its own
(``takes_settings``: ``--set <peer>:KEY=VALUE``, ``open_table`` takes ``settings``),
fetch what it needs before anything runs (``prepares``: the module's ``prepare(notify)``)
and keep a process across series (the module's ``stop()``, called by :func:`stop_all`).
:func:`planned` lists what a compare runs.

Layer: ``tableformat`` ← ``indexes`` ← ``workloads`` ← ``peers`` ← ``reports`` ←
``indexbench`` (a peer needs the generator and the metrics-row builder, and may resolve
an index's parameters; the CLI and API use it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import indexes
from indexes import roles
from tableformat.errors import IndexBenchError
from tableformat.table_type import check_table_type


@dataclass(frozen=True)
class Peer:
    """A registered peer: its module, the distribution it needs, the extra that installs
    it, the series it writes (known without importing the module) and the indexes whose
    parameters its tables mirror (checked with the run's ``--set`` before it starts)."""

    module: str
    package: str
    extra: str
    series: tuple[str, ...] | Callable[[], tuple[str, ...]]
    mirrors: tuple[str, ...] = ()
    index_prefix: str = ""
    per_table_type: bool = False
    takes_settings: bool = False
    prepares: bool = False

    def all_series(self) -> tuple[str, ...]:
        return self.series() if callable(self.series) else self.series

    def mirrored_index(self, series: str) -> str | None:
        """The index a series follows (``<index_prefix><index>``), else None."""
        if self.index_prefix and series.startswith(self.index_prefix):
            name = series[len(self.index_prefix):]
            return name if name in indexes.names() else None
        return None


def _hudi_series() -> tuple[str, ...]:
    """Hudi's default index, then one series per index declaring a Hudi counterpart."""
    return ("hudi-simple", *(f"hudi-{n}" for n in indexes.names()
                             if roles.hudi_counterpart(indexes.index_class(n)) is not None))


PEERS: dict[str, Peer] = {
    "delta": Peer("peers.delta", "deltalake", "peers", ("delta-merge",)),
    "paimon": Peer("peers.paimon", "pypaimon", "peers", ("paimon-fixed", "paimon-dynamic"),
                   mirrors=("simple-bucket", "dynamic-rli")),
    # Hudi's own Spark writer, in a JVM of its own (peers/hudi_runtime.py fetches it)
    "hudi": Peer("peers.hudi", "pyspark", "", _hudi_series, index_prefix="hudi-",
                 per_table_type=True, takes_settings=True, prepares=True),
}


class PeerUnavailableError(IndexBenchError):
    """A peer was asked for but cannot run here (unknown name or package missing)."""


def names() -> list[str]:
    """The registered peers."""
    return list(PEERS)


def _peer_of(name: str) -> tuple[str, tuple[str, ...]]:
    """(peer, the series asked for) of a peer name or of one peer's series name."""
    if name in PEERS:
        return name, PEERS[name].all_series()
    for peer, p in PEERS.items():
        if name in p.all_series():
            return peer, (name,)
    known = [*PEERS, *(s for p in PEERS.values() for s in p.all_series())]
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


def runs(peer_names: Iterable[str], run_indexes: Sequence[str] | None = None
         ) -> list[tuple[str, str]]:
    """(peer, series) to run for the names given, in order, each series once. With
    ``run_indexes``, a peer named whole runs a series that follows an index only when
    that index is in the run (a series named alone always runs)."""
    out: list[tuple[str, str]] = []
    for name in peer_names:
        peer, series = _peer_of(name)
        p = PEERS[peer]
        for s in series:
            follows = p.mirrored_index(s)
            if (run_indexes is not None and name == peer and follows is not None
                    and follows not in run_indexes):
                continue
            if (peer, s) not in out:
                out.append((peer, s))
    return out


@dataclass(frozen=True)
class PlannedSeries:
    """One peer table of a compare: ``table_type`` None is the table's own (peers that
    do not run per table type, or a compare without ``--table-types``); ``absent``: why
    the peer has no such table (the row is left out, the reason kept in run.json)."""

    peer: str
    series: str
    table_type: str | None
    label: str
    absent: str | None = None


def planned(peer_names: Iterable[str], run_indexes: Sequence[str],
            table_types: Sequence[str] = (),
            params: Mapping[str, Mapping[str, Any]] | None = None,
            settings: Mapping[str, Mapping[str, str]] | None = None) -> list[PlannedSeries]:
    """Every peer table a compare of ``run_indexes`` over ``table_types`` writes, in
    order, labelled as the index series are (``hudi-bloom (mor)``); ``settings``: the
    peers' own (``--set hudi:...``), which may leave a series out."""
    out = []
    for peer, series in runs(peer_names, run_indexes):
        p = PEERS[peer]
        if not p.per_table_type:
            out.append(PlannedSeries(peer, series, None, series))
            continue
        follows = p.mirrored_index(series)
        for tt in (table_types or [None]):
            if tt is None:
                given = ((params or {}).get(follows or "") or {}).get("hoodie.table.type")
                tt_ = check_table_type(str(given)) if given else None
            else:
                tt_ = check_table_type(tt)
            mor = (tt_ or "").upper() == "MERGE_ON_READ"
            label = f"{series} (mor)" if mor and table_types else series
            reason = get(peer).absent_reason(series, tt_ or "COPY_ON_WRITE",
                                             (settings or {}).get(peer))
            out.append(PlannedSeries(peer, series, tt_, label, reason))
    return out


def prepare(peer_names: Iterable[str], notify: Callable[[str], None] | None = None
            ) -> dict[str, dict[str, str]]:
    """Fetch what the named peers need (Hudi's bundle and Spark) before anything runs:
    one progress line per download, one clear error when it cannot be had."""
    out = {}
    for name in peer_names:
        peer, _series = _peer_of(name)
        if PEERS[peer].prepares and peer not in out:
            out[peer] = get(peer).prepare(notify)
    return out


def stop_all() -> None:
    """Stop what the peers keep running across series (Hudi's JVM): at once when an
    exception (an interrupt, a failure) is on its way out, else when it is done."""
    now = sys.exc_info()[0] is not None
    for p in PEERS.values():
        if p.prepares:
            module = sys.modules.get(p.module)
            if module is not None and hasattr(module, "stop"):
                module.stop(now)


def peer_of(name: str) -> str:
    """The peer a name on ``--peers`` belongs to (a peer, or one of its series)."""
    return _peer_of(name)[0]


def takes_settings(name: str) -> bool:
    """Whether ``--set <name>:KEY=VALUE`` is a setting of this peer."""
    return name in PEERS and PEERS[name].takes_settings


def check_settings(name: str, settings: Mapping[str, str]) -> None:
    """A peer's ``--set`` values checked before anything runs."""
    get(name).check_settings(settings)


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


__all__ = ["PEERS", "Peer", "PeerUnavailableError", "PlannedSeries", "check", "check_settings",
           "get", "installed", "mirrored_indexes", "names", "parse", "planned", "prepare",
           "peer_of", "runs", "stop_all", "takes_settings"]
