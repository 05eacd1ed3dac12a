"""Every workload preset runs end to end through ``indexbench compare`` for every index
(tiny sizes); the tables satisfy every invariant, and ``indexbench sim`` — the same
index cores over a model table, no Spark — reproduces the real run's counters exactly."""

from __future__ import annotations

import pandas as pd
import pytest

import indexes
import workloads
from indexbench import cli
from indexbench.sim.driver import simulate_compare
from indexbench.verify import verify_table
from tableformat.errors import IndexBenchError

SIZES = {"initial_records": 1200, "batches": 2, "batch_size": 400}
TINY = ["--initial-records", "1200", "--batches", "2", "--batch-size", "400"]
# Small filters and buckets so every counter moves: bloom false positives (filters past
# their capacity), multiple-rehash rescales (auto policy), dynamic-rli bucket growth.
# Bloom's file sizing is by record counts here (no top-up, fixed split): byte-based
# sizing reads Parquet sizes, which the simulator only models; TOP_UP below covers it.
SMALL_FILTER = {"hoodie.index.bloom.num_entries": "100", "hoodie.index.bloom.fpp": "0.01",
                "hoodie.bloom.index.filter.dynamic.max.entries": "200", "indexbench.scale": "1"}
PARAMS = {
    "bloom": {**SMALL_FILTER, "hoodie.parquet.small.file.limit": "0",
              "hoodie.copyonwrite.insert.auto.split": "false",
              "hoodie.copyonwrite.insert.split.size": "150"},
    "simple-bucket": {"hoodie.bucket.index.num.buckets": "4"},
    "multiple-rehash": {"hoodie.bucket.index.num.buckets": "2",
                        "indexbench.rescale.max.bucket.records": "120"},
    # a count per partition by rule (first match), the default for late arrivals
    "partition-bucket": {"hoodie.bucket.index.num.buckets": "2",
                         "hoodie.bucket.index.partition.expressions": "01-01$,5;2026-01-0[2-4],3"},
    "dynamic-rli": {"hoodie.bucket.index.dynamic.max.records": "60",
                    "hoodie.bucket.index.dynamic.num.assigners": "2"},
}
# Counters the simulator must reproduce exactly (docs/simulator.md: same code, same batches).
EXACT = ["records", "inserts", "updates", "file_groups", "files_in_table", "candidate_files",
         "files_read", "footers_read", "bloom_checks", "bloom_positives", "false_positives",
         "files_written", "records_written", "records_rewritten", "table_records", "buckets",
         "bucket_records_max", "bucket_records_mean", "buckets_created", "evictions",
         "index_mem_bytes", "resident_keys", "keys_bootstrapped", "rli_entries_written",
         "hash_collisions", "keys_hashed", "from_buckets", "to_buckets"]


def _sets() -> list[str]:
    return [a for n, kv in PARAMS.items() for k, v in kv.items() for a in ("--set", f"{n}:{k}={v}")]


@pytest.fixture(scope="module", params=sorted(workloads.presets()))
def preset_run(request, spark, tmp_path_factory):
    preset = request.param
    out = tmp_path_factory.mktemp(preset)
    rc = cli.main(["compare", "--workload", preset, *TINY, "--out", str(out), "--no-query",
                   *_sets()])
    assert rc == 0
    return preset, out, pd.read_parquet(out / "metrics.parquet")


def test_preset_runs_through_every_index(spark, preset_run):
    preset, out, df = preset_run
    assert sorted(df["index"].unique()) == sorted(indexes.names())
    w = workloads.load(preset)
    up = df[df["operation"] == "upsert"]
    for index, rows in up.groupby("index"):
        assert rows["batch"].tolist() == [0, 1, 2]
        assert rows["records"].iloc[0] == 1200
        # every index sees identical batches and ends with identical tables
        assert rows["table_records"].iloc[-1] == up[up["index"] == "bloom"][
            "table_records"].iloc[-1]
        if w.delete_fraction == 0:
            assert (rows["inserts"] + rows["updates"] == rows["records"]).all()
        else:  # deletes of missing keys and deletes that lose on ts are not counted
            assert (rows["inserts"] + rows["updates"] + rows["deletes"]
                    <= rows["records"]).all()
            assert (rows["deletes"].iloc[1:] > 0).all()
        if w.update_fraction > 0:
            assert rows["updates"].iloc[1] > 0
        assert verify_table(spark, str(out / "tables" / index)) == []


