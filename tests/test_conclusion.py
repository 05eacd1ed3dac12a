"""A report opens with what the run found (issue #42, point 3): the series ranked by
seconds per batch, files read, skew and index bytes in sentences, the settings that
shape them; every table row with its unit; per-index detail folded away. No Spark."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from metrics.contract import write_metrics
from reports.conclusion import conclude, conclusion_text
from reports.page import write_report
from reports.units import unit_of, with_unit


def _rows(index: str, tag: float, write: float, files: int, fp: int, bmax: float | None,
          bmean: float | None, mem: float = 0, **extra) -> list[dict]:
    rows = []
    for b in range(3):  # batch 0: the initial load, left out of the medians
        rows.append({"index": index, "workload": "uniform", "batch": b, "operation": "upsert",
                     "records": 100, "inserts": 50, "updates": 50,
                     "tag_s": tag * (10 if b == 0 else 1), "write_s": write,
                     "commit_s": 0.1, "total_s": tag + write + 0.1,
                     "files_read": files, "footers_read": files, "false_positives": fp,
                     "bloom_checks": 10 * fp, "files_written": 4,
                     "bytes_written": 4 * 200_000, "bucket_records_max": bmax,
                     "bucket_records_mean": bmean, "index_mem_bytes": mem,
                     "table_type": "cow", **extra})
    return rows


@pytest.fixture
def run_dir(tmp_path):
    rows = (_rows("bloom", 3.0, 1.0, 40, 5, None, None)
            + _rows("simple-bucket", 0.3, 0.7, 0, 0, 130.0, 100.0)
            + _rows("dynamic-rli", 0.2, 0.5, 0, 0, 101.0, 100.0, mem=3 * 1024 * 1024))
    write_metrics(tmp_path, rows)
    (tmp_path / "run.json").write_text(json.dumps({"workload": {
        "name": "uniform", "description": "50/50 insert/update, uuid keys",
        "key_format": "uuid", "initial_records": 200, "batches": 2, "batch_size": 100}}))
    return tmp_path


def test_the_ranking_and_its_reasons_come_from_the_rows(run_dir):
    from reports.data import load

    run = load([run_dir])
    c = conclude(run.df, run.runs)
    assert [(r.series, r.value) for r in c.ranking] == [
        ("dynamic-rli", pytest.approx(0.8)), ("simple-bucket", pytest.approx(1.1)),
        ("bloom", pytest.approx(4.1))]  # commit_s 0.1 each: where an RLI is updated
    assert c.seconds_of == "tag + write + commit"
    text = "\n".join(c.findings)
    assert "Fastest upsert: dynamic-rli at 0.8 s per batch; slowest bloom at 4.1 s (5.1× as long)" \
        in text
    assert "bloom 80, 5 of them false positives" in text  # files + footers per batch
    assert "simple-bucket and dynamic-rli read no file of the table to tag" in text
    assert "simple-bucket 1.30×; dynamic-rli 1.01×" in text
    assert "evenly filled" not in text  # 1.3 > EVEN_BUCKETS: the buckets tell apart
    assert "Index memory after the last batch: dynamic-rli 3.0 MiB" in text
    settings = "\n".join(c.settings)
    assert "Workload `uniform`: 50/50 insert/update, uuid keys (200 records loaded, " \
        "then 2 batches of 100)" in settings
    assert "Table type: copy-on-write." in settings
    assert "Files written average 195.3 KiB to 195.3 KiB, far below Hudi's 120.0 MiB" \
        in settings
    lines = conclusion_text(c)
    assert lines[:2] == ["ranked by seconds per batch (tag + write + commit, median of "
                         "batches ≥ 1):", "  1. dynamic-rli: 0.8 s"]


def test_even_buckets_point_at_a_workload_that_separates_them():
    rows = _rows("simple-bucket", 0.3, 0.7, 0, 0, 101.0, 100.0) + _rows(
        "partition-bucket", 0.4, 0.7, 0, 0, 102.0, 100.0)
    df = pd.DataFrame(rows).assign(series=lambda d: d["index"])
    text = "\n".join(conclude(df).findings)
    assert "evenly filled here, so the bucket indexes look alike" in text
    assert "zipf-skewed" in text


def test_throughput_and_simulated_series_say_what_their_seconds_are():
    thr = pd.DataFrame(_rows("bloom", 1.0, 1.0, 1, 0, None, None)).assign(
        tag_s=None, write_s=None, total_s=2.5, series="bloom")
    c = conclude(thr)
    assert c.ranking[0].value == 2.5 and "throughput" in c.seconds_of
    sim = pd.DataFrame(_rows("bloom", 1.0, 1.0, 1, 0, None, None)).assign(
        tag_s=None, write_s=None, total_s=None, model_tag_s=0.25, model_write_s=0.5,
        run_mode="sim", series="bloom (sim)")
    c = conclude(sim)
    assert c.ranking[0].value == 0.75 and c.ranking[0].modelled
    assert conclusion_text(c)[1] == "  1. bloom (sim): 0.75 s (modelled)"


def test_the_page_opens_with_the_conclusion_and_folds_the_detail(run_dir):
    page = write_report([run_dir], run_dir / "report").read_text()
    found, comparison = page.index("What this run found"), page.index("<h2>Comparison")
    assert found < comparison
    assert page.index("What shapes this result") < comparison
    assert "tag_s (s)" in page and "files_read (files)" in page
    assert "<details id='index-bloom'>" in page
    assert "<summary>runs and their parameters</summary>" in page


@pytest.mark.parametrize(("column", "unit"), [
    ("tag_s", "s"), ("model_tag_s", "s"), ("kv_get_p50_ms", "ms"), ("bytes_read", "bytes"),
    ("index_mem_bytes", "bytes"), ("fp_rate", "fraction"), ("files_read", "files"),
    ("footers_read", "footers"), ("bloom_checks", "probes"), ("false_positives", "probes"),
    ("bucket_records_max", "records"), ("buckets", "buckets"), ("inserts", "records"),
    ("partitions_touched", "partitions"), ("write_amplification", "×"),
    ("bucket_records_cov", "CoV"), ("splits", "count")])
def test_every_column_has_a_unit(column, unit):
    assert unit_of(column) == unit
    assert with_unit(column) == f"{column} ({unit})"
