"""The bucket-growth figure and peers with buckets in the report figures (no Spark: rows
built here as dynamic-rli and the Paimon peer write them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

import reports
from reports import figures as F


def _rows(index: str, run_mode: str | None, mem: float | None, disk: float,
          created: list[float] | None) -> pd.DataFrame:
    keys = np.array([1000.0, 2000.0, 4000.0])
    return pd.DataFrame({
        "run_id": "r", "index": index, "workload": "growing", "batch": [0, 1, 2],
        "run_mode": run_mode, "records": 1000, "inserts": 1000, "updates": 0,
        "table_records": keys, "buckets": keys / 500, "bucket_records_cov": 0.3,
        "index_disk_bytes": keys * disk,
        "index_mem_bytes": np.nan if mem is None else keys * mem,
        "buckets_created": np.nan if created is None else created,
        "total_s": [2.0, 1.0, 1.5]})


def frame() -> pd.DataFrame:
    return pd.concat([
        _rows("simple-bucket", None, 0.0, 0.0, None),
        _rows("dynamic-rli", None, 6.0, 21.0, [2, 2, 4]),
        _rows("delta-merge", "peer", None, 0.0, None).assign(
            buckets=np.nan, index_disk_bytes=np.nan),  # no buckets: not drawn
        _rows("paimon-dynamic", "peer", None, 4.0, [2, 2, 4])], ignore_index=True)


def test_bucket_growth_draws_every_series_with_buckets():
    df = frame()
    assert reports.has_bucket_growth(df)
    fig = F.bucket_growth_figure(df)
    (ax_b, ax_c), (ax_i, ax_t) = fig.axes[:2], fig.axes[2:4]
    assert [ln.get_label() for ln in ax_b.lines] == ["simple-bucket", "dynamic-rli",
                                                    "paimon-dynamic"]
    assert list(ax_b.lines[1].get_ydata()) == [2.0, 4.0, 8.0]
    # index bytes per key: disk solid for all three, memory dashed where counted
    per_key = {ln.get_label(): (ln.get_linestyle(), list(ln.get_ydata())) for ln in ax_i.lines}
    assert per_key["paimon-dynamic"] == ("-", [4.0, 4.0, 4.0])
    assert per_key["dynamic-rli"] == ("-", [21.0, 21.0, 21.0])
    dashed = [list(ln.get_ydata()) for ln in ax_i.lines if ln.get_linestyle() == "--"]
    assert dashed == [[6.0, 6.0, 6.0]]  # dynamic-rli's caches; Paimon's is not counted
    assert any("memory not counted: paimon-dynamic" in t.get_text() for t in ax_i.texts)
    assert [ln.get_label() for ln in ax_t.lines][-1] == "paimon-dynamic"
    assert list(ax_t.lines[-1].get_xdata()) == [1, 2]  # upserts: the load left out
    assert len(ax_c.lines) == 3


def test_no_bucket_growth_figure_without_buckets_opened_online():
    df = frame()
    df = df[~df["index"].isin(["dynamic-rli", "paimon-dynamic"])]
    assert not reports.has_bucket_growth(df) and F.bucket_growth_figure(df) is None


def test_a_peer_with_index_files_is_drawn_in_index_bytes():
    fig = F.index_bytes_figure(frame())
    mem, disk = fig.axes[:2]
    assert [ln.get_label().split(" (")[0] for ln in disk.lines] == ["dynamic-rli",
                                                                   "paimon-dynamic"]
    assert disk.lines[1].get_label().endswith("(4.0 B/key)")
    assert [ln.get_label().split(" (")[0] for ln in mem.lines] == ["dynamic-rli"]