def _refused_by_the_simulator(preset: str) -> bool:
    """The simulator refuses workloads with deletes (one clear error, nothing run)."""
    if workloads.load(preset).delete_fraction == 0:
        return False
    with pytest.raises(IndexBenchError, match="does not model deletes"):
        simulate_compare(None, preset, params=PARAMS, write=False, **SIZES)
    return True


def test_sim_reproduces_the_real_run_exactly(preset_run):
    preset, _, real = preset_run
    if _refused_by_the_simulator(preset):
        return
    sim = simulate_compare(None, preset, params=PARAMS, write=False, parallelism=2, **SIZES)
    key = ["index", "operation", "batch"]
    real = real.sort_values(key, kind="stable").reset_index(drop=True)
    sim = sim.sort_values(key, kind="stable").reset_index(drop=True)
    assert real[key].astype(str).values.tolist() == sim[key].astype(str).values.tolist()
    assert (sim["run_mode"] == "sim").all()
    for col in EXACT:
        if col not in real.columns:
            continue
        a = pd.to_numeric(real[col], errors="coerce").fillna(-1).tolist()
        b = pd.to_numeric(sim[col], errors="coerce").fillna(-1).tolist()
        assert a == b, f"{preset}: {col} real {a} != sim {b}"
    # the counters really moved: the comparison is not one of zeros (time-ordered keys
    # prune every non-matching file by range, so they see no false positives)
    bloom = real[real["index"] == "bloom"]
    assert bloom["files_read"].sum() > 0
    if workloads.load(preset).key_format != "time-ordered":
        assert bloom["false_positives"].sum() > 0
    assert (real["operation"] == "rescale").any()
    assert real.loc[real["index"] == "dynamic-rli", "buckets_created"].sum() > 2



def test_calibrate_fits_the_time_model_to_the_real_run(preset_run, tmp_path):
    """``indexbench calibrate`` on the real run; the simulator then models with the fit."""
    from indexbench.sim import cost

    preset, out, _ = preset_run
    path = tmp_path / "fit.json"
    assert cli.main(["calibrate", str(out), "--out", str(path), "--cores", "2"]) == 0
    if _refused_by_the_simulator(preset):
        return
    profile = cost.profile(str(path))
    sim = simulate_compare(["bloom"], preset, params=PARAMS, write=False, parallelism=2,
                           storage=str(path), **SIZES)
    assert (sim["storage"] == profile.name).all() and (sim["model_total_s"] > 0).all()


# Every file is small and has room for any batch, and the average record size is always
# the estimate: top-up then depends on record counts only, so sim and real must agree.
TOP_UP = {**SMALL_FILTER, "hoodie.parquet.small.file.limit": str(10**12),
          "hoodie.parquet.max.file.size": str(2 * 10**12),
          "hoodie.record.size.estimation.threshold": str(10**6)}


def test_sim_reproduces_small_file_top_up_exactly(spark, tmp_path):
    from indexbench import api
    from indexbench.sim.driver import simulate

    real = api.run("bloom", "uniform", params=TOP_UP, out=str(tmp_path), spark=spark, **SIZES)
    sim = simulate("bloom", "uniform", params=TOP_UP, write=False, parallelism=2, **SIZES)
    assert real["small_file_inserts"].iloc[1:].tolist() == real["inserts"].iloc[1:].tolist()
    assert (real["small_files_topped_up"].iloc[1:] > 0).all()
    for col in EXACT + ["small_files_topped_up", "small_file_inserts", "files_read_needed",
                        "files_read_fp_only"]:
        if col not in real.columns:
            continue  # a counter of another index
        a = pd.to_numeric(real[col], errors="coerce").fillna(-1).tolist()
        assert a == pd.to_numeric(sim[col], errors="coerce").fillna(-1).tolist(), col
    assert real["false_positives"].sum() > 0
