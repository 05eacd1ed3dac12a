"""indexbench: Hudi's bloom index against bucket indexes on real PySpark upserts, and a
simulator of the same index code (docs/cli.md). Each command calls one api function."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any, NoReturn

import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from indexbench.cli_parsers import add_commands
from indexbench.preflight import check_out_dir, check_out_file
from metrics.contract import new_run_id

console = Console()
errors = Console(stderr=True)  # error and interrupt lines: stdout stays the command's output


def parse_sets(values: list[str] | None, peers_ok: bool = False) -> dict[str, dict[str, str]]:
    """``--set key=value`` or ``--set index:key=value`` into per-index parameter dicts.

    A bare key goes to every index that knows it; ``index:key`` to that index only.
    ``peers_ok`` (compare): ``peer:key=value`` is a setting of a peer that takes them
    (``hudi:hoodie.metadata.enable=false``), under the peer's name.
    """
    import indexes
    import peers
    from indexes.base import refuse_global
    from indexes.suggest import did_you_mean
    from tableformat import write_config
    from tableformat.errors import IndexBenchError

    out: dict[str, dict[str, str]] = {n: {} for n in indexes.names()}
    every_key = [k for n in out for k in indexes.index_class(n).param_keys()]
    for item in values or []:
        target, sep, rest = item.partition(":")
        if sep and "=" in rest and "=" not in target:  # INDEX:KEY=VALUE
            if peers.takes_settings(target):
                if not peers_ok:
                    raise IndexBenchError(f"--set {item}: a setting of the {target!r} peer, "
                                          f"for compare --peers {target}")
                key, _, value = rest.partition("=")
                out.setdefault(target, {})[key.strip()] = value.strip()
                continue
            if target not in out:
                raise IndexBenchError(f"--set {item}: unknown index {target!r}"
                                      f"{did_you_mean(target, out)} (`indexbench list`)")
            key, _, value = rest.partition("=")
            out[target][key.strip()] = value.strip()
            continue
        if "=" not in item:
            raise IndexBenchError(f"--set wants key=value, got {item!r}")
        key, _, value = item.partition("=")
        owners = [n for n in out if key.strip() in indexes.index_class(n).param_keys()
                  or key.strip() in write_config.KEYS]  # the table's: every index's
        if not owners:
            refuse_global(key.strip(), value)
            raise IndexBenchError(f"--set {key}: no index has this parameter"
                                  f"{did_you_mean(key.strip(), every_key)}; `indexbench "
                                  "list` shows every index's parameters")
        for n in owners:
            out[n][key.strip()] = value.strip()
    return out


def check_indexes(names: list[str], sets: dict[str, dict[str, str]]) -> None:
    """Every index name and ``--set`` value checked before Spark starts: a typo costs no
    Spark start-up and gets one ``error:`` line (exit 2)."""
    import indexes
    from tableformat.write_config import WriteConfig

    for n in names:
        params = dict(sets.get(n, {}))
        WriteConfig.pop_from(params)  # the table's write configs: checked here too
        indexes.get(n, **params)  # unknown name, unknown key, bad value: raises


def with_table_type(sets: dict[str, dict[str, str]], table_type: str | None
                    ) -> dict[str, dict[str, str]]:
    """``--table-type cow|mor``: Hudi's ``hoodie.table.type`` for every index."""
    if table_type:
        for params in sets.values():
            params["hoodie.table.type"] = table_type
    return sets


def _timing(args: argparse.Namespace) -> str:
    """The driver's timing mode of ``--throughput``."""
    from indexbench.driver import TIMING_PHASES, TIMING_TOTAL

    return TIMING_TOTAL if args.throughput else TIMING_PHASES


# the workload fields the command line sets, by the flag a user types
SIZE_FLAGS = {"batches": "--batches", "batch_size": "--batch-size",
              "initial_records": "--initial-records", "seed": "--seed"}


