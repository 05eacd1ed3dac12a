"""Each index beside the peer row that mirrors it: ours against Hudi's own writer.

A peer row that mirrors an index names it in ``peer_of`` (``hudi-bloom`` → ``bloom``);
this module pairs such rows with the index's own rows of the same table type and shows
the figures both count — files read to tag, false positives, bytes written, seconds per
batch — side by side, as a table (``pairs``: medians of batches ≥ 1, and ours / theirs)
and a figure (``pairs_figure``). The peer's figures are the ones it wrote or logged
(docs/peers.md says which Hudi field or log line feeds each); nothing is recomputed.
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from reports import style

# (column, label with its unit) of what both sides count
PAIRED = (("files_read", "files read to tag"), ("false_positives", "false positives"),
          ("bytes_written", "bytes written (B)"), ("total_s", "seconds per batch (s)"),
          ("tag_s", "tag (s)"), ("write_s", "write (s)"), ("commit_s", "commit (s)"))
DRAWN = ("files_read", "false_positives", "bytes_written", "total_s")


def _upserts(df: pd.DataFrame) -> pd.DataFrame:
    up = df[df["operation"].astype("string").eq("upsert").fillna(False)] \
        if "operation" in df.columns else df
    later = up[up["batch"] >= 1]
    return later if len(later) else up


def _median(rows: pd.DataFrame, col: str) -> float:
    """The median of a column's counted values (NaN: none counted on that side)."""
    values = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns \
        else pd.Series(dtype=float)
    return float(values.median()) if len(values) else math.nan


def pairs(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (index, table type) a peer mirrored: ours, the peer's, ours/theirs
    for each :data:`PAIRED` column (medians of the upsert batches after the load)."""
    if "peer_of" not in df.columns:
        return pd.DataFrame()
    up = _upserts(df)
    types = up["table_type"].astype("string").fillna("cow") if "table_type" in up.columns \
        else pd.Series("cow", index=up.index)
    peer_of = up["peer_of"].astype("string")
    mode = up["run_mode"].astype("string") if "run_mode" in up.columns else \
        pd.Series(pd.NA, index=up.index, dtype="string")
    ours_mask = ~mode.isin(["peer", "sim"]).fillna(False)
    rows: list[dict[str, Any]] = []
    for (index, peer, tt), theirs in up[peer_of.notna()].groupby(
            [peer_of[peer_of.notna()], up.loc[peer_of.notna(), "index"],
             types[peer_of.notna()]], sort=False):
        ours = up[ours_mask & (up["index"] == index) & (types == tt)]
        if not len(ours):
            continue
        row: dict[str, Any] = {"index": index, "table_type": tt, "peer": peer}
        for col, _label in PAIRED:
            a, b = _median(ours, col), _median(theirs, col)
            row[f"{col} (ours)"], row[f"{col} ({peer})"] = a, b
            row[f"{col} ours/theirs"] = a / b if b and not math.isnan(b) and not \
                math.isnan(a) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def pairs_table(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`pairs` as the report shows it: one column per pair, metrics as rows."""
    p = pairs(df)
    if not len(p):
        return p
    label = p["index"] + np.where(p["table_type"] == "mor", " (mor)", "")
    out = {}
    for i, row in p.iterrows():
        out[label[i]] = {f"{lab} — ours": row[f"{c} (ours)"] for c, lab in PAIRED} | \
            {f"{lab} — {row['peer']}": row[f"{c} ({row['peer']})"] for c, lab in PAIRED} | \
            {f"{lab} — ours / theirs": row[f"{c} ours/theirs"] for c, lab in PAIRED}
    table = pd.DataFrame(out)
    order = [f"{lab} — {who}" for _c, lab in PAIRED
             for who in ("ours", *dict.fromkeys(p["peer"]), "ours / theirs")]
    return table.reindex([r for r in order if r in table.index])


def pairs_figure(df: pd.DataFrame):
    """Four panels, one bar pair per mirrored (index, table type): ours solid in the
    index's colour, the peer's hatched (median per upsert batch ≥ 1). None: no pairs."""
    p = pairs(df)
    if not len(p):
        return None
    labels = list(p["index"] + np.where(p["table_type"] == "mor", " (mor)", ""))
    x = np.arange(len(p))
    with style.paper():
        fig, axes = plt.subplots(2, 2, figsize=(style.PAPER_WIDTH_IN, 5.0))
        for ax, col in zip(axes.flat, DRAWN, strict=True):
            label = dict(PAIRED)[col]
            ours = p[f"{col} (ours)"].to_numpy(dtype=float)
            theirs = np.array([row[f"{col} ({row['peer']})"] for _, row in p.iterrows()],
                              dtype=float)
            colors = [style.index_color(i) for i in p["index"]]
            ax.bar(x - 0.2, np.nan_to_num(ours), 0.4, color=colors, label="ours")
            ax.bar(x + 0.2, np.nan_to_num(theirs), 0.4, color="white", edgecolor=colors,
                   hatch="///", label="Hudi's writer")
            for xi, (a, b) in enumerate(zip(ours, theirs, strict=True)):
                for dx, v in ((-0.2, a), (0.2, b)):
                    if math.isnan(v):
                        ax.annotate("n/a", (xi + dx, 0), ha="center", va="bottom",
                                    fontsize=7, color="#777")
            top = np.nanmax(np.concatenate([ours, theirs])) if \
                np.isfinite(np.concatenate([ours, theirs])).any() else 0.0
            ax.set_ylim(0, top * 1.1 if top > 0 else 1)
            ax.set_title(label)
            ax.set_ylabel(label)
            ax.set_xticks(x, labels, rotation=30, ha="right")
            if col in ("files_read", "false_positives"):
                ax.yaxis.get_major_locator().set_params(integer=True)
        axes.flat[0].legend(loc="best")
    return fig


__all__ = ["DRAWN", "PAIRED", "pairs", "pairs_figure", "pairs_table"]
