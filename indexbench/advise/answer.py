"""From probes to an answer: each index at the setting that costs it least over the
horizon, the indexes ranked at every table size, the sizes where the first place
changes and why, and the recommendation with the Hudi configuration to paste."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import indexes
from indexbench.advise.probes import HUDI, HUDI_SECONDS, table_shape
from indexbench.advise.request import AdviceRequest
from indexbench.sim import profiles
from indexes import roles
from reports.advice import Answer, Crossover, HudiAdvice, Recommendation, secs
from tableformat.table_type import check_table_type

# indexes whose cost per batch is within this share of the best are tied with it
TIE = 0.02


def horizon_seconds(g: pd.DataFrame, inserts_per_batch: float) -> float:
    """Seconds of every batch from the first size to the last: the table grows by
    ``inserts_per_batch`` a batch, so the batches between two sizes are their distance
    over it, each costing (trapezoid) the mean of the two sizes' costs."""
    g = g.sort_values("table_size")
    n, c = g["table_size"].to_numpy(dtype=float), g["cost_s"].to_numpy(dtype=float)
    if len(n) < 2 or inserts_per_batch <= 0:
        return float(c.mean()) if len(c) else float("nan")
    return float(np.sum((c[1:] + c[:-1]) / 2 * np.diff(n)) / inserts_per_batch)


def chosen_settings(points: pd.DataFrame, inserts_per_batch: float) -> pd.DataFrame:
    """Per index, the setting with the fewest seconds over the horizon, and those seconds."""
    totals = [{"index": i, "setting": s, "horizon_s": horizon_seconds(g, inserts_per_batch)}
              for (i, s), g in points.groupby(["index", "setting"], sort=False)]
    t = pd.DataFrame(totals)
    best = t.loc[t.groupby("index", sort=False)["horizon_s"].idxmin()]
    return best.sort_values("horizon_s").reset_index(drop=True)


def _crossing(a: pd.DataFrame, b: pd.DataFrame, lo: int, hi: int) -> int:
    """Where ``b``'s cost falls below ``a``'s between sizes ``lo`` and ``hi`` (straight
    lines in log size between the two)."""
    da = (a.set_index("table_size")["cost_s"] - b.set_index("table_size")["cost_s"])
    d0, d1 = float(da.loc[lo]), float(da.loc[hi])
    if d0 == d1:
        return hi
    t = min(1.0, max(0.0, d0 / (d0 - d1)))
    return round(math.exp(math.log(lo) + t * (math.log(hi) - math.log(lo))))


def _why(winner: pd.Series, loser: pd.Series) -> str:
    """One line: the phase whose seconds part the two at the size after the crossing."""
    parts = {"tag": (winner["tag_s"], loser["tag_s"]),
             "write": (winner["write_s"], loser["write_s"]),
             "commit": (winner.get("commit_s", 0.0), loser.get("commit_s", 0.0)),
             "services": (winner["services_s"], loser["services_s"])}
    phase = max(parts, key=lambda k: abs(parts[k][1] - parts[k][0]))
    w, lo = parts[phase]
    if phase == "tag":
        return (f"{loser['index']} tags in {secs(lo)} s a batch, reading "
                f"{loser['files_read']:,.0f} files, against {secs(w)} s for {winner['index']}")
    if phase == "commit":
        return (f"{loser['index']} updates its index at commit in {secs(lo)} s a batch against "
                f"{secs(w)} s for {winner['index']}")
    if phase == "write":
        return (f"{loser['index']} writes in {secs(lo)} s a batch (its files are larger or "
                f"more of them are rewritten) against {secs(w)} s for {winner['index']}")
    return (f"{loser['index']} spends {secs(lo)} s a batch on table services ("
            f"{loser['resizes']:.2g} resizes a batch) against {secs(w)} s for "
            f"{winner['index']}")


