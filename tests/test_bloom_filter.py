"""Hudi's SIMPLE / DYNAMIC_V0 bloom filters on pybloom-live: structure, policy, fpp, serde."""

from __future__ import annotations

import functools
import math
import uuid

import numpy as np
import pyarrow as pa
import pybloom_live
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes.bloom_filter import (
    DYNAMIC_V0,
    FOOTER_KEY,
    MAX_KEY,
    MIN_KEY,
    SIMPLE,
    TYPE_CODE_KEY,
    HoodieBloomFilter,
    hudi_bit_size,
    hudi_num_hashes,
    theoretical_fpp,
)
from indexes.bloom_filter.policy import DynamicPolicy


def _keys(n: int, prefix: str = "k") -> list[str]:
    return list(_key_tuple(n, prefix))  # a new list each call: callers may change theirs


@functools.cache
def _key_tuple(n: int, prefix: str) -> tuple[str, ...]:
    """Made once per (n, prefix): four tests probe the same 200,000 keys (~0.5 s each)."""
    return tuple(f"{prefix}-{i:09d}-{uuid.UUID(int=i * 7919 + 13)}" for i in range(n))


def test_footer_constants() -> None:
    assert FOOTER_KEY == "org.apache.hudi.bloomfilter"
    assert TYPE_CODE_KEY == "hoodie_bloom_filter_type_code"
    assert MIN_KEY == "hoodie_min_record_key"
    assert MAX_KEY == "hoodie_max_record_key"


# (num_entries, fpp, getBitSize, getNumHashes) printed by Java 17 running a copy of Hudi's
# BloomFilterUtils formulas (javac Sizing.java && java Sizing).
JAVA_SIZING = [
    (60000, 1e-9, 2587966, 30),
    (100, 0.01, 959, 7),
    (1000, 1e-6, 28756, 20),
    (500000, 1e-9, 21566382, 30),
]


@pytest.mark.parametrize(("n", "fpp", "m", "k"), JAVA_SIZING)
def test_sizing_matches_hudi(n: int, fpp: float, m: int, k: int) -> None:
    assert hudi_bit_size(n, fpp) == m
    assert hudi_num_hashes(m, n) == k
    f = HoodieBloomFilter.create(SIMPLE, num_entries=n, fpp=fpp)
    assert f.hashes_per_row == k
    assert f.bits_per_row == k * math.ceil(m / k)  # equal pybloom slices, >= Hudi's m
    assert f.bits_per_row - m < k


def test_defaults() -> None:
    f = HoodieBloomFilter.create()
    assert (f.type_code, f.num_entries, f.fpp, f.max_entries) == (DYNAMIC_V0, 60000, 1e-9, 100000)
    assert (f.rows, f.count, f.hashes_per_row) == (1, 0, 30)


@pytest.mark.parametrize(("n", "fpp"), [(60000, 1e-9), (100, 0.01), (50, 0.3)])
def test_bulk_positions_are_pybloom_positions(n: int, fpp: float) -> None:
    """Vectorized hashing must set exactly the bits pybloom's own make_hashes would."""
    f = HoodieBloomFilter.create(SIMPLE, num_entries=n, fpp=fpp)
    row = f._rows[0]
    keys = _keys(300) + ["", "\u043a\u043b\u044e\u0447", "\U0001f600", "a\x00b"]
    expected = np.array([list(row.make_hashes(k)) for k in keys]) + (
        np.arange(row.num_slices) * row.bits_per_slice
    )
    assert (f._hasher.positions(keys) == expected).all()
    # and bits set by add_keys equal those set by pybloom's per-key add
    f.add_keys(keys)
    ref = pybloom_live.BloomFilter(10, 0.5)
    ref._setup(row.error_rate, row.num_slices, row.bits_per_slice, 10**9, 0)
    ref.bitarray = row.bitarray.copy()
    ref.bitarray.setall(False)
    for k in keys:
        ref.add(k, skip_check=True)
    assert ref.bitarray == row.bitarray


