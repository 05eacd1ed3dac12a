"""Every workload preset runs end to end through ``indexbench compare`` (tiny sizes); the
tables satisfy every invariant, and ``indexbench sim`` — the same index cores over a
model table, no Spark — reproduces the real run's counters exactly, on copy-on-write
tables (every preset) and on merge-on-read tables (one compare of every index).

Which indexes a preset runs (CI time): ``uniform`` runs every index; each other preset
runs the indexes whose behaviour it moves (``COVER``), every index at least three
(``deletes``, which the simulator refuses, is also ``tests/test_deletes.py``'s). An
index not in ``COVER`` — a new one — runs on every preset."""

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
    # requests that split a partition's lookups and a file group's puts
    "external-kv": {"hoodie.index.hbase.get.batch.size": "64",
                    "hoodie.index.hbase.put.batch.size": "48"},
    # file groups full at 6,000 / 100 = 60 records whatever their real bytes (the
    # estimate stays the average record size): buckets of ~75 records get a second
    # group; filters of 20 entries a row, up to 40, saturate (false positives)
    "multi-fg-bucket": {**SMALL_FILTER, "hoodie.index.bloom.num_entries": "20",
                        "hoodie.bloom.index.filter.dynamic.max.entries": "40",
                        "hoodie.bucket.index.num.buckets": "4",
                        "hoodie.parquet.max.file.size": "6000",
                        "hoodie.copyonwrite.record.size.estimate": "100",
                        "hoodie.record.size.estimation.threshold": str(10**6)},
    # a few buckets over capacity in most presets: splits, some doubling a directory
    "extendible-hash": {"hoodie.bucket.index.num.buckets": "2",
                        "hoodie.bucket.index.extendible.max.records": "200"},
}
# Counters the simulator must reproduce exactly (docs/simulator.md: same code, same batches).
EXACT = ["records", "inserts", "updates", "file_groups", "files_in_table", "candidate_files",
         "files_read", "footers_read", "bloom_checks", "bloom_positives", "false_positives",
         "files_written", "records_written", "records_rewritten", "footer_keys_written",
         "footer_filters_written", "table_records", "buckets",
         "bucket_records_max", "bucket_records_mean", "buckets_created", "evictions",
         "index_mem_bytes", "resident_keys", "keys_bootstrapped", "rli_entries_written",
         "rli_files_written",
         "hash_collisions", "keys_hashed", "from_buckets", "to_buckets", "kv_gets",
         "kv_get_round_trips", "kv_puts", "kv_put_round_trips", "kv_round_trips",
         "kv_stale_entries", "kv_entries", "records_moved", "directory_doublings",
         "directory_entries", "directory_bytes", "tag_jobs", "tag_rows_persisted"]


# The presets each index runs besides uniform: where its counters move (bloom: false
# positives on uuid, ycsb and skewed keys, range pruning on time-ordered ones; the
# resizing indexes: growth and skew; partition-bucket: the partition-shaped presets).
COVER = {
    "bloom": ["deletes", "late-arrivals", "ycsb-hotspot", "zipf-skewed"],
    "simple-bucket": ["growing", "hot-index-key", "partition-skewed"],
    "multiple-rehash": ["growth-with-resize", "hot-index-key", "ycsb-hotspot", "zipf-skewed"],
    "partition-bucket": ["late-arrivals", "partition-sizes", "partition-skewed"],
    "consistent-hashing": ["growing", "growth-with-resize", "partition-sizes", "zipf-skewed"],
    "dynamic-rli": ["deletes", "growing", "growth-with-resize", "partition-sizes"],
    "external-kv": ["deletes", "late-arrivals", "partition-skewed", "ycsb-hotspot"],
    "multi-fg-bucket": ["growing", "hot-index-key", "ycsb-hotspot"],
    "extendible-hash": ["growth-with-resize", "hot-index-key", "partition-skewed",
                        "zipf-skewed"],
}


def indexes_of(preset: str) -> list[str]:
    """The indexes ``preset`` runs, in registry order."""
    return [n for n in indexes.names()
            if preset == PHASED or n not in COVER or preset in COVER[n]]


