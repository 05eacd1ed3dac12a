"""Tables in, metrics rows out (``operation = "query"``): lookups, group-by and join.

Everything a query can refuse (a missing table, an unknown query, a workload that did
not write the table) is refused by :func:`plan_queries` before Spark starts; then
:func:`run_queries` runs the plan. A bucketed table runs the group-by and the join both
bucket-aware and by Spark's default plan, so the two sit side by side in the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import workloads
from indexbench.batches import workload_fingerprint
from indexbench.query.keys import committed_batches, lookup_keys, workload_of_table
from indexes import roles
from metrics.rows import QUERY_KINDS, query_row
from tableformat.errors import IndexBenchError
from tableformat.query_type import READ_OPTIMIZED, SNAPSHOT, check_query_type
from tableformat.table import Table
from tableformat.table_type import short_name

QUERIES = QUERY_KINDS
LOOKUP_KEY_COLUMNS = ("key", "dt", "index_key")  # what indexbench.query.keys draws
DEFAULT_KEYS = 1000
DEFAULT_BATCH_KEYS = 100


@dataclass
class QueryPlan:
    """What one ``query`` call will run, checked."""

    tables: list[tuple[Table, Any]]  # (table, its index)
    queries: list[str]
    keys: int
    batch_keys: int
    workloads: dict[str, workloads.Workload]  # table uri -> the workload of its lookups
    join_with: tuple[Table, Any] | None
    repeat: int = 1  # runs of each group-by/join plan (seconds: their median)
    # join only tables whose query key is the record key (compare's phase: a join on a
    # non-unique key makes Σ count² rows, minutes where the phase should take seconds)
    join_unique_only: bool = False
    # hoodie.datasource.query.type: snapshot (merged) or read_optimized (base files only)
    query_type: str = SNAPSHOT

    @property
    def read_optimized(self) -> bool:
        return self.query_type == READ_OPTIMIZED


def _open(uri: str) -> tuple[Table, Any]:
    import indexes

    table = Table(uri)
    if not table.exists():
        raise IndexBenchError(f"{uri}: no table here (no .hoodie/hoodie.properties)")
    snap = table.snapshot()
    if not snap.slices:
        raise IndexBenchError(f"{uri}: the table has no committed records to query")
    return table, indexes.from_table_config(table.config)


def parse_queries(queries: str | Sequence[str] | None) -> list[str]:
    """``"lookup,groupby"`` or a list → the queries, in the order of :data:`QUERIES`."""
    if queries is None:
        return list(QUERIES)
    names = [q.strip() for q in (queries.split(",") if isinstance(queries, str) else queries)
             if q.strip()]
    unknown = [q for q in names if q not in QUERIES]
    if unknown or not names:
        raise IndexBenchError(f"unknown quer{'ies' if len(unknown) > 1 else 'y'} "
                              f"{', '.join(unknown) or '(none)'}; known: {', '.join(QUERIES)}")
    return [q for q in QUERIES if q in names]


def plan_queries(tables: Sequence[str], queries: str | Sequence[str] | None = None, *,
                 keys: int = DEFAULT_KEYS, batch_keys: int = DEFAULT_BATCH_KEYS,
                 join_with: str | None = None, repeat: int = 1,
                 workload: workloads.Workload | None = None,
                 join_unique_only: bool = False, query_type: str = SNAPSHOT) -> QueryPlan:
    """Check everything before Spark starts: tables, queries, sizes, lookup workloads,
    the query type (Hudi's ``hoodie.datasource.query.type``; ``read_optimized`` is
    allowed on a copy-on-write table, where it reads what a snapshot query reads, as
    in Hudi)."""
    if not tables:
        raise IndexBenchError("query needs at least one table")
    names = parse_queries(queries)
    query_type = check_query_type(query_type)
    if keys < 1 or batch_keys < 1 or repeat < 1:
        raise IndexBenchError("--keys, --batch-keys and --repeat must be >= 1")
    if join_with and "join" not in names:
        raise IndexBenchError("--join-with applies to the join: add it to --queries")
    opened = [_open(uri) for uri in tables]
    other = _open(join_with) if join_with else None
    for table, index in opened + ([other] if other else []):
        _check_key_fields(table, index, names)
        if "lookup" in names:  # lookups go through the index: what it needs, checked
            roles.check_resources(index, table.uri)
    found: dict[str, workloads.Workload] = {}
    if "lookup" in names:
        for table, _ in opened:
            w = workload or workload_of_table(table.uri)
            committed_batches(table.snapshot(), workload_fingerprint(w), table.uri)
            found[table.uri] = w
    return QueryPlan(opened, names, keys, batch_keys, found, other, repeat, join_unique_only,
                     query_type)


def _check_key_fields(table: Table, index: Any, queries: list[str]) -> None:
    """The index key must be string columns of the table (the bucket hash is over
    strings), and a lookup's hash fields columns a lookup key carries."""
    import json

    from pyspark.sql import types as T  # noqa: N812 (types only: no session)

    fields = roles.query_key_fields(index, table.config.record_key_field)
    schema = table.snapshot().schema
    types = {f.name: f.dataType for f in T.StructType.fromJson(json.loads(schema)).fields} \
        if schema else {}
    bad = [f for f in fields if not isinstance(types.get(f), T.StringType)]
    if bad:
        raise IndexBenchError(f"{table.uri}: index key field(s) {', '.join(bad)} are not "
                              "string columns of the table; queries need string keys")
    if "lookup" in queries:
        missing = [f for f in fields if f not in LOOKUP_KEY_COLUMNS]
        if missing:
            raise IndexBenchError(f"{table.uri}: lookups hash {', '.join(missing)}, which "
                                  "a workload's lookup key does not carry (it has "
                                  f"{', '.join(LOOKUP_KEY_COLUMNS)})")


