"""Hudi-native bloom filters (``hashing="hudi"``, ``indexbench.bloom.hash=hudi``).

The reference is Hadoop's own code in the JVM Spark already runs: pyspark ships
``org.apache.hadoop.util.bloom.BloomFilter`` / ``DynamicBloomFilter`` and
``org.apache.hadoop.util.hash.MurmurHash`` (hadoop-client-api), the classes Hudi's
``SimpleBloomFilter`` wraps and Hudi's ``InternalBloomFilter`` / ``InternalDynamicBloomFilter``
were ported from. Hudi's own classes are not in pyspark's jars, so the DYNAMIC_V0 bytes past
Hadoop's unbounded growth are built from Hadoop rows as ``InternalDynamicBloomFilter.write``
lays them out.
"""

from __future__ import annotations

import base64
import functools
import math
import struct
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import read_snapshot
from hypothesis import given, settings
from hypothesis import strategies as st

from indexbench.driver import open_table, upsert
from indexes.bloom import BloomIndex
from indexes.bloom_filter import (
    DYNAMIC_V0,
    FOOTER_KEY,
    HUDI,
    HUDI_MURMUR_HASH_TYPE,
    PYBLOOM,
    PYBLOOM_HASH_TYPE,
    SIMPLE,
    TYPE_CODE_KEY,
    HoodieBloomFilter,
    hudi_bit_size,
    hudi_num_hashes,
    theoretical_fpp_unpartitioned,
)
from indexes.hashing import hadoop_murmur_chain, hadoop_murmur_chain_fixed, hadoop_murmur_scalar
from tableformat import basefile as bf
from tableformat.errors import IndexBenchError
from tableformat.table import Table


def _keys(n: int, prefix: str = "k") -> list[str]:
    """Record keys of every UTF-8 width and tail length: ASCII, Latin-1, Cyrillic, CJK,
    emoji (4 bytes), NUL, 1..3-byte keys and a few long ones."""
    return list(_key_tuple(n, prefix))  # a new list each call: callers may change theirs


@functools.cache
def _key_tuple(n: int, prefix: str) -> tuple[str, ...]:  # made once per (n, prefix)
    alphabet = ["a", "Z", "0", "é", "ß", "ж", "ключ", "中", "文", "\U0001f600", "\x00", "-", "ÿ"]
    rng = np.random.default_rng(zlib.crc32(prefix.encode()))
    out = []
    for i in range(n):
        width = int(rng.integers(0, 12)) if i % 50 else int(rng.integers(200, 2000))
        body = "".join(alphabet[j] for j in rng.integers(0, len(alphabet), width))
        out.append(f"{prefix}{i}{body}")
    out += [prefix[:1], prefix[:1] + "é", prefix[:1] + "ab", prefix[:1] + "abc", "中", "\U0001f600"]
    return tuple(dict.fromkeys(out))  # unique, in order


@pytest.fixture(scope="module")
def jvm(spark):
    return spark.sparkContext._jvm


def _java_bytes(jvm, writable) -> bytes:
    """``writable.write(DataOutputStream)``: the bytes Hudi base64-encodes into the footer."""
    baos = jvm.java.io.ByteArrayOutputStream()
    dos = jvm.java.io.DataOutputStream(baos)
    writable.write(dos)
    dos.flush()
    return bytes(baos.toByteArray())


def _java_read(jvm, cls_name: str, data: bytes):
    """``new <cls>().readFields(DataInputStream(bytes))``: how Hudi's readers load a footer
    (they read only the fields they need; anything after them is never looked at)."""
    obj = getattr(jvm.org.apache.hadoop.util.bloom, cls_name)()
    obj.readFields(jvm.java.io.DataInputStream(jvm.java.io.ByteArrayInputStream(bytearray(data))))
    return obj


def _key(jvm, key: str):
    return _key_class(jvm)(bytearray(key.encode("utf-8")))


