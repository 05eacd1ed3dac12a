"""Hash-bucket routing over arrays (no Spark): the bucket of a row, of a looked-up key.

A row's bucket is ``hash(index key) % N`` with its partition's current ``N``; the hash
is Hudi's (Java ``List<String>.hashCode``, see :mod:`indexes.hashing`) and the bucket id
is encoded in the file group id (RFC-29), so routing needs only the snapshot's file
names. The Spark tasks and the simulator of every hash-bucket index call these.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes.hashing import bucket_ids
from indexes.lookup import Candidates
from tableformat.basefile import bucket_of_file_id


def partition_codes(partitions) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of the rows' partitions and the distinct partition values."""
    arr = partitions if isinstance(partitions, pa.Array | pa.ChunkedArray) else \
        pa.array(np.asarray(partitions, dtype=object), pa.string())
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            enc.dictionary.to_pylist())


def route(columns, partitions, counts: dict[str, int]) -> np.ndarray:
    """Bucket of every row: ``hash(index key) % N`` with its partition's current ``N``."""
    codes, values = partition_codes(partitions)
    n = np.array([counts[v] for v in values], dtype=np.int64)[codes] if len(codes) else \
        np.empty(0, np.int64)
    return bucket_ids(columns, n)


def lookup_candidates(files, num_buckets: int, hash_columns, counts) -> Candidates:
    """A point lookup's bucket path: each key's bucket under its partition's current
    count, and that bucket's file group if it has one (``files``: (file id, path) of
    one partition). Keys of a bucket without a file group are absent: nothing to read."""
    n = len(hash_columns[0])
    buckets = bucket_ids(hash_columns, np.full(n, num_buckets, dtype=np.int64))
    by_bucket = {bucket_of_file_id(fid): fid for fid, _ in files}
    fids = np.array([by_bucket.get(int(b)) for b in buckets], dtype=object)
    located = np.flatnonzero(fids != None)  # noqa: E711 (element-wise)
    counts["keys_hashed"] += n
    counts["candidate_files"] += len({fids[i] for i in located})
    return Candidates.from_rows(located, fids[located])
