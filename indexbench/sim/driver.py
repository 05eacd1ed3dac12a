"""``indexbench sim``: a workload's batches through an index's cores, without Spark.

The same batches as a real run (:mod:`workloads.generator`, pure functions of the
workload) are pre-combined to distinct key ordinals and fed in chunks to the index's
simulator adapter (``index.simulator(model)``), which routes them with the index's own
core over a :class:`~indexes.model_table.ModelTable`. Rows are built by the same builder
as real runs (:mod:`metrics.rows`); byte and second figures are models and go to
``model_*`` columns (seconds from :mod:`indexbench.sim.time_model` and a cost profile
of :mod:`indexbench.sim.profiles`, file sizes from :mod:`indexbench.sim.record_size`).
On a merge-on-read table the file groups written get log files or base files, and
compactions run, by the real driver's own rules
(:func:`tableformat.table_type.writes_log_file`, :mod:`tableformat.compaction_plan`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

import indexes
import workloads
from indexbench.sim import profiles, record_size
from indexbench.sim.options import option_values
from indexbench.sim.time_model import model_rows, model_seconds
from indexbench.workload_args import load_workload
from indexes import roles
from indexes.model_table import LogAppend, ModelTable
from indexes.simulation import GroupWrites, SimBatch, SimChunk, SimOptions
from metrics import contract as m
from metrics.rows import WriteTotals, as_modelled, footer_totals, service_row, upsert_row
from tableformat.commit_metadata import COMMIT
from tableformat.compaction_plan import COMPACT_OPERATION, COMPACTION_ROW, plan_compaction
from tableformat.errors import IndexBenchError
from tableformat.table import FileSlice
from tableformat.table_type import short_name, writes_log_file
from tableformat.write_config import WriteConfig
from workloads import generator as G
from workloads import keys as K

CHUNK_ROWS = 4_000_000  # records per chunk handed to an adapter (bounded memory)
KEY_BYTES = {"uuid": 36, "time-ordered": 20, "ycsb": 23}
Progress = Callable[[dict[str, Any]], None]


class WorkloadKeys:
    """Columns of a workload's records as pure functions of their key ordinals."""

    def __init__(self, w: workloads.Workload):
        self.w = w

    def record_keys(self, ordinals: np.ndarray) -> pa.Array:
        keys = K.record_keys(self.w.key_format, self.w.seed, ordinals)
        return keys.cast(pa.string()) if keys.type == pa.large_string() else keys

    def order_codes(self, ordinals: np.ndarray) -> np.ndarray:
        return K.order_codes(self.w.key_format, self.w.seed, ordinals)

    def column(self, name: str, ordinals: np.ndarray) -> pa.Array:
        if name == "key" or (name == "index_key" and self.w.index_key_cardinality == 0):
            return self.record_keys(ordinals)
        if name == "index_key":
            return K.index_keys(self.w.seed, ordinals, self.w.index_key_cardinality,
                                float(self.w.index_key_skew))
        if name == "dt":
            return G._dt_strings(self.w).take(pa.array(G.day_offsets(self.w, ordinals)
                                                       + self.w.late_arrival_depth))
        raise ValueError(f"the simulator can hash key, index_key or dt, not {name!r}")


def record_bytes(w: workloads.Workload) -> float:
    """Modelled bytes of one more record in a base file (measured on a sample of the
    workload's rows, :mod:`indexbench.sim.record_size`)."""
    return record_size.measure(w).base_record


def model_table(w: workloads.Workload, config: WriteConfig, ratio: float = 0.0
                ) -> ModelTable:
    """The model table of a run: its type, and the workload's record sizes as the
    writers encode them (times a calibrated ``record_bytes_ratio``, if any)."""
    rb = record_size.measure(w, config.log_block_format).scaled(ratio)
    return ModelTable(rb.base_record, key_bytes=KEY_BYTES[w.key_format],
                      file_bytes=rb.base_file, log_record_bytes=rb.log_record,
                      log_file_bytes=rb.log_file, arrow_record_bytes=rb.arrow_record,
                      raw_record_bytes=rb.raw_record,
                      table_type=config.resolved_type(None))