def run_queries(spark, plan: QueryPlan, *, run_id: str, seed: int = 0,
                progress: Callable[[dict[str, Any]], None] | None = None
                ) -> list[dict[str, Any]]:
    """Run a checked plan; one metrics row per (table, query, plan). Each table's
    queries run inside its index's ``resources`` (an external server it looks keys up
    in runs while they do)."""
    from indexbench.query import spark_query as sq

    rows: list[dict[str, Any]] = []

    def emit(base: dict, scan: sq.ScanTable, query: str, plan_: str, **figures: Any) -> None:
        rows.append({**base, **query_row(query=query, plan=plan_, table=scan.table.uri,
                                         table_records=scan.records, figures=figures)})
        if progress:
            progress(rows[-1])

    for table, index in plan.tables:
        with roles.resources(index, table):
            _table_queries(spark, plan, table, index, emit, run_id, seed)
    return rows


def _table_queries(spark, plan: QueryPlan, table: Table, index: Any,
                   emit: Callable[..., None], run_id: str, seed: int) -> None:
    """The plan's queries of one table, each row handed to ``emit``."""
    from indexbench.query import spark_query as sq
    from indexbench.query.bucketed import aligned_groups

    ro = plan.read_optimized
    scan = sq.ScanTable.of(table, index, ro)
    if {"groupby", "join"} & set(plan.queries):
        sq.warm_up_scans(spark, scan)  # once per application and kind of table
    w = plan.workloads.get(table.uri)
    base = {"run_id": run_id, "index": index.name, "workload": w.name if w else None,
            "key_fields": ",".join(scan.fields),
            "table_type": short_name(table.config.table_type),
            "query_type": plan.query_type}
    if "lookup" in plan.queries:
        assert w is not None
        done = committed_batches(table.snapshot(), workload_fingerprint(w), table.uri)
        keys = lookup_keys(w, done, plan.keys, seed)
        figures, _found = sq.run_lookups(spark, table, index, keys, plan.batch_keys, ro)
        emit(base, scan, "lookup", "index", **figures)
    if "groupby" in plan.queries:
        groups = aligned_groups([scan.layout])
        for p in ([sq.BUCKET_AWARE] if groups else []) + [sq.DEFAULT]:
            emit(base, scan, "groupby", p,
                 **sq.run_groupby(spark, scan, p, groups, plan.repeat))
    unique = scan.fields == [table.config.record_key_field]
    if "join" in plan.queries and (unique or not plan.join_unique_only):
        right = sq.ScanTable.of(*plan.join_with, ro) if plan.join_with else scan
        same_keys = right.fields == scan.fields
        groups = aligned_groups([scan.layout, right.layout]) if same_keys else None
        for p in ([sq.BUCKET_AWARE] if groups else []) + [sq.DEFAULT]:
            emit(base, scan, "join", p, join_table=right.table.uri,
                 **sq.run_join(spark, scan, right, p, groups, plan.repeat))
