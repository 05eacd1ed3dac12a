"""Fitting a cost profile to a real run (``indexbench calibrate``).

:func:`calibrate` fits the CPU, disk and overhead constants of the time model
(:mod:`indexbench.sim.time_model`) to a real run's measured ``tag_s``, ``write_s`` and
``commit_s`` by non-negative least squares over the same features the model uses
(:func:`_nnls`, Lawson-Hanson, no scipy at runtime); constants the data cannot separate
keep the base profile's value. Constants an index measures itself (an external
key-value index's request latencies and server memory) are fitted by that index
(:class:`indexes.roles.FitsCostProfile`, :func:`fit_kv`), not from seconds.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

import indexes
from indexbench.sim.profiles import OUR_WRITER, CostProfile, profile
from indexbench.sim.time_model import (
    _KV,
    COMMIT_FILE,
    INDEX_JOB,
    _features,
    _numeric,
    _phase_seconds,
    _theta,
    _work,
)
from indexes import roles

# Constants fitted from tag_s and write_s, in the order they win when two are collinear.
_FIT = ("tag_overhead_s", "write_overhead_s", "cpu_hash_s", "cpu_probe_s",
        "cpu_record_write_s", "cpu_footer_key_s", "read_latency_s", "write_latency_s",
        # after the file's own cost: a run whose every file has a filter cannot tell them
        "cpu_footer_filter_s",
        "read_byte_s", "write_byte_s", "cpu_record_tag_s", "shuffle_byte_s",
        # last: a merge's reads cost what the data can tell apart from the records and
        # files it writes (often nothing: copy-on-write merges every file it writes)
        "merge_read_latency_s", "merge_read_byte_s",
        # the client's work on a key-value index's keys, beside the server's (kv_key_s,
        # from the requests' own latencies): from the tagging's seconds
        "cpu_kv_key_s")
_MIN_INDEPENDENT = 0.02  # share of a work column not explained by the kept ones
# The profile field behind each per-byte coefficient (what a report names).
_FIELD = {"read_byte_s": "read_stream_bps", "write_byte_s": "write_stream_bps",
          "shuffle_byte_s": "shuffle_core_bps", "merge_read_byte_s": "merge_read_stream_bps"}


def _field(key: str) -> str:
    return _FIELD.get(key, key)


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson-Hanson active set; no scipy at runtime)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(1.0, float(np.abs(a).sum(axis=0).max()))
    grad = a.T @ (b - a @ x)
    for _ in range(3 * n + 30):
        if passive.all() or not (grad[~passive] > tol).any():
            break
        passive[int(np.argmax(np.where(passive, -np.inf, grad)))] = True
        for _ in range(3 * n + 30):
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (s[passive] > tol).all():
                break
            neg = passive & (s <= tol)
            alpha = float(np.min(x[neg] / np.maximum(x[neg] - s[neg], tol)))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
        x = s if passive.any() else x
        x[~passive] = 0.0
        grad = a.T @ (b - a @ x)
    return np.maximum(x, 0.0)


def _identifiable(x: np.ndarray, names: tuple[str, ...]
                  ) -> tuple[list[int], dict[int, str]]:
    """Columns the data can separate, greedily in ``names`` order; why the others cannot."""
    norms = np.linalg.norm(x, axis=0)
    kept: list[int] = []
    why: dict[int, str] = {}
    for j in range(x.shape[1]):
        if norms[j] == 0:
            why[j] = "no such work in the data"
            continue
        col = x[:, j] / norms[j]
        if kept:
            basis = x[:, kept] / norms[kept]
            q, _ = np.linalg.qr(basis)
            if np.linalg.norm(col - q @ (q.T @ col)) < _MIN_INDEPENDENT:
                other = kept[int(np.argmax(np.abs(basis.T @ col)))]
                why[j] = f"collinear with {_field(names[other])} in the data"
                continue
        kept.append(j)
    return kept, why


def _fit_identifiable(x: np.ndarray, y: np.ndarray, names: tuple[str, ...],
                      theta: dict[str, float]) -> tuple[dict[str, float], dict[str, str]]:
    """Non-negative least squares of ``y`` on the columns of ``x`` (one per name) the data
    can separate; the others keep ``theta``'s value, taken out of ``y`` first. Returns
    (fitted by name, why each other was kept by name)."""
    kept, why = _identifiable(x, names)
    fixed = [j for j in range(len(names)) if j not in kept]
    y_adj = y - x[:, fixed] @ np.array([theta[names[j]] for j in fixed])
    norms = np.linalg.norm(x[:, kept], axis=0)
    fit = _nnls(x[:, kept] / norms, y_adj) / norms
    return ({names[j]: float(v) for j, v in zip(kept, fit, strict=True)},
            {names[j]: why[j] for j in fixed})


def _runs(metrics: pd.DataFrame) -> str:
    """'a real run', or 'N real runs' when the rows carry several run ids."""
    n = metrics["run_id"].nunique() if "run_id" in metrics.columns else 1
    return "a real run" if n <= 1 else f"{n} real runs"


def _on(value: float | pd.Series, rows: pd.Series) -> float | pd.Series:
    """A per-row Series taken at ``rows``' index; a number as it is."""
    return value.loc[rows.index] if isinstance(value, pd.Series) else value


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_tot = float(((y - y.mean()) ** 2).sum()) if len(y) else 0.0
    return 1.0 - float(((y - pred) ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")


def fit_kv(metrics: pd.DataFrame, base: CostProfile) -> tuple[dict[str, float],
                                                               dict[str, str]]:
    """The constants the indexes measure themselves (:class:`indexes.roles.FitsCostProfile`:
    external-kv's key-value server, from its request latencies and memory report), from a
    real run's rows. Returns (fitted, why kept); a run without such an index's columns
    gives neither."""
    columns = {str(c): _numeric(metrics, c).to_numpy(dtype=float) for c in metrics.columns}
    classes = [indexes.index_class(n) for n in indexes.names()]
    return roles.fit_cost_constants(columns, base, classes)


def _fit_commit(y: np.ndarray, feats: dict[str, np.ndarray], theta: dict[str, float]
                ) -> tuple[int, dict[str, float], dict[str, str]]:
    """The commit's constants from measured ``commit_s`` (rows with a finite one), what
    the other constants (``theta``) model of it taken out. In rows that ran no index job
    of their own: ``commit_file_s`` (the driver's cost per file written) by non-negative
    least squares with the fixed cost, where the rows wrote different numbers of files,
    then ``commit_overhead_s`` the median left (robust to a stray slow commit). Then the
    job's fixed and per-record costs (:data:`INDEX_JOB`) by non-negative least squares of
    what is left in the rows that ran one. Returns (rows used, fitted, why kept)."""
    ok = np.isfinite(y)
    n = len(y)
    own = ("commit_overhead_s", *COMMIT_FILE, *INDEX_JOB)
    rest = _phase_seconds({k: v for k, v in feats.items() if k not in own}, theta)
    left = y - np.broadcast_to(rest, (n,))
    ran = ok & (feats["index_job_s"] > 0)
    plain = ok & ~ran
    file_s = COMMIT_FILE[0]
    fitted: dict[str, float] = {}
    why: dict[str, str] = {}
    if plain.any():
        x = np.column_stack([feats[k][plain] for k in ("commit_overhead_s", file_s)])
        got, why = _fit_identifiable(x, left[plain], ("commit_overhead_s", file_s), theta)
        if file_s in got:
            fitted[file_s] = got[file_s]
    else:
        why = {file_s: "no commit without an index job in the data"}
    per_file = fitted.get(file_s, theta[file_s]) * feats[file_s]
    fitted["commit_overhead_s"] = max(0.0, float(np.median(
        (left - per_file)[plain if plain.any() else ok])))
    why.pop("commit_overhead_s", None)
    left = left - per_file - fitted["commit_overhead_s"]
    if not ran.any():
        return int(ok.sum()), fitted, {**why, **dict.fromkeys(INDEX_JOB,
                                                              "no index job in the data")}
    x = np.column_stack([feats[k][ran] for k in INDEX_JOB])
    job, why_job = _fit_identifiable(x, left[ran], INDEX_JOB, theta)
    return int(ok.sum()), {**fitted, **job}, {**why, **why_job}


def _refuse_untimed_upserts(metrics: pd.DataFrame) -> None:
    """The model is fitted to upserts: a run none of whose upsert rows timed a phase (a
    throughput run) is refused, even when its table-service rows (rescales, splits,
    compactions: the service runner times those in any mode) have a ``write_s``."""
    op = metrics["operation"] if "operation" in metrics.columns else None
    upserts = np.ones(len(metrics), bool) if op is None else (op == "upsert").to_numpy()
    timed = np.zeros(len(metrics), bool)
    for phase in ("tag", "write"):
        y = _numeric(metrics, f"{phase}_s")
        if y is not None:
            timed |= np.isfinite(y.to_numpy(dtype=float))
    if not (timed & upserts).any():
        raise ValueError("calibration needs upsert rows with a measured tag_s or write_s; "
                         "a run in throughput mode (--throughput) has none: calibrate from "
                         "a run without it")


def calibrate(metrics: pd.DataFrame, base: str = "local", *, cores: int | None = None,
              modelled_record_bytes: float | pd.Series | None = None,
              modelled_file_bytes: float | pd.Series = 0.0, writer: str = OUR_WRITER
              ) -> tuple[CostProfile, dict[str, Any]]:
    """Fit CPU, disk and overhead constants to a real run's measured seconds.

    Non-negative least squares of measured ``tag_s`` and ``write_s`` against the counted
    work of the same rows (same features as the model); ``commit_overhead_s`` is the median
    of ``commit_s`` left after the modelled commit I/O. Constants the data cannot separate
    (no such work, or collinear with a constant fitted first) keep ``base``'s value.
    ``modelled_record_bytes`` (and ``modelled_file_bytes``; per row, a Series on the
    rows' index, for runs of different workloads): the simulator's model of a base file
    of the run's workload, bytes per record (and per file); with it the ratio of the real
    base-file bytes to the model's is fitted too, as ``record_bytes_ratio`` (rows that
    wrote log files are left out: their bytes are not base files'; so are rows whose
    files carry an index footer when others do not: the simulator adds those bytes
    itself).
    ``writer``: whose rows these are, kept in the profile (``CostProfile.writer``).
    Returns the fitted profile and a report (R², residuals, rows used, what was kept).
    """
    base_prof = profile(base)
    p = base_prof.cores(cores)
    _refuse_untimed_upserts(metrics)
    w = _work(metrics, prefer_model=False, writer=writer)
    feats = _features(w, p, base_prof.commit_files, writer)
    kv_fit, kv_why = fit_kv(metrics, base_prof)
    theta = {**_theta(base_prof, p), **{k: v for k, v in kv_fit.items() if k in _KV}}
    n = len(metrics)

    blocks, ys, phases, used = [], [], [], np.zeros(n, dtype=bool)
    for phase in ("tag", "write"):
        y = _numeric(metrics, f"{phase}_s")
        if y is None:
            continue
        ok = np.isfinite(y.to_numpy(dtype=float))
        if phase == "tag":
            ok &= w["rescale"] == 0
        f = feats[phase]
        mat = np.column_stack([f.get(k, np.zeros(n)) for k in _FIT])
        ok &= np.isfinite(mat).all(axis=1)
        # the key-value server's requests, fitted from their own latencies: taken out
        kv_s = sum(theta[k] * f.get(k, np.zeros(n)) for k in _KV)
        blocks.append(mat[ok])
        ys.append((y.to_numpy(dtype=float) - kv_s)[ok])
        phases += [phase] * int(ok.sum())
        used |= ok
    if not phases:
        raise ValueError("calibration needs rows with a measured tag_s or write_s; a run "
                         "in throughput mode (--throughput) has none: calibrate from a "
                         "run without it")
    x = np.vstack(blocks)
    y = np.concatenate(ys)
    phase_of = np.array(phases)

    fit, why = _fit_identifiable(x, y, _FIT, theta)
    new = {**theta, **fit}

    changes: dict[str, Any] = {k: v for k, v in fit.items() if not k.endswith("_byte_s")}
    changes.update(kv_fit)
    kept_base = {_field(k): reason for k, reason in why.items()}
    kept_base.update(kv_why)
    for key, stream, cap in (("read_byte_s", "read_stream_bps", "max_read_bps"),
                             ("write_byte_s", "write_stream_bps", "max_write_bps")):
        if stream in kept_base:
            continue
        if new[key] <= 0:
            kept_base[stream] = "fit gave no cost per byte"
            new[key] = theta[key]
            continue
        bandwidth = 1.0 / new[key]  # aggregate at p; one stream per core up to the device
        changes[stream] = bandwidth / p
        changes[cap] = bandwidth
    # a merge's reads the data cannot tell apart keep the base's own constants, not the
    # tagging's as fitted here (a profile's -1 / 0 would follow those)
    merge = "merge_read_stream_bps"
    kept: dict[str, float] = {}  # set on the profile, not reported as fitted
    if merge not in kept_base and new["merge_read_byte_s"] > 0:
        changes[merge] = 1.0 / (p * new["merge_read_byte_s"])
    else:
        kept_base.setdefault(merge, "fit gave no cost per byte")
        new["merge_read_byte_s"] = theta["merge_read_byte_s"]
        kept[merge] = 1.0 / (p * theta["merge_read_byte_s"])  # the base's at these cores
    if "merge_read_latency_s" not in changes:
        kept["merge_read_latency_s"] = base_prof.merge_read_latency()
    if "shuffle_core_bps" not in kept_base:
        if new["shuffle_byte_s"] > 0:
            changes["shuffle_core_bps"] = 1.0 / (p * new["shuffle_byte_s"])
        else:
            kept_base["shuffle_core_bps"] = "fit gave no cost per byte"
            new["shuffle_byte_s"] = theta["shuffle_byte_s"]

    commit_rows = 0
    commit_y = _numeric(metrics, "commit_s")
    if commit_y is not None and np.isfinite(commit_y.to_numpy(dtype=float)).any():
        commit_rows, fitted_commit, why_commit = _fit_commit(
            commit_y.to_numpy(dtype=float), feats["commit"], new)
        changes.update(fitted_commit)
        kept_base.update(why_commit)
    else:
        kept_base["commit_overhead_s"] = "no measured commit_s"

    pred = x @ np.array([new[k] for k in _FIT])
    resid = y - pred
    report: dict[str, Any] = {
        "base": base_prof.name,
        "parallelism": p,
        "rows": int(used.sum()),
        "equations": {"tag": int((phase_of == "tag").sum()),
                      "write": int((phase_of == "write").sum()), "commit": commit_rows},
        "r2": _r2(y, pred),
        "r2_tag": _r2(y[phase_of == "tag"], pred[phase_of == "tag"]),
        "r2_write": _r2(y[phase_of == "write"], pred[phase_of == "write"]),
        "rmse_s": float(np.sqrt(np.mean(resid ** 2))),
        "max_abs_residual_s": float(np.max(np.abs(resid))),
        "fitted": changes,
        "kept_base": kept_base,
    }
    written = _numeric(metrics, "bytes_written")
    if written is None or not written.notna().any():
        written = _numeric(metrics, "model_bytes_written")
    records = _numeric(metrics, "records_written")
    files = _numeric(metrics, "files_written")
    files = files.fillna(0.0) if files is not None else pd.Series(0.0, index=metrics.index)
    keep = pd.Series(True, index=metrics.index)
    logs = _numeric(metrics, "log_files_written")
    if logs is not None:
        keep &= logs.fillna(0) == 0
    # base files whose bytes are the records' alone: no index footer (a bloom filter sized
    # for its entries, not the file's records), when the run has such rows
    footers = _numeric(metrics, "footer_keys_written")
    if footers is not None and ((footers.fillna(0) == 0) & keep).any():
        keep &= footers.fillna(0) == 0
    sized = _numeric(metrics, "avg_record_size")  # rows whose inserts were sized by bytes
    if sized is not None and (sized.notna() & keep).any():
        keep &= sized.notna()
    if written is not None and records is not None:
        written, records, files = written[keep], records[keep], files[keep]
    unknown = (modelled_record_bytes.isna().any()
               if isinstance(modelled_record_bytes, pd.Series) else not modelled_record_bytes)
    if unknown:
        kept_base["record_bytes_ratio"] = "the run's workload (modelled record size) unknown"
    elif written is not None and records is not None and records.sum() > 0:
        modelled = float((records * _on(modelled_record_bytes, records)).sum()
                         + (files * _on(modelled_file_bytes, files)).sum())
        changes["record_bytes_ratio"] = float(written.sum() / modelled)
    else:
        kept_base["record_bytes_ratio"] = "no bytes_written / records_written"
    name = (f"{base_prof.name}-calibrated" if writer == OUR_WRITER else
            f"{writer.replace(' ', '-')}-calibrated")  # a profile of Hudi's writer
    fitted = replace(base_prof, name=name, writer=writer,
                     note=f"calibrated on {report['rows']} rows of {_runs(metrics)} "
                          f"({writer}'s writer) at parallelism {p} (R² "
                          f"{report['r2']:.3f}) from base {base_prof.name!r}",
                     **kept, **changes)
    return fitted, report