def _workload(args: argparse.Namespace):
    """The command's workload with its size flags; a refused value names the flag typed
    (``--batch-size: must be >= 0, got -5``), not the workload field."""
    from indexbench.workload_args import load_workload
    from tableformat.errors import IndexBenchError

    try:
        return load_workload(args.workload, args.batches, args.batch_size,
                             args.initial_records, args.seed)
    except ValueError as exc:
        field, sep, rest = str(exc).partition(":")
        if sep and field in SIZE_FLAGS and getattr(args, field, None) is not None:
            raise IndexBenchError(f"{SIZE_FLAGS[field]}:{rest}") from None
        raise


class _Bar(Progress):
    """A progress bar that leaves no trace when the command fails: a refused run (another
    writer holds the table) prints its ``error:`` line, not ``batches 0/6`` above it."""

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.live.transient = True
        super().__exit__(exc_type, exc, tb)


def _progress_bar(total: int, names: list[str]):
    """A progress bar and the callback that prints each batch's line above it.

    The bar counts batches by their number, per index: a resumed run (its first batches
    already committed) or a sweep's next size moves it by the batches it skipped, so it
    ends full."""
    from indexbench.terminal import FUSED_NOTE, BatchLines

    progress = _Bar(TextColumn("[bold]{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TimeElapsedColumn(), console=console)
    lines = BatchLines(names)
    last: dict[str, int] = {}

    def on_batch(row: dict[str, Any]) -> None:
        if not lines.header_printed:
            if row.get("timing") == "total":
                progress.console.print(f"  {FUSED_NOTE}", soft_wrap=True, highlight=False)
            progress.console.print(lines.header(), soft_wrap=True, highlight=False)
            lines.header_printed = True
        if row.get("table_type") == "mor":  # compare --table-types: the series' label
            row = {**row, "index": f"{row['index']} (mor)"}
        progress.console.print(lines.line(row), soft_wrap=True, highlight=False)
        b, seen = int(row["batch"]), last.get(row["index"], -1)
        progress.advance(task, b - seen if b > seen else b + 1)
        last[row["index"]] = b

    task = progress.add_task("batches", total=total)
    return progress, on_batch, lambda: progress.update(task, completed=total)


def _print_summary(df: pd.DataFrame, out: str | None = None) -> None:
    """The medians per index, then what the run found (the report's conclusion)."""
    from indexbench.api import summary
    from indexbench.terminal import legend, pair_tables, summary_tables
    from reports.conclusion import conclude, conclusion_text
    from reports.data import read_run_json, series_labels
    from reports.peer_pairs import pairs

    medians = summary(df)
    for table in summary_tables(medians, console.width):
        console.print()
        console.print(table)
    console.print(legend(medians), style="dim", highlight=False)
    for table in pair_tables(pairs(df), console.width):  # compare --peers hudi
        console.print()
        console.print(table)
    found = conclusion_text(conclude(df.assign(series=series_labels(df)),
                                     {"run": read_run_json(out)} if out else {}))
    if found:
        console.print()
        for line in found:
            console.print(line, highlight=False, markup=False)


def _one_index_run(args: argparse.Namespace):
    """What ``run`` and ``stream`` check and resolve before starting: the workload, the
    parameters (refused before anything runs), the run id and out folder."""
    from indexbench import api

    w = _workload(args)
    sets = with_table_type(parse_sets(args.sets), args.table_type)
    check_indexes([args.index], sets)
    run_id = new_run_id()
    out = args.out or api.default_out(w.name, run_id)
    _check_targets(out, {args.index: args.table}, sets)
    _print_notes([args.index], w, sets)
    return w, sets, run_id, out


def cmd_run(args: argparse.Namespace) -> int:
    from indexbench import api

    w, sets, run_id, out = _one_index_run(args)
    progress, on_batch, done = _progress_bar(w.batches + 1, [args.index])
    with progress:
        df = api.run(args.index, w, params=sets[args.index], master=args.master,
                     table=args.table, out=out, progress=on_batch, run_id=run_id,
                     notify=progress.console.print, timing=_timing(args))
        done()
    _print_summary(df, out)
    console.print(f"metrics: {out}/metrics.parquet")
    return 0


def cmd_stream(args: argparse.Namespace) -> int:
    """``run``'s batches as a Structured Streaming query (docs/streaming.md)."""
    from indexbench import api
    from indexbench.stream import check_options

    check_options(args.rate, args.trigger_interval)
    w, sets, run_id, out = _one_index_run(args)
    progress, on_batch, done = _progress_bar(w.batches + 1, [args.index])
    with progress:
        df = api.stream(args.index, w, params=sets[args.index], master=args.master,
                        table=args.table, out=out, progress=on_batch, run_id=run_id,
                        notify=progress.console.print, timing=_timing(args), rate=args.rate,
                        trigger_interval=args.trigger_interval, checkpoint=args.checkpoint,
                        landing=args.landing)
        done()
    if len(df):
        _print_summary(df, out)
    console.print(f"metrics: {out}/metrics.parquet")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    import time

    import peers
    from indexbench import api
    from indexbench.terminal import fmt_seconds
    from tableformat.errors import IndexBenchError

    started = time.monotonic()
    names = [n.strip() for n in args.indexes.split(",")] if args.indexes else \
        api.default_compare_indexes()
    peer_names = peers.parse(args.peers)
    peers.check(peer_names)  # a missing package: one clear error before anything runs
    w = _workload(args)
    if args.table_type and args.table_types:
        from tableformat.errors import IndexBenchError

        raise IndexBenchError("--table-type and --table-types: give one (--table-types "
                              "runs each type's tables side by side)")
    sets = parse_sets(args.sets, peers_ok=True)
    peer_params = {n: sets.pop(n) for n in list(sets) if peers.takes_settings(n)}
    for name, settings in peer_params.items():
        if name not in [peers.peer_of(n) for n in peer_names]:
            raise IndexBenchError(f"--set {name}:...: a setting of the {name!r} peer, which "
                                  f"this compare does not run (--peers {name})")
        peers.check_settings(name, settings)
    sets = with_table_type(sets, args.table_type)
    # a peer's table may mirror an index's parameters (a bucket count): checked too
    mirrored = [n for n in peers.mirrored_indexes(peer_names) if n not in names]
    check_indexes(names + mirrored, sets)
    run_id = new_run_id()
    out = args.out or api.default_out(w.name, run_id)
    _check_targets(out, dict.fromkeys(names), sets)
    _print_notes(names, w, sets)
    params = {n: sets.get(n, {}) for n in names + mirrored}
    # Hudi's bundle and Spark: fetched now (one line each, once), refused before Spark
    peers.prepare(peer_names, lambda text: console.print(text, highlight=False))
    types = args.table_types or [None]
    series = [f"{n} (mor)" if t == "mor" else n for t in types for n in names]
    peer_series = [s.label for s in peers.planned(peer_names, names, args.table_types or (),
                                                  params, peer_params) if not s.absent]
    progress, on_batch, done = _progress_bar(
        (w.batches + 1) * (len(series) + len(peer_series)), series + peer_series)
    with progress:
        df = api.compare(names, w, params=params,
                         out=out,
                         master=args.master, progress=on_batch, peers=peer_names,
                         run_id=run_id, notify=progress.console.print,
                         query_phase=args.query, table_types=args.table_types or (),
                         timing=_timing(args), peer_params=peer_params)
        done()
    _print_summary(df, out)
    if args.query:
        _print_queries(df[df["operation"] == "query"])
    if args.keep_tables and any(peers.peer_of(n) == "hudi" for n in peer_names):
        from indexbench import fidelity

        if fidelity.has_pairs(out):  # the report shows its summary
            _print_fidelity(out, getattr(args, "sim", True))
    console.print(f"metrics: {out}/metrics.parquet")
    console.print(f"report: {api.report([out])}")
    size = _remove_tables(out) if not args.keep_tables else _tables_bytes(out)
    console.print(f"took {fmt_seconds(time.monotonic() - started)} on "
                  f"{os.cpu_count()} cores; tables: {size / 2**20:,.1f} MiB "
                  f"({'removed' if not args.keep_tables else 'kept in'} {out}/tables)",
                  highlight=False, soft_wrap=True)
    return 0


def _print_notes(names: list[str], w: Any, sets: dict[str, dict[str, str]],
                 sweep: list[int] | None = None) -> None:
    """What the indexes say of the table this run makes (a scale that makes a bloom
    table of tiny files), one line each, before it starts; run.json keeps them."""
    from indexbench.sim.driver import size_notes

    for note in size_notes(names, w, sets, sweep):
        console.print(f"note: {note}", style="yellow", soft_wrap=True, highlight=False)


def _check_targets(out: str, tables: dict[str, str | None],
                   sets: dict[str, dict[str, str]]) -> None:
    """Before Spark starts: ``out`` can hold the metrics, and each index's table (its
    ``--table``, else ``<out>/tables/<index>``) can be created, or reopened by this index
    with these parameters."""
    from indexbench.preflight import check_table

    check_out_dir(out)
    for name, table in tables.items():
        check_table(table or os.path.join(out, "tables", name), name, sets.get(name),
                    flag="--table" if table else "--out")


def _tables_bytes(out: str) -> int:
    """Bytes of a compare's tables on disk (``<out>/tables``)."""
    import os

    root = os.path.join(out, "tables")
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root)
               for f in files)