@functools.cache
def _key_class(jvm):
    """Hadoop's Key class, looked up once per JVM: py4j resolves a dotted class name by
    reflection calls on every lookup (~1 ms, ten times the Key itself)."""
    return jvm.org.apache.hadoop.util.bloom.Key


def _hudi_part(f: HoodieBloomFilter) -> bytes:
    """Our serialized bytes without indexbench's trailer (which starts with b"IXBP")."""
    raw = base64.b64decode(f.serialize())
    m = f.bits_per_row
    row = 13 + (m + 7) // 8
    end = row * f.rows if f.type_code == SIMPLE else 25 + row * f.rows
    assert raw[end:end + 4] == b"IXBP"
    return raw[:end]


# ---- the hash itself -------------------------------------------------------------------
def test_murmur_equals_hadoop_murmurhash(jvm) -> None:
    mm = jvm.org.apache.hadoop.util.hash.MurmurHash.getInstance()
    keys = _keys(150)
    for key in keys:
        data = key.encode("utf-8")
        for seed in (0, 1, -1, 0x7FFFFFFF, -(2**31), 123456789):
            assert hadoop_murmur_scalar(data, seed) == mm.hash(bytearray(data), len(data), seed)
    # vectorized, chained as HashFunction chains initval
    rounds = 6
    got = hadoop_murmur_chain(pa.array(keys), rounds)
    for i, key in enumerate(keys):
        data, initval = bytearray(key.encode("utf-8")), 0
        for r in range(rounds):
            initval = mm.hash(data, len(data), initval)
            assert got[r, i] == initval, (key, r)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(max_size=40), min_size=1, max_size=60),
       st.integers(-(2**31), 2**31 - 1))
def test_vectorized_murmur_equals_scalar(keys: list[bytes], seed: int) -> None:
    got = hadoop_murmur_chain(pa.array(keys, pa.binary()), 3, seed)
    for i, data in enumerate(keys):
        h = seed
        for r in range(3):
            h = hadoop_murmur_scalar(data, h)
            assert got[r, i] == h
    width = len(keys[0])
    same = [k for k in keys if len(k) == width]
    mat = np.frombuffer(b"".join(same), np.uint8).reshape(len(same), width)
    assert (hadoop_murmur_chain_fixed(mat, 2, seed)[1]
            == [hadoop_murmur_scalar(k, hadoop_murmur_scalar(k, seed)) for k in same]).all()


def test_positions_equal_hadoop_hashfunction_per_key() -> None:
    """Bulk positions equal HashFunction.hash, transcribed key by key:
    initval = hash(b, initval); Math.abs(initval % maxValue)."""
    f = HoodieBloomFilter.create(SIMPLE, num_entries=1000, fpp=1e-4, hashing=HUDI)
    m, k = f.bits_per_row, f.hashes_per_row
    assert (m, k) == (hudi_bit_size(1000, 1e-4), hudi_num_hashes(m, 1000))  # exactly Hudi's
    keys = _keys(300)
    pos = f._hasher.positions(f._hasher.column(keys))
    for i, key in enumerate(keys):
        data, initval, want = key.encode("utf-8"), 0, []
        for _ in range(k):
            initval = hadoop_murmur_scalar(data, initval)
            want.append(abs(int(math.fmod(initval, m))))  # Java's % truncates
        assert pos[i].tolist() == want


# ---- (a) SIMPLE: bytes and answers of Hadoop's BloomFilter ------------------------------
@pytest.mark.parametrize(("n", "fpp", "added"), [(100, 0.05, 330), (1000, 1e-6, 400),
                                                  (20, 0.3, 60)])
