"""Hudi's combine-before-upsert over Arrow: one record per identity, the larger ordering
value wins, the later arrival on ties; a record without an ordering value (a delete
of :func:`indexbench.api.delete`) ranks below every value, as in the Spark pre-combine.
NaN orders above every number (Java's ``Double.compareTo``; Arrow sorts it last): new
batches cannot hold NaN (validation refuses it), tables written before may.

One function for every Spark-free merge: the copy-on-write writer (identity = the record
key, within one file group) and the delta-rs peer (identity = partition and key).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def precombine(table: pa.Table, identity: Sequence[str], ordering: str) -> pa.Table:
    """The surviving record of every ``identity`` value, sorted by ``identity``."""
    n = table.num_rows
    if n <= 1:
        return table
    arrival = pa.array(np.arange(n, dtype=np.int64))
    fields = {f"i{j}": table.column(c) for j, c in enumerate(identity)}
    o = table.column(ordering)
    order = pc.sort_indices(  # v: a record without an ordering value ranks lowest
        pa.table({**fields, "v": pc.is_valid(o), "o": o, "a": arrival}),
        sort_keys=[(c, "ascending") for c in [*fields, "v", "o", "a"]])
    rows = table.take(order)
    same = None  # row i has the identity of row i + 1
    for c in identity:
        col = rows.column(c)
        eq = pc.equal(col.slice(0, n - 1), col.slice(1))
        same = eq if same is None else pc.and_(same, eq)
    keep = np.ones(n, dtype=bool)  # the last of each run: larger ordering, later arrival
    keep[:-1] = ~same.to_numpy(zero_copy_only=False)
    return rows.filter(pa.array(keep))