def size_notes(names: list[str], w: workloads.Workload,
               params: dict[str, dict[str, Any]] | None = None,
               sweep: list[int] | None = None) -> list[str]:
    """What each index says of the table this workload (its largest ``sweep`` size)
    makes with its parameters (:class:`indexes.roles.SizeNotes`): printed before a run and
    kept in run.json's ``notes``. Records: every key the run inserts; bytes: the
    simulator's modelled record size."""
    records = G.total_keys(w)
    if sweep:
        records = max(records, round(records * max(sweep) / max(w.initial_records, 1)))
    def index_params(n: str) -> dict[str, Any]:
        given = dict((params or {}).get(n, {}))
        WriteConfig.pop_from(given)  # the table's write configs are not the index's
        return given

    return [note for n in names
            for note in roles.size_notes(indexes.get(n, **index_params(n)), records,
                                         record_bytes(w))]


def partition_names(w: workloads.Workload) -> list[str]:
    """Every partition a record can have, indexed by day offset + late-arrival depth."""
    return G._dt_strings(w).to_pylist()


def _chunk(w: workloads.Workload, ordinals: np.ndarray, is_new: np.ndarray) -> SimChunk:
    part = (G.day_offsets(w, ordinals) + w.late_arrival_depth).astype(np.int32)
    return SimChunk(ordinals, part, is_new)


def batch_chunks(w: workloads.Workload, batch: int, chunk_rows: int = CHUNK_ROWS
                 ) -> tuple[int, int, Iterator[SimChunk]]:
    """(input rows, distinct records, chunks) of a batch after the pre-combine.

    The initial load inserts ordinals 0..N-1 (no duplicates): generated chunk by chunk.
    An upsert batch's rows are generated whole and reduced to distinct ordinals (one
    record per key; a key's partition is a function of it, so (partition, key) pairs are
    distinct too)."""
    rows, before = G.batch_rows(w, batch), G.inserts_before(w, batch)
    if batch == 0:
        def gen() -> Iterator[SimChunk]:
            for lo in range(0, rows, chunk_rows):
                o = np.arange(lo, min(rows, lo + chunk_rows), dtype=np.int64)
                yield _chunk(w, o, np.ones(len(o), bool))
        return rows, rows, gen()
    ordinals = np.sort(G.batch_arrays(w, batch)["ordinal"])  # sort + diff: np.unique
    ordinals = ordinals[np.concatenate(([True], ordinals[1:] != ordinals[:-1]))]  # hashes

    def gen_upd() -> Iterator[SimChunk]:
        for lo in range(0, len(ordinals), chunk_rows):
            o = ordinals[lo:lo + chunk_rows]
            yield _chunk(w, o, o >= before)
    return rows, len(ordinals), gen_upd()


def existing_chunks(w: workloads.Workload, upto: int, names: list[str],
                    chunk_rows: int = CHUNK_ROWS) -> Callable[[list[str]], Iterator[SimChunk]]:
    """Every record of the table in some partitions: ordinals below ``upto``. The
    partition of each ordinal is computed once per batch (one byte per key, kept while
    the batch runs) however many partitions are read one by one."""
    parts: dict[int, np.ndarray] = {}
    small = len(names) < 256

    def part_of(lo: int) -> np.ndarray:
        if lo not in parts:
            o = np.arange(lo, min(upto, lo + chunk_rows), dtype=np.int64)
            p = _chunk(w, o, np.zeros(0, bool)).part
            parts[lo] = p.astype(np.uint8) if small else p
        return parts[lo]

    def gen(partitions: list[str]) -> Iterator[SimChunk]:
        wanted = [names.index(p) for p in partitions]
        for lo in range(0, upto, chunk_rows):
            part = part_of(lo)
            sel = part == wanted[0] if len(wanted) == 1 else np.isin(part, wanted)
            o = np.flatnonzero(sel).astype(np.int64) + lo
            yield SimChunk(o, part[sel].astype(np.int32), np.zeros(len(o), bool))
    return gen


def refuse_deletes(w: workloads.Workload) -> None:
    """The model table's keys are the ordinals below ``inserts_before`` (``existing_chunks``),
    which deletes would break: a workload with deletes is refused before anything runs."""
    if w.delete_fraction > 0:
        raise IndexBenchError(
            f"the simulator does not model deletes (delete_fraction={w.delete_fraction:g}); "
            "run this workload on Spark (indexbench run/compare)")


