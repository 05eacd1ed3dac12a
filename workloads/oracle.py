"""The workload's oracle: the table every correct writer holds after each batch.

Why here: Hudi's reader (``indexbench fidelity``'s read checks), tests and any engine
must be held against one definition of "the right rows", computed from the workload
alone, not from a table some writer made. The rule is Hudi's upsert with
``DefaultHoodieRecordPayload``: per record key, the row with the largest ordering field
(``ts``) wins, across batches and within one; a winning row flagged
``_hoodie_is_deleted`` removes its key; an older row (a late arrival, an older delete)
changes nothing. The generator's ``ts`` is unique, so no tie needs breaking.

Each state keeps the batch its row came from (``BATCH``): Hudi stamps a record's
``_hoodie_commit_time`` with the commit that wrote its winning version, so an
incremental query from batch k's instant returns exactly the rows whose batch is > k.
Everything is Arrow sorts and masks: no per-row Python.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import generator as G
from .spec import Workload

BATCH = "_oracle_batch"
COMPARED = ("key", "dt", "ts", "payload")  # what a read must give back, per record


def _last_per_key(t: pa.Table) -> pa.Table:
    """The row with the largest ``ts`` of each key."""
    order = pc.sort_indices(t, sort_keys=[("key", "ascending"), ("ts", "ascending")])
    t = t.take(order)
    keys = t.column("key").combine_chunks()
    n = len(keys)
    if n == 0:
        return t
    last = np.ones(n, dtype=bool)
    if n > 1:
        last[:-1] = pc.not_equal(keys.slice(0, n - 1), keys.slice(1)).to_numpy(
            zero_copy_only=False)
    return t.filter(pa.array(last))


def _with_batch(t: pa.Table, batch: int) -> pa.Table:
    cols = [c for c in (*COMPARED, G.DELETE_COLUMN) if c in t.column_names]
    out = t.select(cols)
    if G.DELETE_COLUMN not in out.column_names:
        out = out.append_column(G.DELETE_COLUMN, pa.array(np.zeros(len(out), dtype=bool)))
    return out.append_column(BATCH, pa.array(np.full(len(out), batch, dtype=np.int32)))


class Oracle:
    """The states after batches 0..n of a workload, folded one batch at a time."""

    def __init__(self, workload: Workload):
        self.workload = workload
        self._states: list[pa.Table] = []  # live records (no deleted key) after each batch
        self._versions: dict[int, pa.Table] = {}

    def _fold(self, upto: int) -> None:
        if not 0 <= upto <= self.workload.batches:
            raise ValueError(f"batch {upto}: the workload has batches 0..{self.workload.batches}")
        while len(self._states) <= upto:
            b = len(self._states)
            rows = _with_batch(G.batch_table(self.workload, b), b)
            merged = rows if not self._states else pa.concat_tables(
                [self._states[-1].append_column(
                    G.DELETE_COLUMN, pa.array(np.zeros(self._states[-1].num_rows, bool))
                ).select(rows.column_names), rows])
            won = _last_per_key(merged)
            self._states.append(won.filter(pc.invert(won.column(G.DELETE_COLUMN)))
                                .drop_columns([G.DELETE_COLUMN]))

    def state(self, batch: int) -> pa.Table:
        """Every live record after ``batch`` (snapshot and time-travel queries), sorted by
        key, with the batch its winning row came from."""
        self._fold(batch)
        return self._states[batch]

    def changed_after(self, begin: int, end: int | None = None) -> pa.Table:
        """What an incremental query from batch ``begin``'s instant (exclusive) to batch
        ``end``'s (inclusive, default the last) returns: the records live after ``end``
        whose winning row a later batch wrote."""
        end = self.workload.batches if end is None else end
        s = self.state(end)
        return s.filter(pc.greater(s.column(BATCH), begin))

    def versions(self, upto: int | None = None) -> pa.Table:
        """Every (key, ts) that was ever a live version up to ``upto``, each once: what
        a read-optimized query may return (the version its base file was written with)."""
        upto = self.workload.batches if upto is None else upto
        if upto not in self._versions:  # each (key, ts) once, kept: tables ask again
            self._fold(upto)
            self._versions[upto] = pa.concat_tables(
                [s.select(["key", "ts"]) for s in self._states[:upto + 1]]
            ).group_by(["key", "ts"]).aggregate([])
        return self._versions[upto]


def difference(expected: pa.Table, read: pa.Table, columns: tuple[str, ...] = COMPARED,
               separate: tuple[str, ...] = ()) -> dict[str, int]:
    """How a read differs from what was expected, record by record on the key:
    ``missing`` (expected, not read), ``unexpected`` (read, not expected), ``differ``
    (both, another value in one of ``columns``: dt, ts, payload by default),
    ``duplicates`` (keys read more than once); and for each of ``separate`` that both
    hold, ``differ_<column>`` (the same join, counted on its own)."""
    cols = [c for c in columns if c in expected.column_names and c in read.column_names]
    own = [c for c in separate if c in expected.column_names and c in read.column_names]
    e, r = expected.select(cols + own), read.select(cols + own)
    dup = r.num_rows - len(pc.unique(r.column("key")))
    joined = e.join(r, keys="key", join_type="full outer", left_suffix="_e",
                    right_suffix="_r", coalesce_keys=True)
    in_e = pc.is_valid(joined.column(cols[1] + "_e"))
    in_r = pc.is_valid(joined.column(cols[1] + "_r"))
    both = pc.and_(in_e, in_r)
    both_np = both.to_numpy(zero_copy_only=False)

    def unequal(c: str) -> np.ndarray:
        ne = pc.fill_null(pc.not_equal(joined.column(c + "_e"), joined.column(c + "_r")), False)
        return ne.to_numpy(zero_copy_only=False) & both_np

    differ = np.zeros(joined.num_rows, dtype=bool)
    for c in cols[1:]:
        differ |= unequal(c)
    return {"expected": expected.num_rows, "read": read.num_rows,
            "missing": int(pc.sum(pc.and_(in_e, pc.invert(in_r))).as_py() or 0),
            "unexpected": int(pc.sum(pc.and_(in_r, pc.invert(in_e))).as_py() or 0),
            "differ": int(differ.sum()), "duplicates": int(dup),
            **{f"differ_{c}": int(unequal(c).sum()) for c in own}}


__all__ = ["BATCH", "COMPARED", "Oracle", "difference"]