class JavaDynamicPolicy:
    """Line-by-line transcription of InternalDynamicBloomFilter.add/getActiveStandardBF."""

    def __init__(self, nr: int, max_nr: int):
        self.nr, self.max_nr = nr, max_nr
        self.current, self.reached, self.cur_index = 0, False, 0
        self.matrix = [0]  # add counts per row

    def _active(self) -> int | None:
        if self.reached:
            i = self.cur_index % len(self.matrix)
            self.cur_index += 1
            return i
        if self.current >= self.nr and len(self.matrix) * self.nr < self.max_nr:
            return None
        elif self.current >= self.nr and len(self.matrix) * self.nr >= self.max_nr:
            self.reached = True
            return 0
        return len(self.matrix) - 1

    def add(self) -> int:
        bf = self._active()
        if bf is None:
            self.matrix.append(0)
            bf = len(self.matrix) - 1
            self.current = 0
        self.matrix[bf] += 1
        self.current += 1
        return bf


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 50),
    st.integers(0, 400),
    st.lists(st.integers(0, 120), max_size=12),
)
def test_policy_equals_java_transcription(nr: int, max_nr: int, batches: list[int]) -> None:
    java = JavaDynamicPolicy(nr, max_nr)
    ours = DynamicPolicy(nr=nr, max_nr=max_nr)
    for b in batches:
        expected = [java.add() for _ in range(b)]
        assert ours.assign(b).tolist() == expected
        assert ours.rows == len(java.matrix)


def test_dynamic_growth_with_hudi_defaults() -> None:
    """Defaults: 1 row up to 60000 adds, 2 rows after, never a 3rd (2*60000 >= 100000)."""
    p = DynamicPolicy(nr=60000, max_nr=100000)
    counts = np.zeros(3, dtype=np.int64)
    for step, rows in [(60000, 1), (40000, 2), (100000, 2)]:
        counts += np.bincount(p.assign(step), minlength=3)
        assert p.rows == rows
    # adds 60001..120000 fill row 1; 120001 hits the bound -> row 0, then 120002 -> row 0 again,
    # then round-robin 1, 0, 1, ...: 1 + 40000 more on row 0, 39999 on row 1.
    assert counts.tolist() == [100001, 99999, 0]
    f = HoodieBloomFilter.create()
    assert f.theoretical_fpp(60000) == pytest.approx(theoretical_fpp(f.bits_per_row, 30, 60000))


def test_dynamic_rows_and_round_robin_on_real_filter() -> None:
    f = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    keys = _keys(1000)
    f.add_keys(keys[:100])
    assert (f.rows, f.row_counts) == (1, [100])
    f.add_keys(keys[100:101])
    assert (f.rows, f.row_counts) == (2, [100, 1])
    f.add_keys(keys[101:300])
    assert (f.rows, f.row_counts) == (3, [100, 100, 100])  # 3*100 >= 250: bound reached next
    f.add_keys(keys[300:302])
    assert f.row_counts == [102, 100, 100]  # bound-hitting add and the next both go to row 0
    f.add_keys(keys[302:305])
    assert f.row_counts == [103, 101, 101]  # then rows 1, 2, 0, ...
    f.add_keys(keys[305:])
    assert f.rows == 3 and f.count == 1000
    java = JavaDynamicPolicy(100, 250)
    for _ in range(1000):
        java.add()
    assert f.row_counts == java.matrix
    assert f.might_contain_many(keys).all()


def test_one_by_one_equals_bulk() -> None:
    keys = _keys(700)
    a = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    b = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    a.add_keys(keys)
    for k in keys:
        b.add(k)
    assert a.row_counts == b.row_counts
    assert all(ra.bitarray == rb.bitarray for ra, rb in zip(a._rows, b._rows, strict=True))
    assert a.serialize() == b.serialize()


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([SIMPLE, DYNAMIC_V0]),
    st.lists(st.text(max_size=30), min_size=1, max_size=300),
)
def test_no_false_negatives(type_code: str, keys: list[str]) -> None:
    f = HoodieBloomFilter.create(type_code, num_entries=40, fpp=0.05, max_entries=100)
    f.add_keys(keys)
    assert f.might_contain_many(keys).all()
    assert all(f.might_contain(k) for k in keys[:20])


