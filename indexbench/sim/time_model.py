"""The simulator's time model: seconds from counted work and a storage/compute profile.

The simulator runs the real index code, so the work of an upsert (keys hashed, bloom
probes, footers and files read, files and bytes written, ...) is counted exactly; but it
writes no files, so its seconds cannot be measured. They are *modelled* here from the
counts and a :class:`CostProfile` of constants taken from published figures (``local``,
``hdfs``, ``s3``; :mod:`indexbench.sim.profiles`) or fitted to a real run
(:mod:`indexbench.sim.calibrate`). Every figure this module produces is named
``model_*`` so it can never be mistaken for a measured column.

Model (deterministic, linear in the profile's constants). ``p`` is the parallelism (the
profile's ``parallelism``, else the executor cores given, else 1); counts missing from a
row are 0, byte columns are read from ``model_<col>`` (simulated rows) or ``<col>``
(measured rows)::

    lat(n)  = max(n / p, min(n, 1))        # n requests spread over p cores; >= 1 round trip
    BW_r    = min(p * read_stream_bps,  max_read_bps  or inf)
    BW_w    = min(p * write_stream_bps, max_write_bps or inf)

    tag     = tag_overhead_s
            + read_latency_s * lat(footers_read + files_read + rli_files_read)
            + (bytes_read + rli_bytes_read) / BW_r
            + (cpu_hash_s * keys_hashed + cpu_probe_s * bloom_checks
               + cpu_record_tag_s * records) / p
            + kv_round_trip_s * lat(kv_get_round_trips) + kv_key_s * kv_gets / p
    write   = write_overhead_s
            + write_latency_s * lat(files_written) + bytes_written / BW_w
            + read_latency_s * lat(merge_files_read) + merge_bytes_read / BW_r
            + shuffle_bytes / (p * shuffle_core_bps)
            + cpu_record_write_s * records_written / p
    commit  = commit_overhead_s
            + write_latency_s * (commit_files + lat(rli_files_written))
            + read_latency_s * partitions_touched      # driver lists each partition
            + rli_bytes_written / BW_w
            + kv_round_trip_s * (lat(kv_put_round_trips) + kv_other_round_trips)
            + kv_key_s * kv_puts / p
    total   = tag + write + commit  ( = model_io_s + model_cpu_s + model_overhead_s )

The ``kv_*`` terms are an external key-value index's requests (Hudi's HBase index):
multi-gets while tagging, puts before the commit, the driver's own (journals,
rollbacks: ``kv_round_trips`` less the other two). Calibration fits their constants
from the run's measured request latencies (:func:`indexbench.sim.calibrate.fit_kv`), not
from seconds.

A table service's row (``operation`` a rescale or a compaction: not an upsert or a
delete) has no tagging: ``model_tag_s`` is empty and the reads and hashing it counted
are charged to its write phase, where they happen.
``records_written`` falls back to ``inserts + updates + records_rewritten``.

Known simplifications: no request-rate limits (S3's per-prefix 3,500 PUT / 5,500 GET per
second), no stragglers or skew, no page cache, CPU divides perfectly over ``p`` cores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from indexbench.sim.profiles import CostProfile

MODEL_COLUMNS = ("model_tag_s", "model_write_s", "model_commit_s", "model_total_s",
                 "model_io_s", "model_cpu_s", "model_overhead_s")
COUNT_COLUMNS = ("records", "keys_hashed", "bloom_checks", "footers_read", "files_read",
                 "files_written", "merge_files_read", "records_written", "rli_files_read",
                 "rli_files_written", "partitions_touched", "kv_gets", "kv_get_round_trips",
                 "kv_puts", "kv_put_round_trips", "kv_round_trips")
# Bytes are measured in a real run and modelled (``model_<col>``) in a simulated one.
BYTE_COLUMNS = ("bytes_read", "bytes_written", "merge_bytes_read", "rli_bytes_read",
                "rli_bytes_written", "shuffle_bytes")


# ---- work and features --------------------------------------------------------------

_THETA = ("tag_overhead_s", "write_overhead_s", "commit_overhead_s", "cpu_hash_s",
          "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s", "read_latency_s",
          "write_latency_s", "read_byte_s", "write_byte_s", "shuffle_byte_s",
          "kv_round_trip_s", "kv_key_s")
# the key-value server's constants: fitted from its measured requests, not from seconds
_KV = ("kv_round_trip_s", "kv_key_s")
_OVERHEAD = {"tag_overhead_s", "write_overhead_s", "commit_overhead_s"}
_CPU = {"cpu_hash_s", "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s"}


def _numeric(df: pd.DataFrame, col: str) -> pd.Series | None:
    if col not in df.columns:
        return None
    return pd.to_numeric(df[col], errors="coerce").astype(float)


def _first(df: pd.DataFrame, names: list[str]) -> np.ndarray:
    """The first column of ``names`` present, gaps filled from the next ones, then 0."""
    out: pd.Series | None = None
    for name in names:
        col = _numeric(df, name)
        if col is not None:
            out = col if out is None else out.fillna(col)
    if out is None:
        return np.zeros(len(df))
    return out.fillna(0.0).to_numpy(dtype=float)


def _work(df: pd.DataFrame, prefer_model: bool) -> dict[str, np.ndarray]:
    """Counted work per row; byte columns from ``model_<col>`` or ``<col>``."""
    w = {c: _first(df, [c]) for c in COUNT_COLUMNS}
    for c in BYTE_COLUMNS:
        names = [f"model_{c}", c] if prefer_model else [c, f"model_{c}"]
        w[c] = _first(df, names)
    given = _numeric(df, "records_written")
    if given is None or given.isna().any():  # a row built before records_written existed
        derived = pd.Series(sum(_first(df, [c]) for c in ("inserts", "updates",
                                                          "records_rewritten")), index=df.index)
        w["records_written"] = (derived if given is None else given.fillna(derived)
                                ).to_numpy(dtype=float)
    op = df["operation"] if "operation" in df.columns else pd.Series(None, index=df.index)
    # a table service (a rescale, a resize, a compaction) tags nothing
    w["rescale"] = (~op.astype("string").fillna("").isin(("upsert", "delete", ""))
                    ).to_numpy(dtype=float)
    return w


def _lat(n: np.ndarray, p: int) -> np.ndarray:
    """Round trips of ``n`` requests over ``p`` cores; any request waits one at least."""
    return np.maximum(n / p, np.minimum(n, 1.0))


def _features(w: dict[str, np.ndarray], p: int, commit_files: int
              ) -> dict[str, dict[str, np.ndarray]]:
    """Per phase, the quantity each constant of ``_THETA`` multiplies (the model is linear)."""
    zero = np.zeros_like(w["records"])
    # the key-value index's requests: lookups while tagging (tasks in parallel), puts
    # before the commit (tasks in parallel) and the driver's own (journals, rollbacks)
    kv_other = np.maximum(w["kv_round_trips"] - w["kv_get_round_trips"]
                          - w["kv_put_round_trips"], 0.0)
    tag = {
        "kv_round_trip_s": _lat(w["kv_get_round_trips"], p),
        "kv_key_s": w["kv_gets"] / p,
        "tag_overhead_s": 1.0 - w["rescale"],
        "cpu_hash_s": w["keys_hashed"] / p,
        "cpu_probe_s": w["bloom_checks"] / p,
        "cpu_record_tag_s": w["records"] / p,
        "read_latency_s": _lat(w["footers_read"] + w["files_read"] + w["rli_files_read"], p),
        "read_byte_s": w["bytes_read"] + w["rli_bytes_read"],
    }
    write = {
        "write_overhead_s": np.ones_like(zero),
        "cpu_record_write_s": w["records_written"] / p,
        "write_latency_s": _lat(w["files_written"], p),
        "read_latency_s": _lat(w["merge_files_read"], p),
        "read_byte_s": w["merge_bytes_read"],
        "write_byte_s": w["bytes_written"],
        "shuffle_byte_s": w["shuffle_bytes"],
    }
    for key in tag:  # a rescale does its reads and hashing while it writes
        if key != "tag_overhead_s":
            write[key] = write.get(key, zero) + tag[key] * w["rescale"]
            tag[key] = tag[key] * (1.0 - w["rescale"])
    commit = {
        "commit_overhead_s": np.ones_like(zero),
        "write_latency_s": commit_files + _lat(w["rli_files_written"], p),
        "read_latency_s": w["partitions_touched"],
        "write_byte_s": w["rli_bytes_written"],
        "kv_round_trip_s": _lat(w["kv_put_round_trips"], p) + kv_other,
        "kv_key_s": w["kv_puts"] / p,
    }
    return {"tag": tag, "write": write, "commit": commit}


def _theta(prof: CostProfile, p: int) -> dict[str, float]:
    """The profile as the coefficients of the linear model at parallelism ``p``."""
    theta = {k: float(getattr(prof, k)) for k in _THETA if hasattr(prof, k)}
    theta["read_byte_s"] = 1.0 / prof.read_bandwidth(p)
    theta["write_byte_s"] = 1.0 / prof.write_bandwidth(p)
    theta["shuffle_byte_s"] = 1.0 / (p * prof.shuffle_core_bps)
    return theta


def _phase_seconds(feats: dict[str, np.ndarray], theta: dict[str, float],
                   keys: set[str] | None = None, rowwise: bool = False) -> np.ndarray:
    """Σ constant × quantity per row. ``rowwise``: each row's terms summed as a one-row
    frame sums them (numpy sums a row's terms pairwise, a column of rows one by one:
    the last bits can differ), so :func:`model_rows` gives :func:`model_seconds`'s floats."""
    parts = [theta[k] * v for k, v in feats.items() if keys is None or k in keys]
    if not parts:
        return 0.0
    return np.stack(parts, axis=1).sum(axis=1) if rowwise else np.sum(parts, axis=0)


