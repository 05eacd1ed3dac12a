"""One look per series and paper-size defaults, so every figure reads the same way.

A series' colour and marker shape say which index it is; its line style and fill say how
it ran, so no two series of one figure share both:

* colour: the registered indexes (``indexes.names()``) take the palette in registry
  order (Okabe–Ito, safe for colour-blind readers, then Paul Tol's "muted" colours), the
  peers' own series (``peers.PEERS``) the peer palette in peer order; a peer series that
  mirrors an index (``hudi-bloom``, the peer's ``index_prefix``) takes that index's
  colour and marker. Any other name gets a stable colour and marker by a hash of its
  name, so a new index keeps its look across figures, runs and reports without anyone
  editing this file.
* line style: measured runs solid (dotted for further runs), simulated runs dashed, a
  peer mirroring an index dash-dotted; bars of a mirroring peer are hatched.
* fill: copy-on-write filled, merge-on-read hollow (markers and bars).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import matplotlib.pyplot as plt

import indexes
import peers

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
             "#F0E442", "#000000"]
# Registered indexes in registry order: Okabe–Ito (in the order that keeps the colours
# the first indexes always had), then Paul Tol's "muted" set; the pale ones last.
INDEX_COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7",
                "#332288", "#882255", "#999933", "#44AA99", "#AA4499", "#117733",
                "#88CCEE", "#DDCC77", "#F0E442"]
# Peers' own series (no index of ours behind them): greys, brown, black, Tol's rose.
PEER_COLORS = ["#7F7F7F", "#8C564B", "#000000", "#CC6677", "#4D4D4D", "#BBBBBB"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "p", "h", "<", ">", "d", "H", "8"]
LINESTYLES = ["-", "--", ":", "-."]
# Line styles of runs: measured solid (then dotted), simulated dashed, mirrored dash-dot.
REAL_LINESTYLES: list[Any] = ["-", ":", (0, (1, 3)), (0, (4, 1, 1, 1))]
SIM_LINESTYLES: list[Any] = ["--", (0, (7, 2)), (0, (2, 2)), (0, (9, 2, 3, 2))]
MIRROR_LINESTYLES: list[Any] = ["-.", (0, (6, 2, 1, 2, 1, 2)), (0, (3, 1, 1, 1, 1, 1))]
MIRROR_HATCH = "////"

# Double-column paper width is ~7 in; fonts 8–10 pt stay legible when printed at that size.
PAPER_WIDTH_IN = 7.0
RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.dpi": 100, "savefig.dpi": 200,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
    "axes.spines.right": False, "figure.constrained_layout.use": True,
}


@dataclass(frozen=True)
class Known:
    """The look of a name the registries know: its colour and marker."""

    color: str
    marker: str


@lru_cache(maxsize=1)
def _known_for(index_names: tuple[str, ...]) -> dict[str, Known]:
    out = {n: Known(INDEX_COLORS[i % len(INDEX_COLORS)], MARKERS[i % len(MARKERS)])
           for i, n in enumerate(index_names)}
    own = [s for p in peers.PEERS.values() for s in p.all_series()
           if p.mirrored_index(s) is None]
    for j, s in enumerate(own):
        out.setdefault(s, Known(PEER_COLORS[j % len(PEER_COLORS)],
                                MARKERS[(len(index_names) + j) % len(MARKERS)]))
    return out


def known() -> dict[str, Known]:
    """Every registered index and peer series → its look (an index registered later is
    included: the registries are read again when they change)."""
    return _known_for(tuple(indexes.names()))


class _FixedColors(Mapping[str, str]):
    """name → colour of every name the registries know (read when asked)."""

    def __getitem__(self, name: str) -> str:
        return known()[name].color

    def __iter__(self) -> Iterator[str]:
        return iter(known())

    def __len__(self) -> int:
        return len(known())


FIXED: Mapping[str, str] = _FixedColors()


def mirrored_index(name: str) -> str | None:
    """The index a peer series mirrors (``hudi-bloom`` → ``bloom``), else None."""
    for p in peers.PEERS.values():
        if p.index_prefix and name.startswith(p.index_prefix):
            return p.mirrored_index(name)
    return None


def _hash(name: str) -> int:
    return int(hashlib.sha1(name.encode()).hexdigest(), 16)


def _known_look(name: str) -> Known:
    """The look of a known name (or of the index it mirrors); a hashed one otherwise."""
    table = known()
    name = mirrored_index(name) or name
    if name in table:
        return table[name]
    h = _hash(name)
    return Known(INDEX_COLORS[h % len(INDEX_COLORS)], MARKERS[(h // 7) % len(MARKERS)])


def index_color(name: str) -> str:
    """The colour of an index (or peer series) in every figure."""
    return _known_look(name).color


def index_marker(name: str) -> str:
    """The marker of an index, so lines stay distinguishable in greyscale."""
    return _known_look(name).marker


@dataclass(frozen=True)
class SeriesLook:
    """How one series is drawn: colour and marker of its index; line style of its run
    (measured, simulated, mirrored); hollow on a merge-on-read table."""

    color: str
    marker: str
    linestyle: Any
    hollow: bool
    hatch: str | None

    def line(self) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot``."""
        return {"color": self.color, "marker": self.marker, "ls": self.linestyle,
                "markerfacecolor": "white" if self.hollow else self.color,
                "markeredgecolor": self.color}

    def points(self) -> dict[str, Any]:
        """Keyword arguments of ``Axes.plot`` for markers alone (no line)."""
        return {**self.line(), "ls": "none"}

    def bar(self) -> dict[str, Any]:
        """Keyword arguments of ``Axes.bar``: filled, or white with a coloured edge."""
        return {"facecolor": "white" if self.hollow else self.color,
                "edgecolor": self.color if self.hollow else "black",
                "hatch": self.hatch, "linewidth": 1.2 if self.hollow else 0.5}


def series_look(name: str, *, mor: bool = False, sim: bool = False,
                run: int = 0) -> SeriesLook:
    """The look of a series of index (or peer series) ``name``: ``mor`` on a
    merge-on-read table, ``sim`` simulated, ``run`` the n-th run of its kind."""
    mirror = mirrored_index(name) is not None
    styles = SIM_LINESTYLES if sim else MIRROR_LINESTYLES if mirror else REAL_LINESTYLES
    return SeriesLook(index_color(name), index_marker(name), styles[run % len(styles)],
                      mor, MIRROR_HATCH if mirror else None)


@contextmanager
def paper() -> Iterator[None]:
    """matplotlib settings for paper-size figures.

    Restores only the keys it set: ``plt.rc_context`` would also restore an unresolved
    ``backend`` and so close the notebook's inline figures drawn inside it.
    """
    saved = {k: plt.rcParams[k] for k in RC}
    plt.rcParams.update(RC)
    try:
        yield
    finally:
        plt.rcParams.update(saved)


def figure(nrows: int = 1, ncols: int = 1, height: float = 2.8, **kw):
    """A paper-width figure with ``nrows × ncols`` axes (call inside ``paper()``)."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(PAPER_WIDTH_IN, height * nrows),
                             squeeze=False, **kw)
    return fig, axes
