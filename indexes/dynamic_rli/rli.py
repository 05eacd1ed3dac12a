"""The partitioned record-level index (RLI): the persistent source of truth for
``key -> bucket``, as Parquet under ``.hoodie/metadata/record_index/<partition>/``.

Each file holds entries (record key, key hash, bucket, file id, instant) of keys that
were *new* in one instant, named ``rli-<tag>_<instant>.parquet``. The tag names the
file's *share*: ``a<k>`` (new keys of assigner ``k``), ``x<k>`` (its keys whose hash an
existing key had) and ``c<k>`` (its compacted entries) hold only keys of assigner ``k``
(``assigner_of(hash, P)``), so a bucket-assigner task bootstraps from its own files and
nothing else — the RLI sharded by key hash into file groups as Hudi's RLI is (files of
an untagged share, from tables written before, are read whole and filtered). The instant in the
name is what makes the RLI atomic with the data: the table's rollback deletes
``.hoodie/metadata`` files of uncommitted instants, and readers only take files whose
instant is on the completed timeline and not replaced by a completed RLI compaction
(a ``replacecommit`` listing them under :data:`REPLACED_KEY`). Entries are never
rewritten except by that compaction, which copies them unchanged into one file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from indexes.dynamic_rli.assigner import assigner_of
from indexes.lookup import Candidates
from tableformat import basefile as bf
from tableformat import fs as tfs
from tableformat.fs import IOStats

RLI_DIR = ".hoodie/metadata/record_index"
FILES_KEY = "indexbench.rli.files"  # extraMetadata: RLI files an instant added (JSON)
REPLACED_KEY = "indexbench.rli.replacedFiles"  # extraMetadata of an RLI compaction
SCHEMA = pa.schema([
    pa.field("record_key", pa.string(), nullable=False),
    pa.field("key_hash", pa.int32(), nullable=False),
    pa.field("bucket", pa.int16(), nullable=False),
    pa.field("file_id", pa.string(), nullable=False),
    pa.field("instant", pa.string(), nullable=False),
])
_NAME_RE = re.compile(r"^rli-(?P<tag>[A-Za-z0-9]+)_(?P<instant>\d{17})\.parquet$")


def file_name(instant: str, tag: str = "0") -> str:
    return f"rli-{tag}_{instant}.parquet"


_SHARE_RE = re.compile(r"^rli-[acx](?P<share>\d+)_")


def share_tag(kind: str, assigner: int) -> str:
    """The tag of a share's file: ``kind`` a (new keys), x (collided) or c (compacted)."""
    return f"{kind}{assigner}"


def share_of(path: str) -> int | None:
    """The assigner whose keys an RLI file holds (None: a file of every assigner)."""
    m = _SHARE_RE.match(path.rsplit("/", 1)[-1])
    return int(m["share"]) if m else None


def instant_of(name: str) -> str | None:
    m = _NAME_RE.match(name.rsplit("/", 1)[-1])
    return m["instant"] if m else None


def partition_rel(partition: str) -> str:
    """The RLI folder of a data partition, relative to the table root."""
    return f"{RLI_DIR}/{partition}"


def entries_table(record_keys, key_hashes, buckets, file_ids, instant: str) -> pa.Table:
    n = len(key_hashes)
    return pa.table({
        "record_key": pa.array(record_keys, pa.string()),
        "key_hash": pa.array(np.asarray(key_hashes, np.int32)),
        "bucket": pa.array(np.asarray(buckets, np.int16)),
        "file_id": pa.array(file_ids, pa.string()),
        "instant": pa.array([instant] * n, pa.string()),
    }, schema=SCHEMA)


def write_file(table, partition: str, instant: str, entries: pa.Table, tag: str = "0"
               ) -> tuple[str, int]:
    """Write one RLI file (sorted by key hash); returns (path relative to root, bytes).

    The name is a pure function of (partition, instant, tag): a retried task overwrites.
    """
    rel = f"{partition_rel(partition)}/{file_name(instant, tag)}"
    table.fs.create_dir(table.abs_path(partition_rel(partition)), recursive=True)
    entries = entries.sort_by("key_hash")
    with table.fs.open_output_stream(table.abs_path(rel)) as out:
        pq.write_table(entries, out, compression="snappy")
    return rel, table.fs.get_file_info(table.abs_path(rel)).size


@dataclass(frozen=True)
class RliFile:
    partition: str
    path: str  # relative to the table root
    instant: str
    size: int


def replaced_files(extra: dict[str, dict]) -> set[str]:
    """RLI files replaced by completed compactions (from the commits' extraMetadata)."""
    out: set[str] = set()
    for meta in extra.values():
        if REPLACED_KEY in meta:
            out.update(json.loads(meta[REPLACED_KEY]))
    return out


def visible_files(table, partition: str, completed: Iterable[str],
                  replaced: set[str] | None = None) -> list[RliFile]:
    """RLI files of ``partition`` that readers may use: committed and not replaced."""
    done = set(completed)
    replaced = replaced or set()
    out = []
    for info in tfs.list_files(table.fs, table.abs_path(partition_rel(partition))):
        inst = instant_of(info.base_name)
        rel = f"{partition_rel(partition)}/{info.base_name}"
        if inst is not None and inst in done and rel not in replaced:
            out.append(RliFile(partition, rel, inst, int(info.size)))
    return sorted(out, key=lambda f: f.path)