def test_every_index_runs_on_enough_presets():
    presets = sorted(workloads.presets())
    assert sorted({p for ps in COVER.values() for p in ps}) == sorted(set(presets) - {PHASED})
    for name in indexes.names():
        assert sum(name in indexes_of(p) for p in presets) >= 4, name
    assert all(len(indexes_of(p)) >= 3 for p in presets)


# One preset keeps a timer per phase (what calibrate fits); the others run in throughput
# mode, which counts the same (tests/test_driver.py) in fewer Spark jobs: CI time.
PHASED = "uniform"


def _sets() -> list[str]:
    return [a for n, kv in PARAMS.items() for k, v in kv.items() for a in ("--set", f"{n}:{k}={v}")]


# The default run (CI) keeps two presets: uniform (every index, phased) and a growing one
# with resizes. The rest are `exhaustive` (`pytest -m ''` runs them): the same checks
# over more key shapes.
DEFAULT_PRESETS = (PHASED, "growth-with-resize")


@pytest.fixture(scope="module", params=[
    p if p in DEFAULT_PRESETS else pytest.param(p, marks=pytest.mark.exhaustive)
    for p in sorted(workloads.presets())])
def preset_run(request, spark, tmp_path_factory):
    preset = request.param
    out = tmp_path_factory.mktemp(preset)
    rc = cli.main(["compare", "--workload", preset, *TINY, "--out", str(out), "--no-query",
                   "--indexes", ",".join(indexes_of(preset)), *_sets(),
                   *([] if preset == PHASED else ["--throughput"])])
    assert rc == 0
    return preset, out, pd.read_parquet(out / "metrics.parquet")


