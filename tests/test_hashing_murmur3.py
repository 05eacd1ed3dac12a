"""Spark's ``hash(col)`` of strings: the vectorized port must match Spark itself bit for bit.

Spark results come from a real local SparkSession (the session-scoped ``spark`` fixture); the
property tests compare against a deliberately naive transcription of Spark's
``Murmur3_x86_32.hashUnsafeBytes`` below.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from indexes.hashing import SPARK_HASH_SEED, spark_murmur3_fixed, spark_murmur3_hash

# ---------------------------------------------------------------- pure-Python reference

_M = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _mix_k1(k: int) -> int:
    return (_rotl((k * 0xCC9E2D51) & _M, 15) * 0x1B873593) & _M


def _mix_h1(h: int, k: int) -> int:
    return (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M


def ref_hash_bytes(b: bytes, seed: int = SPARK_HASH_SEED) -> int:
    """Line-by-line transcription of Spark's ``Murmur3_x86_32.hashUnsafeBytes``."""
    h = seed & _M
    aligned = len(b) - len(b) % 4
    for i in range(0, aligned, 4):
        h = _mix_h1(h, _mix_k1(int.from_bytes(b[i : i + 4], "little")))
    for i in range(aligned, len(b)):
        signed = b[i] - 256 if b[i] >= 128 else b[i]  # Java byte -> int sign-extends
        h = _mix_h1(h, _mix_k1(signed & _M))
    h ^= len(b)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def ref_hash(s: str | None, seed: int = SPARK_HASH_SEED) -> int:
    """Spark's hash of one string row; null leaves the seed unchanged."""
    if s is None:
        return seed - (1 << 32) if seed >= 1 << 31 else seed
    return ref_hash_bytes(s.encode("utf-8"), seed)


# ---------------------------------------------------------------- against real Spark


def _spark_hashes(spark, values: list[str | None]) -> list[int]:
    df = spark.createDataFrame(list(enumerate(values)), "i long, k string")
    rows = df.select("i", F.hash(F.col("k")).alias("h")).orderBy("i").collect()
    return [r["h"] for r in rows]


def _random_ascii(n: int, seed: int) -> list[str]:
    """n strings whose lengths cycle through 0..40, so every tail length (0..3) appears."""
    rng = np.random.default_rng(seed)
    lengths = rng.permutation(np.arange(n) % 41)
    return [bytes(rng.integers(0, 128, int(m), dtype=np.uint8)).decode("ascii") for m in lengths]


NON_ASCII = [
    "\u00e9",  # 2 bytes, both tail bytes >= 0x80 (sign extension matters)
    "caf\u00e9",
    "na\u00efve r\u00e9sum\u00e9",
    "\u00c5ngstr\u00f6m",
    "\u952e",  # CJK: 3 bytes
    "\u65e5\u672c\u8a9e",
    "\u952e-\u503c-\u5bf9-\u6d4b\u8bd5",
    "\U0001f600",  # emoji: 4 bytes, one whole word
    "x\U0001f600",
    "\U0001f600\U0001f680\U0001f30d",
    "key-\U0001f600-\u043a\u043b\u044e\u0447-\u952e",
    "\u043a\u043b\u044e\u0447",
    "\u00ff\u00fe\u00fd",
    "\x00\u00e9\x00",
]


def test_random_ascii_matches_spark(spark) -> None:
    values = _random_ascii(2000, seed=11)
    expected = _spark_hashes(spark, values)
    assert spark_murmur3_hash(values).tolist() == expected
    assert [ref_hash(v) for v in values] == expected  # the reference is right too


def test_non_ascii_and_null_match_spark(spark) -> None:
    values: list[str | None] = [*NON_ASCII, None, "", "a", None]
    expected = _spark_hashes(spark, values)
    got = spark_murmur3_hash(values)
    assert got.dtype == np.int32
    assert got.tolist() == expected
    assert expected[len(NON_ASCII)] == SPARK_HASH_SEED  # Spark: hash(null) is the seed
    assert [ref_hash(v) for v in values] == expected


