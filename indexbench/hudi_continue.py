"""Hudi continues what we write: Hudi's own writer upserts further batches into a table
this project's writer made, with the index settings the table was made with.

Why: a table format is only Hudi's if Hudi's writer can take it over — read its
timeline, file groups, footers (bloom filters and key ranges) and bucket file names,
and keep the records right. The batches go through :class:`peers.hudi.HudiPeerTable`
pointed at our table, under our table's name, with Hudi's metadata table off: our
writer keeps none, and a metadata table Hudi started here would go stale at our next
commit (Hudi's readers would list files from it). Afterwards hudi-rs, ``indexbench
verify`` and the workload's oracle must agree on the table.
"""

from __future__ import annotations

import os
from typing import Any

import indexes
import workloads
from indexbench.batches import committed_batches, workload_fingerprint
from indexes import roles
from peers import hudi as hudi_peer
from tableformat.errors import TableConfigError
from tableformat.table import Table
from tableformat.table_type import TABLE_TYPE

METADATA_OFF = {"hoodie.metadata.enable": "false"}


def continue_with_hudi(path: str, w: workloads.Workload, *, logs_dir: str | None = None,
                       settings: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Upsert batches ``done..w.batches`` of ``w`` into our table at ``path`` with Hudi's
    writer (``done``: the batches our writer committed); one metrics row per batch, as
    Hudi wrote and logged it. A table Hudi has no counterpart for is refused."""
    table = Table(path)
    cfg = table.config
    if cfg.written_by_hudi:
        raise TableConfigError(f"{path}: written by Hudi's own writer already")
    name = cfg.index_name
    counterpart = roles.hudi_counterpart(indexes.index_class(name))
    if counterpart is None:
        raise TableConfigError(f"{path}: index {name} has no Hudi counterpart to continue "
                               "it with")
    why = counterpart.continue_refusal and counterpart.continue_refusal(
        indexes.from_table_config(cfg))
    if why:
        raise TableConfigError(f"{path}: Hudi's writer cannot continue this {name} table: "
                               f"{why}")
    fingerprint = workload_fingerprint(w)
    done = committed_batches(table.snapshot(), fingerprint, path)
    keys = indexes.index_class(name).param_keys()
    params = {name: {**{k: v for k, v in cfg.index_params.items() if k in keys},
                     TABLE_TYPE: cfg.table_type}}
    peer = hudi_peer.HudiPeerTable(
        path, fingerprint, series=hudi_peer.PREFIX + name, index_params=params,
        table_type=cfg.table_type, settings={**METADATA_OFF, **(settings or {})},
        logs_dir=logs_dir or os.path.join(os.path.dirname(os.path.abspath(path)), "_jvm"),
        table_name=cfg.name)
    return [peer.upsert(w, b) for b in range(done, w.batches + 1)]


__all__ = ["METADATA_OFF", "continue_with_hudi"]