def test_simple_bytes_and_membership_equal_hadoop(jvm, n: int, fpp: float, added: int) -> None:
    members = _keys(added)
    absent = _keys(400, prefix="absent")
    f = HoodieBloomFilter.create(SIMPLE, num_entries=n, fpp=fpp, hashing=HUDI)
    f.add_keys(pa.array(members))
    ref = jvm.org.apache.hadoop.util.bloom.BloomFilter(f.bits_per_row, f.hashes_per_row,
                                                       HUDI_MURMUR_HASH_TYPE)
    for key in members:
        ref.add(_key(jvm, key))
    expected = _java_bytes(jvm, ref)
    assert _hudi_part(f) == expected  # byte for byte what SimpleBloomFilter serializes
    probes = members + absent
    want = [bool(ref.membershipTest(_key(jvm, key))) for key in probes]
    assert f.might_contain_many(probes).tolist() == want
    assert all(want[: len(members)])
    if fpp >= 0.05:
        assert 0 < sum(want[len(members):]) < len(absent)  # some false positives, same ones
    # Hudi's reader parses our footer text, trailer included, and answers alike
    back = _java_read(jvm, "BloomFilter", base64.b64decode(f.serialize()))
    assert _java_bytes(jvm, back) == expected
    assert [bool(back.membershipTest(_key(jvm, k))) for k in probes] == want


def test_empty_keys_refused_like_hadoop(jvm) -> None:
    from pyspark.errors import IllegalArgumentException

    ref = jvm.org.apache.hadoop.util.bloom.BloomFilter(64, 3, HUDI_MURMUR_HASH_TYPE)
    with pytest.raises(IllegalArgumentException, match="key length must be > 0"):
        ref.add(jvm.org.apache.hadoop.util.bloom.Key(bytearray(b"")))
    f = HoodieBloomFilter.create(SIMPLE, 10, 0.1, hashing=HUDI)
    with pytest.raises(ValueError, match="empty keys"):
        f.add_keys(["a", ""])
    with pytest.raises(ValueError, match="empty keys"):
        f.might_contain_many(pa.array(["", "b"]))
    with pytest.raises(TypeError):
        f.add_keys(pa.array(["a", None]))
    assert f.count == 0  # nothing was added by the refused batches


# ---- (b) DYNAMIC_V0 --------------------------------------------------------------------
def test_dynamic_before_the_bound_equals_hadoop_dynamic(jvm) -> None:
    """While rows * nr < maxNr, Hudi's InternalDynamicBloomFilter grows exactly as Hadoop's
    DynamicBloomFilter, and writes the same layout."""
    keys = _keys(520)
    f = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=100, fpp=0.02, max_entries=10_000,
                                 hashing=HUDI)
    f.add_keys(keys[:250])
    f.add_keys(pa.array(keys[250:]))  # in two batches: the row policy carries over
    ref = jvm.org.apache.hadoop.util.bloom.DynamicBloomFilter(
        f.bits_per_row, f.hashes_per_row, HUDI_MURMUR_HASH_TYPE, 100)
    for key in keys:
        ref.add(_key(jvm, key))
    assert f.rows == 6
    expected = _java_bytes(jvm, ref)
    assert _hudi_part(f) == expected
    probes = keys + _keys(500, prefix="absent")
    want = [bool(ref.membershipTest(_key(jvm, k))) for k in probes]
    assert f.might_contain_many(probes).tolist() == want
    back = _java_read(jvm, "DynamicBloomFilter", base64.b64decode(f.serialize()))
    assert _java_bytes(jvm, back) == expected


def _hudi_dynamic_rows(nr: int, max_nr: int, n: int) -> tuple[list[int], int]:
    """InternalDynamicBloomFilter.add/getActiveStandardBF line by line: each add's row,
    and currentNbRecord at the end."""
    rows, current, reached, cur_index, out = 1, 0, False, 0, []
    for _ in range(n):
        if reached:
            r = cur_index % rows
            cur_index += 1
        elif current >= nr and rows * nr < max_nr:
            rows += 1
            r = rows - 1
            current = 0
        elif current >= nr:
            reached = True
            r = 0
        else:
            r = rows - 1
        out.append(r)
        current += 1
    return out, current


