"""One colour per index and paper-size defaults, so every figure reads the same way.

Colours come from the Okabe–Ito palette (safe for colour-blind readers and in greyscale
print). Known indexes have fixed colours; any other index name gets a stable colour from
the rest of the palette by a hash of its name, so a new index keeps its colour across
figures, runs and reports without anyone editing this file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib.pyplot as plt

OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9",
             "#F0E442", "#000000"]
FIXED = {"bloom": "#0072B2", "simple-bucket": "#E69F00", "multiple-rehash": "#009E73",
         "dynamic-rli": "#CC79A7", "delta-merge": "#7F7F7F",  # the delta peer: grey
         "partition-bucket": "#D55E00", "consistent-hashing": "#56B4E9",
         "paimon-fixed": "#8C564B", "paimon-dynamic": "#000000"}  # the Paimon peer
# (markers follow FIXED's order: new names go last, so no known index changes marker)
EXTRA = ["#D55E00", "#56B4E9", "#7F7F7F", "#000000", "#8C564B", "#F0E442"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES = ["-", "--", ":", "-."]

# Double-column paper width is ~7 in; fonts 8–10 pt stay legible when printed at that size.
PAPER_WIDTH_IN = 7.0
RC = {
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "figure.dpi": 100, "savefig.dpi": 200,
    "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
    "axes.spines.right": False, "figure.constrained_layout.use": True,
}


def index_color(name: str) -> str:
    """The colour of an index in every figure (fixed for known names, stable otherwise)."""
    if name in FIXED:
        return FIXED[name]
    h = int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return EXTRA[h % len(EXTRA)]


def index_marker(name: str) -> str:
    """A marker per index, so lines stay distinguishable in greyscale."""
    order = list(FIXED)
    i = order.index(name) if name in order else int(hashlib.sha1(name.encode()).hexdigest(), 16)
    return MARKERS[i % len(MARKERS)]


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
