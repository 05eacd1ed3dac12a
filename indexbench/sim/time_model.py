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
    BW_m    = p * merge_read_stream_bps  (0: BW_r)      # a merge's reads

    tag     = tag_overhead_s * (1 + Σ jobs)          # tag_jobs: the index's own jobs
            + read_latency_s * lat(footers_read + files_read + Σ requests)
            + (bytes_read + Σ bytes) / BW_r
            + (cpu_hash_s * keys_hashed + cpu_probe_s * bloom_checks
               + cpu_record_tag_s * (records + Σ rows)) / p   # tag_rows_persisted
            + kv_round_trip_s * lat(Σ requests)
            + (kv_key_s + cpu_kv_key_s) * Σ per_core / p   # the server's, the client's
    write   = write_overhead_s
            + write_latency_s * lat(files_written) + bytes_written / BW_w
            + merge_read_latency_s * lat(merge_files_read) + merge_bytes_read / BW_m
                                        # (-1: read_latency_s)
            + shuffle_bytes / (p * shuffle_core_bps)
            + cpu_record_write_s * records_written / p
            + cpu_footer_key_s * footer_keys_written / p   # footer filters built
            + cpu_footer_filter_s * footer_filters_written / p   # ... one per file
    commit  = commit_overhead_s
            + write_latency_s * (commit_files + lat(Σ requests))
            + read_latency_s * partitions_touched      # driver lists each partition
            + Σ bytes / BW_w
            + kv_round_trip_s * (lat(Σ requests) + Σ driver)
            + (kv_key_s + cpu_kv_key_s) * Σ per_core / p
            + index_job_s * Σ job + index_job_record_s * Σ per_core / p
            + commit_file_s * files_written            # the driver, file by file
    total   = tag + write + commit  ( = model_io_s + model_cpu_s + model_overhead_s )

The Σ terms are the counters the indexes declare with a price (and, for a profile of
Apache Hudi's own writer, those their Hudi counterparts price as the work Hudi's writer
does beyond ours: ``HudiCounterpart.hudi_prices``)
(:class:`indexes.base.Price`: a phase, the constant, how the quantity spreads over
the cores, or ``job``: one Spark job of the index's own in the commit phase, paid once
when the counter is not 0), so the model names no index's counter. dynamic-rli prices
its RLI files read while tagging and written before the commit; external-kv (Hudi's
HBase index) its multi-gets while tagging, its puts before the commit (and the Spark
job that sends them: ``index_job_s``, ``index_job_record_s`` per entry) and the
driver's own requests (journals, rollbacks: every request less the other two). The
key-value server's constants are fitted from the run's measured request latencies by
the index that measures them (:class:`indexes.roles.FitsCostProfile`;
:func:`indexbench.sim.calibrate.fit_kv`), not from seconds; the client's own work on
each key (``cpu_kv_key_s``) is the seconds'.

A table service's row (``operation`` a rescale or a compaction: not an upsert or a
delete) has no tagging: ``model_tag_s`` is empty and the reads and hashing it counted
are charged to its write phase, where they happen.
``records_written`` falls back to ``inserts + updates + records_rewritten``.

Known simplifications: no request-rate limits (S3's per-prefix 3,500 PUT / 5,500 GET per
second), no stragglers or skew, no page cache, CPU divides perfectly over ``p`` cores.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

import indexes
from indexbench.sim.profiles import HUDI_WRITER, OUR_WRITER, CostProfile, hudis
from indexes import roles
from indexes.base import Price

MODEL_COLUMNS = ("model_tag_s", "model_write_s", "model_commit_s", "model_total_s",
                 "model_io_s", "model_cpu_s", "model_overhead_s")
# The contract's counters and bytes the model reads; the indexes add those they price.
_CONTRACT_COUNTS = ("records", "keys_hashed", "bloom_checks", "footers_read", "files_read",
                    "files_written", "merge_files_read", "records_written",
                    "footer_keys_written", "footer_filters_written", "partitions_touched")
# Bytes are measured in a real run and modelled (``model_<col>``) in a simulated one.
_CONTRACT_BYTES = ("bytes_read", "bytes_written", "merge_bytes_read", "shuffle_bytes")


def priced_counters(writer: str = "") -> tuple[tuple[str, Price], ...]:
    """(counter, price) of every counter a registered index declares with a price, in
    registry order, each once; for a profile of Hudi's own writer also what the indexes'
    Hudi counterparts say Hudi's writer does beyond ours (``hudi_prices``), and not what
    only this project's Spark plan for an index does (``Metric.our_plan``)."""
    return _priced_by(tuple(indexes.names()), hudis(writer))


