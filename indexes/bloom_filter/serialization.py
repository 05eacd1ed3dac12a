"""A filter's bytes and Parquet footer entries, in Hudi's layout, and back.

Footer sizes are part of what the benchmark measures and a Hudi reader must be able to open
``hashing="hudi"`` filters, so the bytes follow Hudi's ``DataOutput`` layout: big-endian ints,
an ``InternalFilter`` header (version, k, hash type, m), bit vectors as ``(m + 7) / 8``
little-bit-order bytes, base64 text under ``FOOTER_KEY``, and the type-code key only for a
DYNAMIC type (a reader that finds none reads SIMPLE). A short trailer follows Hudi's bytes
with what Hudi does not persist (fpp, max entries, per-row add counts, the round-robin cursor),
so a reloaded filter behaves exactly like the original, including further adds; Hudi's
readers (``DataInputStream`` over the decoded bytes) read only the fields they need and never
look at it. A reloaded filter hashes as the hash-type byte of its header says.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

import bitarray

from indexes.bloom_filter.hudi_hash import HUDI, HUDI_MURMUR_HASH_TYPE, HadoopRow
from indexes.bloom_filter.policy import SIMPLE, DynamicPolicy, parse_type_code, simple_policy
from indexes.bloom_filter.pybloom_hash import PYBLOOM, PYBLOOM_HASH_TYPE, PybloomRow

__all__ = [
    "DYNAMIC_PREFIX",
    "FOOTER_KEY",
    "MAX_KEY",
    "MIN_KEY",
    "OLD_FOOTER_KEY",
    "TYPE_CODE_KEY",
    "Decoded",
    "filter_bytes",
    "footer_entries",
    "footer_filter",
    "read_filter",
    "text_length",
    "to_text",
]

# Parquet footer key-value metadata names, as Hudi writes them (HoodieBloomFilterWriteSupport).
FOOTER_KEY = "org.apache.hudi.bloomfilter"
OLD_FOOTER_KEY = "com.uber.hoodie.bloomfilter"  # read, never written (Hudi reads both)
TYPE_CODE_KEY = "hoodie_bloom_filter_type_code"
MIN_KEY = "hoodie_min_record_key"
MAX_KEY = "hoodie_max_record_key"
# HoodieDynamicBoundedBloomFilter.TYPE_CODE_PREFIX: HoodieBloomFilterWriteSupport writes the
# type-code footer key only for a type code whose name contains it; a reader that finds no key
# reads the filter as SIMPLE.
DYNAMIC_PREFIX = "DYNAMIC"

_FILTER_VERSION = -1  # InternalFilter.VERSION
_HASHING_OF_TYPE = {PYBLOOM_HASH_TYPE: PYBLOOM, HUDI_MURMUR_HASH_TYPE: HUDI}
_TRAILER_MAGIC = b"IXBP"
_TRAILER_VERSION = 1


class Decoded(NamedTuple):
    """A serialized filter's state, as the filter's constructor takes it."""

    type_code: str
    num_entries: int
    fpp: float
    max_entries: int
    hashing: str
    rows: list[Any]
    policy: DynamicPolicy


def filter_bytes(type_code: str, rows: Sequence[Any], hash_type: int, policy: DynamicPolicy,
                 fpp: float, num_entries: int, max_entries: int) -> bytes:
    """Hudi's bytes of a filter (``SimpleBloomFilter`` / ``HoodieDynamicBoundedBloomFilter``
    ``write``) followed by indexbench's trailer."""
    k, m = rows[0].num_hashes, rows[0].num_bits
    header = struct.pack(">iibi", _FILTER_VERSION, k, hash_type, m)
    chunks: list[bytes] = []
    if type_code == SIMPLE:
        chunks += [header, rows[0].bitarray.tobytes()]
    else:
        # InternalDynamicBloomFilter.write: header, nr, currentNbRecord, rows, each row.
        p = policy
        cur32 = (p.current + 2**31) % 2**32 - 2**31  # Java int wraps
        chunks += [header, struct.pack(">iii", p.nr, cur32, len(rows))]
        for row in rows:
            chunks += [header, row.bitarray.tobytes()]
    p = policy
    row_counts = [int(r.count) for r in rows]
    chunks.append(
        _TRAILER_MAGIC
        + struct.pack(
            ">idiqq?qi",
            _TRAILER_VERSION,
            fpp,
            num_entries,
            max_entries,
            p.current,
            p.reached,
            p.cursor,
            len(rows),
        )
        + struct.pack(f">{len(rows)}q", *row_counts)
    )
    return b"".join(chunks)


