"""Batch generation without Spark: rows [start, stop) of a batch as a pure function.

Why this shape: Spark executors (spark_source), the simulator and tests must produce the
*same* rows from the Workload alone, whatever slicing they use. So:
- insert/update/delete bookkeeping is arithmetic on (w, batch): batch b's rows are
  spread Bresenham-style so that row i is an insert iff floor((i+1)·I/R) > floor(i·I/R),
  and the insert's ordinal is `inserts_before(w, b) + floor(i·I/R)`; the other rows
  (j = i - floor(i·I/R) of them before row i) choose an existing key, and such a row is
  a delete iff floor((j+1)·D/(R-I)) > floor(j·D/(R-I)), D the batch's deletes;
- per-row randomness comes from `np.random.default_rng([seed, batch, block])` over
  fixed blocks of BLOCK rows, so a slice only ever regenerates whole blocks;
- an update's (or a delete's) key is chosen over `update_keyspace(w)` keys (with
  keyspace="ycsb", fixed for the run as YCSB's CoreWorkload fixes it); a choice of a key
  not inserted yet is redrawn, as YCSB's nextKeynum loops, in rounds r = 1..REDRAW_ROUNDS
  whose uniforms come from `default_rng([seed, batch, block, r])`, again drawn for the
  whole block, so the redraws too are the same whatever the slicing;
- per-key properties (the key text, its date partition, late arrival, index key) are
  hashes of the insert ordinal, so an update finds its key's partition without state.

Columns: key (str), dt (str, yyyy-MM-dd), ts (int64, microseconds since the epoch:
start_date midnight + global row number; late arrivals use their own older date, so
they are older than everything on time and still unique), index_key (str), payload (str),
and, only when `w.delete_fraction > 0`, DELETE_COLUMN (bool, never null, Hudi's
`_hoodie_is_deleted`: true on a row that deletes its key; false throughout batch 0).
A delete row is an update row in all but the flag: its key is chosen by the same chooser
(so the keys a batch names do not depend on how its non-insert rows split between
updates and deletes), it carries its key's partition, its own unique `ts`, the key's
index_key and a random payload. Deleted keys are not tracked: a later batch may choose
one again, as an update (upsert re-inserts it) or a delete (a no-op).
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from . import distributions as dist
from . import keys as K
from .spec import Workload

BLOCK = 65_536
# Redraw rounds for an update key past the last inserted one (YCSB loops until it hits
# an existing key). Bounded, so a degenerate workload (a keyspace much larger than the
# keys existing yet) cannot loop forever: a row still past the last key after the last
# round takes `ordinal % inserts_before` instead, deterministically (fmod fallback).
# A draw is past it with probability q ~ 1 - existing/keyspace (0.35 in zipf-skewed's
# batch 1; 0.75 for a table growing 2.5x during the run); q**64 is 1e-29 and 1e-8.
# Rounds stop as soon as no row of the slice is left, so the bound costs nothing usually.
REDRAW_ROUNDS = 64
COLUMNS = ("key", "dt", "ts", "index_key", "payload")
ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.string()),
        ("dt", pa.string()),
        ("ts", pa.int64()),
        ("index_key", pa.string()),
        ("payload", pa.string()),
    ]
)
# Hudi's HoodieRecord.HOODIE_IS_DELETED_FIELD: present only in workloads with deletes
DELETE_COLUMN = "_hoodie_is_deleted"
_US_PER_DAY = 86_400 * 1_000_000
_EPOCH = _dt.date(1970, 1, 1)


# --------------------------------------------------------------------------- bookkeeping


@functools.lru_cache(maxsize=128)
def _schedule(w: Workload) -> tuple[np.ndarray, ...]:
    """Per batch 0..batches: rows, inserts, inserts_before, row_offset, chosen_before
    (rows of earlier batches that chose an existing key: updates and deletes, the
    sequential chooser's counter), deletes."""
    nb = w.batches + 1
    rows = np.zeros(nb, dtype=np.int64)
    ins = np.zeros(nb, dtype=np.int64)
    dels = np.zeros(nb, dtype=np.int64)
    rows[0] = ins[0] = w.initial_records
    existing = w.initial_records
    chosen_share = w.update_fraction + w.delete_fraction
    for b in range(1, nb):
        rows[b] = w.batch_size
        if existing == 0:
            ins[b] = w.batch_size  # nothing to update yet
        else:
            ins[b] = int(np.floor(w.batch_size * insert_share(w, b) + 0.5))
        if w.delete_fraction > 0 and chosen_share > 0:
            # the non-insert rows, split updates : deletes = update_fraction : delete_fraction
            dels[b] = int(np.floor((rows[b] - ins[b]) * (w.delete_fraction / chosen_share)
                                   + 0.5))
        existing += int(ins[b])
    before = np.concatenate([[0], np.cumsum(ins)[:-1]]).astype(np.int64)
    offset = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    chosen = rows - ins
    chosen_before = np.concatenate([[0], np.cumsum(chosen)[:-1]]).astype(np.int64)
    if int(rows.sum()) >= _US_PER_DAY:
        raise ValueError("batch_size: a run must have fewer than 86.4e9 rows (ts layout)")
    for a in (rows, ins, before, offset, chosen_before, dels):
        a.setflags(write=False)
    return rows, ins, before, offset, chosen_before, dels


def insert_share(w: Workload, batch: int) -> float:
    """Share of batch `batch` (>= 1) rows that insert new keys.

    The base share is 1 - update_fraction - delete_fraction (YCSB's insertproportion).
    "constant": the base share every batch. "accelerating": base * (b+1)/4, capped at 1
    -- half the base share in batch 1, the base share in batch 3, twice it in batch 7 --
    so the table grows faster and faster. It does not depend on the total batch count,
    so a longer run of the same workload extends a shorter one (the driver resumes
    tables on that assumption). The rows that do not insert are updates and deletes.
    """
    if batch == 0:
        return 1.0
    # max: the spec lets update_fraction + delete_fraction pass 1 by float rounding only
    base = max(0.0, 1.0 - w.update_fraction - w.delete_fraction)
    if w.growth == "accelerating":
        return min(1.0, base * (batch + 1) / 4.0)
    return base


def _check_batch(w: Workload, batch: int) -> None:
    if not 0 <= batch <= w.batches:
        raise ValueError(f"batch: {batch} outside 0..{w.batches}")


def batch_rows(w: Workload, batch: int) -> int:
    """Rows of batch `batch`: initial_records for 0, batch_size after."""
    _check_batch(w, batch)
    return int(_schedule(w)[0][batch])


def batch_inserts(w: Workload, batch: int) -> int:
    """Rows of batch `batch` that insert new keys."""
    _check_batch(w, batch)
    return int(_schedule(w)[1][batch])


def batch_updates(w: Workload, batch: int) -> int:
    """Rows of batch `batch` that update existing keys (duplicates included)."""
    return batch_rows(w, batch) - batch_inserts(w, batch) - batch_deletes(w, batch)


def batch_deletes(w: Workload, batch: int) -> int:
    """Rows of batch `batch` that delete existing keys (duplicates included; a key
    deleted by an earlier batch may be named again). 0 in batch 0 and without deletes."""
    _check_batch(w, batch)
    return int(_schedule(w)[5][batch])


def inserts_before(w: Workload, batch: int) -> int:
    """Keys inserted before batch `batch` (deletes not subtracted: ordinals are never
    reused); updates and deletes draw ordinals in [0, inserts_before)."""
    if batch == w.batches + 1:
        return total_keys(w)
    _check_batch(w, batch)
    return int(_schedule(w)[2][batch])


def total_keys(w: Workload) -> int:
    """Distinct keys inserted over the whole run (ordinals 0..total_keys-1); with
    deletes, the table ends with fewer."""
    return int(_schedule(w)[1].sum())


def update_keyspace(w: Workload) -> int | None:
    """Keys the update-key chooser (deletes use the same one) draws over for the whole
    run, or None when it draws each batch over the keys existing before it
    (`inserts_before(w, batch)`).

    keyspace="ycsb" follows YCSB's CoreWorkload.init (insertstart = 0, insertcount =
    initial_records, the run's update batches being its transaction phase):
    - uniform, hotspot, sequential: the `initial_records` keys of the initial load, as
      UniformLongGenerator / HotspotIntegerGenerator / SequentialGenerator(insertstart,
      insertstart + insertcount - 1); keys inserted later are never updated. With
      initial_records == 0 (no initial key at all) it falls back to the keys existing
      before each batch, i.e. None.
    - zipfian, scrambled_zipfian: `insertcount + expectednewkeys + 1`, YCSB's
      ScrambledZipfianGenerator(insertstart, insertstart + insertcount + expectednewkeys)
      whose itemcount is max - min + 1, with expectednewkeys = (int)(opcount *
      insertproportion * 2.0) = int(2.0 * inserts of batches 1..batches) (2 is YCSB's
      fudge factor). A draw past the last inserted key is redrawn (see _update_ordinals).
      It depends on the run's length: a longer run changes which keys are hot, so the
      driver's resume fingerprint includes this value.
    - latest: None (SkewedLatestGenerator follows the newest key).
    keyspace="existing-per-batch": None for every distribution.
    """
    if w.keyspace == "existing-per-batch" or w.distribution == "latest":
        return None
    if w.distribution in ("zipfian", "scrambled_zipfian"):
        expected_new_keys = int((total_keys(w) - w.initial_records) * 2.0)
        return w.initial_records + expected_new_keys + 1
    return w.initial_records if w.initial_records > 0 else None


def row_offset(w: Workload, batch: int) -> int:
    """Rows of all earlier batches: the global row number of this batch's row 0."""
    _check_batch(w, batch)
    return int(_schedule(w)[3][batch])


# --------------------------------------------------------------------------- per-key properties


def partition_dates(w: Workload) -> list[str]:
    """The on-time date partitions, oldest first (late arrivals go before the first)."""
    return [(w.start + _dt.timedelta(days=p)).isoformat() for p in range(w.partitions)]


@functools.lru_cache(maxsize=64)
def _partition_cdf(partitions: int, skew: float) -> np.ndarray:
    # rank 1 = newest date; weight rank^-skew (skew 0 = even)
    rank = np.arange(partitions, 0, -1, dtype=np.float64)
    c = np.cumsum(rank ** (-skew))
    return c / c[-1]


def partition_weights(w: Workload) -> np.ndarray:
    """Probability of each on-time partition (oldest first) for an on-time insert."""
    c = _partition_cdf(w.partitions, float(w.partition_skew))
    return np.diff(np.concatenate([[0.0], c]))


def day_offsets(w: Workload, ordinals: np.ndarray) -> np.ndarray:
    """Date partition of each key as days after start_date (negative = late arrival).

    A pure function of the insert ordinal, so updates land in their key's partition.
    Keys of the initial load are never late.
    """
    o = np.asarray(ordinals, dtype=np.int64)
    u = K.hash_uniform(w.seed, K.STREAM_PARTITION, o)
    p = np.searchsorted(_partition_cdf(w.partitions, float(w.partition_skew)), u, side="right")
    off = np.minimum(p, w.partitions - 1).astype(np.int32)
    if w.late_arrival_share > 0:
        late = (o >= w.initial_records) & (
            K.hash_uniform(w.seed, K.STREAM_LATE, o) < w.late_arrival_share
        )
        if late.any():
            d = K.hash_uniform(w.seed, K.STREAM_LATE_DAY, o[late])
            off[late] = -(1 + np.minimum((d * w.late_arrival_depth).astype(np.int32),
                                         w.late_arrival_depth - 1))
    return off


def _dt_strings(w: Workload) -> pa.Array:
    depth = w.late_arrival_depth
    return pa.array(
        [(w.start + _dt.timedelta(days=d)).isoformat() for d in range(-depth, w.partitions)],
        type=pa.string(),
    )


# --------------------------------------------------------------------------- batch rows


def _choose(w: Workload, batch: int, u1: np.ndarray, u2: np.ndarray,
            upd_index: np.ndarray, space: int, n: int) -> np.ndarray:
    """The chooser's draws over [0, space); `n` = keys existing before the batch."""
    d = w.distribution
    theta = float(w.zipfian_constant)
    if d == "uniform":
        return dist.uniform(u1, space)
    if d == "zipfian":
        return dist.zipfian(u1, space, theta)
    if d == "scrambled_zipfian":
        return dist.scrambled_zipfian(u1, space, theta)
    if d == "latest":
        return dist.latest(u1, n, theta, initial=w.initial_records)
    if d == "hotspot":
        return dist.hotspot(u1, u2, space, w.hotspot_set_fraction, w.hotspot_opn_fraction)
    if d == "sequential":
        return dist.sequential(int(_schedule(w)[4][batch]) + upd_index, space)
    raise ValueError(f"distribution: unknown {d!r}")


def _update_ordinals(w: Workload, batch: int, block: int, lo: int, upd: np.ndarray,
                     u1: np.ndarray, u2: np.ndarray, upd_index: np.ndarray) -> np.ndarray:
    """Ordinals of the update rows `upd` (mask over the slice's rows lo.. of `block`;
    the rows that choose an existing key: updates and deletes alike).

    A choice past the last inserted key (>= n) is redrawn, YCSB's `while (keynum >
    transactioninsertkeysequence.lastValue())`, in rounds whose uniforms are drawn for
    the whole block and indexed by row, so each row's result does not depend on the slice.
    """
    n = inserts_before(w, batch)
    fixed = update_keyspace(w)
    space = n if fixed is None else fixed
    o = _choose(w, batch, u1, u2, upd_index, space, n)
    past = np.flatnonzero(o >= n)  # positions among the update rows
    if len(past) == 0:
        return o
    m = min(BLOCK, batch_rows(w, batch) - block * BLOCK)
    at = (lo - block * BLOCK) + np.flatnonzero(upd)  # block row of each update row
    # round 0 is the block's own rng; rounds start at 1 because SeedSequence pads its
    # entropy with zeros, so [seed, batch, block, 0] would repeat [seed, batch, block].
    # Only zipfian / scrambled_zipfian can draw past n (the other fixed keyspaces are
    # initial_records <= n) and they use u1 only, so a round draws u2 only for hotspot.
    for r in range(1, REDRAW_ROUNDS + 1):
        rng = np.random.default_rng([w.seed, batch, block, r])
        rows = at[past]
        v1 = rng.random(m)[rows]
        v2 = rng.random(m)[rows] if w.distribution == "hotspot" else v1
        o[past] = _choose(w, batch, v1, v2, upd_index[past], space, n)
        past = past[o[past] >= n]
        if len(past) == 0:
            return o
    o[past] %= n  # deterministic fallback after REDRAW_ROUNDS rounds (never loops)
    return o


def _block(w: Workload, batch: int, block: int, lo: int, hi: int,
           with_payload: bool) -> dict[str, np.ndarray]:
    """Rows [lo, hi) of one block; randomness drawn for the whole block, then sliced."""
    rows_b, ins_b, before, offset, _, del_b = (int(a[batch]) for a in _schedule(w))
    b0 = block * BLOCK
    m = min(BLOCK, rows_b - b0)
    rng = np.random.default_rng([w.seed, batch, block])
    u1 = rng.random(m)[lo - b0 : hi - b0]
    u2 = rng.random(m)[lo - b0 : hi - b0]
    raw = None
    if with_payload and w.payload_bytes > 0:
        raw = np.frombuffer(rng.bytes(m * w.payload_bytes), dtype=np.uint8)
        raw = raw.reshape(m, w.payload_bytes)[lo - b0 : hi - b0]
    i = np.arange(lo, hi, dtype=np.int64)
    c = (i * ins_b) // rows_b
    is_insert = ((i + 1) * ins_b) // rows_b > c
    ordinal = before + c
    j = i - c  # rows before row i that choose an existing key (updates and deletes)
    if not is_insert.all():
        upd = ~is_insert
        ordinal[upd] = _update_ordinals(w, batch, block, lo, upd, u1[upd], u2[upd], j[upd])
    is_delete = None
    if w.delete_fraction > 0:
        # the batch's rows_b - ins_b chosen rows spread del_b deletes, Bresenham again
        chosen_b = rows_b - ins_b
        is_delete = ~is_insert
        if del_b > 0:
            is_delete &= ((j + 1) * del_b) // chosen_b > (j * del_b) // chosen_b
        else:
            is_delete[:] = False
    off = day_offsets(w, ordinal)
    base = (w.start - _EPOCH).days * _US_PER_DAY
    ts = base + offset + i
    late = is_insert & (off < 0)
    if late.any():
        ts[late] += off[late].astype(np.int64) * _US_PER_DAY
    is_update = ~is_insert if is_delete is None else ~is_insert & ~is_delete
    return {"ordinal": ordinal, "is_update": is_update, "is_delete": is_delete,
            "day_offset": off, "ts": ts, "payload_raw": raw}


def _blocks(w: Workload, batch: int, start: int, stop: int | None,
            with_payload: bool) -> Iterator[dict[str, np.ndarray]]:
    rows_b = batch_rows(w, batch)
    stop = rows_b if stop is None else stop
    if not 0 <= start <= stop <= rows_b:
        raise ValueError(f"start/stop: [{start}, {stop}) outside batch of {rows_b} rows")
    pos = start
    while pos < stop:
        k = pos // BLOCK
        hi = min(stop, (k + 1) * BLOCK)
        yield _block(w, batch, k, pos, hi, with_payload)
        pos = hi


def batch_arrays(w: Workload, batch: int, start: int = 0,
                 stop: int | None = None) -> dict[str, np.ndarray]:
    """Rows [start, stop) as numpy arrays, no strings: `ordinal` (int64, the key's insert
    ordinal), `is_update` (bool), `day_offset` (int32, date partition as days after
    start_date), `ts` (int64), and only when `w.delete_fraction > 0` `is_delete` (bool;
    a row is an insert iff neither flag is set). The simulator's fast path; same rows
    as batch_frame."""
    parts = list(_blocks(w, batch, start, stop, with_payload=False))
    empty = {"ordinal": np.empty(0, np.int64), "is_update": np.empty(0, bool),
             "day_offset": np.empty(0, np.int32), "ts": np.empty(0, np.int64)}
    if w.delete_fraction > 0:
        empty["is_delete"] = np.empty(0, bool)
    if not parts:
        return empty
    return {n: np.concatenate([p[n] for p in parts]) for n in empty}


def arrow_schema(w: Workload) -> pa.Schema:
    """The batches' Arrow schema: ARROW_SCHEMA, plus DELETE_COLUMN (bool) when the
    workload has deletes."""
    if w.delete_fraction > 0:
        return ARROW_SCHEMA.append(pa.field(DELETE_COLUMN, pa.bool_()))
    return ARROW_SCHEMA


def columns(w: Workload) -> tuple[str, ...]:
    """The batches' column names: COLUMNS, plus DELETE_COLUMN when it has deletes."""
    return COLUMNS + ((DELETE_COLUMN,) if w.delete_fraction > 0 else ())


def _table_from_block(w: Workload, blk: dict[str, np.ndarray]) -> pa.Table:
    o = blk["ordinal"]
    key = K.record_keys(w.key_format, w.seed, o)
    dt = _dt_strings(w).take(pa.array(blk["day_offset"] + w.late_arrival_depth))
    if w.index_key_cardinality == 0:
        ik = key
    else:
        ik = K.index_keys(w.seed, o, w.index_key_cardinality, float(w.index_key_skew))
    if blk["payload_raw"] is None:
        pl = pa.array([""] * len(o), type=pa.string())
    else:
        pl = K.payloads(blk["payload_raw"])
    cols = [key, dt, pa.array(blk["ts"], type=pa.int64()), ik, pl]
    cols = [c.cast(pa.string()) if c.type == pa.large_string() else c for c in cols]
    if blk["is_delete"] is not None:
        cols.append(pa.array(blk["is_delete"], type=pa.bool_()))
    return pa.Table.from_arrays(cols, schema=arrow_schema(w))


def key_columns(w: Workload, ordinals: np.ndarray) -> pa.Table:
    """Record key, date partition and index key of insert ordinals: the columns a row of
    that key carries in every batch (lookups draw keys by ordinal, present or never
    inserted, without generating batches)."""
    o = np.asarray(ordinals, dtype=np.int64)
    blk = {"ordinal": o, "day_offset": day_offsets(w, o)}
    key = K.record_keys(w.key_format, w.seed, o)
    dt = _dt_strings(w).take(pa.array(blk["day_offset"] + w.late_arrival_depth))
    ik = key if w.index_key_cardinality == 0 else \
        K.index_keys(w.seed, o, w.index_key_cardinality, float(w.index_key_skew))
    cols = [c.cast(pa.string()) if c.type == pa.large_string() else c for c in (key, dt, ik)]
    return pa.table(dict(zip(("key", "dt", "index_key"), cols, strict=True)))


def iter_tables(w: Workload, batch: int, start: int = 0,
                stop: int | None = None) -> Iterator[pa.Table]:
    """Rows [start, stop) as Arrow tables of at most BLOCK rows (bounded memory)."""
    for blk in _blocks(w, batch, start, stop, with_payload=True):
        yield _table_from_block(w, blk)


def batch_table(w: Workload, batch: int, start: int = 0, stop: int | None = None) -> pa.Table:
    """Rows [start, stop) of batch `batch` as one Arrow table."""
    tables = list(iter_tables(w, batch, start, stop))
    if not tables:
        return arrow_schema(w).empty_table()
    return pa.concat_tables(tables)


def batch_frame(w: Workload, batch: int, start: int = 0, stop: int | None = None) -> pd.DataFrame:
    """Rows [start, stop) of batch `batch` as pandas (str columns are object dtype)."""
    tb = batch_table(w, batch, start, stop)
    # column by column: several times faster than Table.to_pandas for object strings
    return pd.DataFrame(
        {c: tb.column(c).to_numpy(zero_copy_only=False) for c in columns(w)}, copy=False
    )


def iter_batches(w: Workload, arrow: bool = False) -> Iterator[tuple[int, pd.DataFrame | pa.Table]]:
    """(batch, rows) for batch 0..batches, without Spark; Arrow tables if `arrow`."""
    for b in range(w.batches + 1):
        yield b, (batch_table(w, b) if arrow else batch_frame(w, b))