@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
def test_serialize_round_trip(type_code: str) -> None:
    f = HoodieBloomFilter.create(type_code, num_entries=100, fpp=0.01, max_entries=250)
    members = _keys(400)
    f.add_keys(members)
    text = f.serialize()
    assert isinstance(text, str) and text.isascii()
    assert len(text) == 4 * math.ceil(f.size_bytes / 3)
    g = HoodieBloomFilter.deserialize(text, type_code.lower())  # case-insensitive like Hudi
    assert (g.type_code, g.num_entries, g.fpp, g.max_entries) == (
        f.type_code,
        f.num_entries,
        f.fpp,
        f.max_entries,
    )
    assert (g.rows, g.row_counts, g.bits_per_row, g.hashes_per_row) == (
        f.rows,
        f.row_counts,
        f.bits_per_row,
        f.hashes_per_row,
    )
    probes = members + _keys(5000, prefix="absent")
    assert (g.might_contain_many(probes) == f.might_contain_many(probes)).all()
    assert g.theoretical_fpp() == f.theoretical_fpp()
    # further adds continue exactly where the original would
    more = _keys(123, prefix="more")
    f.add_keys(more)
    g.add_keys(more)
    assert g.serialize() == f.serialize()


def test_serialized_layout_is_hudis() -> None:
    """Hudi's DataOutput layout: version -1, k, hash-type byte, m, then (m+7)/8 bytes per row."""
    import base64
    import struct

    f = HoodieBloomFilter.create()  # defaults, DYNAMIC_V0
    f.add_keys(_keys(60001))
    raw = base64.b64decode(f.serialize())
    version, k, _hash_type, m = struct.unpack_from(">iibi", raw, 0)
    assert (version, k, m) == (-1, 30, f.bits_per_row)
    nr, current, rows = struct.unpack_from(">iii", raw, 13)
    assert (nr, current, rows) == (60000, 1, 2)
    row_bytes = 13 + (m + 7) // 8
    assert raw[25 + 2 * row_bytes : 25 + 2 * row_bytes + 4] == b"IXBP"


def test_deserialize_rejects_foreign_or_bad_input() -> None:
    f = HoodieBloomFilter.create(SIMPLE, num_entries=10, fpp=0.1)
    with pytest.raises(ValueError):
        HoodieBloomFilter.deserialize(f.serialize(), "BOGUS")
    with pytest.raises(ValueError):
        HoodieBloomFilter.create("BOGUS")
    import base64
    import struct

    jenkins = base64.b64encode(struct.pack(">iibi", -1, 3, 0, 8) + b"\x00").decode()
    with pytest.raises(ValueError, match="hash type"):
        HoodieBloomFilter.deserialize(jenkins, SIMPLE)
    # Hudi's murmur bits are read (hashing="hudi") without indexbench's trailer too, as
    # Hudi's writer leaves them (tests/test_bloom_hudi_hash.py); pybloom's need it
    murmur = base64.b64encode(struct.pack(">iibi", -1, 3, 1, 8) + b"\x00").decode()
    assert not HoodieBloomFilter.deserialize(murmur, SIMPLE).might_contain("a")
    with pytest.raises(TypeError):
        f.add_keys(["a", None])  # type: ignore[list-item]


def test_accepts_arrays() -> None:
    f = HoodieBloomFilter.create(SIMPLE, num_entries=100, fpp=0.01)
    keys = _keys(50)
    f.add_keys(pa.array(keys))
    assert f.might_contain_many(np.array(keys, dtype=object)).all()
    assert keys[0] in f and len(f) == 50


def _binomial_ok(hits: int, trials: int, p: float, sigmas: float = 5.0) -> bool:
    sd = math.sqrt(trials * p * (1 - p))
    return abs(hits - trials * p) <= sigmas * sd + 1


