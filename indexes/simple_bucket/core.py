"""simple-bucket core: bucket of a row and file group of a bucket, over arrays (no Spark).

The bucket id is encoded in the file group id (RFC-29), so routing needs only the file
names of the snapshot; the hash is Hudi's (Java ``List<String>.hashCode``, see
:mod:`indexes.hashing`). The Spark adapter and the simulator both call these.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes.hashing import bucket_ids
from indexes.lookup import Candidates
from tableformat.basefile import bucket_file_id, bucket_of_file_id
from tableformat.errors import InvariantViolation


def existing_bucket_files(slices) -> dict[tuple[str, int], str]:
    """``(partition, bucket) -> file id`` of committed file groups; two per bucket is an error."""
    out: dict[tuple[str, int], str] = {}
    for s in slices:
        key = (s.partition, bucket_of_file_id(s.file_id))
        if key in out:
            raise InvariantViolation(
                f"bucket {key[1]} of partition {key[0]!r} is claimed by two file groups: "
                f"{out[key]} and {s.file_id}")
        out[key] = s.file_id
    return out


def new_bucket_file_id(instant: str, partition: str, bucket: int) -> str:
    """A new bucket's file group id: a pure function of (instant, partition, bucket), so
    every task of a batch (and the simulator) names it alike without talking."""
    return bucket_file_id(int(bucket), f"{instant}/{partition}/{bucket}")


def _partition_codes(partitions) -> tuple[np.ndarray, list[str]]:
    """Dictionary codes of the rows' partitions and the distinct partition values."""
    arr = partitions if isinstance(partitions, pa.Array | pa.ChunkedArray) else \
        pa.array(np.asarray(partitions, dtype=object), pa.string())
    enc = pc.dictionary_encode(arr)
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    return (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            enc.dictionary.to_pylist())


def file_id_table(
    partitions, buckets: np.ndarray, existing: dict[tuple[str, int], str], instant: str
) -> tuple[list[str], np.ndarray]:
    """The distinct file ids of the rows and each row's index into them.

    Names are looked up once per distinct (partition, bucket): the bucket's file group,
    or a new one named after (instant, partition, bucket)."""
    codes, values = _partition_codes(partitions)
    b = np.asarray(buckets, dtype=np.int64)
    width = int(b.max(initial=0)) + 1
    pairs, inverse = np.unique(codes * width + b, return_inverse=True)  # few distinct
    names = [existing.get((values[c], int(x))) or new_bucket_file_id(instant, values[c], x)
             for c, x in zip((pairs // width).tolist(), (pairs % width).tolist(), strict=True)]
    return names, inverse.reshape(-1)


def assign_file_ids(
    partitions, buckets: np.ndarray, existing: dict[tuple[str, int], str], instant: str
) -> np.ndarray:
    """File id per row (an object array; Spark tasks take :func:`file_id_table` into Arrow)."""
    names, inverse = file_id_table(partitions, buckets, existing, instant)
    return np.asarray(names, dtype=object)[inverse]


def route(columns, partitions, counts: dict[str, int]) -> np.ndarray:
    """Bucket of every row: ``hash(index key) % N`` with its partition's current ``N``."""
    codes, values = _partition_codes(partitions)
    n = np.array([counts[v] for v in values], dtype=np.int64)[codes] if len(codes) else \
        np.empty(0, np.int64)
    return bucket_ids(columns, n)


def bucket_problems(slices, counts: dict[str, int]) -> list[str]:
    """The bucket invariant on file names: one file group per bucket, ids in range."""
    from collections import Counter

    per_bucket = Counter((s.partition, bucket_of_file_id(s.file_id)) for s in slices)
    problems = [f"bucket {b} of {p!r} has {n} file groups"
                for (p, b), n in per_bucket.items() if n > 1]
    problems += [f"file group of bucket {b} in {p!r} is outside 0..{counts[p] - 1}"
                 for (p, b) in per_bucket if b >= counts[p]]
    return problems


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
