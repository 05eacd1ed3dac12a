"""What a command prints fits an 80-column terminal: whole numbers on one line, counts as
whole numbers, per-batch lines aligned for any index name, a resumed bar that ends full
(no Spark)."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console

import indexes
from indexbench import cli
from indexbench.terminal import (
    BatchLines,
    fmt_count,
    fmt_seconds,
    query_tables,
    summary_tables,
)
from metrics.contract import summary


def _render(tables, width: int) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    for t in tables:
        console.print(t)
    return buf.getvalue()


def _rows() -> pd.DataFrame:
    """Two upsert batches per registered index, with numbers as wide as a default
    comparison's (and one simulated series' modelled ones)."""
    rows = []
    for i, name in enumerate(indexes.names()):
        for b, fp, nbytes in ((1, 10_847, 74_260_090), (2, 10_848, 74_260_091)):
            rows.append({"index": name, "batch": b, "operation": "upsert",
                         "tag_s": 7.67 + i, "write_s": 1.5, "total_s": 9.9,
                         "files_read": 821 + b, "bytes_read": nbytes, "false_positives": fp,
                         "fp_rate": 0.331, "bucket_records_max": 79_447_854 + b,
                         "index_mem_bytes": 22_564 * b})
    return pd.DataFrame(rows)


def test_medians_of_counts_are_whole_numbers():
    s = summary(_rows())
    assert (s["false_positives"] == 10_848).all()  # 10,847.5 rounds half up
    assert (s["bytes_read"] == 74_260_091).all()
    assert (s["files_read"] == 823).all()  # 822.5
    assert s["tag_s"].iloc[0] == pytest.approx(7.67)  # seconds keep their fraction
    text = _render(summary_tables(s, 80), 80)
    assert "10,848" in text and "74,260,091" in text and "79,447,856" in text
    assert "10,847.5" not in text and "74,260,090.5" not in text


@pytest.mark.parametrize("width", [80, 120])
def test_median_tables_fit_the_terminal_and_keep_every_number_whole(width):
    text = _render(summary_tables(summary(_rows()), width), width)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= width
    assert "…" not in text
    for name in indexes.names():  # each index name whole, on its own row(s)
        assert any(ln.startswith(name + " ") for ln in lines), name
    for number in ("74,260,091", "79,447,856", "10,848", "7.67s", "33,846"):
        assert number in text, number


def test_query_tables_fit_80_columns_without_cutting_a_value():
    rows = []
    for name in indexes.names():
        rows.append({"index": name, "query": "lookup", "plan": "default", "keys": 100,
                     "keys_found": 50, "files_read": 821, "fp_file_reads": 31,
                     "latency_p50_s": 0.2345, "latency_p99_s": 12.5})
        for q in ("groupby", "join"):
            rows.append({"index": name, "query": q, "plan": "bucket-aware",
                         "shuffle_bytes": 148_662_123, "has_exchange": 0.0,
                         "result_rows": 120_000, "total_s": 0.0969})
    text = _render(query_tables(pd.DataFrame(rows), 80), 80)
    assert max(len(ln) for ln in text.splitlines()) <= 80
    assert "…" not in text
    assert len([t for t in text.splitlines() if t.startswith("index ")]) == 2  # no spill
    for value in ("bucket-aware", "0.23s", "12.50s", "148,662,123", "0.10s", "no"):
        assert value in text, value


def test_per_batch_lines_align_for_every_index_name():
    names = indexes.names()
    lines = BatchLines(names)
    header = lines.header()
    rendered = [lines.line({"index": n, "batch": b, "records": r, "tag_s": t,
                            "write_s": 1.25, "files_read": f, "false_positives": fp})
                for n in names
                for b, r, t, f, fp in ((0, 100_000, 0.5, 0, 0),
                                       (12, 20_000, 100_807.81, 374_512, 1_657_108))]
    assert {len(ln) for ln in rendered} == {len(header)}
    assert len(header) <= 80
    # every column ends where its header ends
    for label in ("batch", "records", "tag", "write", "files read", "false pos"):
        end = header.index(label) + len(label)
        assert all(ln[end - 1] != " " and (end == len(ln) or ln[end] == " ")
                   for ln in rendered), label
    assert "28.0h" in rendered[1] and "374,512" in rendered[1]


def test_simulated_and_peer_lines_keep_the_columns():
    lines = BatchLines(["bloom", "delta-merge"])
    sim = lines.line({"index": "bloom", "batch": 1, "records": 10_000_000, "tag_s": None,
                      "model_tag_s": 29.1, "model_write_s": 4.5, "files_read": 2002,
                      "false_positives": 1_657_108})
    peer = lines.line({"index": "delta-merge", "batch": 1, "records": 20_000, "write_s": 0.9,
                       "run_mode": "peer"})
    assert len(sim) == len(peer) == len(lines.header())
    assert "~29.10s" in sim and "10,000,000" in sim
    from_a_worker = lines.line({"index": "bloom", "batch": 1, "records": 10, "tag_s": float("nan"),
                                "model_tag_s": 2.5, "model_write_s": 1.0, "run_mode": "sim"})
    assert "~2.50s" in from_a_worker  # sim --jobs: its rows come back with NaN seconds
    assert peer.split()[-3:] == ["0.90s", "—", "—"]


def test_a_throughput_mode_line_shows_the_batch_total_marked():
    lines = BatchLines(["simple-bucket"])
    fused = lines.line({"index": "simple-bucket", "batch": 2, "records": 98_836,
                        "tag_s": float("nan"), "write_s": float("nan"), "total_s": 2.41,
                        "timing": "total", "files_read": 0, "false_positives": 0})
    assert len(fused) == len(lines.header())
    assert fused.split()[3:5] == ["—", "Σ2.41s"]  # not taken for a simulated row


def test_human_units():
    assert fmt_seconds(0.25) == "0.25s" and fmt_seconds(160.0) == "2.7m"
    assert fmt_seconds(100_807.81) == "28.0h" and fmt_seconds(1e6) == "11.6d"
    assert fmt_count(10_847.5) == "10,848" and fmt_count(1_657_108, 7) == "1.66M"
    assert fmt_count(None) == "—"


def test_a_resumed_run_fills_the_progress_bar(capsys):
    """Batches 0-2 committed before: the bar counts them when batch 3 arrives, and the
    command completes it when an index had nothing left to run."""
    progress, on_batch, done = cli._progress_bar(2 * 5, ["bloom", "simple-bucket"])
    for b in (3, 4):
        on_batch({"index": "bloom", "batch": b, "records": 10, "tag_s": 0.1, "write_s": 0.1})
    assert progress.tasks[0].completed == 5
    done()  # simple-bucket: every batch was committed already
    assert progress.tasks[0].completed == 10
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["index", "batch", "records", "tag", "write",
                                           "files", "read", "false", "pos"]


def test_a_simulated_run_shows_its_modelled_seconds_where_the_measured_would_be():
    rows = [{"index": n, "batch": b, "operation": "upsert", "run_mode": "sim",
             "tag_s": None, "model_tag_s": 100_807.8 if n == "bloom" else 0.63,
             "write_s": None, "model_write_s": 120.0, "total_s": None,
             "model_total_s": 100_930.0, "files_read": 374_134 if n == "bloom" else 0,
             "bytes_read": None, "model_bytes_read": 3_091_639_936 if n == "bloom" else 0}
            for n in ("bloom", "simple-bucket") for b in (1, 2)]
    text = _render(summary_tables(summary(pd.DataFrame(rows)), 80), 80)
    header = next(ln for ln in text.splitlines() if ln.startswith("index "))
    assert header.split()[:4] == ["index", "~tag", "~write", "~total"]
    assert "28.0h" in text and "3,091,639,936" in text


def test_the_footer_says_modelled_only_where_seconds_are():
    from indexbench.terminal import LEGEND, LEGEND_MODELLED, legend

    real = pd.DataFrame({"tag_s": [0.5], "total_s": [1.0]}, index=["bloom"])
    assert legend(real) == LEGEND and "modelled" not in LEGEND
    sim = real.assign(model_tag_s=[0.4])
    assert legend(sim) == LEGEND_MODELLED
