"""The asv suite: configuration as Spark's suite does it, discovery, no Spark at import."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from asv.util import load_json

ROOT = Path(__file__).resolve().parents[1]
ASV = shutil.which("asv", path=str(Path(sys.executable).parent)) or "asv"


def test_config_spawn_and_virtualenv():
    conf = load_json(str(ROOT / "asv.conf.json"), js_comments=True)
    assert conf["launch_method"] == "spawn"
    assert conf["environment_type"] == "virtualenv"
    assert conf["benchmark_dir"] == "benchmarks" and conf["repo"] == "."
    assert (ROOT / conf["benchmark_dir"] / "__init__.py").exists()


def test_importing_the_suite_starts_no_spark():
    code = ("import benchmarks.bench_spark_run, benchmarks.bench_bloom, "
            "benchmarks.bench_hashing, benchmarks.bench_dynamic_rli, "
            "benchmarks.bench_extendible_hash\n"
            "from pyspark import SparkContext\n"
            "assert SparkContext._active_spark_context is None\n"
            "assert SparkContext._gateway is None\n")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_track_figures_from_metrics_rows(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.bench_spark_run import figures

    df = pd.DataFrame({
        "batch": [0, 1, 2], "operation": "upsert", "records": [100, 50, 50],
        "inserts": [100, 25, 25], "tag_s": [1.0, 0.5, 1.5], "files_read": [0, 4, 6],
        "bytes_read": [0, 400, 600], "bloom_checks": [0, 100, 100],
        "bloom_positives": [0, 30, 22], "false_positives": [0, 2, 0],
        "index_mem_bytes": [600, 900, 900], "table_records": [100, 125, 150]})
    got = figures(df)
    assert got["fp_rate"] == pytest.approx(2 / (200 - 50))  # FP / (checks - true positives)
    assert got["files_read"] == 5 and got["bytes_read"] == 500
    assert got["tag_s_per_1k"] == pytest.approx(2.0 / 100 * 1000)
    assert got["cache_bytes_per_key"] == pytest.approx(6.0)
    assert figures(df.assign(bloom_checks=0))["fp_rate"] is None  # not a bloom index


def test_asv_check_discovers_every_benchmark():
    proc = subprocess.run([ASV, "check", "--python=same"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No problems found" in proc.stdout
