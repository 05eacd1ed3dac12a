"""indexes.xxhash32 against the reference XXH32 of the ``xxhash`` package."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexes.xxhash32 import consistent_hash, xxhash32

xxhash = pytest.importorskip("xxhash")

MAX = 0x7FFFFFFF


def ref(s: str, seed: int = 0) -> int:
    return xxhash.xxh32_intdigest(s.encode("utf-8"), seed)


def refs(values: list[str], seed: int = 0) -> np.ndarray:
    return np.array([ref(s, seed) for s in values], dtype=np.uint32)


def test_every_length_0_to_80() -> None:
    rng = np.random.default_rng(1)
    # several rows per length, all lengths in one call (grouped by byte length inside)
    keys = ["".join(map(chr, rng.integers(32, 127, n))) for n in range(81) for _ in range(3)]
    order = rng.permutation(len(keys))
    keys = [keys[i] for i in order]
    for seed in (0, 1, 42, 0x9E3779B9, 2**32 - 1):
        got = xxhash32(keys, seed)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, refs(keys, seed))


def test_one_width_buffer_and_empty() -> None:
    keys = [f"{i:032x}" for i in range(1000)]  # all 32 bytes: the zero-copy single-width path
    np.testing.assert_array_equal(xxhash32(pa.array(keys)), refs(keys))
    assert xxhash32([]).shape == (0,)
    assert consistent_hash([[]]).shape == (0,)
    np.testing.assert_array_equal(xxhash32(["", ""]), refs(["", ""]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(max_size=70), max_size=20),
    st.integers(0, 2**32 - 1),
)
def test_random_unicode(keys: list[str], seed: int) -> None:
    # st.text() draws multi-byte and supplementary code points (no lone surrogates)
    np.testing.assert_array_equal(xxhash32(keys, seed), refs(keys, seed))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
                min_size=1, max_size=20))
def test_random_ascii(keys: list[str]) -> None:
    np.testing.assert_array_equal(xxhash32(keys), refs(keys))


def test_negative_java_seed_wraps() -> None:
    keys = ["a", "hello world, a longer key"]
    np.testing.assert_array_equal(xxhash32(keys, -1), refs(keys, 2**32 - 1))
    with pytest.raises(ValueError):
        xxhash32(keys, 2**32)
    with pytest.raises(TypeError):
        xxhash32(keys, 1.5)  # type: ignore[arg-type]


def test_input_kinds() -> None:
    keys = ["k1", "héllo", "😀 emoji key that is long enough", ""]
    want = refs(keys)
    chunked = pa.chunked_array([pa.array(keys[:1]), pa.array(keys[1:3]), pa.array(keys[3:])])
    for values in (
        keys,
        np.array(keys, dtype=object),
        np.array(keys),  # numpy U
        pd.Series(keys),
        pa.array(keys),
        pa.array(keys, pa.large_string()),
        pa.array(keys).dictionary_encode(),
        chunked,
        pa.array(keys)[1:],  # sliced: non-zero offset
    ):
        got = xxhash32(values)
        np.testing.assert_array_equal(got, want[-len(got):])


def test_integer_columns_as_long_to_string() -> None:
    ints = [0, 7, -1, 123456789012, -(2**63), 2**63 - 1]
    want = refs([str(i) for i in ints])
    for values in (pa.array(ints, pa.int64()), np.array(ints), pd.Series(ints),
                   pd.Series(ints, dtype="Int64")):
        np.testing.assert_array_equal(xxhash32(values), want)
    np.testing.assert_array_equal(xxhash32(pa.array([1, 200], pa.int32())), refs(["1", "200"]))


def test_consistent_hash_joins_and_masks() -> None:
    rng = np.random.default_rng(7)
    a = [f"{x:x}" for x in rng.integers(0, 2**40, 300)]
    b = ["ü" * int(n) for n in rng.integers(0, 12, 300)]
    ids = rng.integers(-(10**6), 10**6, 300)
    want = np.array([ref(x + y + str(i)) & MAX for x, y, i in zip(a, b, ids, strict=True)])
    got = consistent_hash([a, pa.chunked_array([b[:100], b[100:]]), pa.array(ids)])
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)
    assert got.min() >= 0 and got.max() < 2**31
    # a single column, a DataFrame and a Table are columns too
    single = np.array([ref(x) & MAX for x in a])
    np.testing.assert_array_equal(consistent_hash(pa.array(a)), single)
    np.testing.assert_array_equal(consistent_hash(pd.DataFrame({"a": a, "b": b})),
                                  consistent_hash([a, b]))
    np.testing.assert_array_equal(consistent_hash(pa.table({"a": a})), single)
    # the mask really applies: some raw hashes have the top bit set
    raw = xxhash32(a).astype(np.int64)
    assert (raw > MAX).any()
    np.testing.assert_array_equal(consistent_hash([a]), raw & MAX)


def test_seeded_consistent_hash() -> None:
    keys = ["r1", "r2" * 20]
    np.testing.assert_array_equal(consistent_hash([keys], seed=99),
                                  [ref(k, 99) & MAX for k in keys])


def test_lone_surrogates_as_java_getbytes() -> None:
    # Java's String.getBytes(UTF_8) writes '?' for a lone surrogate; a split pair joins up.
    np.testing.assert_array_equal(
        consistent_hash([["a\ud800", "x\ud83d"], ["b", "\ude00"]]),
        [xxhash.xxh32_intdigest(b"a?b") & MAX, xxhash.xxh32_intdigest("x😀".encode()) & MAX],
    )


@pytest.mark.parametrize(
    "values",
    [["a", None], pa.array(["a", None]), pd.Series(["a", np.nan]), ["a\ud800", None]],
)
def test_null_refused(values: object) -> None:
    with pytest.raises(ValueError, match="null"):
        xxhash32(values)


def test_null_refused_in_any_key_field() -> None:
    with pytest.raises(ValueError, match="column 1, row 2"):
        consistent_hash([["a", "b", "c"], pa.array([1, 2, None])])


def test_bad_columns() -> None:
    with pytest.raises(ValueError, match="same length"):
        consistent_hash([["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="at least one"):
        consistent_hash([])
    with pytest.raises(TypeError):
        xxhash32("abc")