def _model_columns(df: pd.DataFrame, profile: CostProfile, cores: int | None,
                   rowwise: bool) -> dict[str, np.ndarray]:
    """The ``model_*`` second columns of every row of ``df``."""
    p = profile.cores(cores)
    w = _work(df, prefer_model=True)
    feats = _features(w, p, profile.commit_files)
    theta = _theta(profile, p)
    phase = {name: _phase_seconds(f, theta, rowwise=rowwise) for name, f in feats.items()}
    io_keys = set(_THETA) - _OVERHEAD - _CPU
    split = {kind: sum(_phase_seconds(f, theta, keys, rowwise) for f in feats.values())
             for kind, keys in (("io", io_keys), ("cpu", _CPU), ("overhead", _OVERHEAD))}
    rescale = w["rescale"] > 0
    return {"model_tag_s": np.where(rescale, np.nan, phase["tag"]),
            "model_write_s": phase["write"], "model_commit_s": phase["commit"],
            "model_total_s": phase["tag"] + phase["write"] + phase["commit"],
            "model_io_s": split["io"], "model_cpu_s": split["cpu"],
            "model_overhead_s": split["overhead"]}


def model_frame(df: pd.DataFrame, profile: CostProfile, cores: int | None = None
                ) -> pd.DataFrame:
    """``df`` with the ``model_*`` second columns added (vectorised :func:`model_seconds`)."""
    out = df.copy()
    for col, values in _model_columns(df, profile, cores, rowwise=False).items():
        out[col] = values
    return out