@pytest.mark.parametrize(("nr", "max_nr", "n"), [(50, 120, 400), (100, 100, 333), (60, 1, 90)])
def test_dynamic_bounded_bytes_equal_hudi_layout(jvm, nr: int, max_nr: int, n: int) -> None:
    """Past the bound (round-robin, and Hudi's double add on row 0): the bytes
    InternalDynamicBloomFilter.write gives, built from Hadoop rows fed by Hudi's policy."""
    keys = _keys(n)[:n]
    f = HoodieBloomFilter.create(DYNAMIC_V0, num_entries=nr, fpp=0.05, max_entries=max_nr,
                                 hashing=HUDI)
    f.add_keys(keys)
    m, k = f.bits_per_row, f.hashes_per_row
    targets, current = _hudi_dynamic_rows(nr, max_nr, n)
    rows = [jvm.org.apache.hadoop.util.bloom.BloomFilter(m, k, HUDI_MURMUR_HASH_TYPE)
            for _ in range(max(targets) + 1)]
    for key, r in zip(keys, targets, strict=True):
        rows[r].add(_key(jvm, key))
    expected = (struct.pack(">iibi", -1, k, HUDI_MURMUR_HASH_TYPE, m)
                + struct.pack(">iii", nr, current, len(rows))
                + b"".join(_java_bytes(jvm, r) for r in rows))
    assert _hudi_part(f) == expected
    assert f.row_counts == np.bincount(targets).tolist()
    # Hadoop's DynamicBloomFilter reads this layout (as Hudi's reader does) and agrees
    back = _java_read(jvm, "DynamicBloomFilter", base64.b64decode(f.serialize()))
    probes = keys[::3] + _keys(300, prefix="absent")
    want = [bool(back.membershipTest(_key(jvm, key))) for key in probes]
    assert f.might_contain_many(probes).tolist() == want


# ---- our own reader, probing paths, fpp ---------------------------------------------------
@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
def test_hudi_round_trip_keeps_hashing(type_code: str) -> None:
    f = HoodieBloomFilter.create(type_code, num_entries=100, fpp=0.01, max_entries=250,
                                 hashing=HUDI)
    members = _keys(400)
    f.add_keys(members)
    raw = base64.b64decode(f.serialize())
    assert raw[8] == HUDI_MURMUR_HASH_TYPE
    g = HoodieBloomFilter.deserialize(f.serialize(), type_code if type_code != SIMPLE else None)
    assert g.hashing == HUDI and g.hash_family == f.hash_family
    assert (g.rows, g.row_counts, g.bits_per_row) == (f.rows, f.row_counts, f.bits_per_row)
    probes = members + _keys(3000, prefix="absent")
    assert (g.might_contain_many(probes) == f.might_contain_many(probes)).all()
    more = _keys(77, prefix="more")
    f.add_keys(more)
    g.add_keys(more)
    assert g.serialize() == f.serialize()
    # a pybloom filter of the same shape reloads as pybloom: the header byte decides
    p = HoodieBloomFilter.create(type_code, num_entries=100, fpp=0.01, max_entries=250)
    p.add_keys(members)
    assert base64.b64decode(p.serialize())[8] == PYBLOOM_HASH_TYPE
    q = HoodieBloomFilter.deserialize(p.serialize(), type_code)
    assert q.hashing == PYBLOOM and q.hash_family != g.hash_family


@pytest.mark.parametrize("type_code", [SIMPLE, DYNAMIC_V0])
@pytest.mark.parametrize("n_added", [40, 900, 5000])
def test_hudi_prehashed_probe_equals_direct(type_code: str, n_added: int) -> None:
    make = lambda: HoodieBloomFilter.create(type_code, 1000, 1e-3, 4000,  # noqa: E731
                                            hashing=HUDI)
    f = make()
    f.add_keys(_keys(n_added))
    probes = _keys(n_added) + _keys(2000, prefix="absent")
    first = make().prehash(probes)
    full = make().prehash(probes, all_slices=True)
    assert first.shape == (f.first_salt_slices, len(probes)) and first.dtype == np.uint32
    assert full.shape == (f.hashes_per_row, len(probes))
    assert (full[: len(first)] == first).all()
    direct = f.might_contain_many(probes)
    assert (f.might_contain_many(probes, first) == direct).all()
    assert (f.might_contain_many(probes, full) == direct).all()
    assert direct[: len(_keys(n_added))].all()
    # each row by hand: a key is in if all of its k bits are set in some row
    bits = [np.frombuffer(r.bitarray.unpack(), dtype=bool) for r in f._rows]
    expect = np.zeros(len(probes), bool)
    for b in bits:
        expect |= b[full].all(axis=0)
    assert (direct == expect).all()


