"""dynamic-rli's bucket assigners as Spark tasks: worker-resident shares and the task.

Task ``a`` of a batch's assign stage gets exactly assigner ``a``'s rows (all data
partitions; ``repartitionById``). It keeps the caches of its (partition, assigner)
shares in a module-level registry of its Python worker, keyed by (table uri, partition,
assigner): Spark reuses Python workers (``spark.python.worker.reuse``), so a later
batch's task for ``a`` that lands on the same worker finds them warm. A share is
trusted only if its *tag* equals the token the driver sends for it (the tag it had when
its state was last committed); anything else — another worker assigned it since, a
failed instant, a retry or recompute of this instant — is reloaded from the share's
committed RLI files (:func:`~indexes.dynamic_rli.rli.share_entries`), so the answer is
deterministic. The task writes its share's RLI file of new keys (``rli-a<k>_<instant>``)
and a small stats file the driver reads instead of any key state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from indexes.base import BUCKET_COL, FILE_ID_COL
from indexes.bucket.files import new_bucket_file_id
from indexes.dynamic_rli import rli
from indexes.dynamic_rli.assigner import Capacity, PartitionIndex, count_values
from indexes.dynamic_rli.cache import sorted_distinct
from tableformat.basefile import IS_DELETED
from tableformat.fs import IOStats

HASH_COL = "__dyn_key_hash"
STATS_DIR = f"{rli.RLI_DIR}/.assign"  # per-task stats: named *_<instant>.parquet, so a
# rollback of the instant deletes them with its other metadata files


@dataclass
class Share:
    """One (partition, assigner) cache in a worker, with the tag of its state."""

    index: PartitionIndex
    tag: str  # instant whose assignment (or load) produced this state


# (table uri, partition, assigner) -> Share: lives as long as the Python worker
REGISTRY: dict[tuple[str, str, int], Share] = {}


@dataclass(frozen=True)
class PartitionPlan:
    """What the driver sends a task about one data partition (no key state)."""

    fresh: bool  # not resident: the logical flow bootstraps it now (every share loads)
    tokens: tuple[str | None, ...]  # committed tag of each share (None: none yet)
    files: tuple[str, ...]  # visible RLI files of the partition (from the commits)
    file_ids: dict[int, str]  # bucket -> committed file group id
    file_bytes: dict[int, int]  # bytes mode: bucket -> latest base file bytes
    per_record: float | None
    has_files: bool


@dataclass(frozen=True)
class AssignPlan:
    """The batch's plan for every assigner task (broadcast once)."""

    uri: str
    instant: str
    num_assigners: int
    capacity: Capacity
    partitions: dict[str, PartitionPlan]  # the batch's data partitions
    resident: dict[str, tuple[str | None, ...]]  # resident partitions -> share tokens


def stats_path(instant: str, assigner: int) -> str:
    return f"{STATS_DIR}/assign-{assigner:05d}_{instant}.parquet"


def _collect(plan: AssignPlan) -> None:
    """Drop this worker's shares of the table the driver no longer trusts (evicted
    partitions, stale tags, partitions bootstrapped afresh): their memory is garbage and
    a task would reload them anyway. A share tagged with this instant stays: another
    assigner's task built it in this worker for the commit under way."""
    for key in [k for k in REGISTRY if k[0] == plan.uri]:
        _, p, a = key
        tokens = plan.resident.get(p)
        fresh = p in plan.partitions and plan.partitions[p].fresh
        tag = REGISTRY[key].tag
        if tag != plan.instant and (tokens is None or fresh or tag != tokens[a]):
            del REGISTRY[key]