def leaders(best: pd.DataFrame, size: int) -> pd.DataFrame:
    """The indexes first at ``size``: the cheapest and those tied with it."""
    at = best[best["table_size"] == size].sort_values("cost_s", kind="stable")
    return at[at["cost_s"] <= at["cost_s"].iloc[0] * (1 + TIE)]


def _names(group: list[str]) -> str:
    return ", ".join(group[:3]) + (f" (and {len(group) - 3} tied)" if len(group) > 3 else
                                   "")


def crossovers(best: pd.DataFrame) -> list[Crossover]:
    """Each size where the first place changes: the cheapest index was not among the
    first (the cheapest and its ties) at the size before, and every one of those now
    costs more than a tie above it. With its reason."""
    sizes = sorted(best["table_size"].unique())
    out = []
    for lo, hi in zip(sizes, sizes[1:], strict=False):
        first, now = leaders(best, lo), leaders(best, hi)
        cur = now.iloc[0]
        if cur["index"] in set(first["index"]):
            continue
        at_hi = best[(best["table_size"] == hi) & best["index"].isin(first["index"])]
        if (at_hi["cost_s"] <= cur["cost_s"] * (1 + TIE)).any():
            continue  # one of the first is still tied with it: no change of order
        prev = at_hi.sort_values("cost_s", kind="stable").iloc[0]
        n = _crossing(best[best["index"] == prev["index"]],
                      best[best["index"] == cur["index"]], lo, hi)
        out.append(Crossover(_names([str(i) for i in first["index"]]), str(cur["index"]),
                             int(n), _why(cur, prev)))
    return out


def recommendation(req: AdviceRequest, chosen: pd.DataFrame,
                   hudi: HudiAdvice | None = None) -> Recommendation:
    """The index with the fewest seconds over the horizon, its Hudi configuration (or,
    if Hudi has no such index, the best one Hudi has: with ``hudi``, the first as
    Hudi's own writer is modelled to run them), and what it gives up."""
    shape_params = candidate_params(req)
    top = chosen.iloc[0]
    name, setting = str(top["index"]), str(top["setting"])
    config, hudi_name = _hudi_config(name, shape_params[(name, setting)], req.table_type)
    fallback = None
    if config is None and hudi is not None:
        fallback = (hudi.index, hudi.setting, hudi.config)
    elif config is None:  # Hudi has no such index: the best one it has
        for row in chosen.itertuples(index=False):
            got, _ = _hudi_config(row.index, shape_params[(row.index, row.setting)],
                                  req.table_type)
            if got is not None:
                fallback = (str(row.index), str(row.setting), got)
                break
    return Recommendation(index=name, setting=setting, horizon_s=float(top["horizon_s"]),
                          hudi_config=config, hudi_refused=hudi_name,
                          gives_up=roles.advice_tradeoff(indexes.index_class(name)),
                          hudi_fallback=fallback,
                          hudi_fallback_by="with Hudi's own writer" if hudi else "")


def candidate_params(req: AdviceRequest, records_at: int = 0
                     ) -> dict[tuple[str, str], dict]:
    """Every index's candidate settings: (index, label) → its parameters, for the table
    now (``records_at``: for one loaded at that size, its buckets grown as they would
    have)."""
    shape = table_shape(req, records_at=records_at)
    return {(n, c.label): dict(c.params) for n in req.names
            for c in roles.advice_candidates(indexes.index_class(n), shape)}


def _hudi_config(name: str, params: dict, table_type: str) -> tuple[dict | None, str]:
    """Hudi's write options for the index at ``params`` (None, and why, if Hudi has no
    such index or refuses it on this table type)."""
    counterpart = roles.hudi_counterpart(indexes.index_class(name))
    if counterpart is None:
        return None, f"Hudi has no {name} index"
    hudi_type = check_table_type(table_type)
    refused = counterpart.refusal(hudi_type)  # as AdviceRequest.hudi_names asks it
    if refused is not None:
        return None, refused
    options = dict(counterpart.options(indexes.get(name, **params)))
    options["hoodie.datasource.write.table.type"] = hudi_type
    return options, ""