def _remove_tables(out: str) -> int:
    """Delete a compare's tables (metrics and report stay); returns the bytes freed."""
    import os
    import shutil

    freed = _tables_bytes(out)
    shutil.rmtree(os.path.join(out, "tables"), ignore_errors=True)
    return freed


def cmd_advise(args: argparse.Namespace) -> int:
    """Which index for the described table: the answer in 80 columns, and its page."""
    import peers
    from indexbench import api
    from reports.advice import advice_text

    shape = {k: getattr(args, k) for k in ("update_fraction", "distribution", "key_format",
                                           "partitions", "partition_skew")
             if getattr(args, k) is not None}
    names = [n.strip() for n in args.indexes.split(",")] if args.indexes else None
    check_peers = peers.parse(args.check_peers)
    if (check_peers or args.master) and not args.check:
        from tableformat.errors import IndexBenchError

        raise IndexBenchError("--check-peers and --master apply to the check: add --check")
    answer, page = api.advise(
        args.workload, initial_records=args.initial_records, batch_size=args.batch_size,
        seed=args.seed, batches_per_day=args.batches_per_day,
        horizon_days=args.horizon_days, table_type=args.table_type, storage=args.storage,
        indexes=names, exact_limit=args.exact_limit, points=args.points,
        probe_batches=args.probe_batches, parallelism=args.parallelism, jobs=args.jobs,
        out=args.out, check=args.check, check_batches=args.check_batches,
        check_peers=check_peers, master=args.master, hudi_storage=args.hudi_storage,
        notify=console.print, **shape)
    print(advice_text(answer), end="")
    print(f"answer: {page} (took {answer.request['advise_s']:.0f} s)")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    import indexes
    from indexbench import api
    from indexbench.sim.options import declared_options

    if args.master:
        from tableformat.errors import IndexBenchError

        raise IndexBenchError("sim runs no Spark: --master does not apply "
                              "(--parallelism sets the modelled executor cores)")
    names = [n.strip() for n in (args.indexes or args.index or ",".join(indexes.names()))
             .split(",")]
    w = _workload(args)
    sets = with_table_type(parse_sets(args.sets), args.table_type)
    check_indexes(names, sets)  # one clear error before anything runs
    run_id = new_run_id()
    out = args.out or f"out/{w.name}-sim-{run_id}"
    check_out_dir(out)
    _print_notes(names, w, sets, args.sweep)
    progress, on_batch, done = _progress_bar(
        (w.batches + 1) * len(names) * len(args.sweep or [1]), names)
    with progress:
        df = api.sim(names, w, params={n: sets.get(n, {}) for n in names}, out=out,
                     storage=args.storage, parallelism=args.parallelism, progress=on_batch,
                     sweep=args.sweep, jobs=args.jobs, run_id=run_id,
                     **{name: getattr(args, name) for name in declared_options()})
        done()
    _print_summary(df, out)
    console.print(f"metrics: {out}/metrics.parquet")
    if not args.no_report:
        console.print(f"report: {api.report([out])}")
    return 0