@pytest.mark.parametrize(("type_code", "n_added"), [(SIMPLE, 2000), (DYNAMIC_V0, 6000)])
def test_hudi_false_positive_rate_matches_theory(type_code: str, n_added: int) -> None:
    """Hadoop's k positions over all m bits: fpp = (1 - (1 - 1/m)^(k n))^k per row. A
    probe's rate given the rows' actual fill (fill^k) is checked tightly, the expected rate
    (the realized fill of one filter varies around its expectation) loosely."""
    f = HoodieBloomFilter.create(type_code, num_entries=2000, fpp=0.02, max_entries=4000,
                                 hashing=HUDI)
    f.add_keys([f"key-{i:08d}" for i in range(n_added)])
    probes = [f"absent-{i:08d}" for i in range(200_000)]
    hits = int(f.might_contain_many(probes).sum())
    m, k = f.bits_per_row, f.hashes_per_row
    p = f.theoretical_fpp()
    assert p == pytest.approx(
        1 - math.prod(1 - theoretical_fpp_unpartitioned(m, k, c) for c in f.row_counts))
    assert f.theoretical_fpp(n_added) == pytest.approx(p)
    fills = [r.bitarray.count() / m for r in f._rows]
    expected_fills = [-math.expm1(k * c * math.log1p(-1 / m)) for c in f.row_counts]
    assert fills == pytest.approx(expected_fills, abs=0.02)
    given_fill = 1 - math.prod(1 - q**k for q in fills)
    sd = math.sqrt(len(probes) * given_fill * (1 - given_fill))
    assert abs(hits - len(probes) * given_fill) <= 5 * sd + 1, (hits, len(probes) * given_fill)
    assert hits / len(probes) == pytest.approx(p, rel=0.2)


def test_key_inputs_hash_alike() -> None:
    keys = ["a", "ключ", "\U0001f600x", "abcd", "abcde"]
    ref = HoodieBloomFilter.create(SIMPLE, 50, 0.01, hashing=HUDI)
    ref.add_keys(keys)
    for form in (pa.array(keys, pa.large_string()), pa.chunked_array([keys[:2], keys[2:]]),
                 np.array(keys, dtype=object), pd.Series(keys), iter(keys),
                 pa.array([k.encode() for k in keys], pa.binary()),
                 pa.array(keys).dictionary_encode()):
        f = HoodieBloomFilter.create(SIMPLE, 50, 0.01, hashing=HUDI)
        f.add_keys(form)
        assert f.serialize() == ref.serialize()
    # non-strings hash as str(key) (as the pybloom hashing does); surrogates as Java's UTF-16
    g = HoodieBloomFilter.create(SIMPLE, 50, 0.01, hashing=HUDI)
    g.add_keys([12, "x"])
    assert g.might_contain_many(["12", "x"]).all()
    pair = "\ud83d\ude00"  # a surrogate pair, one character to Java: the emoji's bytes
    h = HoodieBloomFilter.create(SIMPLE, 50, 0.01, hashing=HUDI)
    h.add_keys([pair, "lone\ud800"])
    assert h.might_contain_many(["\U0001f600", "lone?"]).all()


# ---- the index parameter and the footer --------------------------------------------------
def test_index_parameter_default_and_describe() -> None:
    assert BloomIndex().params["hashing"] == PYBLOOM
    assert HoodieBloomFilter.create().hashing == PYBLOOM
    assert BloomIndex().new_filter().hashing == PYBLOOM
    idx = BloomIndex(**{"indexbench.bloom.hash": "hudi"})
    assert idx.params["hashing"] == HUDI and idx.describe()["hashing"] == HUDI
    assert idx.new_filter().hashing == HUDI and idx.filter_factory()().hashing == HUDI
    assert idx.table_params()["indexbench.bloom.hash"] == "hudi"
    with pytest.raises(IndexBenchError, match="indexbench.bloom.hash"):
        BloomIndex(**{"indexbench.bloom.hash": "murmur3"})