@functools.lru_cache(maxsize=8)
def _priced_by(names: tuple[str, ...], hudi: bool = False) -> tuple[tuple[str, Price], ...]:
    out: list[tuple[str, Price]] = []
    for name in names:
        for m in indexes.index_class(name).METRICS:
            if hudi and m.our_plan:  # our Spark plan's work: Hudi's writer plans its own
                continue
            out += [(m.name, pr) for pr in m.priced if (m.name, pr) not in out]
    for name in names if hudi else ():
        counterpart = roles.hudi_counterpart(indexes.index_class(name))
        out += [p for p in (counterpart.hudi_prices if counterpart else ()) if p not in out]
    return tuple(out)


def count_columns(writer: str = "") -> tuple[str, ...]:
    """The counters the model reads: the contract's and the priced ones (not bytes), for
    a profile of ``writer``'s."""
    every = priced_counters(writer)
    priced = [c for c, pr in every if pr.spread != "bytes"]
    priced += [x for _c, pr in every for x in pr.less]
    return tuple(dict.fromkeys((*_CONTRACT_COUNTS, *priced)))


def byte_columns(writer: str = "") -> tuple[str, ...]:
    """The byte columns the model reads (``model_<col>`` in a simulated row)."""
    priced = [c for c, pr in priced_counters(writer) if pr.spread == "bytes"]
    return tuple(dict.fromkeys((*_CONTRACT_BYTES, *priced)))