@pytest.mark.parametrize(
    ("type_code", "n_added"),
    [(SIMPLE, 500), (SIMPLE, 1500), (DYNAMIC_V0, 500), (DYNAMIC_V0, 1500)],
)
def test_false_positive_rate_matches_theory(type_code: str, n_added: int) -> None:
    f = HoodieBloomFilter.create(type_code, num_entries=500, fpp=0.02, max_entries=1000)
    f.add_keys(_keys(n_added))
    probes = _keys(200_000, prefix="absent")
    hits = int(f.might_contain_many(probes).sum())
    p = f.theoretical_fpp()
    assert f.theoretical_fpp(n_added) == pytest.approx(p)
    assert 0.005 < p < 0.5
    assert _binomial_ok(hits, len(probes), p), (hits, len(probes) * p)


def test_adding_beyond_capacity_works_and_raises_fp() -> None:
    raw = pybloom_live.BloomFilter(100, 0.01)
    with pytest.raises(IndexError):  # why we cannot use pybloom's own add
        for k in _keys(200):
            raw.add(k, skip_check=True)
    f = HoodieBloomFilter.create(SIMPLE, num_entries=100, fpp=0.01)
    row = f._rows[0].copy()
    for k in _keys(300):
        row.add(k)  # the pybloom subclass itself accepts adds past capacity
    assert row.count == 300
    probes = _keys(50_000, prefix="absent")
    rates = []
    for total in (100, 300, 1000):
        f.add_keys(_keys(total)[f.count :])
        assert f.count == total
        rates.append(f.might_contain_many(probes).mean())
    assert rates[0] < rates[1] < rates[2]
    assert f.might_contain_many(_keys(1000)).all()
    assert f.theoretical_fpp() > 0.5


def test_theoretical_fpp_function() -> None:
    assert theoretical_fpp(1000, 7, 0) == 0.0
    m, k, n = 959, 7, 100
    assert theoretical_fpp(m, k, n) == pytest.approx((1 - (1 - k / m) ** n) ** k)
    assert theoretical_fpp(m, k, 200) > theoretical_fpp(m, k, 100)
    f = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=100, fpp=0.01, max_entries=250)
    m = f.bits_per_row
    expected = 1 - (1 - theoretical_fpp(m, 7, 100)) * (1 - theoretical_fpp(m, 7, 50))
    assert f.theoretical_fpp(150) == pytest.approx(expected)


@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
@pytest.mark.parametrize("n_added", [50, 3000, 9000])
def test_prehashed_probe_equals_per_key_pybloom(type_code: str, n_added: int) -> None:
    """Keys hashed once (``prehash``) and probed against filters of any fill give exactly
    the membership of pybloom's own per-key positions."""
    make = lambda: HoodieBloomFilter.create(type_code, 1000, 1e-3, 4000)  # noqa: E731
    f = make()
    f.add_keys(_keys(n_added))
    probes = _keys(n_added + 2000)  # members first, then non-members
    words = make().prehash(probes)  # another filter of the family hashes alike
    full = make().prehash(probes, all_slices=True)
    assert (full[: len(words)] == words).all() and len(full) == f.hashes_per_row
    assert make().hash_family == f.hash_family
    got = f.might_contain_many(probes, words)
    assert (got == f.might_contain_many(probes)).all()
    assert (got == f.might_contain_many(probes, full)).all()
    row0 = f._rows[0]
    expect = []
    for key in probes:
        pos = [k + j * row0.bits_per_slice for j, k in enumerate(row0.make_hashes(key))]
        expect.append(any(all(r.bitarray[p] for p in pos) for r in f._rows))
    assert got.tolist() == expect
    assert got[:n_added].all()
    with pytest.raises(ValueError, match="do not match"):
        f.might_contain_many(probes[:5], words)
    with pytest.raises(ValueError, match="do not match"):
        f.might_contain_many(probes[:5], full)