def write_groups(index, adapter, model: ModelTable, writes: GroupWrites, instant: str
                 ) -> tuple[list[FileSlice], list[LogAppend], WriteTotals]:
    """What the real driver's write tasks would write for ``writes``, as the model's
    slices and log appends, with the totals of their write stats.

    Per file group, :func:`tableformat.table_type.writes_log_file` decides, as in
    :func:`indexbench.driver.write_file_groups`: a log file holds the group's records
    (counted as Hudi's append handle counts them: all updates to a group that exists,
    all inserts to a new one), a base file the group's base merged with them (inserts
    and updates as found). The planned file groups are ``GroupWrites.planned``: the
    insert plan's (bloom's small files and new groups, drawn keys or not, as the
    driver's ``base_writes``), or those an index that places its own inserts planned (a
    bucket index's hashed inserts are not planned)."""
    snap = model.snapshot
    can_log = index.CAN_INDEX_LOG_FILES
    written: list[FileSlice] = []
    logs: list[LogAppend] = []
    inserts = updates = merge_files = merge_bytes = 0
    for p, fid, ins, upd in zip(writes.partition, writes.file_id, writes.inserts,
                                writes.updates, strict=True):
        old = snap.slices.get((p, fid))
        planned = (p, fid) in writes.planned
        if writes_log_file(model.table_type, can_log, old is not None, planned):
            logs.append(LogAppend(p, fid, ins + upd, ins))
            inserts += 0 if old is not None else ins + upd
            updates += ins + upd if old is not None else 0
            continue
        if old is not None:
            merge_files += 1
            merge_bytes += old.size_bytes
        n = (old.num_records if old else 0) + ins
        written.append(model.slice_of(p, fid, instant, n,
                                      roles.file_index_bytes(adapter, p, fid, n)))
        inserts += ins
        updates += upd
    log_bytes = sum(model.log_bytes(a.records) for a in logs)
    log_records = sum(a.records for a in logs)
    base_bytes = sum(s.size_bytes for s in written)
    totals = WriteTotals(
        files_written=len(written) + len(logs),
        records_written=sum(s.num_records for s in written) + log_records,
        **footer_totals(written),
        inserts=inserts, updates=updates, bytes_written=base_bytes + log_bytes,
        merge_files_read=merge_files, merge_bytes_read=merge_bytes,
        log_files_written=len(logs), log_blocks_written=len(logs),
        log_bytes_written=log_bytes,
        incoming_bytes=(sum(writes.inserts) + sum(writes.updates)) * model.arrow_record_bytes)
    return written, logs, totals


def simulate_batch(index, adapter, model: ModelTable, w: workloads.Workload, b: int,
                   names: list[str], chunk_rows: int = CHUNK_ROWS) -> dict[str, Any]:
    """One upsert batch through the adapter; returns its metrics row (before the model
    seconds): route, write the touched file groups into the model, commit, checkpoint."""
    t0 = time.perf_counter()
    instant = model.new_instant()
    rows, records, chunks = batch_chunks(w, b, chunk_rows)
    batch = SimBatch(b, instant, names, WorkloadKeys(w), records=records,
                     inserts_before=G.inserts_before(w, b), latest_successful=model.latest,
                     existing=existing_chunks(w, G.inserts_before(w, b + 1), names, chunk_rows))
    adapter.begin(batch)
    touched: set[int] = set()
    for chunk in chunks:
        touched.update(chunk.parts().tolist())
        adapter.add(chunk)
    writes = adapter.finish()
    written, logs, totals = write_groups(index, adapter, model, writes, instant)
    model.commit(instant, written, extra=roles.commit_extra(adapter),
                 logs=logs + roles.pending_logs(adapter))
    index_after = adapter.after_commit(True)
    row = upsert_row(batch_no=b, instant=instant, input_records=rows, records=records,
                     partitions_touched=len(touched), counts=adapter.counts, writes=totals,
                     after=model.snapshot, timings={},
                     index_counters=index.counter_columns(),
                     index_parts=index.part_columns())
    row.update(roles.table_metrics(index, model.snapshot))
    row.update(index_after)
    row["sim_s"] = time.perf_counter() - t0
    return row


def simulate_compaction(index, adapter, model: ModelTable, config: WriteConfig,
                        batch_no: int | None, force: bool = False) -> list[dict[str, Any]]:
    """The table type's service after a commit, as :mod:`indexbench.compaction` runs it:
    when :func:`~tableformat.compaction_plan.plan_compaction` says so, every slice with
    logs gets a base file of its merged records (file ids kept, the index's footer
    modelled); one row, built by the same builder as the real compaction's."""
    the_plan = plan_compaction(model.snapshot, model.table_type, config, force)
    if the_plan is None:
        return []
    instant = model.new_instant()
    written = []
    for s in the_plan.slices:
        n = model.merged_records(s.partition, s.file_id)
        written.append(model.slice_of(s.partition, s.file_id, instant, n,
                                      roles.file_index_bytes(adapter, s.partition, s.file_id, n)))
    model.commit(instant, written, action=COMMIT, operation=COMPACT_OPERATION)
    writes = WriteTotals(files_written=len(written),
                         records_written=sum(s.num_records for s in written),
                         **footer_totals(written),
                         bytes_written=sum(s.size_bytes for s in written))
    row = service_row(
        operation=COMPACTION_ROW, batch_no=batch_no, instant=instant,
        figures=the_plan.figures(), files_read=sum(s.file_count for s in the_plan.slices),
        bytes_read=sum(s.total_bytes for s in the_plan.slices), writes=writes,
        after=model.snapshot, timings={}, shuffle_bytes=0, shuffle_read_bytes=None,
        spark_jobs=None)
    row.update(roles.table_metrics(index, model.snapshot))
    return [row]