@pytest.mark.parametrize("hashing", [PYBLOOM, HUDI])
def test_type_code_footer_key_only_for_dynamic(hashing: str) -> None:
    """HoodieBloomFilterWriteSupport writes hoodie_bloom_filter_type_code only for a type
    code containing "DYNAMIC"; a reader without it reads SIMPLE."""
    keys = pa.array(_keys(50))
    for code, has_key in ((SIMPLE, False), (DYNAMIC_V0, True)):
        idx = BloomIndex(filter_type=code, hashing=hashing, scale=1)
        footer, size = idx.base_file_footer(keys)
        assert (TYPE_CODE_KEY in footer) == has_key
        assert size == len(footer[FOOTER_KEY])
        if has_key:
            assert footer[TYPE_CODE_KEY] == DYNAMIC_V0
        bloom = HoodieBloomFilter.from_footer(footer)
        assert bloom.type_code == code and bloom.hashing == hashing
        assert bloom.might_contain_many(keys).all()
    assert HoodieBloomFilter.from_footer({}) is None
    with pytest.raises(ValueError, match="not recognizable"):
        HoodieBloomFilter.deserialize(footer[FOOTER_KEY], "")  # present but empty: Hudi throws


# ---- (e) end to end: same tagging as the default hashing -------------------------------
SMALL = {"num_entries": 20, "fpp": 0.3, "scale": 1, "insert_split_size": 50,
         "auto_split": False, "small_file_limit": 0}


def _batch(keys, ts=1) -> pd.DataFrame:
    return pd.DataFrame({"key": list(keys), "dt": "p", "ts": ts,
                         "payload": [f"v{k}-{ts}" for k in keys]})


@pytest.mark.parametrize("filter_type", [SIMPLE, DYNAMIC_V0])
def test_end_to_end_hudi_hash_tags_like_pybloom(spark, jvm, tmp_path, filter_type) -> None:
    first = [f"k{i:04d}" for i in range(0, 400, 2)]
    second = ([f"k{i:04d}" for i in range(0, 400, 10)] + [f"k{i:04d}" for i in range(1, 360, 6)]
              + [f"z{i:03d}" for i in range(20)] + ["ключ-1", "\U0001f600"])
    metrics, snapshots = {}, {}
    for hashing in (PYBLOOM, HUDI):
        uri = str(tmp_path / hashing)
        table, index = open_table(uri, "bloom", {**SMALL, "filter_type": filter_type,
                                                 "hashing": hashing})
        assert index.describe()["hashing"] == hashing
        with table:
            upsert(spark, table, index, spark.createDataFrame(_batch(first)))
            metrics[hashing] = upsert(spark, table, index,
                                      spark.createDataFrame(_batch(second, ts=2))).metrics
        snapshots[hashing] = read_snapshot(uri).sort_values("key").reset_index(drop=True)
        # every base file's footer: the type-code key only for DYNAMIC_V0, the filter in
        # the hashing asked for, and a Hudi reader finds every key of a hudi-hashed file
        t = Table(uri)
        for s in t.snapshot().slices.values():
            path = t.abs_path(s.path)
            footer = bf.read_footer(t.fs, path)
            assert (TYPE_CODE_KEY in footer) == (filter_type == DYNAMIC_V0)
            bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
            assert bloom.hashing == hashing
            file_keys = bf.read_record_keys(t.fs, path).to_pylist()
            assert bloom.might_contain_many(file_keys).all()
            if hashing == HUDI:
                cls = "BloomFilter" if filter_type == SIMPLE else "DynamicBloomFilter"
                ref = _java_read(jvm, cls, base64.b64decode(footer[FOOTER_KEY]))
                assert all(ref.membershipTest(_key(jvm, k)) for k in file_keys)
    a, b = metrics[PYBLOOM], metrics[HUDI]
    assert a["updates"] == b["updates"] == 40  # the same true positives
    assert a["inserts"] == b["inserts"] == len(second) - 40
    for name in ("candidate_files", "bloom_checks"):  # pruning does not depend on hashing
        assert a[name] == b[name], name
    assert b["false_positives"] > 0  # a 0.3-fpp filter: the hudi filters produce FPs too
    pd.testing.assert_frame_equal(snapshots[PYBLOOM].drop(columns=[c for c in snapshots[PYBLOOM]
                                                                   if c.startswith("_hoodie")]),
                                  snapshots[HUDI].drop(columns=[c for c in snapshots[HUDI]
                                                                if c.startswith("_hoodie")]))