_HEADER = struct.calcsize(">iibi")
_DYNAMIC_HEADER = struct.calcsize(">iii")
_TRAILER = len(_TRAILER_MAGIC) + struct.calcsize(">idiqq?qi")


def text_length(type_code: str, num_rows: int, num_bits: int) -> int:
    """Characters of the footer text :func:`filter_bytes` + :func:`to_text` give a filter
    of ``num_rows`` rows of ``num_bits`` bits, without building it (the simulator's
    footer size: exact, at any table size)."""
    row = (num_bits + 7) // 8
    if type_code == SIMPLE:
        raw = _HEADER + row
    else:
        raw = _HEADER + _DYNAMIC_HEADER + num_rows * (_HEADER + row)
    raw += _TRAILER + 8 * num_rows
    return 4 * ((raw + 2) // 3)


def to_text(data: bytes) -> str:
    """The footer value of a filter's bytes (Hudi's ``serializeToString``: base64)."""
    return base64.b64encode(data).decode("ascii")


def read_filter(text: str, type_code: str | None = None) -> Decoded:
    """Inverse of :func:`to_text` of :func:`filter_bytes` (Hudi's
    ``BloomFilterFactory.fromString``); ``type_code`` ``None`` reads a SIMPLE filter."""
    code = SIMPLE if type_code is None else parse_type_code(type_code)
    data = base64.b64decode(text)
    off = 0

    def read(fmt: str) -> tuple[Any, ...]:
        nonlocal off
        size = struct.calcsize(fmt)
        if off + size > len(data):
            raise ValueError("truncated bloom filter")
        vals = struct.unpack_from(fmt, data, off)
        off += size
        return vals

    def read_header() -> tuple[int, int, int]:
        """InternalFilter.readFields: version, k, hash type, m."""
        version, k, hash_type, m = read(">iibi")
        if version != _FILTER_VERSION:
            raise ValueError(f"unsupported bloom filter version {version}")
        if hash_type not in _HASHING_OF_TYPE:
            raise ValueError(
                f"hash type {hash_type} is neither pybloom-live's ({PYBLOOM_HASH_TYPE}) "
                f"nor Hudi's murmur ({HUDI_MURMUR_HASH_TYPE}); cannot be probed here"
            )
        return k, hash_type, m

    def read_row() -> tuple[int, int, int, bytes]:
        nonlocal off
        k, hash_type, m = read_header()
        nbytes = (m + 7) // 8
        if off + nbytes > len(data):
            raise ValueError("truncated bloom filter")
        bits = data[off : off + nbytes]
        off += nbytes
        return k, hash_type, m, bits

    raw_rows: list[tuple[int, int, int, bytes]] = []
    nr = hudi_current = 0
    if code == SIMPLE:
        raw_rows.append(read_row())
    else:
        outer = read_header()  # the outer InternalFilter header (same k, m as the rows)
        nr, hudi_current, n_rows = read(">iii")
        raw_rows.extend(read_row() for _ in range(n_rows))
        if any((k, t, m) != outer for k, t, m, _ in raw_rows):
            raise ValueError("bloom filter rows disagree with the filter's header")
    if not raw_rows or len({(k, t, m) for k, t, m, _ in raw_rows}) != 1:
        raise ValueError("bloom filter rows of different shapes or hashings")
    hashing = _HASHING_OF_TYPE[raw_rows[0][1]]
    if data[off : off + 4] == _TRAILER_MAGIC:
        off += 4
        (ver, fpp, num_entries, max_entries, current, reached, cursor, n_rows) = read(
            ">idiqq?qi")
        if ver != _TRAILER_VERSION or n_rows != len(raw_rows):
            raise ValueError("inconsistent bloom filter trailer")
        counts = read(f">{n_rows}q")
    elif hashing == PYBLOOM:
        raise ValueError("bloom filter lacks indexbench's trailer")
    else:  # Hudi's own writer made it (a table Hudi's writer continued)
        k, _t, m, _bits = raw_rows[0]
        (fpp, num_entries, max_entries, current, reached, cursor, counts) = _hudi_state(
            code, k, m, raw_rows, nr, hudi_current)
    rows: list[Any] = []
    for (k, _t, m, bits), c in zip(raw_rows, counts, strict=True):
        if hashing == PYBLOOM:
            if m % k:
                raise ValueError("bit vector is not k equal slices")
            row: PybloomRow | HadoopRow = PybloomRow(k, m // k, num_entries, fpp)
        else:
            row = HadoopRow(m, k, num_entries, fpp)
        ba = bitarray.bitarray(endian="little")
        ba.frombytes(bits)
        del ba[m:]
        row.bitarray = ba
        row.count = int(c)
        rows.append(row)
    if code == SIMPLE:
        policy = simple_policy(current=current)
    else:
        policy = DynamicPolicy(
            nr=nr,
            max_nr=max_entries,
            rows=len(rows),
            current=current,
            reached=bool(reached),
            cursor=cursor,
        )
    return Decoded(code, num_entries, fpp, max_entries, hashing, rows, policy)


def _hudi_state(code: str, k: int, m: int, raw_rows: list, nr: int, current: int
                ) -> tuple[float, int, int, int, bool, int, list[int]]:
    """What a filter of Hudi's own writer does not store beside its bits (indexbench's
    trailer does): the entries each row was sized for (``nr`` for DYNAMIC_V0, else the
    keys the bits say at most: ``m ln 2 / k``), the false-positive rate those give
    (Hudi's sizing inverted: ``exp(-m ln^2 2 / n)``), and the keys in each row (full
    rows but the last, which holds ``current``; a SIMPLE row: the bits' estimate).
    Probing needs the bits only; these keep the filter's shape for adds."""
    ln2 = math.log(2)
    entries = nr if nr > 0 else max(1, round(m * ln2 / k))
    fpp = math.exp(-m * ln2 * ln2 / entries)
    if code == SIMPLE:
        ones = bitarray.bitarray(endian="little")
        ones.frombytes(raw_rows[0][3])
        x = min(ones.count(1), m - 1)
        counts = [round(-m / k * math.log(1 - x / m))]
        return fpp, entries, entries, counts[0], False, 0, counts
    n = len(raw_rows)
    counts = [entries] * (n - 1) + [current]
    return fpp, entries, entries * n, current, False, 0, counts


def footer_entries(type_code: str, text: str) -> dict[str, str]:
    """The footer key-values Hudi's ``HoodieBloomFilterWriteSupport`` writes for a filter's
    text: the text, plus the type code only for a DYNAMIC type."""
    out = {FOOTER_KEY: text}
    if DYNAMIC_PREFIX in type_code:
        out[TYPE_CODE_KEY] = type_code
    return out


def footer_filter(footer: Any) -> tuple[str, str | None] | None:
    """A footer's filter text and type code (Hudi's ``readBloomFilterFromMetadata``):
    ``FOOTER_KEY`` (or Hudi's old key) and ``TYPE_CODE_KEY``; ``None`` if the footer holds
    no filter."""
    text = footer.get(FOOTER_KEY)
    if text is None:
        text = footer.get(OLD_FOOTER_KEY)
    if text is None:
        return None
    return text, footer.get(TYPE_CODE_KEY)
