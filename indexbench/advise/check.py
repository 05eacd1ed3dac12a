"""The advice held against measurement (``indexbench advise --check``).

The indexes run on real Spark (``compare``) at the settings the advice chose, on the
described table at its size now, and — with ``--check-peers hudi`` — Apache Hudi's own
writer beside each index Hudi has. Each series' measured seconds per batch are ranked,
and the two rankings are compared pair by pair: the advice orders a pair when the two
modelled costs are more than its tie apart; a measurement orders it when every measured
batch of one is faster than every batch of the other (the spread of the batches is the
noise). A pair ordered both ways oppositely is a *conflict*; the rankings agree when no
pair conflicts.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import workloads
from indexbench import fidelity
from indexbench.advise.answer import candidate_params
from indexbench.advise.probes import HUDI, Probe, run_probes
from indexbench.advise.request import AdviceRequest
from peers.hudi import NAME as HUDI_PEER  # the peer of Hudi's own writer
from reports.advice import Answer, CheckResult
from reports.fidelity import COLUMNS as FIDELITY_COLUMNS
from reports.figures.common import _num
from tableformat.errors import IndexBenchError

DEFAULT_BATCHES = 3
# runs ``compare``: (indexes, workload, their parameters, metrics dir, per peer the
# parameters its series mirror where not the indexes' own) → its rows
Measure = Callable[[list[str], workloads.Workload, dict[str, dict], str,
                    dict[str, dict[str, dict]]], pd.DataFrame]


@dataclass(frozen=True)
class CheckRequest:
    """What ``--check`` runs: ``batches`` upsert batches after the load, on the
    ``peers`` too (``("hudi",)``), on Spark at ``master``."""

    batches: int = DEFAULT_BATCHES
    peers: tuple[str, ...] = ()
    master: str | None = None

    def check(self, req: AdviceRequest) -> CheckRequest:
        """One clear error before anything runs."""
        if self.batches < 2:
            raise IndexBenchError("--check-batches must be >= 2: the spread of the measured "
                                  f"batches is the noise a ranking is held to, got {self.batches}")
        if req.workload.initial_records > req.exact_limit:
            raise IndexBenchError(
                f"--check runs the table now ({req.workload.initial_records:,} records) on "
                f"real Spark, which the advice simulated exactly only up to --exact-limit "
                f"({req.exact_limit:,}); describe a table at most that large to check it")
        return self


def compare_params(req: AdviceRequest, chosen: pd.DataFrame) -> dict[str, dict]:
    """Each index's parameters at the setting the advice chose, as the simulator ran them
    at the table's size now (an index that grows its buckets starts where it would be)."""
    got = candidate_params(req, records_at=req.workload.initial_records)
    out = {}
    for name, setting in zip(chosen["index"].astype(str), chosen["setting"], strict=True):
        if (name, setting) not in got:
            raise IndexBenchError(f"{name}: the advice's setting {setting!r} is not among its "
                                  f"candidates at {req.workload.initial_records:,} records")
        out[name] = {**got[(name, setting)], "hoodie.table.type": req.table_type}
    return out


def modelled_now(req: AdviceRequest, params: dict[str, dict], settings: dict[str, str],
                 jobs: int = 1) -> pd.DataFrame:
    """The advice's figures at the table's size now, each index at its chosen setting,
    simulated exactly (the answer's sizes need not include the size now)."""
    n = req.workload.initial_records
    todo = [Probe(name, settings[name], {k: v for k, v in p.items()
                                         if k != "hoodie.table.type"}, n)
            for name, p in params.items()]
    return run_probes(req, jobs=jobs, todo=todo).set_index("index")


def _zero(frame: pd.DataFrame, col: str) -> pd.Series:
    """A column's seconds, 0 where a side does not time that phase."""
    return _num(frame, col).fillna(0.0)


