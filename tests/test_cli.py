"""The command line: list, run, compare, verify (in-process, sharing the test session)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from indexbench import cli
from tableformat.metrics import CONTRACT_COLUMNS
from tableformat.table import Table

SMALL = ["--initial-records", "1500", "--batches", "2", "--batch-size", "400"]


def test_list_names_indexes_and_presets():
    proc = subprocess.run([sys.executable, "-m", "indexbench", "list"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    for word in ("bloom", "simple-bucket", "hoodie.bucket.index.num.buckets", "uniform",
                 "zipf-skewed", "growing", "hot-index-key"):
        assert word in proc.stdout


def test_run_writes_the_metrics_contract_and_verify_passes(spark, tmp_path, capsys):
    out = tmp_path / "out"
    rc = cli.main(["run", "--index", "simple-bucket", *SMALL, "--out", str(out),
                   "--set", "hoodie.bucket.index.num.buckets=4"])
    assert rc == 0
    df = pd.read_parquet(out / "metrics.parquet")
    assert list(df.columns[: len(CONTRACT_COLUMNS)]) == CONTRACT_COLUMNS
    assert len(df) == 3 and df["batch"].tolist() == [0, 1, 2]
    assert (df["files_read"] == 0).all() and df["fp_rate"].isna().all()
    assert df["buckets"].iloc[-1] == 4 * 4  # 4 partitions x 4 buckets
    csv = pd.read_csv(out / "metrics.csv")
    assert len(csv) == 3
    run = json.loads((out / "run.json").read_text())
    assert run["workload"]["seed"] == 42 and "git_commit" in run
    assert run["indexes"]["simple-bucket"]["num_buckets"] == 4
    props = (out / "tables" / "simple-bucket" / ".hoodie" / "hoodie.properties").read_text()
    assert "hoodie.bucket.index.num.buckets=4" in props
    assert cli.main(["verify", str(out / "tables" / "simple-bucket")]) == 0
    # resume: the same command again commits nothing new and adds no rows
    assert cli.main(["run", "--index", "simple-bucket", *SMALL, "--out", str(out)]) == 0
    assert len(pd.read_parquet(out / "metrics.parquet")) == 3


def test_compare_runs_identical_batches(spark, tmp_path):
    out = tmp_path / "cmp"
    rc = cli.main(["compare", "--indexes", "bloom,simple-bucket", *SMALL, "--out", str(out),
                   "--set", "simple-bucket:hoodie.bucket.index.num.buckets=2"])
    assert rc == 0
    df = pd.read_parquet(out / "metrics.parquet")
    per_index = df.pivot(index="batch", columns="index", values="records")
    assert (per_index["bloom"] == per_index["simple-bucket"]).all()
    tables = {i: df[df["index"] == i]["table_records"].tolist() for i in ("bloom", "simple-bucket")}
    assert tables["bloom"] == tables["simple-bucket"]


def test_verify_fails_on_a_missing_file(spark, tmp_path):
    out = tmp_path / "out"
    assert cli.main(["run", "--index", "bloom", *SMALL, "--out", str(out)]) == 0
    table = out / "tables" / "bloom"
    latest = sorted(s.path for s in Table(str(table)).snapshot().slices.values())
    (table / latest[0]).unlink()
    assert cli.main(["verify", str(table)]) == 1


def test_bad_parameters_are_clear_errors(tmp_path, capsys):
    with pytest.raises(SystemExit, match="no index has this parameter"):
        cli.parse_sets(["hoodie.nope=1"])
    rc = cli.main(["run", "--index", "bloom", "--workload", "no-such-preset",
                   "--out", str(tmp_path)])
    assert rc == 2
    assert "no-such-preset" in capsys.readouterr().out
