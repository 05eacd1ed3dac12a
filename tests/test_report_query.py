"""The report's queries (``indexbench query`` rows): query.png, the Queries table, known
columns, and upsert summaries that leave query rows out (synthetic rows, no Spark)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import reports
from indexbench import api
from metrics import contract as m
from reports.data import UnknownColumnWarning
from reports.page import comparison, index_summary
from reports.query import query_table

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def upsert_rows() -> list[dict]:
    """A load and two upsert batches of bloom and simple-bucket (made by hand)."""
    rows = []
    for index in ("bloom", "simple-bucket"):
        bloom = index == "bloom"
        for b in range(3):
            inserts = 4000 if b == 0 else 500
            files = 3 * b if bloom else 0
            rows.append({
                "run_id": "r1", "index": index, "workload": "uniform", "batch": b,
                "operation": "upsert", "records": inserts + (500 if b else 0),
                "inserts": inserts, "updates": 500 if b else 0, "tag_s": 0.4, "write_s": 1.0,
                "commit_s": 0.2, "total_s": 2.0 + b, "partitions_touched": 4,
                "files_in_table": 4 + b, "file_groups": 4 + b, "candidate_files": files,
                "files_read": files, "bytes_read": files * 40_000.0,
                "bloom_checks": 900 * b if bloom else 0,
                "bloom_positives": 400 * b if bloom else 0, "false_positives": 0,
                "fp_rate": (0.0 if b else np.nan) if bloom else np.nan, "files_written": 4,
                "bytes_written": 1e6, "records_rewritten": 500 if b else 0,
                "buckets": np.nan if bloom else 16,
                "bucket_records_max": np.nan if bloom else 400.0,
                "bucket_records_mean": np.nan if bloom else 300.0, "index_mem_bytes": 0,
                "index_disk_bytes": 1e5 if bloom else 0, "table_records": 4000 + 500 * b})
    return rows


def _query(index: str, query: str, plan: str, **values) -> dict:
    return {"run_id": "q1", "index": index, "workload": "uniform", "batch": np.nan,
            "operation": "query", "query": query, "plan": plan,
            "table": f"/tmp/tables/{index}", "table_records": 5000, **values}


def query_rows() -> list[dict]:
    """Lookups of three indexes (bloom with false-positive file reads) and group-bys and
    joins, simple-bucket over two tables (two rows per plan)."""
    rows = [
        _query("bloom", "lookup", "index", keys=200, keys_present=100, keys_found=100,
               lookup_batches=4, files_read=500, bytes_read=2_000_000, footers_read=40,
               candidate_files=800, bloom_checks=800, bloom_positives=620,
               false_positives=120, fp_file_reads=123, files_read_per_key=2.5,
               latency_p50_s=0.75, latency_p99_s=1.25, latency_max_s=1.3, total_s=4.5),
        _query("simple-bucket", "lookup", "index", keys=200, keys_present=100,
               keys_found=100, lookup_batches=4, files_read=150, bytes_read=600_000,
               footers_read=0, fp_file_reads=50, files_read_per_key=0.75,
               latency_p50_s=0.25, latency_p99_s=0.5, latency_max_s=0.6, total_s=1.5),
        _query("dynamic-rli", "lookup", "index", keys=200, keys_present=100,
               keys_found=100, lookup_batches=4, files_read=100, bytes_read=500_000,
               index_files_read=8, fp_file_reads=0, files_read_per_key=0.5,
               latency_p50_s=0.3, latency_p99_s=0.6, latency_max_s=0.7, total_s=1.7),
        _query("bloom", "groupby", "default", shuffle_bytes=3 * 2**20,
               shuffle_read_bytes=3 * 2**20, has_exchange=1, spark_tasks=12,
               result_rows=7, files_read=8, bytes_read=4e6, total_s=3.0),
        _query("bloom", "join", "default", join_table="/tmp/tables/bloom-2",
               shuffle_bytes=5 * 2**20, shuffle_read_bytes=5 * 2**20, has_exchange=1,
               spark_tasks=20, result_rows=4321, files_read=16, bytes_read=8e6, total_s=6.0),
    ]
    for t, scale in (("a", 1.0), ("b", 1.5)):  # two tables of simple-bucket
        for query, res in (("groupby", 7), ("join", 4321)):
            extra = {"join_table": f"/tmp/tables/sb-{t}-2"} if query == "join" else {}
            rows.append(_query("simple-bucket", query, "bucket-aware", shuffle_bytes=0,
                               shuffle_read_bytes=0, has_exchange=0, bucket_groups=16,
                               spark_tasks=16, result_rows=res, files_read=8,
                               bytes_read=4e6, total_s=1.0 * scale, **extra))
            rows.append(_query("simple-bucket", query, "default",
                               shuffle_bytes=2 * 2**20 * scale,
                               shuffle_read_bytes=2 * 2**20 * scale, has_exchange=1,
                               spark_tasks=24, result_rows=res, files_read=8,
                               bytes_read=4e6, total_s=2.0 * scale, **extra))
    for row in rows[-4:]:
        row["table"] = row["table"] + "-b"
    return rows


@pytest.fixture(scope="module")
def query_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("query")
    m.write_metrics(out, upsert_rows() + query_rows())
    return out


@pytest.fixture(scope="module")
def upsert_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("upsert")
    m.write_metrics(out, upsert_rows())
    return out


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG_MAGIC


def test_string_columns_stay_strings(query_dir):
    df = reports.load(query_dir).df
    q = df[df["operation"] == "query"]
    assert set(q["query"].astype(str)) == {"lookup", "groupby", "join"}
    assert set(q["plan"].astype(str)) == {"index", "bucket-aware", "default"}
    assert q["table"].astype(str).str.startswith("/tmp/tables/").all()
    assert reports.has_queries(df) and not reports.has_queries(df[df["operation"] == "upsert"])


def test_query_figure_and_table_on_the_page(query_dir, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownColumnWarning)  # every query column is known
        page = api.report([str(query_dir)], out=str(tmp_path / "rep"), strict=True)
    html = page.read_text()
    assert _is_png(page.parent / "query.png")
    assert "src='query.png'" in html and "<h2>Queries</h2>" in html
    queries = html.split("<h2>Queries</h2>")[1].split("<h2>")[0]
    for col in ("keys", "keys_found", "files_read_per_key", "fp_file_reads",
                "latency_p50_s", "latency_p99_s", "shuffle_bytes", "has_exchange",
                "result_rows", "total_s"):
        assert f"<th>{col}</th>" in queries, col
    for number in ("2.50", "123", "0.75", "1.25", "3,145,728", "5,242,880", "4,321",
                   "2,621,440"):  # 2,621,440: median of simple-bucket's two default tables
        assert f"<td>{number}</td>" in queries, number
    assert queries.count("<tr><th>simple-bucket</th>") == 5  # lookup + 2 × (groupby, join)
    assert "dynamic-rli" in queries


def test_no_query_rows_no_figure_no_table(upsert_dir, tmp_path):
    out = tmp_path / "rep"
    (out).mkdir()
    (out / "query.png").write_bytes(PNG_MAGIC)  # stale from an earlier report: removed
    page = reports.write_report([upsert_dir], out, strict=True)
    assert not (out / "query.png").exists()
    assert "Queries" not in page.read_text()
    assert reports.query_figure(reports.load(upsert_dir).df) is None


def test_bloom_false_positive_reads_are_drawn(query_dir):
    df = reports.load(query_dir).df
    fig = reports.query_figure(df)
    try:
        bars = {p.get_gid(): p for ax in fig.axes for p in ax.patches if p.get_gid()}
        fp = bars["fp_file_reads:bloom"]
        held = bars["held:bloom"]
        assert math.isclose(fp.get_height(), 123 / 200)  # fp_file_reads / keys
        assert math.isclose(held.get_height() + fp.get_height(), 2.5)  # files_read_per_key
        assert fp.get_hatch()
        assert "fp_file_reads:dynamic-rli" not in bars  # 0 false-positive reads: none
        # simple-bucket: median of its two tables, in MiB; the bucket-aware plan shuffles 0
        assert math.isclose(bars["shuffle_bytes:simple-bucket:join:default"].get_height(),
                            2.5)
        assert bars["shuffle_bytes:simple-bucket:groupby:bucket-aware"].get_height() == 0
        assert bars["shuffle_bytes:simple-bucket:groupby:default"].get_hatch() == "///"
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert "no Exchange" in texts and any("123 FP" in t for t in texts)
    finally:
        plt.close(fig)


def test_upsert_summaries_leave_query_rows_out(query_dir, upsert_dir):
    with_q, without = reports.load(query_dir).df, reports.load(upsert_dir).df
    pd.testing.assert_frame_equal(comparison(with_q), comparison(without))
    for s in ("bloom", "simple-bucket"):
        a = index_summary(with_q[with_q["series"] == s])
        b = index_summary(without[without["series"] == s])
        pd.testing.assert_frame_equal(a, b)
    t = query_table(with_q)
    assert list(t.columns[:3]) == ["query", "plan", "rows"]
    assert t.loc[t["plan"] == "bucket-aware", "rows"].tolist() == [2.0, 2.0]