def measured_batches(rows: pd.DataFrame) -> pd.DataFrame:
    """Each series' measured seconds per upsert batch after the load: tag + write +
    commit (where an index is updated: RLI files, key-value puts), and the table
    services its batch ran (our rows: the services' own rows after it; Hudi's:
    ``hudi_service_s``, the inline services Hudi's write call ran)."""
    later = rows[pd.to_numeric(rows["batch"], errors="coerce") >= 1]
    up = later[later["operation"] == "upsert"]
    services = later[~later["operation"].isin(["upsert", "query"])]
    svc = _zero(services, "total_s").groupby(
        [services["index"].astype(str), services["batch"].astype(int)]).sum()
    out = pd.DataFrame({"series": up["index"].astype(str),
                        "peer_of": up["peer_of"] if "peer_of" in up.columns else None,
                        "batch": up["batch"].astype(int),
                        "tag_s": _zero(up, "tag_s"), "write_s": _zero(up, "write_s"),
                        "commit_s": _zero(up, "commit_s"),
                        "services_s": _zero(up, "hudi_service_s")})
    at = pd.MultiIndex.from_arrays([out["series"], out["batch"]])
    out["services_s"] += svc.reindex(at, fill_value=0.0).to_numpy()
    out["measured_s"] = out["tag_s"] + out["write_s"] + out["commit_s"] + out["services_s"]
    return out.reset_index(drop=True)


def measured_costs(rows: pd.DataFrame, by: str = "series") -> pd.DataFrame:
    """Per series (or per ``peer_of``: the index a Hudi row mirrors), the median, fastest
    and slowest measured seconds of its batches."""
    b = measured_batches(rows).dropna(subset=[by])
    g = b.groupby(by, sort=False)["measured_s"]
    return pd.DataFrame({"measured_s": g.median(), "measured_min_s": g.min(),
                         "measured_max_s": g.max(), "batches": g.size()})


def read_side(rows: pd.DataFrame) -> pd.DataFrame:
    """Per index, what the compare's query phase counted on its table after the batches:
    files a point lookup reads per key and its median latency per key batch, and the
    self-join on the key at the plan that shuffles least (a bucket-aware join: none)."""
    q = rows[rows["operation"] == "query"] if "query" in rows.columns else rows.iloc[:0]
    out = {}
    for name, g in q.groupby(q["index"].astype(str), sort=False):
        look, join = g[g["query"] == "lookup"], g[g["query"] == "join"]
        r: dict[str, object] = {}
        if len(look):
            r["lookup_files_per_key"] = float(_zero(look, "files_read_per_key").iloc[0])
            r["lookup_p50_s"] = float(_zero(look, "latency_p50_s").iloc[0])
        if len(join):
            best = join.loc[_zero(join, "shuffle_bytes").idxmin()]
            r["join_shuffle_bytes"] = float(pd.to_numeric(best["shuffle_bytes"]))
            r["join_s"] = float(pd.to_numeric(best["total_s"]))
            r["join_plan"] = str(best["plan"])
        out[name] = r
    return pd.DataFrame.from_dict(out, orient="index")


def _order(a: float, b: float, apart: bool) -> str:
    return "tie" if not apart else ("a" if a < b else "b")


def pairs(modelled: pd.Series, measured: pd.DataFrame, tie: float) -> pd.DataFrame:
    """Every pair of indexes on both sides, in the advice's order: which one each side
    puts first ("a", "b" or "tie") and the verdict."""
    both = [n for n in modelled.sort_values(kind="stable").index if n in measured.index]
    rows = []
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            ma, mb = float(modelled[a]), float(modelled[b])
            m_apart = max(ma, mb) > min(ma, mb) * (1 + tie)
            ra, rb = measured.loc[a], measured.loc[b]
            r_apart = (ra["measured_max_s"] < rb["measured_min_s"]
                       or rb["measured_max_s"] < ra["measured_min_s"])
            said, seen = _order(ma, mb, m_apart), _order(ra["measured_s"], rb["measured_s"],
                                                          r_apart)
            verdict = ("tied" if "tie" in (said, seen) else
                       "agree" if said == seen else "conflict")
            rows.append({"a": a, "b": b, "modelled_a_s": ma, "modelled_b_s": mb,
                         "measured_a_s": float(ra["measured_s"]),
                         "measured_b_s": float(rb["measured_s"]),
                         "modelled_first": said, "measured_first": seen, "verdict": verdict})
    return pd.DataFrame(rows, columns=["a", "b", "modelled_a_s", "modelled_b_s",
                                       "measured_a_s", "measured_b_s", "modelled_first",
                                       "measured_first", "verdict"])


def hudi_measured(rows: pd.DataFrame) -> pd.DataFrame:
    """Hudi's writer's measured seconds per index it mirrors (its rows' ``peer_of``:
    ``hudi-bloom`` → bloom); Hudi's indexes without one of ours (``hudi-simple``) and
    other peers mirror none."""
    return measured_costs(rows, by="peer_of")


