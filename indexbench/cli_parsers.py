"""The command line's parsers: one builder per ``indexbench`` command, each adding its
subcommand, options and help texts (the commands themselves are :mod:`indexbench.cli`'s
``cmd_*`` functions, which :func:`add_commands` sets as each subcommand's ``func``).
The options indexes declare come from their declarations: a table service's
(:func:`add_service_options`), the simulator's (:mod:`indexbench.sim.options`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="uniform", help="preset name or path to a TOML file")
    p.add_argument("--batches", type=int, help="upsert batches after the initial load")
    p.add_argument("--batch-size", type=int, help="records per upsert batch")
    p.add_argument("--initial-records", type=int, help="records of the initial load (batch 0)")
    p.add_argument("--seed", type=int, help="workload seed")
    p.add_argument("--master", help="Spark master URL (default local[*])")
    p.add_argument("--out", help="metrics directory (default out/<workload>-<run id>)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", dest="sets",
                   help="index parameter, e.g. hoodie.bucket.index.num.buckets=64 "
                        "(prefix with INDEX: to aim at one index), or a table write "
                        "config (hoodie.compact.inline.max.delta.commits=3); repeatable")
    p.add_argument("--table-type", choices=("cow", "mor"),
                   help="table type of new tables: cow (copy-on-write, the default) or "
                        "mor (merge-on-read); an existing table keeps its own")
    p.add_argument("--throughput", action="store_true",
                   help="throughput mode: let Spark fuse the phases of each batch into "
                        "fewer jobs (total_s kept, per-phase timers empty; counters "
                        "unchanged)")


def _table_types(text: str) -> list[str]:
    """``cow,mor`` → the table types, each checked (one clear error for a typo)."""
    types = [t.strip().lower() for t in text.split(",") if t.strip()]
    bad = [t for t in types if t not in ("cow", "mor")]
    if bad or not types or len(set(types)) != len(types):
        raise argparse.ArgumentTypeError(f"expected cow, mor or cow,mor, not {text!r}")
    return types


def _index_name(text: str) -> str:
    """``--index``: a registered name; a typo gets the closest ones."""
    import indexes
    from tableformat.errors import IndexBenchError

    try:
        indexes.index_class(text)
    except IndexBenchError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _sizes(text: str) -> list[int]:
    """``1e6,1e7,1000000000`` → integers (scientific notation accepted)."""
    try:
        return [int(float(x)) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated sizes, not {text!r}") \
            from None


def add_service_options(p: argparse.ArgumentParser, command: str) -> None:
    """The options every index declares for ``command``'s table service, each help
    prefixed with the indexes that take it."""
    import indexes

    for declared in indexes.command_options(command).values():
        opt = declared[0][1]
        kwargs: dict[str, Any] = {
            "dest": opt.dest, "help": "; ".join(f"{name}: {o.help}" for name, o in declared)}
        if opt.type is not str:
            kwargs["type"] = opt.type
        if opt.choices:
            kwargs["choices"] = list(opt.choices)
        if opt.metavar:
            kwargs["metavar"] = opt.metavar
        if opt.repeatable:
            kwargs["action"] = "append"
        p.add_argument(opt.flag, **kwargs)


def _command(sub, name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002
    """A subcommand whose ``--help`` page opens with the same sentence as the list."""
    p = sub.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
    p.add_argument("--verbose", action="store_true",
                   help="show Spark's and the JVM's own logging (INDEXBENCH_VERBOSE=1)")
    return p


def _index_option(p: argparse.ArgumentParser) -> None:
    """``--index`` and ``--table`` of a command that runs one index."""
    import indexes

    p.add_argument("--index", required=True, type=_index_name,
                   help=f"one of {', '.join(indexes.names())}")
    p.add_argument("--table", help="table path or URI (default <out>/tables/<index>)")


def _parser_run(sub) -> argparse.ArgumentParser:
    p = _command(sub, "run", help="run a workload through one index")
    _index_option(p)
    _add_run_options(p)
    return p


def _parser_stream(sub) -> argparse.ArgumentParser:
    p = _command(sub, "stream", help="stream a workload's batches through one index with "
                                      "Structured Streaming, exactly once")
    _index_option(p)
    _add_run_options(p)
    p.add_argument("--rate", type=float, metavar="BATCHES_PER_S",
                   help="batches the producer lands per second (default: each batch once "
                        "the one before is committed)")
    p.add_argument("--trigger-interval", metavar="INTERVAL",
                   help="one micro-batch per interval, e.g. '2 seconds', holding what landed "
                        "meanwhile (default: one micro-batch per landed batch)")
    p.add_argument("--checkpoint", help="Spark checkpoint location (default "
                                        "<table>/.hoodie/.streaming_checkpoint)")
    p.add_argument("--landing", help="the folder the producer lands batches in (default "
                                     "<out>/landing)")
    return p


def _parser_compare(sub) -> argparse.ArgumentParser:
    import indexes

    p = _command(sub, "compare", help="run several indexes on identical batches")
    p.add_argument("--indexes", help=f"comma-separated (default {','.join(indexes.names())})")
    p.add_argument("--peers", metavar="NAME[,NAME]",
                   help="also run these on the same batches: 'hudi' (Apache Hudi's own "
                        "Spark writer, a series hudi-<index> beside each index Hudi has, "
                        "and hudi-simple; needs mvn, which fetches its bundle on first "
                        "use), 'delta' (delta-rs MERGE, series delta-merge), 'paimon' "
                        "(Apache Paimon, series paimon-fixed and paimon-dynamic), or one "
                        "series by name; delta and paimon need pip install -e \".[peers]\"")
    p.add_argument("--table-types", metavar="TYPE[,TYPE]", type=_table_types,
                   help="run every index once per table type on the same batches, e.g. "
                        "cow,mor (series bloom and bloom (mor))")
    p.add_argument("--keep-tables", action=argparse.BooleanOptionalAction, default=True,
                   help="keep the tables under OUT/tables after the run (default: keep; "
                        "--no-keep-tables deletes them once metrics and report are written)")
    p.add_argument("--query", action=argparse.BooleanOptionalAction, default=True,
                   help="after the upserts, query every table: 100 point lookups, the "
                        "group-by and a self-join on the index key (default: on; "
                        "--no-query skips it; `indexbench query` runs more)")
    _add_run_options(p)
    return p


def _parser_fidelity(sub) -> argparse.ArgumentParser:
    p = _command(sub, "fidelity", help="check our counters against Apache Hudi's own "
                                        "writer and the simulator on the same batches")
    p.add_argument("run_dir", nargs="?", metavar="RUN_DIR",
                   help="a compare run made with --peers hudi, tables kept (default: run "
                        "one first, into --out)")
    p.add_argument("--indexes", help="comma-separated (default: every index Hudi has)")
    p.add_argument("--table-types", metavar="TYPE[,TYPE]", type=_table_types,
                   help="table types of the compare it runs (default cow,mor)")
    p.add_argument("--sim", action=argparse.BooleanOptionalAction, default=True,
                   help="also simulate the same batches (the simulator's column)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a check misses its tolerance unexplained or a read "
                        "differs from the oracle")
    p.add_argument("--reads", action=argparse.BooleanOptionalAction, default=True,
                   help="also read every kept table of ours with Hudi's reader (snapshot, "
                        "read-optimized, incremental, time travel) against the oracle, "
                        "as `indexbench hudi-read` does")
    _add_run_options(p)
    return p


def _parser_hudi_read(sub) -> argparse.ArgumentParser:
    p = _command(sub, "hudi-read", help="read every kept table of a run with Apache Hudi's "
                                         "own Spark reader and hold each query against the "
                                         "workload's oracle; exit 1 if one differs")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run made with its tables kept")
    return p


def _parser_sim(sub) -> argparse.ArgumentParser:
    import indexes
    from indexbench.sim.options import declared_options

    p = _command(sub, "sim", help="simulate indexes without Spark (model table, up to "
                                   "billions of keys); same metrics contract, run_mode=sim")
    p.add_argument("--index", help="one index (same as --indexes NAME)")
    p.add_argument("--indexes", help=f"comma-separated (default {','.join(indexes.names())})")
    _add_run_options(p)
    p.add_argument("--storage", default="local",
                   help="cost profile: local, hdfs, s3 or a JSON file from `calibrate`")
    for opt in declared_options().values():  # the simulator's options indexes declare
        p.add_argument(opt.flag, dest=opt.name, type=opt.type, default=opt.default,
                       help=opt.help)
    p.add_argument("--parallelism", type=int,
                   help="cores of the modelled executors (default: this machine's)")
    p.add_argument("--sweep", type=_sizes, metavar="N1,N2,...",
                   help="run once per initial table size (batches scaled alike) into one "
                        "metrics file: the points of scale.png (cost vs table size)")
    p.add_argument("--jobs", type=int, default=1,
                   help="simulate this many indexes at once, one process each (default 1)")
    p.add_argument("--no-report", action="store_true", help="skip the HTML report")
    return p


def _parser_advise(sub) -> argparse.ArgumentParser:
    import indexes

    p = _command(sub, "advise", help="which index for a described table: every index's "
                                      "settings simulated along a growth horizon, ranked, "
                                      "with crossovers and the Hudi configuration")
    p.add_argument("--workload", default="uniform",
                   help="the table's shape: a preset name or a workload TOML")
    p.add_argument("--initial-records", type=int, help="records in the table now")
    p.add_argument("--batch-size", type=int, help="records per upsert batch")
    p.add_argument("--update-fraction", type=float,
                   help="share of a batch that updates existing keys (the rest is new keys)")
    p.add_argument("--distribution", help="which keys the updates hit: uniform, zipfian, "
                                          "scrambled_zipfian, latest, hotspot, sequential")
    p.add_argument("--key-format", help="record keys: uuid, time-ordered or ycsb")
    p.add_argument("--partitions", type=int, help="partitions of the table")
    p.add_argument("--partition-skew", type=float, help="zipf skew of partition sizes (0: even)")
    p.add_argument("--seed", type=int, help="workload seed")
    p.add_argument("--batches-per-day", type=float, default=24.0,
                   help="upsert batches a day (default 24)")
    p.add_argument("--horizon-days", type=float, default=365.0,
                   help="days the table grows for (default 365)")
    p.add_argument("--table-type", choices=("cow", "mor"), default="cow",
                   help="copy-on-write (default) or merge-on-read")
    p.add_argument("--storage", default="local",
                   help="cost profile: local, hdfs, s3 or a JSON file from `calibrate`")
    p.add_argument("--hudi-storage", metavar="FILE.json",
                   help="a profile `calibrate --writer hudi` fitted to Apache Hudi's own "
                        "writer: the indexes Hudi has also ranked as Hudi's writer runs "
                        "them, and its best configuration")
    p.add_argument("--indexes", help=f"comma-separated (default {','.join(indexes.names())})")
    p.add_argument("--exact-limit", type=int, default=1_000_000,
                   help="largest table simulated key by key; larger sizes are extrapolated "
                        "from the smaller ones (default 1,000,000)")
    p.add_argument("--points", type=int, default=6,
                   help="table sizes from now to the horizon (default 6)")
    p.add_argument("--probe-batches", type=int, default=2,
                   help="upsert batches simulated at each size (default 2)")
    p.add_argument("--parallelism", type=int, default=2,
                   help="cores of the modelled executors (default 2)")
    p.add_argument("--jobs", type=int, default=1,
                   help="simulations at once, one process each (default 1)")
    p.add_argument("--out", help="answer directory (default out/advise-<run id>)")
    p.add_argument("--check", action="store_true",
                   help="also run the indexes at the chosen settings on real Spark at the "
                        "table's size now and hold the ranking against the measured one "
                        "(OUT/check)")
    p.add_argument("--check-batches", type=int, default=3,
                   help="upsert batches the check runs after the load (default 3; their "
                        "spread is the measured noise)")
    p.add_argument("--check-peers", default="",
                   help="'hudi': Apache Hudi's own writer beside each index Hudi has, in the "
                        "check (its ranking, and its counters against ours)")
    p.add_argument("--master", help="Spark master URL of the check (default local[*])")
    return p


def _parser_query(sub) -> argparse.ArgumentParser:
    p = _command(sub, "query", help="point lookups, group-by and join on tables run/compare "
                                     "wrote: files read, latency, shuffle bytes per index")
    p.add_argument("tables", nargs="+", metavar="TABLE")
    p.add_argument("--queries", default="lookup,groupby,join",
                   help="comma-separated: lookup, groupby, join (default all)")
    p.add_argument("--keys", type=int, default=1000,
                   help="keys to look up: half inserted by the workload, half never (default "
                        "1000)")
    p.add_argument("--batch-keys", type=int, default=100,
                   help="keys per lookup batch, one Spark job each (default 100)")
    p.add_argument("--repeat", type=int, default=3,
                   help="runs of each group-by/join plan; seconds are their median (default 3)")
    p.add_argument("--join-with", metavar="TABLE",
                   help="join each table with this one (default: with itself)")
    p.add_argument("--query-type", choices=("snapshot", "read_optimized"),
                   help="Hudi's hoodie.datasource.query.type: snapshot (default: base and "
                        "log files merged) or read_optimized (base files only)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", dest="sets",
                   help="a query option under Hudi's key: "
                        "hoodie.datasource.query.type=snapshot|read_optimized")
    p.add_argument("--workload", help="the workload that wrote the tables (default: the "
                                      "run.json of their run); with --batches etc. as run")
    p.add_argument("--batches", type=int)
    p.add_argument("--batch-size", type=int)
    p.add_argument("--initial-records", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--master", help="Spark master URL (default local[*])")
    p.add_argument("--out", help="metrics directory to append to (default: the tables' run "
                                 "directory, else out/query-<run id>)")
    return p


def _parser_calibrate(sub) -> argparse.ArgumentParser:
    p = _command(sub, "calibrate", help="fit the simulator's CPU/disk constants to real runs")
    p.add_argument("run_dir", nargs="+", metavar="RUN_DIR",
                   help="metrics directory of a real run (run/compare --out); several are "
                        "fitted as one")
    p.add_argument("--out", help="write the fitted profile JSON here")
    p.add_argument("--base", default="local", help="profile whose other constants are kept")
    p.add_argument("--cores", type=int, help="executor cores of that run (default: this "
                                             "machine's)")
    from indexbench.sim.profiles import CALIBRATED_WRITERS, OUR_WRITER

    p.add_argument("--writer", default=OUR_WRITER, choices=CALIBRATED_WRITERS,
                   help="whose rows to fit: ours (default) or, from runs with --peers "
                        "hudi, Apache Hudi's own writer (the series mirroring an index): "
                        "the profile of `advise --hudi-storage`; give --base the profile "
                        "of our writer on the same machine")
    return p


def _parser_verify(sub) -> argparse.ArgumentParser:
    p = _command(sub, "verify", help="check tables' invariants; exit 1 if any is violated")
    p.add_argument("tables", nargs="+", metavar="TABLE")
    p.add_argument("--master")
    return p


def _parser_rescale(sub) -> argparse.ArgumentParser:
    p = _command(sub, "rescale", help="rescale a table's buckets (one replacecommit; "
                                       "the table's index must declare a rescale service)")
    p.add_argument("table")
    add_service_options(p, "rescale")
    p.add_argument("--dry-run", action="store_true",
                   help="print which partitions would be rewritten and how many files; "
                        "write nothing")
    p.add_argument("--out", help="append the metrics row to DIR/metrics.parquet")
    p.add_argument("--master")
    return p


def _parser_compact(sub) -> argparse.ArgumentParser:
    p = _command(sub, "compact", help="compact a merge-on-read table: merge every file "
                                       "slice's log files into a new base file")
    p.add_argument("table")
    p.add_argument("--out", help="append the metrics row to DIR/metrics.parquet")
    p.add_argument("--master")
    return p


def _parser_report(sub) -> argparse.ArgumentParser:
    p = _command(sub, "report", help="figures + index.html from metrics dirs (and asv results)")
    p.add_argument("dirs", nargs="*", metavar="DIR", help="metrics directories of runs")
    p.add_argument("--out", help="report directory (default DIR/report, or ./report)")
    p.add_argument("--asv", metavar="RESULTS_DIR", help="asv results dir: chart each track_*, "
                   "time_* and peakmem_* benchmark over commits")
    p.add_argument("--strict", action="store_true",
                   help="unknown extra metrics columns are errors, not warnings")
    return p


def _parser_list(sub) -> argparse.ArgumentParser:
    return _command(sub, "list", help="indexes, their parameters and the workload presets")


# every command in the order ``indexbench --help`` lists them
PARSERS: dict[str, Callable[[Any], argparse.ArgumentParser]] = {
    "run": _parser_run, "stream": _parser_stream, "compare": _parser_compare,
    "fidelity": _parser_fidelity, "hudi-read": _parser_hudi_read, "sim": _parser_sim,
    "advise": _parser_advise,
    "query": _parser_query, "calibrate": _parser_calibrate, "verify": _parser_verify,
    "rescale": _parser_rescale, "compact": _parser_compact, "report": _parser_report,
    "list": _parser_list}


def add_commands(parser: argparse.ArgumentParser,
                 handlers: Mapping[str, Callable[[argparse.Namespace], int]]) -> None:
    """Every command's subparser, its ``func`` the handler of its name."""
    sub = parser.add_subparsers(dest="command", required=True)
    for name, build in PARSERS.items():
        build(sub).set_defaults(func=handlers[name])
