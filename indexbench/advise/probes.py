"""Every index's candidate settings at the table sizes of a horizon.

Up to the exact limit each (index, setting, size) is simulated as described: the
index's real core over the simulator's model table, a table loaded at that size then
``probe_batches`` upsert batches, every count counted and the seconds modelled by the
cost profile. A larger table (a billion keys) is not simulated key by key but through
two *similar* tables at the exact limit and half of it: the described batch, every
capacity that holds data (file and bucket sizes, a filter's entries) shrunk so that
each has the described table's files per partition and buckets. Between the two, each
counted figure grows as a power of the table size — a figure of the batch (keys hashed,
probes, requests) not at all, bytes rewritten with the data — and that power carries
it to the described size, where the same time model prices it. How far this lands
from an exact simulation is measured at the largest exact size (``extrapolation_error``).
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any

import numpy as np
import pandas as pd

import indexes
from indexbench.advise.request import AdviceRequest
from indexbench.sim import profiles
from indexbench.sim.driver import simulate
from indexbench.sim.record_size import measure
from indexbench.sim.time_model import any_writer_columns, model_frame, model_seconds
from indexes import roles
from reports.figures.rescale import RESCALE

# what a probe reports per (index, setting, table_size); seconds are per upsert batch
FIGURES = ("cost_s", "tag_s", "write_s", "commit_s", "services_s", "resizes", "files_read",
           "false_positives", "bucket_skew", "index_mem_bytes", "index_disk_bytes",
           "files_in_table")
# the same seconds as Hudi's own writer is modelled to spend (``--hudi-storage``), for
# the indexes Hudi has: the work counted once, priced by the profile of each writer
HUDI_SECONDS = ("cost_s", "tag_s", "write_s", "commit_s", "services_s")
HUDI = "hudi_"


@dataclass(frozen=True)
class Probe:
    """One simulation: an index, one of its candidate settings, the described table's
    size and the simulated fraction of it (1: exact)."""

    index: str
    setting: str
    params: dict[str, Any]
    table_size: int
    scale: float = 1.0
    exact: bool = True  # False: a similar table standing for ``table_size``


def table_shape(req: AdviceRequest, scale: float = 1.0, records_at: int = 0
                ) -> roles.TableShape:
    return roles.TableShape(
        records_now=req.workload.initial_records, records_at_horizon=req.records_at_horizon,
        record_bytes=measure(req.workload).base_record,
        partitions=req.workload.partitions, target_file_bytes=req.target_file_bytes,
        scale=scale, records_at=records_at)


def _candidates(req: AdviceRequest, name: str, scale: float, records_at: int
                ) -> tuple[roles.Candidate, ...]:
    return roles.advice_candidates(indexes.index_class(name),
                                   table_shape(req, scale, records_at))


def similar_sizes(req: AdviceRequest, n: int) -> tuple[int, int]:
    """The two similar tables a size ``n`` above the exact limit is seen through: the
    limit and half of it, the larger at least four batches (and at most ``n``)."""
    big = min(max(req.exact_limit, 4 * req.workload.batch_size), n)
    return big, max(big // 2, 1)


def check_sizes(req: AdviceRequest, top: int) -> tuple[int, int]:
    """The similar tables that check the path at the largest exact size ``top``: a tenth
    of it, or four batches (as the path's own), or half of it if that is no smaller."""
    big = max(top // 10, 4 * req.workload.batch_size)
    big = big if big < top else top // 2
    return max(big, 1), max(big // 2, 1)


def probes(req: AdviceRequest) -> list[Probe]:
    """Every candidate of every index at every exact size; two similar tables for each
    size above the limit; and two for the largest exact size, which check the path."""
    out = []
    far = [n for n, exact in req.answer_sizes() if not exact]
    top = max(req.exact_sizes())
    for name in req.names:
        for n in req.exact_sizes():
            out += [Probe(name, c.label, dict(c.params), n)
                    for c in _candidates(req, name, 1.0, n)]
        checks = [(top, check_sizes(req, top))] if len(req.exact_sizes()) > 1 else []
        for n, sims in [*((n, similar_sizes(req, n)) for n in far), *checks]:
            for m in sims:
                out += [Probe(name, c.label, dict(c.params), n, m / n, exact=False)
                        for c in _candidates(req, name, m / n, n)]
    return out


def _median(s: pd.Series) -> float:
    s = pd.to_numeric(s, errors="coerce").dropna()
    return float(s.median()) if len(s) else 0.0


def _last(up: pd.DataFrame, col: str) -> float:
    s = pd.to_numeric(up[col], errors="coerce").dropna() if col in up.columns else ()
    return float(s.iloc[-1]) if len(s) else float("nan")


def figures_of(df: pd.DataFrame, probe_batches: int) -> dict[str, float]:
    """A probe's figures from its simulated rows: medians of the batches after the
    load, table services of those batches spread over them, the table after the last."""
    later = df[df["batch"] >= 1]
    up = later[later["operation"] == "upsert"]
    services = later[later["operation"] != "upsert"]  # resizes, splits, compactions
    resizes = services[services["operation"] == RESCALE]
    col = lambda frame, c: frame[c] if c in frame.columns else pd.Series(dtype=float)  # noqa: E731
    tag, write = _median(col(up, "model_tag_s")), _median(col(up, "model_write_s"))
    commit = _median(col(up, "model_commit_s"))  # an index updated at commit (RLI, puts)
    svc = float(pd.to_numeric(col(services, "model_total_s"), errors="coerce").fillna(0).sum())
    skew = _last(up, "bucket_records_max") / _last(up, "bucket_records_mean")
    # the work a profile of either writer prices
    counts, nbytes = any_writer_columns()
    work = {c: _median(col(up, c)) for c in counts}
    work |= {f"model_{c}": _median(col(up, f"model_{c}")) for c in nbytes}
    return {"cost_s": tag + write + commit + svc / probe_batches, "tag_s": tag,
            "write_s": write, "commit_s": commit,
            "services_s": svc / probe_batches, "resizes": len(resizes) / probe_batches,
            "files_read": _median(col(up, "files_read")) + _median(col(up, "footers_read")),
            "false_positives": _median(col(up, "false_positives")),
            "bucket_skew": skew if np.isfinite(skew) else float("nan"),
            "index_mem_bytes": _last(up, "index_mem_bytes"),
            "index_disk_bytes": _last(up, "model_index_disk_bytes"),
            "files_in_table": _last(up, "files_in_table"), **work}


def _power(c1: float, c2: float, m1: float, m2: float) -> float:
    """The exponent of ``c`` in the table size between two similar tables (0: the same
    at both; bounded to [0, 2]: no figure shrinks as a table grows)."""
    if not (np.isfinite(c1) and np.isfinite(c2)) or c1 <= 0 or c2 <= 0 or c1 == c2:
        return 0.0 if c1 == c2 or c1 <= 0 else 1.0
    return float(min(2.0, max(0.0, np.log(c1 / c2) / np.log(m1 / m2))))


# figures carried from the similar tables besides the work the time model prices
CARRIED = ("services_s", "resizes", "files_read", "false_positives", "index_mem_bytes",
           "index_disk_bytes", "files_in_table")


def _priced(work: dict[str, float], services_s: float, profile: profiles.CostProfile,
            cores: int, prefix: str = "") -> dict[str, float]:
    """A batch's seconds from its counted work and its table services' seconds."""
    seconds = model_seconds({**work, "operation": "upsert"}, profile, cores=cores)
    tag, write = seconds["model_tag_s"], seconds["model_write_s"]
    commit = seconds["model_commit_s"]
    return {f"{prefix}tag_s": tag, f"{prefix}write_s": write, f"{prefix}commit_s": commit,
            f"{prefix}cost_s": tag + write + commit + services_s}


def carried_to(big: dict[str, Any], small: dict[str, Any], n: int,
               profile: profiles.CostProfile, cores: int,
               hudi_profile: profiles.CostProfile | None = None) -> dict[str, Any]:
    """The figures of a size ``n`` table from two similar ones (``big`` the larger): each
    counted figure as the power of the size it grows by between them, seconds priced
    again from the carried work (and, with ``hudi_profile``, as Hudi's writer)."""
    m1, m2 = float(big["simulated_keys"]), float(small["simulated_keys"])
    counts, nbytes = any_writer_columns()
    work = [c for c in big if c in counts or (c.startswith("model_") and c[6:] in nbytes)]
    hudi = hudi_profile is not None and np.isfinite(float(big.get(HUDI + "cost_s", np.nan)))
    carried = (*CARRIED, HUDI + "services_s") if hudi else CARRIED
    at = {}
    for c in (*work, *carried):
        c1, c2 = float(big.get(c, 0.0)), float(small.get(c, 0.0))
        at[c] = c1 * (n / m1) ** _power(c1, c2, m1, m2) if np.isfinite(c1) else c1
    done = {c: at[c] for c in work}
    out = {**big, **at, "table_size": n, **_priced(done, at["services_s"], profile, cores)}
    if hudi:
        out.update(_priced(done, at[HUDI + "services_s"], hudi_profile, cores, HUDI))
    return out


def run_probe(req: AdviceRequest, p: Probe) -> dict[str, Any]:
    """Simulate one probe: the table loaded at its (similar) size, then the probe
    batches of the described size."""
    sim_size = max(1, round(p.table_size * p.scale))
    w = req.workload.with_overrides(initial_records=sim_size, batches=req.probe_batches)
    params = {**p.params, "hoodie.table.type": req.table_type}
    df = simulate(p.index, w, params=params, storage=req.storage,
                  parallelism=req.parallelism, write=False)
    hudi = {}
    if req.hudi_storage is not None and p.index in req.hudi_names:
        # the same counted work (its files sized by ours: Hudi's profile's own record
        # bytes ratio does not enter), priced as Hudi's own writer spends it
        priced = model_frame(df, profiles.profile(req.hudi_storage, cores=req.parallelism),
                             cores=req.parallelism)
        got = figures_of(priced, req.probe_batches)
        hudi = {HUDI + k: got[k] for k in HUDI_SECONDS}
    return {"index": p.index, "setting": p.setting, "table_size": p.table_size,
            "exact": p.exact, "scale": p.scale, "simulated_keys": sim_size,
            **figures_of(df, req.probe_batches), **hudi}


def run_probes(req: AdviceRequest, jobs: int = 1, todo: list[Probe] | None = None
               ) -> pd.DataFrame:
    """Every probe (or those ``todo``), in ``jobs`` processes; one row each."""
    todo = probes(req) if todo is None else todo
    if jobs > 1 and len(todo) > 1:
        with ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) as pool:
            rows = list(pool.map(run_probe, [req] * len(todo), todo))
    else:
        rows = [run_probe(req, p) for p in todo]
    return pd.DataFrame(rows)


def extend(req: AdviceRequest, probed: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The answer's points (exact where simulated as described, carried from similar
    tables above), and per (index, setting) how far the carried figures land from the
    exact simulation at the largest exact size (relative error of the seconds per
    batch; NaN: not checked)."""
    profile = profiles.profile(req.storage, cores=req.parallelism)
    hudi_profile = (profiles.profile(req.hudi_storage, cores=req.parallelism)
                    if req.hudi_storage is not None else None)
    answer = dict(req.answer_sizes())
    top = max(req.exact_sizes())
    rows, errors = [], []
    for (i, s), g in probed.groupby(["index", "setting"], sort=False):
        exact = g[g["exact"].astype(bool)]
        rows += exact[exact["table_size"].isin([n for n, e in answer.items() if e])
                      ].to_dict("records")
        similar = g[~g["exact"].astype(bool)]
        carried = {}
        for n, pair in similar.groupby("table_size"):
            big, small = pair.sort_values("simulated_keys", ascending=False).iloc[:2].to_dict(
                "records")
            carried[int(n)] = carried_to(big, small, int(n), profile, req.parallelism,
                                         hudi_profile)
        rows += [{**carried[n], "exact": False} for n, e in answer.items()
                 if not e and n in carried]
        err = float("nan")
        at_top = exact[exact["table_size"] == top]
        if top in carried and len(at_top) and at_top["cost_s"].iloc[0]:
            want = float(at_top["cost_s"].iloc[0])
            err = abs(carried[top]["cost_s"] - want) / want
        errors.append({"index": i, "setting": s, "checked_at": top,
                       "check_keys": check_sizes(req, top)[0], "extrapolation_error": err})
    return pd.DataFrame(rows), pd.DataFrame(errors)