def _print_queries(df: pd.DataFrame) -> None:
    """Lookups per index, then group-by/join per index and plan, within the terminal."""
    from indexbench.terminal import query_tables

    for table in query_tables(df, console.width):
        console.print()
        console.print(table)


def query_out_dir(tables: list[str], run_id: str) -> str:
    """Where query rows go by default: the run dir of the first table when the table is
    a run's (``<run dir>/tables/<index>`` beside a run.json), so they join its metrics."""
    run_dir = os.path.dirname(os.path.dirname(os.path.normpath(tables[0])))
    if os.path.exists(os.path.join(run_dir, "run.json")):
        return run_dir
    return os.path.join(os.environ.get("INDEXBENCH_OUT") or "out", f"query-{run_id}")


def cmd_query(args: argparse.Namespace) -> int:
    import indexes
    from indexbench import api
    from indexbench.query.runner import plan_queries
    from indexbench.terminal import fmt_seconds
    from tableformat.errors import IndexBenchError

    width = max(len(n) for n in indexes.names())

    sizes = [o for o, v in (("--batches", args.batches), ("--batch-size", args.batch_size),
                            ("--initial-records", args.initial_records),
                            ("--seed", args.seed)) if v is not None]
    if sizes and args.workload is None:
        raise IndexBenchError(f"{', '.join(sizes)} describe the workload: give --workload "
                              "too (without it, the run's run.json is read)")
    w = None if args.workload is None else _workload(args)
    query_type = _query_type(args)
    # everything refusable is refused here, before Spark starts (exit 2)
    plan_queries(args.tables, args.queries, keys=args.keys, batch_keys=args.batch_keys,
                 join_with=args.join_with, repeat=args.repeat, workload=w,
                 query_type=query_type)
    run_id = new_run_id()
    out = args.out or query_out_dir(args.tables, run_id)
    check_out_dir(out)
    df = api.query(args.tables, args.queries, keys=args.keys, batch_keys=args.batch_keys,
                   join_with=args.join_with, repeat=args.repeat, workload=w, out=out,
                   master=args.master, query_type=query_type,
                   run_id=run_id,
                   progress=lambda r: console.print(
                       f"  {r['index']:<{width}} {r['query']:<7} {r['plan']:<12} "
                       f"{fmt_seconds(r['total_s']):>7}", highlight=False))
    _print_queries(df)
    console.print(f"metrics: {out}/metrics.parquet")
    return 0