def any_writer_columns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The counters and byte columns the model reads for a profile of any writer (ours
    prices our Spark plan's work, Hudi's writer's what its counterparts add): the work
    to keep of a row that may be priced either way."""
    writers = (OUR_WRITER, HUDI_WRITER)
    return (tuple(dict.fromkeys(c for w in writers for c in count_columns(w))),
            tuple(dict.fromkeys(c for w in writers for c in byte_columns(w))))


# as the registry had them when this module was imported (the model asks again each time)
COUNT_COLUMNS = count_columns()
BYTE_COLUMNS = byte_columns()

# ---- work and features --------------------------------------------------------------

_THETA = ("tag_overhead_s", "write_overhead_s", "commit_overhead_s", "cpu_hash_s",
          "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s", "cpu_footer_key_s",
          "cpu_footer_filter_s", "read_latency_s", "merge_read_latency_s",
          "write_latency_s", "read_byte_s", "merge_read_byte_s", "write_byte_s",
          "shuffle_byte_s",
          "kv_round_trip_s", "kv_key_s", "cpu_kv_key_s", "index_job_s", "index_job_record_s",
          "commit_file_s")
# the key-value server's constants: fitted from its measured requests, not from seconds
_KV = ("kv_round_trip_s", "kv_key_s")
_OVERHEAD = {"tag_overhead_s", "write_overhead_s", "commit_overhead_s", "index_job_s",
             "commit_file_s"}
_CPU = {"cpu_hash_s", "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s",
        "cpu_footer_key_s", "cpu_footer_filter_s", "index_job_record_s", "cpu_kv_key_s"}
# an index's own Spark job in the commit phase: its fixed cost and its records'
INDEX_JOB = ("index_job_s", "index_job_record_s")
# the commit's driver-side cost per file written (fitted with commit_overhead_s)
COMMIT_FILE = ("commit_file_s",)


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


def _work(df: pd.DataFrame, prefer_model: bool, writer: str = "") -> dict[str, np.ndarray]:
    """Counted work per row; byte columns from ``model_<col>`` or ``<col>``."""
    w = {c: _first(df, [c]) for c in count_columns(writer)}
    for c in byte_columns(writer):
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


def _priced(w: dict[str, np.ndarray], p: int, phase: str, constant: str,
            requests: np.ndarray | None = None, amount: Any = None, writer: str = ""
            ) -> np.ndarray:
    """The quantity ``constant`` multiplies in ``phase``: ``requests`` and ``amount``
    the contract's, plus every counter an index prices there (:func:`priced_counters`
    for ``writer``)."""
    other = np.zeros_like(w["records"]) + (0.0 if amount is None else amount)
    for col, price in priced_counters(writer):
        if (price.phase, price.constant) != (phase, constant):
            continue
        v = w[col]
        if price.spread == "requests":
            requests = v if requests is None else requests + v
        elif price.spread == "per_core":
            other = other + v / p
        elif price.spread == "job":  # one job of the index's own when there is work
            other = other + (v > 0)
        elif price.spread == "driver":  # one after another; less what is priced elsewhere
            for c in price.less:
                v = v - w[c]
            other = other + np.maximum(v, 0.0)
        else:
            other = other + v
    return other if requests is None else _lat(requests, p) + other


def _features(w: dict[str, np.ndarray], p: int, commit_files: int, writer: str = ""
              ) -> dict[str, dict[str, np.ndarray]]:
    """Per phase, the quantity each constant of ``_THETA`` multiplies (the model is linear),
    as ``writer`` (a profile's) does the work."""
    zero = np.zeros_like(w["records"])

    def q(phase: str, constant: str, **given: Any) -> np.ndarray:
        return _priced(w, p, phase, constant, writer=writer, **given)

    tag = {
        "kv_round_trip_s": q("tag", "kv_round_trip_s"),
        "kv_key_s": q("tag", "kv_key_s"),
        "cpu_kv_key_s": q("tag", "cpu_kv_key_s"),
        # a table service tags nothing: no phase job, nor the index's own
        "tag_overhead_s": q("tag", "tag_overhead_s", amount=1.0) * (1.0 - w["rescale"]),
        "cpu_hash_s": w["keys_hashed"] / p,
        "cpu_probe_s": w["bloom_checks"] / p,
        "cpu_record_tag_s": q("tag", "cpu_record_tag_s", amount=w["records"] / p),
        "read_latency_s": q("tag", "read_latency_s",
                                  requests=w["footers_read"] + w["files_read"]),
        "read_byte_s": q("tag", "read_byte_s", amount=w["bytes_read"]),
    }
    write = {
        "write_overhead_s": np.ones_like(zero),
        "cpu_record_write_s": w["records_written"] / p,
        "cpu_footer_key_s": w["footer_keys_written"] / p,
        "cpu_footer_filter_s": w["footer_filters_written"] / p,
        "write_latency_s": q("write", "write_latency_s",
                                   requests=w["files_written"]),
        "merge_read_latency_s": q("write", "merge_read_latency_s",
                                  requests=w["merge_files_read"]),
        "merge_read_byte_s": q("write", "merge_read_byte_s", amount=w["merge_bytes_read"]),
        "write_byte_s": q("write", "write_byte_s", amount=w["bytes_written"]),
        "shuffle_byte_s": w["shuffle_bytes"],
    }
    for key in tag:  # a rescale does its reads and hashing while it writes
        if key != "tag_overhead_s":
            write[key] = write.get(key, zero) + tag[key] * w["rescale"]
            tag[key] = tag[key] * (1.0 - w["rescale"])
    commit = {
        "commit_overhead_s": np.ones_like(zero),
        "write_latency_s": q("commit", "write_latency_s", amount=commit_files),
        "read_latency_s": w["partitions_touched"],
        "write_byte_s": q("commit", "write_byte_s"),
        "kv_round_trip_s": q("commit", "kv_round_trip_s"),
        "kv_key_s": q("commit", "kv_key_s"),
        "cpu_kv_key_s": q("commit", "cpu_kv_key_s"),
        **{k: q("commit", k) for k in INDEX_JOB},
        # last: a term of 0 added after the others leaves their float sum as it was
        "commit_file_s": w["files_written"],
    }
    return {"tag": tag, "write": write, "commit": commit}


def _theta(prof: CostProfile, p: int) -> dict[str, float]:
    """The profile as the coefficients of the linear model at parallelism ``p``."""
    theta = {k: float(getattr(prof, k)) for k in _THETA if hasattr(prof, k)}
    theta["read_byte_s"] = 1.0 / prof.read_bandwidth(p)
    theta["merge_read_latency_s"] = prof.merge_read_latency()
    theta["merge_read_byte_s"] = 1.0 / prof.merge_read_bandwidth(p)
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
    w = _work(df, prefer_model=True, writer=profile.writer)
    feats = _features(w, p, profile.commit_files, profile.writer)
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


def _inputs(writer: str = "") -> tuple[str, ...]:
    """What _work reads of a row (a byte column also as model_<col>)."""
    nbytes = byte_columns(writer)
    return (*count_columns(writer), *nbytes, *(f"model_{c}" for c in nbytes),
            "inserts", "updates", "records_rewritten", "operation")


def model_rows(rows: list[dict[str, Any]], profile: CostProfile, cores: int | None = None
               ) -> list[dict[str, float]]:
    """:func:`model_seconds` of every row, bit for bit, from one frame of the columns
    the model reads rather than one frame per row (a simulated run of thousands of
    table-service rows spent most of its time building one-row frames). A column a row
    lacks is a gap in the frame, which the model reads as it reads a missing column."""
    if not rows:
        return []
    present = [c for c in _inputs(profile.writer) if any(c in r for r in rows)]
    df = pd.DataFrame({c: [r.get(c) for r in rows] for c in present}, index=range(len(rows)))
    cols = _model_columns(df, profile, cores, rowwise=True)
    return [{c: float(cols[c][i]) for c in MODEL_COLUMNS} for i in range(len(rows))]