def test_preset_runs_through_every_index(spark, preset_run):
    preset, out, df = preset_run
    assert sorted(df["index"].unique()) == sorted(indexes_of(preset))
    w = workloads.load(preset)
    up = df[df["operation"] == "upsert"]
    first = indexes_of(preset)[0]
    for index, rows in up.groupby("index"):
        assert rows["batch"].tolist() == [0, 1, 2]
        assert rows["records"].iloc[0] == 1200
        # every index sees identical batches and ends with identical tables
        assert rows["table_records"].iloc[-1] == up[up["index"] == first][
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
    sim = simulate_compare(indexes_of(preset), preset, params=PARAMS, write=False,
                           parallelism=2, **SIZES)
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
    ran = set(real["index"])
    if "bloom" in ran:
        bloom = real[real["index"] == "bloom"]
        assert bloom["files_read"].sum() > 0
        if workloads.load(preset).key_format != "time-ordered":
            assert bloom["false_positives"].sum() > 0
    if "multiple-rehash" in ran:
        assert (real.loc[real["index"] == "multiple-rehash", "operation"] == "rescale").any()
    if "dynamic-rli" in ran:
        assert real.loc[real["index"] == "dynamic-rli", "buckets_created"].sum() > 2



def test_calibrate_fits_the_time_model_to_the_real_run(preset_run, tmp_path):
    """``indexbench calibrate`` on the real run; the simulator then models with the fit."""
    from indexbench.sim import cost

    preset, out, _ = preset_run
    path = tmp_path / "fit.json"
    rc = cli.main(["calibrate", str(out), "--out", str(path), "--cores", "2"])
    if preset != PHASED:  # throughput mode: no phase seconds to fit, one clear refusal
        assert rc == 2 and not path.exists()
        return
    assert rc == 0
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


# ---- merge-on-read: one real compare of every index, reproduced by the simulator ------
# Counters every index moves on merge-on-read (log files, compactions), plus the ones
# only some do here (bloom's top-up around logs, a resize's dual writes).
EXACT_MOR = EXACT + ["log_files_written", "log_blocks_written", "records_in_logs",
                     "log_files_in_table", "slices_compacted", "log_files_compacted",
                     "small_files_topped_up", "small_file_inserts", "dual_written_records",
                     "dual_written_files", "splits", "merges", "deletes"]
MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline.max.delta.commits": "2"}
MOR_SIZES = {"initial_records": 1200, "batches": 3, "batch_size": 400}
MOR_PARAMS = {
    # every file small, room for 50 inserts each whatever its real bytes (the estimate
    # stays the average record size): files without inserts get logs, and the next
    # batch's top-up must skip them (tests/test_sim_mor.py checks that it matters)
    "bloom": {**SMALL_FILTER, "hoodie.parquet.small.file.limit": str(10**12),
              "hoodie.parquet.max.file.size": "25250000",
              "hoodie.copyonwrite.record.size.estimate": "500000",
              "hoodie.record.size.estimation.threshold": str(10**6),
              "hoodie.copyonwrite.insert.auto.split": "false",
              "hoodie.copyonwrite.insert.split.size": "100"},
    "simple-bucket": PARAMS["simple-bucket"],
    "multiple-rehash": PARAMS["multiple-rehash"],
    "partition-bucket": PARAMS["partition-bucket"],
    # every file group over 2 × 1 byte: one split of every node once base files exist
    # (after the first compaction), dual-written for a commit, then no more (max 8)
    "consistent-hashing": {"hoodie.bucket.index.num.buckets": "4",
                           "hoodie.bucket.index.max.num.buckets": "8",
                           "hoodie.parquet.max.file.size": "1"},
    "dynamic-rli": PARAMS["dynamic-rli"],
    "external-kv": PARAMS["external-kv"],
    "multi-fg-bucket": PARAMS["multi-fg-bucket"],
    "extendible-hash": PARAMS["extendible-hash"],
}


@pytest.fixture(scope="module")
def mor_run(spark, tmp_path_factory):
    """The only real merge-on-read compare here (no report, no query phase, throughput
    mode: CI time)."""
    from indexbench import api

    return api.compare(None, "uniform", params={n: {**p, **MOR} for n, p in
                                                MOR_PARAMS.items()},
                       out=str(tmp_path_factory.mktemp("mor")), spark=spark,
                       query_phase=False, timing="total", **MOR_SIZES)


def test_sim_reproduces_a_merge_on_read_run_exactly(mor_run):
    """Every index in indexes.names() on a merge-on-read table: log files, records in
    logs, compactions (which batches, slices, files read and written), bloom's base
    files beside its logs, a resize over logs: the simulator's counters are the real
    run's."""
    real = mor_run
    assert sorted(real["index"].unique()) == sorted(indexes.names())
    assert (real["table_type"] == "mor").all()
    sim = simulate_compare(None, "uniform", params={n: {**p, **MOR} for n, p in
                                                    MOR_PARAMS.items()},
                           write=False, parallelism=2, **MOR_SIZES)
    key = ["index", "operation", "batch"]
    real = real.sort_values(key, kind="stable").reset_index(drop=True)
    sim = sim.sort_values(key, kind="stable").reset_index(drop=True)
    assert real[key].astype(str).values.tolist() == sim[key].astype(str).values.tolist()
    assert (sim["table_type"] == "mor").all()
    for col in EXACT_MOR:
        if col not in real.columns:
            continue
        a = pd.to_numeric(real[col], errors="coerce").fillna(-1).tolist()
        b = pd.to_numeric(sim[col], errors="coerce").fillna(-1).tolist()
        assert a == b, f"{col} real {a} != sim {b}"
    # what the comparison covers: every index logged and compacted ...
    up = real[real["operation"] == "upsert"]
    for index in indexes.names():
        mine = real[real["index"] == index]
        assert (mine.loc[mine["operation"] == "upsert", "log_files_written"].iloc[1:] > 0).all()
        assert (mine["operation"] == "compaction").any()
    # ... bloom wrote base files beside its logs, and topped files up around them
    bloom = up[up["index"] == "bloom"]
    assert (bloom["files_written"] > bloom["log_files_written"]).all()
    assert (bloom["small_file_inserts"].iloc[1:] > 0).all() and bloom["false_positives"].sum()
    # ... external-kv (canIndexLogFiles, as Hudi's HBase index) appended everything to
    # logs, its inserts topped up into file groups that have logs
    kv = up[up["index"] == "external-kv"]
    assert (kv["files_written"] == kv["log_files_written"]).all()
    assert (kv["small_file_inserts"].iloc[1:] > 0).all()
    # ... multiple-rehash rescaled slices with logs, consistent-hashing resized over them
    assert (real.loc[real["index"] == "multiple-rehash", "operation"] == "rescale").any()
    ch = real[real["index"] == "consistent-hashing"]
    assert (ch["dual_written_records"] > 0).any() and (ch["operation"] == "rescale").any()