def _share(table, plan: AssignPlan, p: str, a: int, report: dict) -> Share:
    """The share, warm if its tag is the committed token, else loaded from its files."""
    pp = plan.partitions[p]
    key = (plan.uri, p, a)
    got = REGISTRY.get(key)
    if not pp.fresh and got is not None and got.tag == pp.tokens[a]:
        report["hit"] = True
        return got
    t0 = time.perf_counter()
    io = IOStats()
    h, b = rli.share_entries(table, pp.files, a, plan.num_assigners, io)
    share = Share(PartitionIndex.bootstrap(plan.num_assigners, h, b), plan.instant)
    REGISTRY[key] = share
    report.update(loaded=True, keys_loaded=len(h), files_read=io.files_read,
                  bytes_read=io.bytes_read, load_s=time.perf_counter() - t0)
    return share


def _groups(parts: pa.ChunkedArray) -> list[tuple[str, np.ndarray]]:
    """(partition, row positions) of the task's rows, one sort (no per-row Python)."""
    enc = pc.dictionary_encode(parts).combine_chunks()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.cumsum(np.bincount(codes, minlength=len(enc.dictionary)))
    starts = np.concatenate([[0], bounds[:-1]])
    return [(enc.dictionary[i].as_py(), order[s:e])
            for i, (s, e) in enumerate(zip(starts, bounds, strict=True)) if e > s]