def _query_type(args: argparse.Namespace) -> str:
    """``--query-type`` or ``--set hoodie.datasource.query.type=...`` (Hudi's key), the
    same value if both are given; default ``snapshot``."""
    from tableformat.errors import IndexBenchError
    from tableformat.query_type import QUERY_TYPE, SNAPSHOT, check_query_type, query_options

    sets = {}
    for item in args.sets or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise IndexBenchError(f"--set wants key=value, got {item!r}")
        sets[key.strip()] = value.strip()
    given = query_options(sets).get(QUERY_TYPE)
    flag = check_query_type(args.query_type) if args.query_type else None
    if given and flag and given != flag:
        raise IndexBenchError(f"--query-type {flag} and --set {QUERY_TYPE}={given} disagree")
    return flag or given or SNAPSHOT


def cmd_calibrate(args: argparse.Namespace) -> int:
    from indexbench import api
    from indexbench.sim.profiles import hudis

    if args.out:
        check_out_file(args.out)
    profile, fit = api.calibrate(args.run_dir, out=args.out, base=args.base,
                                 cores=args.cores, writer=args.writer)
    t = RichTable(title=f"cost profile of {profile.writer}'s writer fitted to "
                        f"{', '.join(args.run_dir)} (base {args.base})")
    t.add_column("constant")
    t.add_column("value", justify="right")
    for k in fit.get("fitted", {}):
        t.add_row(k, f"{getattr(profile, k):.4g}")
    console.print(t)
    console.print(f"rows {fit.get('rows')}, R² {fit.get('r2', float('nan')):.3f}; "
                  f"kept from {args.base}: {', '.join(fit.get('kept_base', {})) or 'none'}")
    if args.out:
        use = "advise --hudi-storage" if hudis(profile.writer) else "sim --storage"
        console.print(f"profile: {args.out}  (indexbench {use} {args.out})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from indexbench import api
    from metrics.contract import metrics_file
    from tableformat.errors import IndexBenchError

    if not args.dirs and not args.asv:
        raise IndexBenchError("indexbench report: give metrics DIR(s) and/or --asv RESULTS_DIR")
    for d in args.dirs:  # each refused in one line before any figure is drawn
        metrics_file(d)
    if args.out:
        check_out_dir(args.out)
    page = api.report(args.dirs, out=args.out, asv_results=args.asv, strict=args.strict)
    from reports.data import read_run_json, version_warning

    warning = version_warning({str(d): read_run_json(d) for d in args.dirs})
    if warning:  # on stderr: stdout stays the command's output
        errors.print(f"warning: {warning}", style="yellow", soft_wrap=True, highlight=False)
    console.print(f"report: {page}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    import indexes
    from indexbench import api
    from indexbench.spark import get_session
    from indexes import roles
    from tableformat.errors import IndexBenchError
    from tableformat.table import Table

    for uri in args.tables:  # a usage error (2), not a violation (1), before Spark starts
        table = Table(uri)
        if not table.exists():
            raise IndexBenchError(f"{uri}: no table here (no .hoodie/hoodie.properties)")
        # a table neither indexbench nor Hudi's writer made is refused here (its
        # properties); what an index of ours needs running (a server) is checked too
        if not table.config.written_by_hudi:
            roles.check_resources(indexes.from_table_config(table.config), uri)
    spark = get_session(args.master)
    failed = 0
    for uri in args.tables:
        problems = api.verify(uri, spark=spark)
        for p in problems:
            console.print(f"[red]✗[/red] {p}")
        if problems:
            failed += 1
            console.print(f"[red]{len(problems)} problem(s)[/red] in {uri}")
        elif Table(uri).config.written_by_hudi:
            console.print(f"[green]✓[/green] {uri}: every table-format invariant holds "
                          "(written by Hudi's own writer: no index of ours to check)")
        else:
            console.print(f"[green]✓[/green] {uri}: every invariant holds")
    return 1 if failed else 0


def cmd_list(args: argparse.Namespace) -> int:
    import indexes
    import workloads
    from indexes import roles

    # list form, one parameter per line: a key a user must type is never cut to fit
    console.print("[bold]indexes[/bold] (parameters: --set KEY=VALUE, shown with defaults)")
    for n in indexes.names():
        cls = indexes.index_class(n)
        console.print(f"\n[bold]{n}[/bold]  hoodie.index.type={cls.index_type}")
        for p in cls.PARAMS:
            default = str(p.default).lower() if p.type is bool else p.default
            console.print(f"  {p.key}={default}", soft_wrap=True, highlight=False)
        for s in roles.services(cls):
            when = ", ".join(w for w, on in (("after each commit", s.inline),
                                             (f"indexbench {s.command}", s.command)) if on)
            console.print(f"  table service [bold]{s.name}[/bold] ({when}): {s.help}",
                          soft_wrap=True, highlight=False)
    console.print("\n[bold]workload presets[/bold] (--workload NAME or a TOML path)")
    for name in workloads.presets():
        console.print(f"  [bold]{name}[/bold]: {workloads.describe(name)}")
    return 0


def cmd_rescale(args: argparse.Namespace) -> int:
    import indexes
    from indexbench.rescale import rescale_table

    options = {dest: getattr(args, dest) for dest in indexes.command_options("rescale")}
    if args.out:
        check_out_dir(args.out)
    row = rescale_table(args.table, out=args.out, master=args.master, dry_run=args.dry_run,
                        **options)
    if args.dry_run:
        for p in row["partitions"]:
            console.print(f"  {p['partition']}: {p['from_buckets']:,} → {p['to_buckets']:,} "
                          f"buckets, {p['files']} file(s) to rewrite", highlight=False)
        console.print(f"dry run: {len(row['partitions'])} partition(s), {row['files']} "
                      "file(s) to rewrite; nothing written")
        return 0
    console.print(
        f"[green]✓[/green] {row['mode']}: {row['from_buckets']:,} → {row['to_buckets']:,} "
        f"buckets in {row['partitions_touched']} partition(s), {row['records']:,} records, "
        f"{row['total_s']:.2f}s; read {row['files_read']} files / {row['bytes_read']:,} B, "
        f"wrote {row['files_written']} files / {row['bytes_written']:,} B, "
        f"shuffle {row['shuffle_bytes']:,} B (instant {row['instant']})")
    if args.out:
        console.print(f"metrics: {args.out}/metrics.parquet")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from indexbench.compact import compact_table

    row = compact_table(args.table, out=args.out, master=args.master)
    if row is None:
        console.print("nothing to compact: no file slice has log files")
        return 0
    console.print(
        f"[green]✓[/green] compaction: {row['slices_compacted']:,} file slice(s), "
        f"{row['log_files_compacted']:,} log file(s) / {row['log_bytes_compacted']:,} B "
        f"merged into {row['files_written']:,} base file(s) / {row['bytes_written']:,} B, "
        f"{row['records']:,} records, {row['total_s']:.2f}s (instant {row['instant']})")
    if args.out:
        console.print(f"metrics: {args.out}/metrics.parquet")
    return 0


def _print_fidelity(run_dir: str, simulate: bool = True) -> pd.DataFrame:
    """Check a run's tables against Hudi's (``fidelity.md`` in it); print the summary."""
    from indexbench import fidelity
    from reports.fidelity import summary

    checks = fidelity.check(run_dir, simulate=simulate)
    for line in summary(checks):
        console.print(line, highlight=False, soft_wrap=True)
    console.print(f"fidelity: {os.path.join(run_dir, fidelity.MD)}")
    return checks


def cmd_fidelity(args: argparse.Namespace) -> int:
    """A compare beside Hudi's writer (or a given one), checked figure by figure."""
    import indexes
    from indexes import roles
    from peers import hudi as hudi_peer
    from reports.fidelity import FAIL, FIDELITY_CSV
    from tableformat.errors import IndexBenchError

    if args.run_dir is None:  # the compare prints the checks before its report
        names = [n.strip() for n in (args.indexes or "").split(",") if n.strip()] or \
            hudi_peer.counterpart_indexes()
        check_indexes(names, {})
        without = [n for n in names if roles.hudi_counterpart(indexes.index_class(n)) is None]
        if without:
            raise IndexBenchError(f"--indexes {','.join(without)}: no Hudi counterpart to "
                                  "check against (these have one: "
                                  f"{', '.join(hudi_peer.counterpart_indexes())})")
        args.indexes = ",".join(names)
        args.sets = [f"{n}:{k}={v}" for n in names
                     for k, v in roles.hudi_counterpart(indexes.index_class(n)).fidelity_params
                     ] + list(args.sets or [])  # the run's own --set wins
        # the counterparts' series only: Hudi's default index (hudi-simple) has no
        # index of ours to check against
        args.peers = ",".join(f"{hudi_peer.NAME}-{n}" for n in names)
        args.keep_tables, args.query = True, False
        args.table_types = args.table_types or ["cow", "mor"]
        args.out = args.out or os.path.join("out", f"fidelity-{new_run_id()}")
        rc = cmd_compare(args)
        if rc:
            return rc
        status = pd.read_csv(os.path.join(args.out, FIDELITY_CSV))["status"]
    else:
        status = _print_fidelity(args.run_dir, simulate=args.sim)["status"]
    if args.reads:
        status = pd.concat([status, _print_hudi_reads(args.run_dir or args.out)["status"]])
    return 1 if args.strict and (status == FAIL).any() else 0


def _print_hudi_reads(run_dir: str) -> pd.DataFrame:
    """Hudi's four queries of every kept table of ours (``hudi-reads.md``); the summary."""
    from indexbench import hudi_reads

    checks = hudi_reads.check(run_dir)
    console.print(hudi_reads.summary(checks), highlight=False, soft_wrap=True)
    console.print(f"reads: {os.path.join(run_dir, hudi_reads.READS_MD)}")
    return checks


def cmd_hudi_read(args: argparse.Namespace) -> int:
    """Every kept table of a run read by Hudi's own reader, against the oracle."""
    from indexbench.hudi_reads import FAIL

    return 1 if (_print_hudi_reads(args.run_dir)["status"] == FAIL).any() else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line: every command's parser (:mod:`indexbench.cli_parsers`), each
    calling its ``cmd_*`` function here."""
    parser = _Parser(prog="indexbench", description=__doc__)
    add_commands(parser, {
        "run": cmd_run, "stream": cmd_stream, "compare": cmd_compare, "fidelity": cmd_fidelity,
        "hudi-read": cmd_hudi_read, "sim": cmd_sim, "advise": cmd_advise, "query": cmd_query,
        "calibrate": cmd_calibrate, "verify": cmd_verify, "rescale": cmd_rescale,
        "compact": cmd_compact, "report": cmd_report, "list": cmd_list})
    return parser


def main(argv: list[str] | None = None) -> int:
    """Exit codes: 0 done, 1 a violated invariant or a failed run, 2 a usage or input
    error, 130 interrupted; errors are one line on stderr (``--verbose`` adds tracebacks).
    A Ctrl-C at any point, parsing included, prints the one line of :mod:`interrupt`."""
    from indexbench import interrupt

    interrupt.interrupted.clear()  # an earlier in-process command's interrupt
    try:
        with interrupt.quiet_after_interrupt(verbose=_wants_verbose(argv)):
            try:
                return _main(argv)
            except KeyboardInterrupt:
                return _interrupted()
    except KeyboardInterrupt:  # a second Ctrl-C before the handler was installed
        return _interrupted()
    finally:
        interrupt.join_cancel()


def _wants_verbose(argv: list[str] | None) -> bool:
    return "--verbose" in (sys.argv[1:] if argv is None else argv) or \
        bool(os.environ.get("INDEXBENCH_VERBOSE"))


def _main(argv: list[str] | None) -> int:
    from indexbench import interrupt
    from tableformat.errors import IndexBenchError, WriteFailedError

    args = build_parser().parse_args(argv)
    env = {"INDEXBENCH_PLAIN_SIGINT": "1"}  # see indexbench.spark.PLAIN_SIGINT_ENV
    if args.verbose:
        env["INDEXBENCH_VERBOSE"] = "1"
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    quiet_py4j = logging.NullHandler()  # py4j logs tracebacks to the root logger
    logging.getLogger().addHandler(quiet_py4j)
    try:
        return args.func(args)
    except Exception as exc:  # noqa: BLE001 (a failed Spark job, a bug: one line, exit 1)
        if interrupt.interrupted.is_set():
            return _interrupted()  # raised while Ctrl-C unwound through py4j calls
        if isinstance(exc, WriteFailedError):
            _error(exc, args.verbose)
            return 1
        if isinstance(exc, (IndexBenchError, ValueError, FileNotFoundError)):
            _error(exc, args.verbose)
            return 2
        _error(exc, args.verbose, kind=f"{type(exc).__name__}: ")
        return 1
    finally:  # in-process callers (tests, notebooks) get their environment back
        logging.getLogger().removeHandler(quiet_py4j)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _interrupted() -> int:
    from indexbench import interrupt

    interrupt.interrupted.set()  # from here on, nothing but the line below is printed
    errors.print(interrupt.MESSAGE, highlight=False, soft_wrap=True)
    return 130


def _error(exc: BaseException, verbose: bool, kind: str = "") -> None:
    """One line however long (the terminal wraps it); [..] in it is not markup."""
    lines = [ln for ln in str(exc).splitlines() if ln.strip()] or [repr(exc)]
    more = "" if len(lines) == 1 or verbose else " (--verbose for the rest)"
    errors.print(f"[red]error:[/red] {escape(kind + lines[0].strip())}{more}", soft_wrap=True)
    if verbose:
        import traceback

        errors.print(escape("".join(traceback.format_exception(exc))), soft_wrap=True)


class _Parser(argparse.ArgumentParser):
    """argparse with the project's error convention: one ``error:`` line, exit 2."""

    def error(self, message: str) -> NoReturn:
        errors.print(f"[red]error:[/red] {escape(self.prog)}: {escape(message)} "
                     f"(see {escape(self.prog)} --help)", soft_wrap=True)
        raise SystemExit(2)


if __name__ == "__main__":
    sys.exit(main())
