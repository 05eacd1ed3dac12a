"""external-kv's logic over Arrow/numpy arrays: entries, their validity, request batches.

Hudi's HBase index keeps one row per record key with three columns (``commit_ts``,
``file_name``, ``partition_path``); a lookup trusts a row only when its commit is on
the completed commits timeline (``checkIfValidCommit``). Here every index is
non-global, so the record's partition is part of the row key and the value holds the
other two columns:

    key   = [<hoodie.index.hbase.table>:]<partition path>:<record key>
    value = <commit instant, 17 digits><file id>

A partition path cannot hold ``:`` (:mod:`tableformat.partition_path` refuses it), so
the first ``:`` after the table prefix ends the partition. Nothing here talks to a
server (:mod:`indexes.external_kv.store` does) or imports pyspark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

SEP = ":"
INSTANT_LEN = 17  # yyyyMMddHHmmssSSS
NO_ENTRY = -1  # instant code of a key without an entry


def key_prefix(table_name: str) -> str:
    """What every row key of a table starts with (``""``: the table owns the server)."""
    return f"{table_name}{SEP}" if table_name else ""


def entry_keys(partitions: pa.Array, record_keys: pa.Array, prefix: str = "") -> pa.Array:
    """Row keys of records (partition and record key per row), as binary."""
    parts = pc.cast(partitions, pa.string())
    keys = pc.cast(record_keys, pa.string())
    joined = pc.binary_join_element_wise(parts, keys, SEP)
    if prefix:
        joined = pc.binary_join_element_wise(pa.scalar(prefix), joined, "")
    return pc.cast(joined, pa.binary())


def entry_values(instant: str, file_ids: pa.Array) -> pa.Array:
    """Values of new entries: this instant's time, then each record's file id."""
    if len(instant) != INSTANT_LEN or not instant.isdigit():
        raise ValueError(f"not an instant time: {instant!r}")
    fids = pc.cast(file_ids, pa.string())
    return pc.cast(pc.binary_join_element_wise(pa.scalar(instant), fids, ""), pa.binary())


def decode_values(values: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(instant code per row, NO_ENTRY where the key had no entry; file id per row, null
    where none). ``values`` is what a multi-get returned, as binary (null: missing)."""
    values = pc.cast(values, pa.binary())
    text = pc.cast(values, pa.string())
    head = pc.utf8_slice_codeunits(text, 0, INSTANT_LEN)
    instants = pc.fill_null(pc.cast(head, pa.int64()), NO_ENTRY).to_numpy(zero_copy_only=False)
    fids = pc.utf8_slice_codeunits(text, INSTANT_LEN, 1 << 30)
    return np.asarray(instants, np.int64), fids


def instant_codes(instants: Iterable[str]) -> np.ndarray:
    """Instant times as sorted int64 codes (a 17-digit time fits in an int64)."""
    return np.unique(np.asarray([int(i) for i in instants], np.int64))


def valid_commits(codes: np.ndarray, completed: np.ndarray,
                  archived_before: int | None = None) -> np.ndarray:
    """Hudi's ``checkIfValidCommit`` per entry: its instant is on the completed commits
    timeline, or older than the timeline's start (``archived_before``: Hudi archives old
    instants; this project never does, so None: only completed instants count). An
    empty timeline makes every entry invalid, as in Hudi. ``completed``: sorted codes."""
    codes = np.asarray(codes, np.int64)
    if not len(completed):
        return np.zeros(len(codes), bool)
    at = np.searchsorted(completed, codes)
    ok = (at < len(completed)) & (completed[np.minimum(at, len(completed) - 1)] == codes)
    if archived_before is not None:
        ok |= (codes >= 0) & (codes < archived_before)
    return ok


@dataclass
class Tagged:
    """What a lookup of some keys found: the file id of each key whose entry is valid
    (null otherwise), and the counts of that lookup."""

    file_ids: pa.Array
    found: int  # entries with a valid commit: the records are updates
    stale: int  # entries whose commit is not on the completed timeline: ignored


def tag_values(values: pa.Array, completed: np.ndarray) -> Tagged:
    """Hudi's ``locationTagFunction`` over one multi-get's results: a missing entry or an
    entry of an instant that never completed tags the record as an insert."""
    codes, fids = decode_values(values)
    has = codes != NO_ENTRY
    ok = valid_commits(codes, completed) & has
    return Tagged(pc.if_else(pa.array(ok), fids, pa.nulls(len(fids), pa.string())),
                  int(ok.sum()), int((has & ~ok).sum()))


def entry_instants(values: pa.Array) -> np.ndarray:
    """The instant code of each entry (NO_ENTRY: none), e.g. to check a rollback."""
    return decode_values(values)[0]


def round_trips(counts: Sequence[int] | np.ndarray, batch_size: int) -> int:
    """Requests needed when each group of ``counts`` keys is sent in batches of at most
    ``batch_size`` keys and no request mixes groups (a partition's lookups, a file
    group's puts): the number both engines count."""
    c = np.asarray(counts, np.int64)
    return int(((c + batch_size - 1) // batch_size).sum())


def batch_bounds(n: int, batch_size: int) -> list[tuple[int, int]]:
    """[start, end) of each request of ``n`` keys in batches of ``batch_size``."""
    return [(lo, min(n, lo + batch_size)) for lo in range(0, n, batch_size)]


def percentiles_ms(seconds: Sequence[float] | np.ndarray) -> dict[str, float | None]:
    """p50 and p99 of request latencies (seconds in, milliseconds out; None when no
    request was made), by the nearest-rank rule: each is a latency that was measured."""
    s = np.sort(np.asarray(seconds, np.float64))
    if not len(s):
        return {"p50": None, "p99": None}

    def rank(q: float) -> float:
        return float(s[max(0, math.ceil(q * len(s)) - 1)] * 1000.0)

    return {"p50": rank(0.50), "p99": rank(0.99)}


@dataclass(frozen=True)
class RequestModel:
    """Seconds of one request to the key-value server: a round trip plus a cost per key
    it carries (both measured on a real server, and refitted to a real run's requests
    by ``indexbench calibrate``), and the ratio of the p99 to the p50 request."""

    round_trip_s: float
    key_s: float
    tail_ratio: float = 1.0

    def seconds(self, keys_per_request: np.ndarray | float) -> np.ndarray:
        return self.round_trip_s + self.key_s * np.asarray(keys_per_request, np.float64)

    def p50_ms(self, keys_per_request: float) -> float:
        return float(self.seconds(keys_per_request)) * 1000.0

    def p99_ms(self, keys_per_request: float) -> float:
        return self.p50_ms(keys_per_request) * self.tail_ratio