def check_result(now: pd.DataFrame, size: int, rows: pd.DataFrame, tie: float,
                 run_dir: str, batches: int, fidelity_checks: pd.DataFrame | None = None,
                 hudi_now: pd.DataFrame | None = None) -> CheckResult:
    """The advice's ranking at ``size`` (``now``: :func:`modelled_now`) held against the
    measured ``rows`` of a compare (our series by name, Hudi's by what they mirror).
    ``hudi_now``: the same at the settings Hudi's writer ran, priced as Hudi's writer
    (``hudi_cost_s``: ``advise --hudi-storage``); Hudi's series are then ranked against
    it, else against our writer's model."""
    modelled = now["cost_s"].astype(float).sort_values(kind="stable")
    measured, hudi = measured_costs(rows), hudi_measured(rows)
    as_hudi = hudi_now is not None and HUDI + "cost_s" in hudi_now.columns
    hudi_model = (hudi_now[HUDI + "cost_s"].astype(float).dropna().sort_values(kind="stable")
                  if as_hudi else modelled)
    table = pd.DataFrame({"modelled_s": modelled})
    table = table.join(measured[["measured_s", "measured_min_s", "measured_max_s"]])
    if as_hudi:
        table = table.join(hudi_model.rename("hudi_modelled_s"))
    table = table.join(hudi[["measured_s"]].rename(columns={"measured_s": "hudi_measured_s"}))
    return CheckResult(size=size, batches=batches, table=table,
                       ours=pairs(modelled, measured, tie), hudi=pairs(hudi_model, hudi, tie),
                       run_dir=run_dir, tie=tie, fidelity=fidelity_checks,
                       reads=read_side(rows))


def run_check(req: AdviceRequest, a: Answer, creq: CheckRequest, measure: Measure,
              where: Path, named: str, jobs: int = 1) -> CheckResult:
    """Run the check into ``where`` (the answer names it ``named``, where it will be):
    the indexes at their chosen settings on real Spark (and Hudi's writer, if asked:
    with ``--hudi-storage`` at the settings Hudi's own model chose, its ranking held
    against that model), the simulator at the same size, the rankings compared; with
    Hudi's writer, our counters held against its own where both ran the same settings
    (``fidelity.csv``).
    The compare's query phase counts the read side on the same tables (point lookups, a
    self-join on the key). The tables are removed once read; the metrics, ``check.csv``
    and ``pairs.csv`` stay."""
    params = compare_params(req, a.chosen)
    settings = dict(zip(a.chosen["index"].astype(str), a.chosen["setting"].astype(str),
                        strict=True))
    now = modelled_now(req, params, settings, jobs=jobs)
    hudi_now, hudi_params = None, {}
    if a.hudi is not None and HUDI_PEER in creq.peers:  # at the settings its model chose
        hudi_params = compare_params(req, a.hudi.chosen)
        hudi_settings = dict(zip(a.hudi.chosen["index"].astype(str),
                                 a.hudi.chosen["setting"].astype(str), strict=True))
        same = {n for n in hudi_settings if settings.get(n) == hudi_settings[n]}
        hudi_now = now.loc[[n for n in now.index if n in same]]
        other = {n: p for n, p in hudi_params.items() if n not in same}
        if other:
            hudi_now = pd.concat([hudi_now, modelled_now(req, other, hudi_settings, jobs)])
    w = req.workload.with_overrides(batches=creq.batches)
    try:
        rows = measure(list(params), w, params, str(where),
                       {HUDI_PEER: hudi_params} if hudi_params else {})
        fid = (fidelity.check(str(where), simulate=False) if fidelity.has_pairs(str(where))
               else pd.DataFrame(columns=FIDELITY_COLUMNS))
    finally:
        shutil.rmtree(where / "tables", ignore_errors=True)
    result = check_result(now, req.workload.initial_records, rows, a.tie, named,
                          creq.batches, fid, hudi_now)
    result.table.join(result.reads).to_csv(where / "check.csv", index_label="index")
    both = [p.assign(writer=w) for p, w in ((result.ours, "ours"), (result.hudi, "hudi"))
            if len(p)]
    (pd.concat(both) if both else result.ours.assign(writer=[])).to_csv(
        where / "pairs.csv", index=False)
    return result