def simulate(index: str = indexes.DEFAULT_INDEX, workload: str | workloads.Workload = "uniform", *,
             batches: int | None = None, batch_size: int | None = None,
             initial_records: int | None = None, seed: int | None = None,
             params: dict[str, Any] | None = None, storage: str = "local",
             out: str | None = None, run_id: str | None = None,
             parallelism: int | None = None, progress: Progress | None = None,
             chunk_rows: int = CHUNK_ROWS, write: bool = True,
             **index_options: Any) -> pd.DataFrame:
    """Simulate one index through a workload; metrics rows in the contract (``run_mode``
    = "sim"), appended to ``out``'s metrics files. ``index_options``: the simulator
    options indexes declare (:mod:`indexbench.sim.options`) by name, each kept in
    run.json; one no index declares is a TypeError."""
    chosen = option_values(index_options)
    w = load_workload(workload, batches, batch_size, initial_records, seed)
    refuse_deletes(w)
    params = dict(params or {})
    config = WriteConfig.pop_from(params)  # the table's write configs (the table type)
    idx = indexes.get(index, **params)
    parallelism = parallelism or os.cpu_count() or 1
    profile = profiles.profile(storage, cores=parallelism)
    model = model_table(w, config, profile.record_bytes_ratio)
    table_type = short_name(model.table_type)
    options = SimOptions(seed=w.seed, table_keys=G.total_keys(w), parallelism=parallelism,
                         cost_profile=profile, index_options=chosen)
    adapter = idx.simulator(model, options)
    measured = idx.measured_columns()
    names = partition_names(w)
    run_id = run_id or m.new_run_id()
    out = out or os.path.join("out", f"{w.name}-sim-{run_id}")
    rows = m.existing_rows(out) if write else []
    base = {"run_id": run_id, "index": index, "workload": w.name, "run_mode": "sim",
            "storage": profile.name, "table_type": table_type}
    mine = []
    for b in range(w.batches + 1):
        row = as_modelled({**base, **simulate_batch(idx, adapter, model, w, b, names,
                                                    chunk_rows)}, measured)
        row.update(model_seconds(row, profile, cores=parallelism))
        mine.append(row)
        # inline services in the real runner's order: the index's, then the table type's
        mine += _modelled([as_modelled({**base, **extra}, measured)
                           for extra in [*roles.sim_table_services(adapter, b),
                                         *simulate_compaction(idx, adapter, model, config, b)]],
                          profile, parallelism)
        if write:
            m.write_metrics(out, rows + mine)
        if progress:
            progress(row)
    # what the services left pending
    mine += _modelled([as_modelled({**base, **extra, "batch": w.batches}, measured)
                       for extra in roles.finish_sim_table_services(adapter)], profile, parallelism)
    if write:
        m.write_metrics(out, rows + mine)
        m.write_run_json(out, {"run_id": run_id, "command": "sim", "mode": "sim",
                               "storage": profile.name, "parallelism": parallelism,
                               **chosen, "workload": vars(w),
                               "indexes": {index: idx.describe()},
                               "table_types": {index: table_type}})
    return m.to_frame(mine)


def _modelled(rows: list[dict[str, Any]], profile: profiles.CostProfile, parallelism: int
              ) -> list[dict[str, Any]]:
    """``rows`` with their modelled seconds, computed together (a table service may
    write thousands of rows after one batch, e.g. one per bucket it splits)."""
    for row, seconds in zip(rows, model_rows(rows, profile, cores=parallelism),
                            strict=True):
        row.update(seconds)
    return rows