def assign_task(batches: Iterator[pa.RecordBatch], plan: AssignPlan, assigner: int,
                part_col: str, key_col: str, out_schema: pa.Schema, counters) -> Iterator[
                    pa.RecordBatch]:
    """Assign task ``assigner``'s rows, tag them (file id, bucket), write its RLI file of
    new keys per partition and its stats file; yields the tagged rows."""
    from tableformat.table import Table

    t_start = time.perf_counter()
    table = Table(plan.uri)
    _collect(plan)
    got = list(batches)
    rows = pa.Table.from_batches(got) if got else None
    rows = rows if rows is not None and rows.num_rows else None
    counters.add({"keys_hashed": rows.num_rows if rows is not None else 0})
    stats: dict[str, Any] = {"assigner": assigner, "parts": {}, "hits": 0, "bootstraps": 0,
                             "keys_loaded": 0, "load_s": 0.0}
    groups = _groups(rows.column(part_col)) if rows is not None else []
    bucket_out = np.full(rows.num_rows if rows is not None else 0, -1, np.int32)
    fid_out = np.empty(len(bucket_out), dtype=object)
    seen = {p for p, _ in groups}
    # a fresh partition with files: every share loads (the logical flow loads it whole)
    todo = groups + [(p, np.empty(0, np.int64)) for p, pp in sorted(plan.partitions.items())
                     if pp.fresh and pp.has_files and p not in seen]
    if rows is not None:
        hashes = rows.column(HASH_COL).to_numpy().astype(np.int32, copy=False)
        deleted = (rows.column(IS_DELETED).fill_null(False).to_numpy(zero_copy_only=False)
                   if IS_DELETED in rows.column_names else np.zeros(rows.num_rows, bool))
    for p, sel in todo:
        pp = plan.partitions[p]
        h = hashes[sel] if len(sel) else np.empty(0, np.int32)
        dels = deleted[sel] if len(sel) else np.empty(0, bool)
        live = h[~dels]
        if not len(live) and not pp.has_files and pp.fresh:
            continue  # only deletes, in a partition the table never had: nothing to find
        rep: dict[str, Any] = {"fresh": pp.fresh, "loaded": False, "hit": False}
        share = _share(table, plan, p, assigner, rep)
        uh = sorted_distinct(live)
        buckets, new_mask, created = share.index.assign(
            uh, plan.capacity, pp.file_bytes, pp.per_record)
        pos = np.searchsorted(uh, live)
        row_new = new_mask[pos]
        # keys of one new hash beyond the first: the same bucket, counted as collisions
        per_hash = np.bincount(pos[row_new], minlength=len(uh)) if len(pos) else np.zeros(0)
        extra = np.maximum(per_hash - 1, 0)
        for b, n in zip(buckets[extra > 0].tolist(), extra[extra > 0].tolist(), strict=True):
            share.index.add_keys(b, n, n)
        row_b = np.full(len(h), -1, np.int32)
        row_b[~dels] = buckets[pos]
        if dels.any():  # deletes are located, never assigned
            row_b[dels] = share.index.map.lookup(h[dels])
        ub = sorted_distinct(row_b[row_b >= 0])
        fids = np.array([pp.file_ids.get(int(b)) or new_bucket_file_id(plan.instant, p, int(b))
                         for b in ub], dtype=object)
        row_f = np.full(len(h), None, dtype=object)
        ok = row_b >= 0
        row_f[ok] = fids[np.searchsorted(ub, row_b[ok])]
        if len(sel):
            bucket_out[sel], fid_out[sel] = row_b, row_f
        n_new, entries = int(new_mask.sum()), int(row_new.sum())
        if new_mask.any() or rep["loaded"]:
            share.tag = plan.instant
        written = None
        if entries:
            live_at = sel[~dels][row_new]
            nb = buckets[pos][row_new]
            e = rli.entries_table(rows.column(key_col).take(pa.array(live_at)),
                                  live[row_new], nb, row_f[~dels][row_new], plan.instant)
            path, size = rli.write_file(table, p, plan.instant, e,
                                        tag=rli.share_tag("a", assigner))
            per = count_values(nb.astype(np.int64), 0)
            written = {"path": path, "bytes": size, "entries": entries, "hashes": n_new,
                       "per_bucket": {int(b): int(per[b]) for b in np.flatnonzero(per)}}
        stats["hits"] += rep.pop("hit")
        stats["bootstraps"] += rep["loaded"]
        if rep["loaded"]:
            stats["keys_loaded"] += rep["keys_loaded"]
            stats["load_s"] += rep["load_s"]
        stats["parts"][p] = {**rep, "new": n_new, "entries": entries, "created": created,
                             "rli": written, "nbytes": share.index.nbytes,
                             "keys": len(share.index.map), "collisions": share.index.collisions,
                             "tag": share.tag}
    # bytes of each share this task holds (the driver keeps those still resident)
    current = set(plan.resident) | set(stats["parts"])
    stats["mem"] = {p: s.index.nbytes for (u, p, a), s in REGISTRY.items()
                    if u == plan.uri and a == assigner and p in current}
    stats["task_s"] = time.perf_counter() - t_start
    write_stats(table, plan.instant, assigner, stats)
    if rows is None:
        return
    out = rows.drop_columns([HASH_COL])
    out = out.append_column(FILE_ID_COL, pa.array(fid_out, pa.string()))
    out = out.append_column(BUCKET_COL, pa.array(bucket_out, pa.int32(),
                                                 mask=bucket_out < 0))
    yield from out.cast(out_schema).to_batches()


def write_stats(table, instant: str, assigner: int, stats: dict) -> None:
    """The task's figures as one small file (a retry overwrites it: counted once)."""
    rel = stats_path(instant, assigner)
    table.fs.create_dir(table.abs_path(STATS_DIR), recursive=True)
    with table.fs.open_output_stream(table.abs_path(rel)) as out:
        pq.write_table(pa.table({"stats": [json.dumps(stats)]}), out)


def read_task_stats(table, instant: str, assigner: int) -> dict:
    """One assigner task's stats of ``instant``."""
    with table.fs.open_input_file(table.abs_path(stats_path(instant, assigner))) as f:
        return json.loads(pq.read_table(f).column("stats")[0].as_py())


def read_stats(table, instant: str, num_assigners: int) -> list[dict]:
    """Every assigner task's stats of ``instant`` (driver side: P tiny files)."""
    return [read_task_stats(table, instant, a) for a in range(num_assigners)]


def delete_stats(table, instant: str, num_assigners: int) -> None:
    for a in range(num_assigners):
        path = table.abs_path(stats_path(instant, a))
        try:
            table.fs.delete_file(path)
        except FileNotFoundError:
            pass
