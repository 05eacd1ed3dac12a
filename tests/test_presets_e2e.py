"""Every workload preset runs end to end through ``indexbench run`` for bloom and
simple-bucket (tiny sizes), and the resulting tables satisfy every invariant."""

from __future__ import annotations

import pandas as pd
import pytest

import workloads
from indexbench import cli
from indexbench.verify import verify_table

TINY = ["--initial-records", "400", "--batches", "1", "--batch-size", "150"]


@pytest.mark.parametrize("preset", sorted(workloads.presets()))
def test_preset_runs_through_both_indexes(spark, tmp_path, preset):
    out = tmp_path / preset
    rc = cli.main(["compare", "--indexes", "bloom,simple-bucket", "--workload", preset, *TINY,
                   "--out", str(out), "--set", "hoodie.bucket.index.num.buckets=4"])
    assert rc == 0
    df = pd.read_parquet(out / "metrics.parquet")
    assert sorted(df["index"].unique()) == ["bloom", "simple-bucket"]
    w = workloads.load(preset)
    for index, rows in df.groupby("index"):
        assert rows["batch"].tolist() == [0, 1]
        assert rows["records"].iloc[0] == 400
        # both indexes see identical batches and end with identical tables
        assert rows["table_records"].iloc[-1] == df[df["index"] == "bloom"][
            "table_records"].iloc[-1]
        assert rows["inserts"].iloc[1] + rows["updates"].iloc[1] == rows["records"].iloc[1]
        if w.update_fraction > 0:
            assert rows["updates"].iloc[1] > 0
        assert verify_table(spark, str(out / "tables" / index)) == []