def _best(points: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    """The points of each index's chosen setting."""
    keep = set(zip(chosen["index"], chosen["setting"], strict=True))
    return points[[(i, s) in keep for i, s in zip(points["index"], points["setting"],
                                                   strict=True)]].copy()


def as_hudi(points: pd.DataFrame) -> pd.DataFrame:
    """The points of the indexes Hudi has, their seconds those of Hudi's own writer."""
    if HUDI + "cost_s" not in points.columns:
        return points.iloc[:0]
    view = points[pd.to_numeric(points[HUDI + "cost_s"], errors="coerce").notna()].copy()
    for k in HUDI_SECONDS:
        view[k] = view[HUDI + k]
    return view


def hudi_advice(req: AdviceRequest, points: pd.DataFrame) -> HudiAdvice | None:
    """The indexes Hudi has, ranked as Hudi's own writer is modelled to run them
    (``req.hudi_storage``), each at the setting that costs it least over the horizon."""
    view = as_hudi(points)
    if req.hudi_storage is None or view.empty:
        return None
    chosen = chosen_settings(view, req.inserts_per_batch)
    best = _best(view, chosen)
    top = chosen.iloc[0]
    name, setting = str(top["index"]), str(top["setting"])
    config, _ = _hudi_config(name, candidate_params(req)[(name, setting)], req.table_type)
    return HudiAdvice(storage=req.hudi_storage,
                      writer=profiles.profile(req.hudi_storage).writer, best=best,
                      chosen=chosen, crossovers=crossovers(best), index=name,
                      setting=setting, horizon_s=float(top["horizon_s"]), config=config or {})


def answer(req: AdviceRequest, points: pd.DataFrame, errors: pd.DataFrame) -> Answer:
    """The whole answer of a request from its points (exact and extrapolated)."""
    chosen = chosen_settings(points, req.inserts_per_batch)
    best = _best(points, chosen)
    hudi = hudi_advice(req, points)
    return Answer(request=describe(req), points=points, best=best, chosen=chosen,
                  crossovers=crossovers(best), recommendation=recommendation(req, chosen, hudi),
                  errors=errors, storage=req.storage, exact_limit=req.exact_limit,
                  tie=TIE, notes=caveats(req), hudi=hudi)


def caveats(req: AdviceRequest) -> list[str]:
    """What the answer cannot vouch for, said with it."""
    w = req.workload
    out = []
    far = any(not exact for _n, exact in req.answer_sizes())
    if far and w.distribution != "uniform" and w.update_fraction > 0:
        out.append(
            f"The updates hit {w.distribution} keys: above the exact limit a similar table's "
            "smaller files spread a batch's hot keys over more files than the described "
            "table's would, so the seconds written there are upper bounds (the check at the "
            "limit spans too small a ratio of sizes to show it).")
    if w.growth != "constant":
        out.append(f"The workload's {w.growth} growth is not followed along the horizon: the "
                   f"table grows by {req.inserts_per_batch:,.0f} new keys a batch "
                   "(the batch less its update fraction).")
    return out


def describe(req: AdviceRequest) -> dict:
    """The request in the answer's words (and run.json's)."""
    w = req.workload
    return {"workload": w.name, "description": w.description, "key_format": w.key_format,
            "partitions": w.partitions, "update_fraction": w.update_fraction,
            "records_now": w.initial_records, "batch_size": w.batch_size,
            "inserts_per_batch": req.inserts_per_batch,
            "batches_per_day": req.batches_per_day, "horizon_days": req.horizon_days,
            "horizon_batches": req.horizon_batches,
            "records_at_horizon": req.records_at_horizon, "table_type": req.table_type,
            "storage": req.storage, "hudi_storage": req.hudi_storage,
            "parallelism": req.parallelism,
            "exact_limit": req.exact_limit, "probe_batches": req.probe_batches}
