"""The simulator's time model (indexbench.sim.cost): pure pandas/numpy, no Spark."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from indexbench.sim.cost import (
    BYTE_COLUMNS,
    COUNT_COLUMNS,
    MODEL_COLUMNS,
    PROFILES,
    CostProfile,
    calibrate,
    model_frame,
    model_seconds,
    profile,
)
from indexes.base import Price
from tableformat.errors import IndexBenchError

CORES = 4
ROW = {"records": 50_000, "keys_hashed": 50_000, "bloom_checks": 200_000, "footers_read": 40,
       "files_read": 20, "model_bytes_read": 5e6, "files_written": 16,
       "model_bytes_written": 8e7, "merge_files_read": 12, "model_merge_bytes_read": 6e7,
       "records_written": 400_000, "footer_keys_written": 400_000,
       "footer_filters_written": 16, "rli_files_read": 2,
       "model_rli_bytes_read": 1e6,
       "rli_files_written": 2, "model_rli_bytes_written": 1e6, "model_shuffle_bytes": 2e7,
       "partitions_touched": 3, "kv_gets": 50_000, "kv_get_round_trips": 500,
       "kv_puts": 10_000, "kv_put_round_trips": 100, "kv_round_trips": 603,
       "tag_jobs": 2, "tag_rows_persisted": 100_000}


def test_imports_without_pyspark():
    code = ("import sys; sys.modules['pyspark'] = None; "
            "import indexbench.sim.cost as c; print(c.PROFILES['s3'].name)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "s3"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_phases_add_up_and_every_column_is_model_prefixed(name):
    got = model_seconds(ROW, PROFILES[name], cores=CORES)
    assert set(got) == set(MODEL_COLUMNS) and all(c.startswith("model_") for c in got)
    assert got["model_total_s"] == pytest.approx(
        got["model_tag_s"] + got["model_write_s"] + got["model_commit_s"])
    assert got["model_total_s"] == pytest.approx(
        got["model_io_s"] + got["model_cpu_s"] + got["model_overhead_s"])
    assert all(v > 0 for v in got.values())


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("col", list(COUNT_COLUMNS) + [f"model_{c}" for c in BYTE_COLUMNS])
def test_more_work_takes_longer(name, col):
    more = dict(ROW, **{col: ROW[col] * 3 + 1})
    before = model_seconds(ROW, PROFILES[name], cores=CORES)["model_total_s"]
    after = model_seconds(more, PROFILES[name], cores=CORES)["model_total_s"]
    assert after > before


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_more_cores_never_slower(name):
    times = [model_seconds(ROW, PROFILES[name], cores=c)["model_total_s"] for c in (1, 2, 8, 64)]
    assert times == sorted(times, reverse=True) and times[0] > times[-1]


def test_footer_keys_are_priced_in_the_write_phase_only():
    """A bloom filter is built from every key of a rewritten base file: the write phase
    pays cpu_footer_key_s per key over the cores, and no other phase changes."""
    prof = replace(PROFILES["local"], cpu_footer_key_s=5e-6)
    base = model_seconds(dict(ROW, footer_keys_written=0), prof, cores=CORES)
    built = model_seconds(ROW, prof, cores=CORES)
    assert built["model_write_s"] - base["model_write_s"] == pytest.approx(
        5e-6 * ROW["footer_keys_written"] / CORES)
    assert built["model_cpu_s"] - base["model_cpu_s"] == pytest.approx(
        built["model_total_s"] - base["model_total_s"])
    for phase in ("model_tag_s", "model_commit_s"):
        assert built[phase] == base[phase]


def test_an_index_job_is_paid_once_in_the_commit_and_its_records_over_the_cores():
    """external-kv's puts run as a Spark job of its own: the commit pays index_job_s once
    when it put entries (not per entry, not when it put none) and index_job_record_s per
    entry over the cores; no other phase changes."""
    prof = replace(PROFILES["local"], index_job_s=0.3, index_job_record_s=10e-6)
    none = model_seconds(dict(ROW, kv_puts=0), prof, cores=CORES)
    one = model_seconds(dict(ROW, kv_puts=1), prof, cores=CORES)
    many = model_seconds(ROW, prof, cores=CORES)
    kv = PROFILES["local"].kv_key_s + 10e-6  # the server's cost per key and the job's
    assert one["model_commit_s"] - none["model_commit_s"] == pytest.approx(0.3 + kv / CORES)
    assert many["model_commit_s"] - one["model_commit_s"] == pytest.approx(
        (ROW["kv_puts"] - 1) * kv / CORES)
    assert one["model_overhead_s"] - none["model_overhead_s"] == pytest.approx(0.3)
    for phase in ("model_tag_s", "model_write_s"):
        assert many[phase] == none[phase]
    with pytest.raises(ValueError, match="commit phase's"):
        Price("tag", "index_job_s", "job")


def test_s3_slower_than_local_for_file_heavy_work():
    heavy = dict(ROW, footers_read=3000, files_read=1500, files_written=800,
                 merge_files_read=800)
    s3 = model_seconds(heavy, PROFILES["s3"], cores=CORES)
    hdfs = model_seconds(heavy, PROFILES["hdfs"], cores=CORES)
    local = model_seconds(heavy, PROFILES["local"], cores=CORES)
    for phase in ("model_tag_s", "model_write_s", "model_total_s"):
        assert s3[phase] > hdfs[phase] > local[phase]
    assert s3["model_total_s"] > 10 * local["model_total_s"]


def test_frame_matches_rows_and_handles_gaps():
    rows = [ROW, dict(ROW, files_read=None, model_bytes_read=float("nan")), {"records": 10}]
    df = pd.DataFrame(rows)
    out = model_frame(df, PROFILES["hdfs"], cores=CORES)
    assert list(out.columns[: len(df.columns)]) == list(df.columns)
    for i, row in enumerate(rows):
        one = model_seconds(row, PROFILES["hdfs"], cores=CORES)
        for col in MODEL_COLUMNS:
            assert out[col].iat[i] == pytest.approx(one[col])
    gap = dict(ROW, files_read=0, model_bytes_read=0)
    assert out["model_total_s"].iat[1] == pytest.approx(
        model_seconds(gap, PROFILES["hdfs"], cores=CORES)["model_total_s"])


def test_model_bytes_preferred_measured_as_fallback():
    real = {k.removeprefix("model_"): v for k, v in ROW.items()}
    both = dict(ROW, bytes_written=1.0)  # a measured column never overrides the model one
    s3 = PROFILES["s3"]
    assert model_seconds(real, s3, CORES) == model_seconds(ROW, s3, CORES)
    assert model_seconds(both, s3, CORES) == model_seconds(ROW, s3, CORES)


def test_rescale_has_no_tag_phase_but_pays_its_reads_while_writing():
    rescale = dict(ROW, operation="rescale")
    got = model_seconds(rescale, PROFILES["s3"], cores=CORES)
    upsert = model_seconds(ROW, PROFILES["s3"], cores=CORES)
    assert math.isnan(got["model_tag_s"])
    assert got["model_write_s"] > upsert["model_write_s"]
    assert got["model_total_s"] == pytest.approx(got["model_write_s"] + got["model_commit_s"])


def test_parallelism_field_overrides_cores():
    fixed = replace(PROFILES["local"], parallelism=2)
    assert model_seconds(ROW, fixed, cores=64) == model_seconds(ROW, PROFILES["local"], 2)
    assert profile("local", cores=16).parallelism == 16
    assert profile("local").parallelism == 0


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_json_round_trip(name, tmp_path):
    prof = PROFILES[name]
    assert CostProfile.from_json(prof.to_json()) == prof
    path = prof.save(tmp_path / f"{name}.json")
    assert CostProfile.load(path) == prof
    assert profile(str(path)) == prof


def test_bad_profiles_are_rejected(tmp_path):
    text = PROFILES["local"].to_json()
    with pytest.raises(ValueError, match="unknown fields"):
        CostProfile.from_json(text.replace('"name"', '"nme"'))
    with pytest.raises(ValueError, match="read_latency_s"):
        replace(PROFILES["local"], read_latency_s=-1.0)
    with pytest.raises(ValueError, match="read_stream_bps"):
        replace(PROFILES["local"], read_stream_bps=0.0)


def test_unknown_profile_names_the_choices():
    with pytest.raises(ValueError, match="'gcs'.*hdfs, local, s3"):
        profile("gcs")


# ---- calibration ----------------------------------------------------------------------

def test_the_commit_pays_each_file_written_one_after_another():
    """Hudi's writer spends ~3 ms of commit a file (its write stat, its metadata-table
    entries): commit_file_s per file written, not spread over the cores, in the commit
    alone; 0 (the built-in profiles') changes no float of the model."""
    prof = replace(PROFILES["local"], commit_file_s=3e-3)
    base = model_seconds(ROW, PROFILES["local"], cores=CORES)
    paid = model_seconds(ROW, prof, cores=CORES)
    assert paid["model_commit_s"] - base["model_commit_s"] == pytest.approx(
        3e-3 * ROW["files_written"])
    assert paid["model_overhead_s"] - base["model_overhead_s"] == pytest.approx(
        3e-3 * ROW["files_written"])
    for phase in ("model_tag_s", "model_write_s"):
        assert paid[phase] == base[phase]
    zero = model_seconds(ROW, replace(PROFILES["local"], commit_file_s=0.0), cores=CORES)
    assert zero == base


TRUE = replace(PROFILES["local"], name="truth", cpu_hash_s=3e-6, cpu_record_tag_s=2e-6,
               cpu_record_write_s=5e-6, read_latency_s=2e-3, write_latency_s=4e-3,
               read_stream_bps=50e6, write_stream_bps=30e6, max_read_bps=0.0,
               max_write_bps=0.0, tag_overhead_s=0.5, write_overhead_s=0.3,
               commit_overhead_s=0.05, cpu_footer_key_s=4e-6, cpu_footer_filter_s=2e-3,
               index_job_s=0.4,
               index_job_record_s=20e-6, commit_file_s=2e-3)


def _real_run(n: int = 80, seed: int = 7, collinear: bool = False) -> pd.DataFrame:
    """Rows of a 'real' run timed by TRUE plus 1% noise; no bloom probes, no shuffle."""
    rng = np.random.default_rng(seed)
    records = rng.uniform(1e4, 1e6, n).round()
    df = pd.DataFrame({
        "operation": "upsert", "records": records,
        "keys_hashed": records if collinear else rng.uniform(1e4, 1e6, n).round(),
        "bloom_checks": 0, "files_read": rng.integers(0, 800, n),
        "bytes_read": rng.uniform(0, 1e8, n), "files_written": rng.integers(1, 600, n),
        "bytes_written": rng.uniform(1e6, 1e8, n), "merge_files_read": rng.integers(0, 200, n),
        "merge_bytes_read": rng.uniform(0, 5e7, n),
        "records_written": rng.uniform(1e4, 2e6, n).round(),
        "partitions_touched": rng.integers(1, 10, n),
    })
    # the rows of an index with footer filters build them from every key written
    footed = rng.random(n) < 0.5
    df["footer_keys_written"] = np.where(footed, df["records_written"], 0.0)
    df["footer_filters_written"] = np.where(footed, df["files_written"], 0)  # one a file
    # a third of the rows put entries to a key-value index: a Spark job of its own
    df["kv_puts"] = np.where(rng.random(n) < 1 / 3, rng.uniform(1e3, 1e5, n).round(), 0.0)
    timed = model_frame(df, TRUE, cores=CORES)
    for phase in ("tag", "write", "commit"):
        noise = 1 + rng.normal(0, 0.01, n)
        df[f"{phase}_s"] = timed[f"model_{phase}_s"] * noise
    df["total_s"] = df["tag_s"] + df["write_s"] + df["commit_s"]
    df = df.astype({"tag_s": object, "files_read": object})  # gaps as a metrics file has
    df.loc[:4, "tag_s"] = None  # a batch whose tagging was not timed
    df.loc[5, "files_read"] = None  # a counter that was not reported (counts as 0)
    df.loc[5, "bytes_read"] = 0.0
    df.loc[5, "tag_s"] = model_frame(df.loc[[5]], TRUE, cores=CORES)["model_tag_s"].iat[0]
    return df


def test_calibration_of_several_runs_fits_them_as_one(tmp_path):
    """``indexbench calibrate DIR DIR``: the rows of both runs in one fit (a default
    comparison and one at Hudi's file sizing separate per-file from per-key costs)."""
    from indexbench import api
    from metrics import contract

    run = _real_run().assign(index="bloom", run_mode="run", batch=range(80))
    halves = [run.iloc[:40], run.iloc[40:]]
    for i, half in enumerate(halves):
        contract.write_metrics(tmp_path / f"r{i}",
                               half.assign(run_id=f"run-{i}").to_dict("records"))
    both, report = api.calibrate([str(tmp_path / "r0"), str(tmp_path / "r1")],
                                 base="local", cores=CORES)
    one, _ = api.calibrate(str(tmp_path / "r0"), base="local", cores=CORES)
    whole, _ = calibrate(run, base="local", cores=CORES)
    assert report["rows"] == 80 and "of 2 real runs" in both.note
    assert "of a real run" in one.note
    for field in ("cpu_record_write_s", "cpu_footer_key_s", "write_latency_s"):
        assert getattr(both, field) == pytest.approx(getattr(whole, field), rel=1e-6)
    assert one != both
    with pytest.raises(IndexBenchError, match="at least one run directory"):
        api.calibrate([], base="local", cores=CORES)


def test_record_bytes_ratio_leaves_out_footer_bytes():
    """The simulator adds an index's footer bytes to its base files itself: the ratio of
    real to modelled bytes is fitted on rows without footers when the run has some."""
    run = _real_run()
    plain = run["footer_keys_written"] == 0
    run.loc[~plain, "bytes_written"] *= 3  # filters sized for their entries, not records
    fitted, _ = calibrate(run, base="local", cores=CORES, modelled_record_bytes=100.0)
    rows = run[plain]
    assert fitted.record_bytes_ratio == pytest.approx(
        rows["bytes_written"].sum() / rows["records_written"].sum() / 100.0)
    per_row = pd.Series(100.0, index=run.index)
    again, _ = calibrate(run, base="local", cores=CORES, modelled_record_bytes=per_row,
                         modelled_file_bytes=pd.Series(0.0, index=run.index))
    assert again.record_bytes_ratio == pytest.approx(fitted.record_bytes_ratio)


def test_calibration_recovers_known_constants():
    run = _real_run()
    fitted, report = calibrate(run, base="local", cores=CORES, modelled_record_bytes=100.0)
    plain = run[run["footer_keys_written"] == 0]  # bytes of records alone
    assert fitted.record_bytes_ratio == pytest.approx(
        plain["bytes_written"].sum() / plain["records_written"].sum() / 100.0)
    for field in ("cpu_hash_s", "cpu_record_tag_s", "cpu_record_write_s",
                  "cpu_footer_key_s", "cpu_footer_filter_s", "read_latency_s",
                  "write_latency_s", "tag_overhead_s", "write_overhead_s",
                  "commit_overhead_s", "commit_file_s", "index_job_s",
                  "index_job_record_s"):
        assert getattr(fitted, field) == pytest.approx(getattr(TRUE, field), rel=0.10), field
    assert fitted.read_bandwidth(CORES) == pytest.approx(TRUE.read_bandwidth(CORES), rel=0.10)
    assert fitted.write_bandwidth(CORES) == pytest.approx(TRUE.write_bandwidth(CORES), rel=0.10)
    # a merge's reads, fitted from the write phase on their own
    assert fitted.merge_read_latency() == pytest.approx(TRUE.read_latency_s, rel=0.10)
    assert fitted.merge_read_bandwidth(CORES) == pytest.approx(
        TRUE.merge_read_bandwidth(CORES), rel=0.10)
    # nothing in the run identifies these: the base profile's values stay
    assert fitted.cpu_probe_s == PROFILES["local"].cpu_probe_s
    assert fitted.shuffle_core_bps == PROFILES["local"].shuffle_core_bps
    # (no lookups to a key-value index: its client's cost per key neither)
    assert set(report["kept_base"]) == {"cpu_probe_s", "shuffle_core_bps", "cpu_kv_key_s"}
    assert report["r2"] > 0.99 and report["rows"] == 80
    assert report["equations"] == {"tag": 75, "write": 80, "commit": 80}
    assert report["rmse_s"] > 0
    # the fitted profile is a normal profile: saved, loaded, used by name of file
    assert CostProfile.from_json(fitted.to_json()) == fitted


def test_calibration_keeps_the_index_job_constants_without_such_a_job():
    run = _real_run()
    run["kv_puts"] = 0.0
    run["commit_s"] = model_frame(run, TRUE, cores=CORES)["model_commit_s"]
    fitted, report = calibrate(run, base="local", cores=CORES)
    assert report["kept_base"]["index_job_s"] == "no index job in the data"
    assert fitted.index_job_s == PROFILES["local"].index_job_s
    assert fitted.commit_overhead_s == pytest.approx(TRUE.commit_overhead_s, rel=0.05)
    # one job size only: the fixed cost is fitted, the per-record cost is the base's
    run["kv_puts"] = np.where(run.index % 3 == 0, 5000.0, 0.0)
    run["commit_s"] = model_frame(run, TRUE, cores=CORES)["model_commit_s"]
    fitted, report = calibrate(run, base="local", cores=CORES)
    assert report["kept_base"]["index_job_record_s"] == "collinear with index_job_s in the data"
    assert fitted.index_job_record_s == PROFILES["local"].index_job_record_s
    assert fitted.index_job_s == pytest.approx(
        TRUE.index_job_s + 5000 * (TRUE.index_job_record_s - fitted.index_job_record_s) / CORES,
        rel=1e-3)  # less what the other fitted constants model of the commit


def test_a_merge_reads_at_its_own_constants_and_defaults_to_the_tagging_reads():
    """A profile without merge constants (the built-in ones, one saved before they
    existed) prices a merge's reads as the tagging's; given its own, only the write
    phase moves."""
    local = PROFILES["local"]
    assert local.merge_read_latency() == local.read_latency_s
    assert local.merge_read_bandwidth(CORES) == local.read_bandwidth(CORES)
    data = {k: v for k, v in json.loads(local.to_json()).items()
            if not k.startswith("merge_read_")}
    assert CostProfile.from_json(json.dumps(data)) == local
    slower = replace(local, read_latency_s=1e-3)  # the default follows the tagging's
    assert slower.merge_read_latency() == 1e-3
    base = model_seconds(ROW, local, cores=CORES)
    faster = model_seconds(ROW, replace(local, merge_read_latency_s=0.0,
                                        merge_read_stream_bps=100 * local.read_stream_bps),
                           cores=CORES)
    assert faster["model_write_s"] < base["model_write_s"]
    assert (faster["model_tag_s"], faster["model_commit_s"]) == \
        (base["model_tag_s"], base["model_commit_s"])


def test_the_clients_cost_per_key_is_fitted_from_the_seconds_the_servers_from_latency():
    """external-kv's own latencies tell the server's round trip (and, at several request
    sizes, its cost per key); the client's work on each key it looks up or puts is the
    tagging's seconds' to tell (cpu_kv_key_s), and the latency model keeps the server's."""
    base = PROFILES["local"]
    truth = replace(TRUE, kv_round_trip_s=300e-6, cpu_kv_key_s=6e-6)
    run = _real_run()
    gets = np.where(run.index % 3 == 0, run["records"].astype(float), 0.0)  # its rows
    run["kv_gets"], run["kv_get_round_trips"] = gets, np.ceil(gets / 100)
    per_request = np.where(gets > 0, gets / np.maximum(run["kv_get_round_trips"], 1), np.nan)
    run["kv_get_p50_ms"] = (truth.kv_round_trip_s + truth.kv_key_s * per_request) * 1000
    timed = model_frame(run, truth, cores=CORES)
    for phase in ("tag", "write", "commit"):
        run[f"{phase}_s"] = timed[f"model_{phase}_s"]
    fitted, report = calibrate(run, base="local", cores=CORES)
    assert report["kept_base"]["kv_key_s"] == "one request size only"
    assert fitted.kv_key_s == base.kv_key_s
    assert fitted.kv_round_trip_s == pytest.approx(truth.kv_round_trip_s, rel=0.05)
    assert fitted.cpu_kv_key_s == pytest.approx(truth.cpu_kv_key_s, rel=0.05)
    assert "cpu_kv_key_s" in report["fitted"]


def test_merge_constants_the_rows_cannot_tell_keep_the_bases_and_are_not_reported_fitted():
    run = _real_run()
    run["merge_files_read"], run["merge_bytes_read"] = 0, 0.0  # no merge in the data
    fitted, report = calibrate(run, base="hdfs", cores=CORES)
    base = PROFILES["hdfs"]
    assert fitted.merge_read_latency() == base.merge_read_latency()
    assert fitted.merge_read_bandwidth(CORES) == pytest.approx(base.merge_read_bandwidth(CORES))
    assert "merge_read_stream_bps" in report["kept_base"]
    assert not {"merge_read_stream_bps", "merge_read_latency_s"} & set(report["fitted"])


def test_calibration_keeps_base_for_collinear_work():
    fitted, report = calibrate(_real_run(collinear=True), base="local", cores=CORES)
    assert report["kept_base"]["cpu_record_tag_s"] == "collinear with cpu_hash_s in the data"
    assert fitted.cpu_record_tag_s == PROFILES["local"].cpu_record_tag_s
    assert report["r2"] > 0.99


def test_calibration_needs_timed_rows():
    with pytest.raises(ValueError, match="tag_s or write_s"):
        calibrate(pd.DataFrame({"records": [1, 2]}))
    # a throughput run: its upserts untimed, only its table services (timed in any mode)
    run = _real_run(n=6)
    run["tag_s"] = run["write_s"] = float("nan")
    run.loc[[2, 4], "operation"] = "rescale"
    run.loc[[2, 4], "write_s"] = 0.5
    with pytest.raises(ValueError, match="upsert rows with a measured tag_s or write_s"):
        calibrate(run, cores=CORES)


def test_calibration_reads_model_byte_columns_when_measured_are_absent():
    real = _real_run()
    renamed = real.rename(columns={c: f"model_{c}" for c in BYTE_COLUMNS if c in real.columns})
    assert calibrate(renamed, cores=CORES)[0] == calibrate(real, cores=CORES)[0]


def test_calibration_of_hudis_writer_fits_its_own_rows_only(tmp_path):
    """``calibrate --writer hudi``: the rows of Hudi's own writer that mirror one of our
    indexes (``peer_of``; ``hudi-simple`` mirrors none), timed by another profile than
    ours in the same run; the profile says whose writer it is."""
    from indexbench import api
    from metrics import contract

    hudi_true = replace(TRUE, write_latency_s=0.07, commit_file_s=3e-3, commit_overhead_s=1.0)
    ours = _real_run(seed=1).assign(index="bloom", run_mode="run", batch=range(80))
    theirs = _real_run(seed=2).drop(columns=["tag_s", "write_s", "commit_s"])
    timed = model_frame(theirs, hudi_true, cores=CORES)
    for phase in ("tag", "write", "commit"):
        theirs[f"{phase}_s"] = timed[f"model_{phase}_s"]
    theirs = theirs.assign(index="hudi-bloom", run_mode="peer", peer_of="bloom",
                           peer_writer="hudi 1.2.0", batch=range(80))
    simple = theirs.assign(index="hudi-simple", peer_of=None, tag_s=99.0)  # no mirror
    contract.write_metrics(tmp_path / "r", pd.concat([ours, theirs, simple]).assign(
        run_id="r").to_dict("records"))
    fitted, report = api.calibrate(str(tmp_path / "r"), base="local", cores=CORES,
                                   writer="hudi")
    assert report["rows"] == 80 and fitted.writer == "hudi 1.2.0"
    assert "(hudi 1.2.0's writer)" in fitted.note
    for field in ("write_latency_s", "commit_file_s", "commit_overhead_s"):
        assert getattr(fitted, field) == pytest.approx(getattr(hudi_true, field), rel=0.05)
    mine, _ = api.calibrate(str(tmp_path / "r"), base="local", cores=CORES)
    assert mine.writer == "indexbench"
    assert mine.write_latency_s == pytest.approx(TRUE.write_latency_s, rel=0.10)
    with pytest.raises(IndexBenchError, match="--writer must be one of"):
        api.calibrate(str(tmp_path / "r"), writer="delta")
    contract.write_metrics(tmp_path / "o", ours.assign(run_id="o").to_dict("records"))
    with pytest.raises(IndexBenchError, match="no rows of hudi's writer"):
        api.calibrate(str(tmp_path / "o"), writer="hudi")
    two = pd.concat([theirs, theirs.assign(peer_writer="hudi 1.2.1")]).assign(run_id="t")
    contract.write_metrics(tmp_path / "t", two.to_dict("records"))
    with pytest.raises(IndexBenchError, match="fit one writer's version at a time"):
        api.calibrate(str(tmp_path / "t"), writer="hudi")


def test_hudis_writer_pays_what_its_counterparts_say_it_does_beyond_ours():
    """Hudi's writer appends its record-level index's entries by an upsert of the
    metadata table, a Spark job of its own at the commit (dynamic-rli's counterpart
    declares it, ``hudi_prices``): a profile of Hudi's writer prices it on the same
    counter, one of ours does not."""
    ours = replace(PROFILES["local"], index_job_s=0.5, index_job_record_s=4e-6)
    hudi = replace(ours, writer="hudi 1.2.0")
    row = dict(ROW, kv_puts=0, rli_entries_written=10_000)
    none = dict(row, rli_entries_written=0)
    assert model_seconds(row, ours, cores=CORES) == model_seconds(none, ours, cores=CORES)
    paid = model_seconds(row, hudi, cores=CORES)["model_commit_s"] - model_seconds(
        none, hudi, cores=CORES)["model_commit_s"]
    assert paid == pytest.approx(0.5 + 10_000 * 4e-6 / CORES)
    # our own Spark plan's work (tag_jobs, tag_rows_persisted): Hudi's writer plans its own
    plain = dict(none, tag_jobs=0, tag_rows_persisted=0)
    assert model_seconds(none, hudi, cores=CORES) == model_seconds(plain, ours, cores=CORES)
    assert model_seconds(none, ours, cores=CORES)["model_tag_s"] > model_seconds(
        plain, ours, cores=CORES)["model_tag_s"]