def simulate_compare(indexes_: list[str] | None = None,
                     workload: str | workloads.Workload = "uniform", *,
                     params: dict[str, dict[str, Any]] | None = None,
                     out: str | None = None, sweep: list[int] | None = None,
                     **options: Any) -> pd.DataFrame:
    """Every index (or ``indexes_``) simulated on identical batches, one metrics file.

    ``sweep``: initial table sizes to run one after the other into the same metrics file
    and run id, each with batches scaled to the workload's batch/initial ratio — the
    points of the cost-vs-table-size curve (``scale.png``)."""
    names = list(indexes_ or indexes.names())
    sizes = {k: options.pop(k) for k in ("batches", "batch_size", "initial_records", "seed")
             if k in options}
    w = load_workload(workload, **sizes)
    refuse_deletes(w)
    run_id = options.pop("run_id", None) or m.new_run_id()
    out = out or os.path.join("out", f"{w.name}-sim-{run_id}")
    ratio = w.batch_size / max(w.initial_records, 1)
    points = [w] if not sweep else [
        w.with_overrides(initial_records=int(n), batch_size=max(1, round(n * ratio)))
        for n in sweep]
    jobs = int(options.pop("jobs", 1) or 1)
    tasks = [(n, p) for p in points for n in names]
    if jobs > 1 and len(tasks) > 1:
        frames = _parallel(tasks, jobs, params, out, run_id, options)
    else:
        frames = [simulate(n, p, params=(params or {}).get(n), out=out, run_id=run_id,
                           **options) for n, p in tasks]
    m.write_run_json(out, {"run_id": run_id, "command": "sim", "mode": "sim",
                           "workload": vars(w), "sweep": list(sweep or []),
                           "indexes": {n: _index_of(n, (params or {}).get(n)).describe()
                                       for n in names},
                           "storage": options.get("storage", "local"),
                           "notes": size_notes(names, w, params, sweep)})
    return pd.concat(frames, ignore_index=True)


def _index_of(name: str, params: dict[str, Any] | None):
    """The index ``name`` with its parameters, the table's write configs set aside."""
    params = dict(params or {})
    WriteConfig.pop_from(params)
    return indexes.get(name, **params)


def _lane(tasks: list[tuple[str, workloads.Workload]],
          params: dict[str, dict[str, Any]] | None, run_id: str,
          options: dict[str, Any]) -> list[pd.DataFrame]:
    """One worker's tasks, one after the other (runs in a spawned process)."""
    return [simulate(n, p, params=(params or {}).get(n), run_id=run_id, write=False, **options)
            for n, p in tasks]


def _ignore_sigint() -> None:
    """A simulator worker's initializer: Ctrl-C is the parent's to answer."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _parallel(tasks: list[tuple[str, workloads.Workload]], jobs: int,
              params: dict[str, dict[str, Any]] | None, out: str, run_id: str,
              options: dict[str, Any]) -> list[pd.DataFrame]:
    """Indexes in ``jobs`` processes (each index's run is independent), rows written in
    task order at the end. dynamic-rli, whose caches make it the memory-heavy one at a
    billion keys, gets a lane of its own; the other indexes share the remaining lanes, so
    two bulk loads' peaks never add up beyond one heavy and one light run."""
    import signal
    import threading
    from multiprocessing import get_context

    progress = options.pop("progress", None)
    heavy = [i for i, (n, _) in enumerate(tasks)
             if roles.plays(cls := indexes.index_class(n), roles.SimulatorOptions)
             and cls.SIM_MEMORY_HEAVY]
    light = [i for i in range(len(tasks)) if i not in heavy]
    lanes = [heavy] if heavy else []
    free = max(1, jobs - len(lanes))
    lanes += [light[j::free] for j in range(free) if light[j::free]]
    frames: dict[int, pd.DataFrame] = {}
    # The workers ignore SIGINT from birth (a spawned process inherits an ignored signal;
    # the initializer would come too late for a Ctrl-C during their start-up): a Ctrl-C
    # reaches the whole process group, and this process answers it (one line),
    # terminating them rather than waiting for them.
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        pool = get_context("spawn").Pool(min(jobs, len(lanes)), initializer=_ignore_sigint)
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    try:
        results = {pool.apply_async(_lane, ([tasks[i] for i in lane], params, run_id,
                                            options)): lane for lane in lanes}
        for r, lane in results.items():
            for i, frame in zip(lane, r.get(), strict=True):
                frames[i] = frame
                for row in frame.to_dict("records") if progress else []:
                    progress(row)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    result = [frames[i] for i in range(len(tasks))]
    m.write_metrics(out, m.existing_rows(out) + pd.concat(result).to_dict("records"))
    return result
