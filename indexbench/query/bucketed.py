"""Bucket-aligned scans: a group-by or join on the index key, bucket by bucket (no Spark).

RFC-29's query-plan claim: records of a bucketed table are clustered by
``hash(key) % N``, so every record of a key sits in bucket ``hash % N`` of its
partition. If ``M`` divides every partition's count (of both tables, for a join), then
``hash % N % M == hash % M``: the files of buckets ``b ≡ j (mod M)`` hold every record
of the keys with ``hash % M == j``, across partitions and tables. One task per ``j``
then groups or joins its files alone, with no Exchange; ``M`` is the gcd of the counts,
so multiple-rehash keeps this after rescales of any factors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa

from indexes.lookup import ReadView
from tableformat.basefile import bucket_of_file_id
from tableformat.fs import IOStats
from tableformat.slice_reader import LogReadStats

COUNT_COL = "count"


def aligned_groups(layouts: Sequence[dict[str, int] | None]) -> int | None:
    """The group count ``M`` of an aligned scan: the greatest common divisor of every
    partition's bucket count (RFC-29's 8 and 4: 4; a partition rehashed ×2 next to one
    ×3: still N), or ``None`` when it is 1 (one task would hold the whole table: the
    default plan) or a table is not hash-bucketed."""
    if not layouts or any(layout is None for layout in layouts):
        return None
    counts = [n for layout in layouts for n in layout.values()]  # type: ignore[union-attr]
    m = math.gcd(*counts) if counts else 1
    return m if m >= 2 else None


def files_of_groups(view: ReadView, groups: int) -> list[list[tuple[str, str]]]:
    """(partition, file id) of the file groups of each group ``j``: the buckets ``b``
    with ``b % groups == j``, in every partition."""
    out: list[list[tuple[str, str]]] = [[] for _ in range(groups)]
    for partition, files in view.files.items():
        for fid, _ in files:
            out[bucket_of_file_id(fid) % groups].append((partition, fid))
    return out


def read_key_columns(table, view: ReadView, groups: Sequence[tuple[str, str]],
                     fields: Sequence[str], stats: IOStats,
                     log_stats: LogReadStats | None = None) -> pa.Table:
    """The key columns of some file groups (merged with their logs on a merge-on-read
    table, unless the view is read-optimized), counted (files and bytes, log files
    apart in ``log_stats``) by the reader."""
    parts = [view.read_group(table, p, fid, stats, log_stats, columns=list(fields))
             for p, fid in groups]
    if not parts:
        return pa.table({f: pa.array([], pa.string()) for f in fields})
    return pa.concat_tables(parts, promote_options="permissive")


def group_counts(data: pa.Table, fields: Sequence[str]) -> pa.Table:
    """``select fields, count(*) group by fields`` over Arrow (one task's buckets)."""
    out = data.group_by(list(fields)).aggregate([([], "count_all")])
    return out.rename_columns([*fields, COUNT_COL]).select([*fields, COUNT_COL])


def join_count(left: pa.Table, right: pa.Table, fields: Sequence[str]) -> int:
    """``count(*)`` of the inner join on ``fields``: the joined rows themselves, as
    Spark's join makes them (the same work, only without the shuffle)."""
    return left.select(list(fields)).join(right.select(list(fields)), keys=list(fields),
                                          join_type="inner").num_rows