def test_simulator_models_hudi_hashed_false_positives() -> None:
    """The simulator with hudi hashing: real filters (exact) and false positives drawn at
    theoretical_fpp_unpartitioned (modelled) agree within 10%; true matches are exact."""
    from indexbench.sim.driver import simulate

    params = {"hoodie.index.bloom.num_entries": 2000, "hoodie.index.bloom.fpp": 0.001,
              "hoodie.bloom.index.filter.dynamic.max.entries": 4000,
              "hoodie.copyonwrite.insert.split.size": 10000, "indexbench.scale": 1,
              "hoodie.copyonwrite.insert.auto.split": "false",
              "hoodie.parquet.small.file.limit": 0, "indexbench.bloom.hash": "hudi"}
    sizes = {"initial_records": 60000, "batches": 4, "batch_size": 10000}
    exact = simulate("bloom", "uniform", params=params, write=False, **sizes)
    model = simulate("bloom", "uniform", params=params, write=False, exact_bloom_keys=0,
                     **sizes)
    fp_exact, fp_model = exact["false_positives"].sum(), model["false_positives"].sum()
    assert fp_exact > 1000
    assert abs(fp_model - fp_exact) / fp_exact < 0.10
    for col in ("bloom_checks", "candidate_files", "updates", "file_groups"):
        assert exact[col].tolist() == model[col].tolist()


@pytest.mark.parametrize("type_code", ["SIMPLE", "DYNAMIC_V0"])
def test_a_filter_hudis_writer_made_probes_without_our_trailer(type_code):
    """Hudi's writer serializes its filters without indexbench's trailer (the state kept
    for adds): ours reads them (a table Hudi's writer continued) and probes every key
    alike; the shape left out is rebuilt from the bits (entries, rows' counts)."""
    import base64

    from indexes.bloom_filter import HoodieBloomFilter
    from indexes.bloom_filter.serialization import _TRAILER_MAGIC

    keys = [f"k{i:05d}" for i in range(250)]
    bloom = HoodieBloomFilter.create(type_code, num_entries=100, fpp=0.01,
                                     max_entries=1000, hashing="hudi")
    bloom.add_keys(keys)
    raw = base64.b64decode(bloom.serialize())
    hudis = base64.b64encode(raw[:raw.rindex(_TRAILER_MAGIC)]).decode()
    code = None if type_code == "SIMPLE" else type_code
    read = HoodieBloomFilter.deserialize(hudis, code)
    probe = [f"x{i}" for i in range(2000)] + keys
    assert (read.might_contain_many(probe) == bloom.might_contain_many(probe)).all()
    assert read.might_contain_many(keys).all()
    assert abs(sum(read.row_counts) - 250) <= (0 if type_code != "SIMPLE" else 25)
    pyb = HoodieBloomFilter.create(type_code, num_entries=100, fpp=0.01, hashing="pybloom")
    pyb.add_keys(keys)
    raw = base64.b64decode(pyb.serialize())
    with pytest.raises(ValueError, match="trailer"):
        HoodieBloomFilter.deserialize(
            base64.b64encode(raw[:raw.rindex(_TRAILER_MAGIC)]).decode(), code)
