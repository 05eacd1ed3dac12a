"""Which records survive when newer records meet stored ones: the one merge rule.

Hudi's ``DefaultHoodieRecordPayload``: an incoming record replaces the stored one of its
key when its ordering value is not smaller (ties go to the incoming record); a delete
removes the stored record under the same rule, and a delete without an ordering value
always does. NaN orders above every number (Java's ``Double.compareTo``).

The copy-on-write writer applies it once per batch to a base file
(:func:`indexbench.writer.merge_file_group`); a merge-on-read reader folds it over a
file slice's base file and its log blocks in commit order
(:mod:`tableformat.slice_reader`), which gives the same records as the copy-on-write
table would hold. Vectorized: one hash lookup, one comparison, two filters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Resolution:
    """What happens to each stored and each incoming record."""

    keep_old: np.ndarray  # stored records that stay
    keep_new: np.ndarray  # incoming records written (winning upserts and inserts)
    is_update: np.ndarray  # incoming records whose key is stored
    deleted: np.ndarray  # incoming deletes that removed a stored record


def resolve(old_keys: pa.Array, old_order: pa.ChunkedArray | pa.Array,
            new_keys: pa.Array, new_order: pa.ChunkedArray | pa.Array,
            deletes: np.ndarray) -> Resolution:
    """Apply the merge rule; ``new_keys`` are unique (a pre-combined batch or block)."""
    n = len(new_keys)
    pos = pc.index_in(new_keys, value_set=old_keys)
    is_update = pos.is_valid().to_numpy(zero_copy_only=False)
    pos_np = pos.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    keep_new = np.ones(n, dtype=bool)
    if is_update.any():
        upd = np.flatnonzero(is_update)
        incoming = pc.take(new_order, pa.array(upd))
        stored = pc.take(old_order, pa.array(pos_np[upd]))
        wins = pc.greater_equal(incoming, stored)
        if pa.types.is_floating(incoming.type):
            wins = pc.or_kleene(wins, pc.is_nan(incoming))
        keep_new[upd] = wins.fill_null(True).to_numpy(zero_copy_only=False)
    keep_old = np.ones(len(old_keys), dtype=bool)
    keep_old[pos_np[is_update & keep_new]] = False  # replaced, or deleted (a winning delete)
    deleted = is_update & keep_new & deletes
    keep_new &= ~deletes  # a delete is never written; one of an absent key does nothing
    return Resolution(keep_old, keep_new, is_update, deleted)


def fold(state: pa.Table, upserts: pa.Table, delete_keys: pa.Array, delete_order: pa.Array,
         key: str, order: str) -> pa.Table:
    """``state`` after one layer (a log block, or a data and a delete block of one log
    file): records of ``upserts`` and deletes of ``delete_keys`` (disjoint keys), both
    newer than ``state``. ``upserts`` has ``state``'s schema; the result is unsorted."""
    new_keys = pa.concat_arrays([upserts.column(key).combine_chunks().cast(pa.string()),
                                 delete_keys.cast(pa.string())])
    order_type = state.schema.field(order).type
    new_order = pa.concat_arrays([upserts.column(order).combine_chunks().cast(order_type),
                                  delete_order.cast(order_type)])
    deletes = np.zeros(len(new_keys), dtype=bool)
    deletes[upserts.num_rows:] = True
    r = resolve(state.column(key).combine_chunks().cast(pa.string()), state.column(order),
                new_keys, new_order, deletes)
    return pa.concat_tables([state.filter(pa.array(r.keep_old)),
                             upserts.filter(pa.array(r.keep_new[:upserts.num_rows]))])