def model_seconds(row: dict[str, Any], profile: CostProfile, cores: int | None = None
                  ) -> dict[str, float]:
    """Modelled seconds of one metrics row: ``model_tag_s`` ... ``model_total_s`` + split."""
    out = model_frame(pd.DataFrame([row]), profile, cores)
    return {c: float(out[c].iat[0]) for c in MODEL_COLUMNS}


# what _work reads of a row (a byte column also as model_<col>)
_INPUTS = (*COUNT_COLUMNS, *BYTE_COLUMNS, *(f"model_{c}" for c in BYTE_COLUMNS),
           "inserts", "updates", "records_rewritten", "operation")


def model_rows(rows: list[dict[str, Any]], profile: CostProfile, cores: int | None = None
               ) -> list[dict[str, float]]:
    """:func:`model_seconds` of every row, bit for bit, from one frame of the columns
    the model reads rather than one frame per row (a simulated run of thousands of
    table-service rows spent most of its time building one-row frames). A column a row
    lacks is a gap in the frame, which the model reads as it reads a missing column."""
    if not rows:
        return []
    present = [c for c in _INPUTS if any(c in r for r in rows)]
    df = pd.DataFrame({c: [r.get(c) for r in rows] for c in present}, index=range(len(rows)))
    cols = _model_columns(df, profile, cores, rowwise=True)
    return [{c: float(cols[c][i]) for c in MODEL_COLUMNS} for i in range(len(rows))]

