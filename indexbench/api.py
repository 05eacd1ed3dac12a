"""Importable entry points: everything a CLI command does, for notebooks and asv.

``run``, ``compare`` and ``sim`` return pandas DataFrames in the metrics contract
(docs/metrics.md). Spark is imported only by the functions that run it, so ``sim``,
``calibrate`` and ``report`` work where pyspark cannot be imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import indexes
import peers as peerlib
import workloads
from indexbench.batches import BATCH_KEY, WORKLOAD_KEY, committed_batches, workload_fingerprint
from indexbench.sim.profiles import CALIBRATED_WRITERS, OUR_WRITER
from indexbench.workload_args import load_workload
from indexes import roles
from metrics import contract as m
from metrics.contract import summary
from tableformat.errors import IndexBenchError
from tableformat.table_type import check_table_type, short_name

Progress = Callable[[dict[str, Any]], None]


OUT_ENV = "INDEXBENCH_OUT"  # where runs given no --out go (default: out/ in the cwd)


def default_out(workload_name: str, run_id: str) -> str:
    """``out/<workload>-<run id>`` (``$INDEXBENCH_OUT/...`` when set): the directory names
    the run_id its run.json holds."""
    return os.path.join(os.environ.get(OUT_ENV) or "out", f"{workload_name}-{run_id}")


def _resume_point(tbl, fingerprint: str, index: str, table_uri: str,
                  notify: Callable[[str], None] | None) -> int:
    """The first batch of the workload the table does not hold yet (``run`` and
    ``stream`` resume there); ``notify`` hears of the rollback done on opening and of
    the batches skipped."""
    first = committed_batches(tbl.snapshot(), fingerprint, tbl.uri)
    pending, deleted = tbl.rolled_back
    if notify and pending:
        notify(f"{index}: rolled back unfinished instant(s) {', '.join(pending)} "
               f"({len(deleted)} file(s) deleted)")
    if notify and first:
        notify(f"{index}: resuming at batch {first}: batches 0–{first - 1} of this "
               f"workload are already committed in {table_uri}")
    return first


def _finish_pending(spark, tbl, idx, w: workloads.Workload, rows: list[dict[str, Any]],
                    out: str, run_id: str, table_type: str) -> None:
    """What the services left pending (a consistent-hashing resize) completes before the
    writer lets go (the next writer would roll it back); its rows join ``rows``."""
    from indexbench import services

    for extra in services.finish_pending(spark, tbl, idx):
        rows.append({"run_id": run_id, "index": idx.name, "workload": w.name,
                     "table_type": table_type, **extra,
                     "batch": w.batches if extra.get("batch") is None else extra["batch"]})
        m.write_metrics(out, rows)


def run(index: str = indexes.DEFAULT_INDEX, workload: str | workloads.Workload = "uniform", *,
        batches: int | None = None, batch_size: int | None = None,
        initial_records: int | None = None, seed: int | None = None,
        params: dict[str, Any] | None = None, master: str | None = None,
        table: str | None = None, out: str | None = None, spark=None,
        progress: Progress | None = None, run_id: str | None = None,
        notify: Callable[[str], None] | None = None, timing: str = "phases") -> pd.DataFrame:
    """Run a workload's batches through one index; returns its metrics rows.

    The table resumes: batches a previous run of the same workload committed are skipped,
    and an unfinished instant is rolled back first; ``notify`` is told of both.
    ``timing="total"``: throughput mode (:func:`indexbench.driver.upsert`): the phases
    of a batch fuse into fewer Spark jobs, ``total_s`` is kept, the phase timers are empty.
    """
    from indexbench import services
    from indexbench.driver import TIMINGS, open_table, upsert
    from indexbench.failed_write import undone_on_failure
    from indexbench.spark import get_session, session_facts

    if timing not in TIMINGS:
        raise IndexBenchError(f"timing must be one of {', '.join(TIMINGS)}, not {timing!r}")
    w = load_workload(workload, batches, batch_size, initial_records, seed)
    run_id = run_id or m.new_run_id()
    out = out or default_out(w.name, run_id)
    table_uri = table or os.path.join(out, "tables", index)
    spark = spark or get_session(master)
    tbl, idx = open_table(table_uri, index, params)
    table_type = short_name(tbl.config.table_type)
    fingerprint = workload_fingerprint(w)
    existing = m.existing_rows(out)
    rows: list[dict[str, Any]] = existing
    from indexbench.sim.driver import size_notes

    notes = size_notes([index], w, {index: params or {}})

    def write_run_json() -> None:
        m.write_run_json(out, {"run_id": run_id, "command": "run", "workload": vars(w),
                               "indexes": {index: idx.describe()}, **session_facts(spark),
                               "tables": {index: table_uri}, "notes": notes})

    write_run_json()  # before the first batch: a run that fails still says what it ran
    from workloads.spark_source import batch_df

    # what the index needs running (an external server) lives as long as the run
    with roles.resources(idx, tbl), tbl:
        first = _resume_point(tbl, fingerprint, index, table_uri, notify)
        for b in range(first, w.batches + 1):
            batch = batch_df(spark, w, b)
            # the upsert undoes its own instant; this also covers what its commit set off
            with undone_on_failure(spark, tbl, f"batch {b}"):
                result = upsert(spark, tbl, idx, batch, batch_no=b, timing=timing,
                                extra_metadata={WORKLOAD_KEY: fingerprint, BATCH_KEY: str(b)})
            row = {"run_id": run_id, "index": index, "workload": w.name, "operation": "upsert",
                   "table_type": table_type, **result.metrics}
            rows.append(row)
            m.write_metrics(out, rows)
            if progress:
                progress(row)
            # inline table services after the commit, through the runner (which undoes
            # a failed one): an auto-rescale, a resize, an RLI compaction
            for extra in services.run_inline(spark, tbl, idx, batch_no=b):
                rows.append({"run_id": run_id, "index": index, "workload": w.name,
                             "table_type": table_type, **extra})
                m.write_metrics(out, rows)
        # what the services left pending (a consistent-hashing resize) completes before
        # the writer lets go: the next writer would roll it back
        _finish_pending(spark, tbl, idx, w, rows, out, run_id, table_type)
    write_run_json()  # again: parameters resolved while running (dynamic-rli's assigners)
    df = m.to_frame(rows)
    df.attrs["describe"] = idx.describe()
    mine = (df["index"] == index) & (df["table_type"].fillna("cow") == table_type)
    return df[mine].reset_index(drop=True)


def stream(index: str = indexes.DEFAULT_INDEX, workload: str | workloads.Workload = "uniform",
           *, batches: int | None = None, batch_size: int | None = None,
           initial_records: int | None = None, seed: int | None = None,
           params: dict[str, Any] | None = None, master: str | None = None,
           table: str | None = None, out: str | None = None, spark=None,
           progress: Progress | None = None, run_id: str | None = None,
           notify: Callable[[str], None] | None = None, timing: str = "phases",
           rate: float | None = None, trigger_interval: str | None = None,
           checkpoint: str | None = None, landing: str | None = None) -> pd.DataFrame:
    """``indexbench stream``: the workload's batches 0..``batches`` land as files (at
    ``rate`` batches per second; None: each once the one before is committed) and a
    Structured Streaming query upserts them, exactly once, through the same driver as
    :func:`run` (docs/streaming.md); returns the rows of its micro-batches.

    Rerunning the same call (same ``out``) after a crash resumes: landed batches are not
    landed again, Spark's checkpoint (``checkpoint``, default under the table's
    ``.hoodie/``) replays what it had not committed, and a micro-batch the table already
    committed is skipped. ``trigger_interval`` (e.g. ``"2 seconds"``): one micro-batch per
    interval holding whatever landed meanwhile; default one per landed batch.
    """
    from indexbench import stream as streaming

    streaming.check_options(rate, trigger_interval)
    from indexbench.driver import TIMINGS

    if timing not in TIMINGS:
        raise IndexBenchError(f"timing must be one of {', '.join(TIMINGS)}, not {timing!r}")
    w = load_workload(workload, batches, batch_size, initial_records, seed)
    from indexbench.driver import open_table
    from indexbench.spark import get_session, session_facts

    run_id = run_id or m.new_run_id()
    out = out or default_out(w.name, run_id)
    table_uri = table or os.path.join(out, "tables", index)
    landing_dir = landing or os.path.join(out, "landing")
    tbl, idx = open_table(table_uri, index, params)
    checkpoint = checkpoint or streaming.default_checkpoint(tbl.uri)
    spark = spark or get_session(master)
    table_type = short_name(tbl.config.table_type)
    rows: list[dict[str, Any]] = m.existing_rows(out)
    settings = {"landing": os.path.abspath(landing_dir), "checkpoint": checkpoint,
                "rate": rate, "trigger_interval": trigger_interval}

    def write_run_json() -> None:
        m.write_run_json(out, {"run_id": run_id, "command": "stream", "workload": vars(w),
                               "indexes": {index: idx.describe()}, **session_facts(spark),
                               "tables": {index: table_uri}, "stream": settings})

    write_run_json()
    with roles.resources(idx, tbl), tbl:
        first = _resume_point(tbl, workload_fingerprint(w), index, table_uri, notify)
        streaming.run_stream(spark, tbl, idx, w, landing_dir=landing_dir,
                             checkpoint=checkpoint, rate=rate,
                             trigger_interval=trigger_interval, run_id=run_id, out=out,
                             rows=rows, first=first, timing=timing, progress=progress,
                             notify=notify)
        # what the services left pending completes before the writer lets go, as in run
        _finish_pending(spark, tbl, idx, w, rows, out, run_id, table_type)
    write_run_json()
    df = m.to_frame(rows) if rows else pd.DataFrame(columns=m.CONTRACT_COLUMNS)
    df.attrs["describe"] = idx.describe()
    mine = (df["index"] == index) & (df["table_type"].fillna("cow") == table_type)
    return df[mine].reset_index(drop=True)


def compare(indexes_: Sequence[str] | None = None, workload: str | workloads.Workload = "uniform",
            *, params: dict[str, dict[str, Any]] | None = None, out: str | None = None,
            spark=None, master: str | None = None, progress: Progress | None = None,
            peers: Sequence[str] = (), run_id: str | None = None,
            notify: Callable[[str], None] | None = None, query_phase: bool = True,
            table_types: Sequence[str] = (), timing: str = "phases",
            peer_params: dict[str, dict[str, str]] | None = None,
            peer_index_params: dict[str, dict[str, dict[str, Any]]] | None = None,
            **sizes: Any) -> pd.DataFrame:
    """Run every index on identical batches (same workload and seed), one metrics file.

    ``peers`` (e.g. ``("delta",)``, see ``peers.names()``) adds yardsticks: the same
    batches through another table format's own upsert, one more series each (its
    ``index`` is the peer's series name, e.g. ``delta-merge``). A peer whose package is
    missing is refused before anything runs. ``query_phase``: after the upserts, a small
    query phase on every index's table (:data:`COMPARE_QUERY`: lookups, the group-by
    and a self-join; rows with ``operation = "query"``). ``table_types`` (e.g.
    ``("cow", "mor")``): run every index once per table type on the same batches, each
    in its own table (``tables/<index>-<type>`` when there are several; series
    ``bloom`` and ``bloom (mor)``); empty: each index's own (``params`` may set
    ``hoodie.table.type``). ``timing``: as :func:`run`'s. ``peer_params``: a peer's
    own settings (``{"hudi": {"hoodie.metadata.enable": "false"}}``); ``hudi`` writes
    ``hudi-<index>`` for each index in the run that Hudi has, per table type, and
    ``hudi-simple`` (docs/peers.md). ``peer_index_params``: per peer, the parameters its
    series mirror for an index, where they are not the index's own ``params``
    (``{"hudi": {index: params}}``: ``advise --check`` runs Hudi's writer at the settings
    its own model chose); a series whose settings then differ from our table's is not
    held to it by ``fidelity`` (``same_params`` false in run.json's peers).
    """
    from indexbench.sim.driver import size_notes
    from indexbench.spark import get_session, session_facts

    peer_names = list(peers)
    peerlib.check(peer_names)
    for name, settings in (peer_params or {}).items():
        peerlib.check_settings(name, settings)
    names = list(indexes_ or default_compare_indexes())
    mirrored = {peer: {**(params or {}), **given}
                for peer, given in (peer_index_params or {}).items()}
    plan = peerlib.planned(peer_names, names, table_types, params, peer_params)
    peerlib.prepare(peer_names, notify)
    w = load_workload(workload, **sizes)
    run_id = run_id or m.new_run_id()
    out = out or default_out(w.name, run_id)
    spark = spark or get_session(master)
    frames, described, tables = [], {}, {}
    types = [check_table_type(t) for t in table_types] or [None]
    for tt in types:
        for name in names:
            p = dict((params or {}).get(name) or {})
            if tt is not None:
                p["hoodie.table.type"] = tt
            key = name if len(types) == 1 else f"{name}-{short_name(tt)}"
            tables[key] = os.path.join(out, "tables", key)
            frames.append(run(name, w, params=p, out=out, spark=spark, table=tables[key],
                              progress=progress, run_id=run_id, notify=notify,
                              timing=timing))
            described[name] = frames[-1].attrs["describe"]
    peer_info: dict[str, Any] = {}
    try:
        for s in plan:
            if s.absent:
                peer_info[s.label] = {"peer": s.peer, "absent": s.absent}
                _tell(notify, f"peer {s.label}: no such table ({s.absent})")
                continue
            frame, peer_info[s.label] = _compare_peer(
                s.peer, s.series, w, out=out, params=mirrored.get(s.peer, params),
                progress=progress,
                run_id=run_id, notify=notify, indexes_rows=frames, table_type=s.table_type,
                settings=(peer_params or {}).get(s.peer), several_types=len(types) > 1)
            frames.append(frame)
            follows = peerlib.PEERS[s.peer].mirrored_index(s.series)
            theirs = (peer_index_params or {}).get(s.peer, {})
            if follows and follows in theirs:
                peer_info[s.label]["same_params"] = _same_settings(
                    follows, theirs[follows], (params or {}).get(follows) or {})
    finally:
        peerlib.stop_all()
    if query_phase:
        frames.append(query(list(tables.values()),
                            workload=w, out=out, spark=spark, run_id=run_id, **COMPARE_QUERY))
    m.write_run_json(out, {"run_id": run_id, "command": "compare", "workload": vars(w),
                           "indexes": described,
                           "tables": tables,
                           **({"peers": peer_info} if peer_info else {}),
                           **session_facts(spark),
                           "notes": size_notes(names, w, params)})
    return pd.concat(frames, ignore_index=True)


def _same_settings(name: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two parameter sets run ``name`` alike: the index's resolved parameters
    (defaults filled, keys spelled either way) and the table's write configs."""
    from tableformat.write_config import WriteConfig

    def resolved(p: dict[str, Any]) -> tuple[Any, Any]:
        rest = dict(p)
        config = WriteConfig.pop_from(rest)
        return indexes.get(name, **rest).params, config

    return resolved(a) == resolved(b)


def _compare_peer(name: str, series: str, w: workloads.Workload, *, out: str,
                  params: dict[str, dict[str, Any]] | None, progress: Progress | None,
                  run_id: str, notify: Callable[[str], None] | None,
                  indexes_rows: Sequence[pd.DataFrame], table_type: str | None = None,
                  settings: dict[str, str] | None = None, several_types: bool = False
                  ) -> tuple[pd.DataFrame, dict]:
    """One peer series of a compare, after the indexes: its rows and its run.json entry.

    A failure of the peer's library is one line (``notify`` and run.json's ``error``),
    never the end of the compare: the indexes' rows, the query phase and the report stay.
    The series' ``table_records`` after every batch are checked against the indexes'
    (identical batches: the same records must survive); a difference is one line too.
    """
    info: dict[str, Any] = {"peer": name}
    try:
        p = peerlib.get(name)
        per_type = {"table_type": table_type} if table_type else {}
        loc = p.location(os.path.join(out, "tables"), series,
                         **({"table_type": table_type} if several_types and table_type
                            else {}))
        info.update({**p.describe(series), "table": loc})
        frame = run_peer(series, w, out=out, table=loc, progress=progress, run_id=run_id,
                         index_params=params, info=info, settings=settings,
                         keep_running=True, **per_type)
    except Exception as e:  # noqa: BLE001 - a peer's library fails in its own ways
        first = (str(e).strip().splitlines() or [""])[0][:300]
        info["error"] = f"{type(e).__name__}: {first}"
        _tell(notify, f"peer {series} failed, the indexes' results stand: {info['error']}")
        rows = m.existing_rows(out)
        df = m.to_frame(rows) if rows else pd.DataFrame(columns=m.CONTRACT_COLUMNS)
        mine = df["index"] == series
        if table_type and "table_type" in df.columns:
            mine &= df["table_type"] == short_name(table_type)
        return df[mine].reset_index(drop=True), info
    check = peer_records_check(frame, indexes_rows)
    if check:
        info["records_check"] = check
        if not check.startswith("equal"):
            _tell(notify, f"peer {series}: {check}")
    return frame, info


def _tell(notify: Callable[[str], None] | None, text: str) -> None:
    """One line to the user: through ``notify`` (the CLI's console), else a warning."""
    if notify:
        notify(text)
    else:
        import logging

        logging.getLogger("indexbench").warning(text)


def peer_records_check(peer: pd.DataFrame, indexes_rows: Sequence[pd.DataFrame]) -> str | None:
    """Whether a peer's ``table_records`` equal the indexes' after every batch (None: no
    index rows to compare with)."""
    frames = [f for f in indexes_rows if len(f)]
    if not frames or not len(peer):
        return None
    ours = pd.concat(frames, ignore_index=True)
    if "operation" in ours.columns:
        ours = ours[ours["operation"].fillna("upsert") == "upsert"]
    if "table_type" in ours.columns:  # a MOR table's count holds log copies until compaction
        ours = ours[ours["table_type"].fillna("cow") != "mor"]
    ours = ours.dropna(subset=["table_records"])
    per_batch = ours.groupby("batch")["table_records"].agg(["min", "max"])
    # one row per batch (a rerun into the same out appends rows: the last one counts)
    theirs = peer.dropna(subset=["table_records"]).drop_duplicates(
        "batch", keep="last").set_index("batch")["table_records"]
    bad = [f"batch {int(b)}: {int(theirs[b])} vs {int(r['min'])}"
           + ("" if r["min"] == r["max"] else f"..{int(r['max'])}")
           for b, r in per_batch.iterrows() if b in theirs.index
           and not (r["min"] == r["max"] == theirs[b])]
    if bad:
        return "table_records differ from the indexes' at " + "; ".join(bad)
    return f"equal to the indexes' at batches {', '.join(str(int(b)) for b in theirs.index)}"


# compare's query phase: small, so it adds seconds, not minutes, to a compare
COMPARE_QUERY = {"keys": 100, "batch_keys": 50, "join_unique_only": True}


def run_peer(peer: str = "delta", workload: str | workloads.Workload = "uniform", *,
             out: str | None = None, table: str | None = None,
             progress: Progress | None = None, run_id: str | None = None,
             index_params: dict[str, dict[str, Any]] | None = None,
             info: dict[str, Any] | None = None, table_type: str | None = None,
             settings: dict[str, str] | None = None, keep_running: bool = False,
             **sizes: Any) -> pd.DataFrame:
    """A workload's batches through a peer (``peers.get(peer)``, no Spark); its rows.

    ``peer`` is a peer (every series of it, e.g. ``paimon``) or one series
    (``paimon-dynamic``). The batches are ``workloads.generator``'s, the same rows the
    Spark runs get. Rows are appended to ``out``'s metrics file; a series' table
    (default: the peer's ``location`` under ``<out>/tables``) resumes like an index's.
    ``index_params`` (index → ``--set`` overrides) reach a peer that mirrors an index's
    settings; ``info`` (one series) receives what its table resolved, for run.json.
    ``table_type`` and ``settings`` reach a peer that takes them (``hudi``). What a peer
    keeps running across series (Hudi's JVM) is stopped at the end unless
    ``keep_running`` (a compare stops it after its last series).
    """
    todo = peerlib.runs([peer])
    if table is not None and len(todo) > 1:
        raise IndexBenchError(f"peer {peer!r} writes {len(todo)} series: name one with "
                              "a table, or leave the table to the peer")
    w = load_workload(workload, **sizes)
    run_id = run_id or m.new_run_id()
    out = out or default_out(w.name, run_id)
    extra = {k: v for k, v in (("table_type", table_type), ("settings", settings))
             if v is not None}
    written = []
    try:
        for name, series in todo:
            p = peerlib.get(name)
            loc = table or p.location(os.path.join(out, "tables"), series)
            tbl = p.open_table(loc, workload_fingerprint(w), series=series,
                               index_params=index_params, **extra)
            try:
                _peer_batches(tbl, w, series, out=out, run_id=run_id, progress=progress)
            finally:
                tbl.close()
                if info is not None:
                    info.update(tbl.describe())
            written.append(series)
    finally:
        if not keep_running:
            peerlib.stop_all()
    rows = m.existing_rows(out)
    df = m.to_frame(rows) if rows else pd.DataFrame(columns=m.CONTRACT_COLUMNS)
    mine = df["index"].isin(written)
    if table_type and "table_type" in df.columns:
        mine &= df["table_type"] == short_name(table_type)
    return df[mine].reset_index(drop=True)


def _peer_batches(tbl: Any, w: workloads.Workload, series: str, *, out: str, run_id: str,
                  progress: Progress | None) -> None:
    """The batches a peer's table has not committed yet, one metrics row each."""
    rows = m.existing_rows(out)
    for b in range(tbl.committed_batches(), w.batches + 1):
        row = {"run_id": run_id, "index": series, "workload": w.name, **tbl.upsert(w, b)}
        rows.append(row)
        m.write_metrics(out, rows)
        if progress:
            progress(row)


def default_compare_indexes() -> list[str]:
    return indexes.names()


def sim(indexes_: Sequence[str] | str | None = None,
        workload: str | workloads.Workload = "uniform", *,
        params: dict[str, dict[str, Any]] | None = None, out: str | None = None,
        storage: str = "local", **options: Any) -> pd.DataFrame:
    """``indexbench sim``: the indexes' cores over a model table, no Spark, no data files.

    Same batches as ``run``/``compare``; rows carry ``run_mode = "sim"`` and modelled
    bytes/seconds as ``model_*`` columns (``storage``: local, hdfs, s3 or a profile JSON
    written by :func:`calibrate`).
    """
    from indexbench.sim.driver import simulate_compare

    names = [indexes_] if isinstance(indexes_, str) else indexes_
    return simulate_compare(names, workload, params=params, out=out, storage=storage,
                            **options)


def advise(workload: str | workloads.Workload = "uniform", *,
           initial_records: int | None = None, batch_size: int | None = None,
           seed: int | None = None, batches_per_day: float = 24.0,
           horizon_days: float = 365.0, table_type: str = "cow", storage: str = "local",
           indexes: Sequence[str] | None = None, exact_limit: int = 1_000_000,
           points: int = 6, probe_batches: int = 2, parallelism: int = 2, jobs: int = 1,
           out: str | None = None, check: bool = False, check_batches: int = 3,
           check_peers: Sequence[str] = (), master: str | None = None,
           hudi_storage: str | None = None,
           notify: Callable[[str], None] | None = None, **shape: Any):
    """``indexbench advise``: which index for a table shaped like ``workload`` (its
    fields in ``shape`` override it: ``update_fraction``, ``key_format``, ...), with
    ``initial_records`` now, growing by a batch's new keys ``batches_per_day`` times a
    day for ``horizon_days``. Returns the answer (:class:`reports.advice.Answer`) and
    the path of its page. ``check``: also run the indexes at the chosen settings on
    real Spark at the size now (``check_batches`` batches, ``check_peers``: ``("hudi",)``
    for Hudi's own writer beside them) and hold the ranking against the measured one
    (``answer.check``). ``hudi_storage``: a profile ``calibrate(writer="hudi")`` fitted
    to Apache Hudi's own writer: the indexes Hudi has ranked as Hudi's writer runs them
    too (``answer.hudi``), and the check holds Hudi's measured ranking to it."""
    from indexbench.advise.check import CheckRequest
    from indexbench.advise.request import AdviceRequest
    from indexbench.advise.run import advise as run_advice

    w = load_workload(workload, None, batch_size, initial_records, seed)
    try:
        w = w.with_overrides(**shape) if shape else w
    except (TypeError, ValueError) as exc:
        raise IndexBenchError(f"advise: {exc}") from None
    req = AdviceRequest(w, batches_per_day=batches_per_day, horizon_days=horizon_days,
                        table_type=table_type, storage=storage, indexes=tuple(indexes or ()),
                        exact_limit=exact_limit, points=points, probe_batches=probe_batches,
                        parallelism=parallelism, hudi_storage=hudi_storage)
    creq = CheckRequest(batches=check_batches, peers=tuple(check_peers), master=master)
    if check:
        peerlib.check(list(creq.peers))

    def measure(names: list[str], wl: workloads.Workload, params: dict[str, dict],
                where: str, peer_index_params: dict[str, dict[str, dict]]) -> pd.DataFrame:
        return compare(names, wl, params=params, out=where, master=master,
                       peers=creq.peers, notify=notify, query_phase=True,
                       peer_index_params=peer_index_params or None)

    return run_advice(req, out=out, jobs=jobs, check=creq if check else None,
                      measure=measure)


def _modelled_record_bytes(run_dir: str) -> tuple[float, float] | None:
    """The simulator's base-file model for the workload a run dir's run.json names:
    (bytes per record, bytes per file)."""
    from indexbench.sim.record_size import measure

    try:
        with open(os.path.join(run_dir, "run.json")) as f:
            spec = json.load(f)["workload"]
        rb = measure(workloads.Workload(**spec))
    except (OSError, KeyError, TypeError, ValueError):
        return None
    return rb.base_record, rb.base_file


def _rows_of_writer(df: pd.DataFrame, writer: str) -> pd.DataFrame:
    """The rows ``writer`` wrote: the driver's (not simulated, not a peer's), or a peer's
    series that mirror one of our indexes (``peer_of``: Hudi's ``hudi-<index>``, whose
    counters are Hudi's own; ``hudi-simple`` mirrors none, its tagging counts nothing)."""
    mode = df["run_mode"].fillna("run") if "run_mode" in df.columns else pd.Series(
        "run", index=df.index)
    if writer == OUR_WRITER:
        return df[mode == "run"]
    who = df["peer_writer"].astype("string") if "peer_writer" in df.columns else \
        pd.Series(pd.NA, index=df.index, dtype="string")
    mirrors = df["peer_of"].notna() if "peer_of" in df.columns else False
    return df[(mode == "peer") & who.str.startswith(f"{writer} ").fillna(False) & mirrors]


def calibrate(run_dir: str | Sequence[str], out: str | None = None, base: str = "local",
              cores: int | None = None, writer: str = OUR_WRITER) -> tuple[Any, dict]:
    """Fit the CPU and local-disk constants of the simulator's time model to real runs'
    metrics (one run dir or several, fitted as one: a default comparison and one at
    Hudi's file sizing separate per-file from per-key costs); saves the profile JSON to
    ``out`` (for ``sim --storage out``). ``writer``: whose rows — ours
    (``indexbench``), or ``hudi``: the series of Hudi's own writer that mirror our
    indexes in runs with ``--peers hudi``, fitted to Hudi's own counters and phases (the
    profile ``advise --hudi-storage`` prices Hudi's writer with; give as ``base`` our
    writer's profile of the same machine: the constants Hudi's rows cannot separate keep
    its values)."""
    from indexbench.sim import cost

    if writer not in CALIBRATED_WRITERS:
        raise IndexBenchError(f"calibrate: --writer must be one of "
                              f"{', '.join(CALIBRATED_WRITERS)}, not {writer!r}")
    dirs = [run_dir] if isinstance(run_dir, str | os.PathLike) else list(run_dir)
    if not dirs:
        raise IndexBenchError("calibrate: give at least one run directory")
    frames, record_bytes, file_bytes = [], [], []
    for d in dirs:
        df = _rows_of_writer(m.read_metrics(d), writer)
        if df.empty:
            raise IndexBenchError(
                f"{d}: no rows of a real run to calibrate on" if writer == OUR_WRITER else
                f"{d}: no rows of {writer}'s writer mirroring an index (a compare with "
                f"--peers {writer})")
        modelled = _modelled_record_bytes(str(d)) or (float("nan"), 0.0)
        frames.append(df)
        record_bytes += [modelled[0]] * len(df)
        file_bytes += [modelled[1]] * len(df)
    df = pd.concat(frames, ignore_index=True)
    who = OUR_WRITER
    if writer != OUR_WRITER:
        versions = sorted(set(df["peer_writer"].astype(str)))
        if len(versions) > 1:
            raise IndexBenchError(f"calibrate: the runs were written by {', '.join(versions)}"
                                  ": fit one writer's version at a time")
        who = versions[0]
    profile, report_ = cost.calibrate(
        df, base=base, cores=cores or os.cpu_count(),
        modelled_record_bytes=pd.Series(record_bytes, index=df.index, dtype=float),
        modelled_file_bytes=pd.Series(file_bytes, index=df.index, dtype=float), writer=who)
    if out:
        profile.save(out)
    return profile, report_


def delete(table: str, keys: Any, *, spark=None, master: str | None = None,
           progress: Progress | None = None) -> pd.DataFrame:
    """Delete records by key: Hudi's ``delete`` operation on a table ``run`` wrote.

    ``keys``: a Spark or pandas DataFrame with the table's record key and partition
    columns (a record is a (partition, key): the indexes are non-global), the bucket
    index's hash field when it is not the key, and optionally the ordering column. A
    row without an ordering value deletes the stored record whatever its ordering value
    (Hudi's ``EmptyHoodieRecordPayload``); one with a value
    deletes only a record not newer than it (Hudi's ``_hoodie_is_deleted`` rule). Keys
    the table does not hold are ignored. One commit (``operationType = DELETE``) through
    the table's own index; returns its metrics row (``operation = "delete"``, the
    records removed in ``deletes``).
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from indexbench.driver import open_table, upsert
    from indexbench.spark import get_session
    from tableformat.basefile import IS_DELETED
    from tableformat.table import Table

    spark = spark or get_session(master)
    existing = Table(table)
    if not existing.exists():
        raise IndexBenchError(f"{table}: no table here (no .hoodie/hoodie.properties)")
    tbl, idx = open_table(table, existing.config.index_name)
    cfg = tbl.config
    df = keys if not isinstance(keys, pd.DataFrame) else spark.createDataFrame(keys)
    needed = [("record key", cfg.record_key_field), ("partition", cfg.partition_field)]
    hash_fields = getattr(idx, "hash_fields", None)  # bucket indexes hashing another field
    needed += [("bucket hash field", f) for f in (hash_fields(cfg.record_key_field)
                                                   if hash_fields else [])
               if f != cfg.record_key_field]
    for role, name in needed:
        if name not in df.columns:
            raise IndexBenchError(f"the keys to delete have no {role} column {name!r}")
    schema = tbl.snapshot().schema
    if schema is None:
        raise IndexBenchError(f"{table}: the table has no records to delete yet")
    fields = T.StructType.fromJson(json.loads(schema)).fields
    batch = df.select(*[(F.col(f.name) if f.name in df.columns else F.lit(None))
                        .cast(f.dataType).alias(f.name) for f in fields],
                      F.lit(True).alias(IS_DELETED))
    with tbl:
        result = upsert(spark, tbl, idx, batch, batch_no=0, operation="DELETE")
    row = {"index": idx.name, **result.metrics, "operation": "delete"}
    if progress:
        progress(row)
    return m.to_frame([row])


def query(tables: str | Sequence[str], queries: str | Sequence[str] | None = None, *,
          keys: int = 1000, batch_keys: int = 100, join_with: str | None = None,
          repeat: int = 1, join_unique_only: bool = False,
          workload: str | workloads.Workload | None = None, out: str | None = None,
          spark=None, master: str | None = None, run_id: str | None = None,
          progress: Progress | None = None, query_type: str = "snapshot",
          **sizes: Any) -> pd.DataFrame:
    """``indexbench query``: the read side of tables ``run``/``compare`` wrote.

    ``queries`` (default all): ``lookup`` — ``keys`` point lookups (half inserted by the
    table's workload, half never inserted), ``batch_keys`` per Spark job, through each
    table's index; ``groupby`` — ``select key, count(*) group by key`` on the index key;
    ``join`` — ``select count(*) from t join join_with using (key)`` (default: the table
    with itself). Bucketed tables run the last two bucket-aware and by Spark's default
    plan, each ``repeat`` times (``total_s``: the median). The lookup keys come from
    ``workload`` (a preset, TOML or Workload with the run's ``sizes``), else from the
    run.json of the run that wrote the table. Returns the rows (``operation =
    "query"``), appended to ``out``'s metrics if given. ``join_unique_only`` skips the
    join of a table whose index key is not its record key (compare's phase).
    ``query_type`` is Hudi's ``hoodie.datasource.query.type``: ``snapshot`` (every file
    slice merged with its logs) or ``read_optimized`` (base files only: on a
    merge-on-read table it misses what only the logs hold; on copy-on-write it equals
    the snapshot); every row names it (``query_type``).
    """
    from indexbench.query.runner import plan_queries, run_queries
    from indexbench.spark import get_session

    w = None if workload is None else load_workload(workload, **sizes)
    plan = plan_queries([tables] if isinstance(tables, str) else list(tables), queries,
                        keys=keys, batch_keys=batch_keys, join_with=join_with,
                        repeat=repeat, workload=w, join_unique_only=join_unique_only,
                        query_type=query_type)
    spark = spark or get_session(master)
    rows = run_queries(spark, plan, run_id=run_id or m.new_run_id(), progress=progress)
    if out:
        m.write_metrics(out, m.existing_rows(out) + rows)
    return m.to_frame(rows)


def verify(table: str, spark=None, master: str | None = None) -> list[str]:
    """Check a table's invariants; returns the problems found (empty = all hold)."""
    from indexbench.spark import get_session
    from indexbench.verify import verify_table

    spark = spark or get_session(master)
    return verify_table(spark, table)


def report(dirs: str | os.PathLike | Sequence[str | os.PathLike] = (), out: str | None = None,
           asv_results: str | None = None, strict: bool = False) -> Path:
    """Figures and an offline index.html for metrics dirs and/or asv results; the page path.

    Without ``out``: ``<DIR>/report`` for one directory, ``./report`` otherwise.
    """
    import reports

    dirs = [dirs] if isinstance(dirs, str | os.PathLike) else list(dirs)
    if not dirs:
        if asv_results is None:
            raise ValueError("report needs metrics directories or asv results")
        return reports.write_asv_report(asv_results, out or "report")
    return reports.write_report(dirs, out, asv_results=asv_results, strict=strict)


__all__ = ["run", "stream", "compare", "run_peer", "delete", "query", "sim", "calibrate",
           "verify", "summary", "report", "load_workload", "workload_fingerprint",
           "IndexBenchError"]