def test_fixed_width_uuid_keys_match_spark(spark) -> None:
    from workloads.keys import uuid_keys

    keys = uuid_keys(5, np.arange(500))
    values = keys.to_pylist()
    expected = _spark_hashes(spark, values)
    mat = np.frombuffer(keys.buffers()[2], dtype=np.uint8)[: 36 * 500].reshape(500, 36)
    assert spark_murmur3_fixed(mat).tolist() == expected
    assert spark_murmur3_hash(keys).tolist() == expected


def test_per_row_seed_chains_columns_like_spark(spark) -> None:
    a: list[str | None] = ["x", None, "\u00e9t\u00e9", "", "abcdefg", None]
    b: list[str | None] = ["yz", "q", None, "\U0001f600", "", None]
    df = spark.createDataFrame(list(zip(range(len(a)), a, b, strict=True)),
                               "i long, a string, b string")
    rows = df.select("i", F.hash("a", "b").alias("h")).orderBy("i").collect()
    got = spark_murmur3_hash(b, seed=spark_murmur3_hash(a))
    assert got.tolist() == [r["h"] for r in rows]


# ---------------------------------------------------------------- inputs and edge cases


def test_input_kinds_agree() -> None:
    values = [*_random_ascii(300, seed=3), *NON_ASCII, None]
    expected = [ref_hash(v) for v in values]
    arr = pa.array(values, type=pa.string())
    chunked = pa.chunked_array([arr[:100], arr[100:]])
    for kind in (
        values,
        np.array(values, dtype=object),
        pd.Series(values, dtype=object),
        arr,
        arr.cast(pa.large_string()),
        chunked,
    ):
        assert spark_murmur3_hash(kind).tolist() == expected
    sliced = arr[7:250]  # non-zero array offset into the buffers
    assert spark_murmur3_hash(sliced).tolist() == expected[7:250]


def test_fixed_width_equals_variable_path_for_every_width() -> None:
    rng = np.random.default_rng(5)
    for width in range(0, 42):
        mat = rng.integers(0, 256, size=(37, width), dtype=np.uint8)
        got = spark_murmur3_fixed(mat)
        assert got.tolist() == [ref_hash_bytes(bytes(r)) for r in mat]
        # a non-contiguous view must give the same answer
        wide = np.zeros((37, width + 3), dtype=np.uint8)
        wide[:, 1 : width + 1] = mat
        assert spark_murmur3_fixed(wide[:, 1 : width + 1]).tolist() == got.tolist()


def test_fixed_width_large_blocks() -> None:
    """More rows than one internal block, so block boundaries are exercised."""
    rng = np.random.default_rng(9)
    mat = rng.integers(0, 256, size=(70_001, 37), dtype=np.uint8)
    got = spark_murmur3_fixed(mat)
    sample = rng.choice(len(mat), 200, replace=False)
    assert got[sample].tolist() == [ref_hash_bytes(bytes(mat[i])) for i in sample]


def test_empty_and_all_null() -> None:
    assert spark_murmur3_hash([]).tolist() == []
    assert spark_murmur3_hash([None, None]).tolist() == [42, 42]
    assert spark_murmur3_fixed(np.empty((0, 36), np.uint8)).tolist() == []
    assert spark_murmur3_hash([""]).tolist() == [ref_hash("")]


def test_rejects_integer_columns_and_bad_shapes() -> None:
    with pytest.raises(TypeError):
        spark_murmur3_hash(pa.array([1, 2, 3]))
    with pytest.raises(TypeError):
        spark_murmur3_hash("abc")
    with pytest.raises(ValueError):
        spark_murmur3_fixed(np.zeros(5, np.uint8))


# ---------------------------------------------------------------- properties

text_no_surrogates = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=60)
seeds = st.integers(min_value=-(2**31), max_value=2**31 - 1)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), text_no_surrogates), max_size=40), seeds)
def test_property_matches_reference(values: list[str | None], seed: int) -> None:
    got = spark_murmur3_hash(values, seed=seed).tolist()
    assert got == [ref_hash(v, seed & _M) for v in values]


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=45).flatmap(
    lambda w: st.lists(st.binary(min_size=w, max_size=w), min_size=1, max_size=20)
))
def test_property_fixed_matches_reference(rows: list[bytes]) -> None:
    mat = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), len(rows[0]))
    assert spark_murmur3_fixed(mat).tolist() == [ref_hash_bytes(r) for r in rows]