def rli_partitions(table) -> list[str]:
    """Data partitions that have an RLI folder (nested partition paths included)."""
    root = table.abs_path(RLI_DIR)
    parts = set()
    for info in tfs.list_files(table.fs, root, recursive=True):
        rel = info.path[len(root):].strip("/")
        if "/" in rel and instant_of(rel) is not None:
            parts.add(rel.rsplit("/", 1)[0])
    return sorted(parts)


def all_visible_files(table, snapshot) -> list[RliFile]:
    """Every visible RLI file of the table, for ``index_disk_bytes`` and ``verify``."""
    replaced = replaced_files(snapshot.extra)
    return [f for p in rli_partitions(table)
            for f in visible_files(table, p, snapshot.completed, replaced)]


def read_file(table, path: str, columns: list[str] | None = None,
              stats: IOStats | None = None) -> pa.Table:
    """One RLI file, counted like every other read (``IOStats``)."""
    return bf.read_parquet(table.fs, table.abs_path(path), stats, columns)


def read_record_index_locations(table, partition: str, completed: Iterable[str],
                                replaced: set[str] | None = None,
                                columns: list[str] | None = None,
                                stats: IOStats | None = None) -> pa.Table:
    """The design's ``readRecordIndexLocations(partition)``: committed entries of one
    data partition (``columns`` narrows the read, e.g. hash and bucket for a bootstrap)."""
    files = visible_files(table, partition, completed, replaced)
    schema = pa.schema([SCHEMA.field(c) for c in columns]) if columns else SCHEMA
    tables = [read_file(table, f.path, columns, stats) for f in files]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([t.cast(schema) for t in tables])


def bootstrap_entries(table, snapshot, partition: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(key hashes, buckets, files read, bytes read) of a partition's committed RLI: what a
    cache bootstrap reads (the loader :class:`~indexes.dynamic_rli.core.DynamicRliCore`
    calls on first touch)."""
    stats = IOStats()
    entries = read_record_index_locations(table, partition, snapshot.completed,
                                          replaced_files(snapshot.extra),
                                          columns=["key_hash", "bucket"], stats=stats)
    return (entries.column("key_hash").to_numpy(), entries.column("bucket").to_numpy(),
            stats.files_read, stats.bytes_read)


def share_entries(table, paths: Iterable[str], assigner: int, num_assigners: int,
                  stats: IOStats | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(key hashes, buckets) of assigner ``assigner``'s committed entries among the
    partition's visible RLI files ``paths``: its own share files, and its rows of
    unsharded files. What a bucket-assigner task bootstraps a share from."""
    hs, bs = [], []
    for path in paths:
        share = share_of(path)
        if share is not None and share != assigner:
            continue
        t = read_file(table, path, ["key_hash", "bucket"], stats)
        h = t.column("key_hash").to_numpy().astype(np.int32, copy=False)
        b = t.column("bucket").to_numpy().astype(np.int16, copy=False)
        if share is None and num_assigners > 1:
            keep = assigner_of(h, num_assigners) == assigner
            h, b = h[keep], b[keep]
        hs.append(h)
        bs.append(b)
    if not hs:
        return np.empty(0, np.int32), np.empty(0, np.int16)
    return np.concatenate(hs), np.concatenate(bs)


def compact_partition(table, partition: str, files: list[str], instant: str,
                      num_assigners: int) -> list[tuple[str, int, int]]:
    """Copy the entries of ``files`` unchanged into one file per share (``c<k>``) of
    ``instant`` (its own replacecommit makes them visible and hides the old files);
    returns (path, bytes, rows) of each."""
    data = pa.concat_tables([read_file(table, f).cast(SCHEMA) for f in files])
    owner = assigner_of(data.column("key_hash").to_numpy(), num_assigners)
    out = []
    for a in np.unique(owner):
        part = data.filter(pa.array(owner == a))
        rel, size = write_file(table, partition, instant, part, tag=share_tag("c", int(a)))
        out.append((rel, size, part.num_rows))
    return out


def lookup_candidates(table, files: Iterable[str], keys: pa.Array, stats: IOStats,
                      counts) -> Candidates:
    """A point lookup's RLI path: read the record key and file id of the partition's
    visible RLI files and keep the entries of the looked-up keys. A deleted key keeps
    its entry, so it still names a file group (whose read then finds nothing)."""
    tables = [read_file(table, f, ["record_key", "file_id"], stats) for f in files]
    if not tables or not len(keys):
        return Candidates.none()
    entries = pa.concat_tables(tables)
    at = pc.index_in(entries.column("record_key"), value_set=keys)
    hit = pc.is_valid(at)
    key_idx = pc.filter(at, hit).to_numpy(zero_copy_only=False).astype(np.int64)
    fids = pc.filter(entries.column("file_id"), hit).to_numpy(zero_copy_only=False)
    counts["rli_entries_matched"] += len(key_idx)
    counts["candidate_files"] += len(set(fids.tolist()))
    return Candidates.from_rows(key_idx, fids)
