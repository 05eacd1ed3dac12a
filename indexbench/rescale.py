"""``indexbench rescale``: refuse bad arguments, take the writer lock, rescale, record.

The command runs the table service its table's index declares with ``command =
"rescale"`` (:class:`indexes.base.TableService`), with that service's options; the
options another index declares for its rescale are refused by name, and a table whose
index declares none is refused. The plan is checked before anything is written (and
again under the writer lock); the service runner (:mod:`indexbench.services`) executes
and commits it as one replacecommit. See each index's page (its folder's README.md,
gathered in docs/indexes/README.md).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

import indexes
from indexbench import services
from indexes import roles
from indexes.base import RecordIndex, RescaleError, TableService
from tableformat.errors import TableConfigError
from tableformat.table import Table

COMMAND = "rescale"


def rescalable_index(table: Table) -> tuple[RecordIndex, TableService]:
    """The table's index and its rescale service, or a refusal if it declares none."""
    if not table.exists():
        raise TableConfigError(f"no table at {table.uri} (.hoodie/hoodie.properties is missing)")
    index = indexes.from_table_config(table.config)
    service = next((s for s in roles.services(index) if s.command == COMMAND), None)
    if service is None:
        kinds = " and ".join(
            f"{name} tables ({', '.join(o.flag for o in s.options)})"
            for name, s in indexes.command_services(COMMAND))
        raise TableConfigError(
            f"table {table.uri} uses index {index.name!r}; only {kinds} can be rescaled "
            "(their bucket counts are per partition and versioned)")
    return index, service


def checked_options(index: RecordIndex, service: TableService,
                    given: dict[str, Any]) -> dict[str, Any]:
    """The options ``service`` takes; one given for another index's rescale is refused."""
    mine = {o.dest for o in service.options}
    foreign = [(dest, value) for dest, value in given.items()
               if value not in (None, [], ()) and dest not in mine]
    if foreign:
        known = indexes.command_options(COMMAND)
        shown = []
        for dest, value in foreign:
            declared = known.get(dest, [])
            opt = declared[0][1] if declared else None
            flag = opt.flag if opt else f"--{dest}"
            flag += f" {value}" if opt is not None and opt.choices else ""
            shown.append((flag, [name for name, _ in declared]))
        owners = sorted({o for _, names in shown for o in names})
        raise RescaleError(
            f"{', '.join(f for f, _ in shown)}: only for {' or '.join(owners)} tables; a "
            f"{index.name} table is rescaled with {service.usage}")
    return {dest: value for dest, value in given.items() if dest in mine}


def plan_table_rescale(table: Table, index: RecordIndex, service: TableService,
                       options: dict[str, Any]) -> Any:
    """Every argument checked against the committed snapshot; nothing is written."""
    plan = services.plan(table, index, service, checked_options(index, service, options))
    if plan is None:
        raise RescaleError(f"{index.name}: nothing to rescale")
    return plan


def rescale_table(uri: str, mode: str | None = None, factor: Any = None,
                  partitions: list[str] | None = None, num_buckets: int | None = None,
                  out: str | None = None, spark: SparkSession | None = None,
                  master: str | None = None, *, dry_run: bool = False,
                  **more: Any) -> dict[str, Any]:
    """``indexbench rescale``: refuse bad arguments before anything is written, take the
    writer lock, rescale, and append the metrics row to ``out`` (if given).

    The options are those the table's index declares for its rescale service
    (multiple-rehash: ``mode``, ``factor``, ``partitions``, ``num_buckets``;
    partition-bucket: ``expressions`` and ``num_buckets``; ``more``: any other declared
    option by its destination). ``dry_run``: only the plan
    (which partitions, from and to how many buckets, how many files would be
    rewritten), nothing written, no Spark."""
    table = Table(uri)
    index, service = rescalable_index(table)
    options = {"mode": mode, "factor": factor, "partitions": partitions,
               "num_buckets": num_buckets, **more}
    plan = plan_table_rescale(table, index, service, options)  # refuse early
    if dry_run:
        return dry_run_summary(index, plan)
    if spark is None:
        from indexbench.spark import get_session

        spark = get_session(master)
    with table:
        rows = services.run_service(spark, table, index, service,
                                    checked_options(index, service, options), None)
    row = {"index": index.name, "workload": None, **rows[0]}
    if out:
        write_rescale_metrics(out, row, uri)
    return row


def dry_run_summary(index: RecordIndex, plan: Any) -> dict[str, Any]:
    """What a rescale would do, as its plan says (``plan.dry_run()``): per partition,
    its bucket counts and files to rewrite."""
    return {"index": index.name, "dry_run": True, **plan.dry_run()}


def write_rescale_metrics(out: str, row: dict[str, Any], table_uri: str) -> None:
    """Append the row to ``out``'s metrics files (run.json only if ``out`` has none)."""
    from pathlib import Path

    from metrics import contract as m

    row = {"run_id": row.get("run_id") or m.new_run_id(), **row}
    m.write_metrics(out, m.existing_rows(out) + [row])
    if not (Path(out) / "run.json").exists():
        m.write_run_json(out, {"run_id": row["run_id"], "command": "rescale",
                               "table": table_uri})
