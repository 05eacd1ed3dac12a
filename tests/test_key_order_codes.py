"""order_codes: sorting by the uint64 code must sort the record keys exactly as bytes do."""

from __future__ import annotations

import numpy as np
import pytest

from workloads.keys import (
    _decimal_digit_count,
    _decimal_order_codes,
    order_code_is_exact,
    order_codes,
    record_keys,
)

FORMATS = ["time-ordered", "uuid", "ycsb"]
SEEDS = [0, 7, 123456789]
N = 200_000


def _ordinals(seed: int) -> np.ndarray:
    """Dense small ordinals, random ones up to 10**12 and a few extremes, shuffled."""
    rng = np.random.default_rng(seed)
    dense = np.arange(N // 2, dtype=np.int64)
    large = rng.integers(0, 10**12, N // 2 - 4, dtype=np.int64)
    edges = np.array([0, 10**12 - 1, 10**12, 10**13 - 1], dtype=np.int64)
    return rng.permutation(np.concatenate([dense, large, edges]))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key_format", FORMATS)
def test_sorting_by_code_sorts_the_keys(key_format: str, seed: int) -> None:
    o = _ordinals(seed)
    codes = order_codes(key_format, seed, o)
    assert codes.dtype == np.uint64 and codes.shape == o.shape
    keys = record_keys(key_format, seed, o).to_numpy(zero_copy_only=False)

    by_code = np.argsort(codes, kind="stable")
    by_key = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(by_code, by_key)
    # distinct keys have distinct codes (and equal keys, from repeated ordinals, equal codes)
    assert len(np.unique(codes)) == len(set(keys.tolist()))  # (np.unique on str: ~10x slower)

    # codes[i] < codes[j] implies key[i] < key[j], on random pairs
    rng = np.random.default_rng(seed + 1)
    i = rng.integers(0, len(o), 50_000)
    j = rng.integers(0, len(o), 50_000)
    less = codes[i] < codes[j]
    assert less.any()
    assert all(a < b for a, b in zip(keys[i[less]], keys[j[less]], strict=True))


def test_codes_are_deterministic_and_chunk_independent() -> None:
    o = _ordinals(3)
    for key_format in FORMATS:
        whole = order_codes(key_format, 3, o)
        parts = np.concatenate([order_codes(key_format, 3, p) for p in np.array_split(o, 7)])
        np.testing.assert_array_equal(whole, parts)


def test_exactness_flags_and_argument_checks() -> None:
    assert order_code_is_exact("time-ordered")
    assert not order_code_is_exact("uuid")
    assert not order_code_is_exact("ycsb")
    with pytest.raises(ValueError):
        order_code_is_exact("bogus")
    with pytest.raises(ValueError):
        order_codes("bogus", 0, np.arange(3))
    with pytest.raises(ValueError):  # the 13-digit text would wrap: order not kept
        order_codes("time-ordered", 0, np.array([10**13]))
    with pytest.raises(ValueError):
        order_codes("time-ordered", 0, np.array([-1]))
    assert order_codes("ycsb", 0, np.array([], dtype=np.int64)).shape == (0,)
    np.testing.assert_array_equal(order_codes("time-ordered", 0, np.array([5, 2])), [5, 2])


# ----------------------------------------------------------------- the decimal encoding itself


def _ref_decimal_code(x: int) -> int:
    """Base 11 over the first 18 characters of str(x): 0 = end of string, digit d = d + 1."""
    s = str(x)[:18]
    code = 0
    for pos in range(18):
        code = code * 11 + (int(s[pos]) + 1 if pos < len(s) else 0)
    return code


def _edge_values() -> np.ndarray:
    """Values where digit counts change or float64 rounding is closest to a power of two."""
    vals = {0, 1, 9, 2**63, 2**63 - 1, 2**64 - 1}
    for k in range(20):
        vals.update(10**k + d for d in range(-3, 4))
    for k in range(65):
        vals.update(2**k + d for d in (-1025, -513, -3, -2, -1, 0, 1, 2, 3))
    return np.array(sorted(v for v in vals if 0 <= v < 2**64), dtype=np.uint64)


def test_decimal_digit_count_edges() -> None:
    v = _edge_values()
    assert _decimal_digit_count(v).tolist() == [len(str(int(x))) for x in v]


def test_decimal_codes_match_reference_and_string_order() -> None:
    rng = np.random.default_rng(1)
    width = rng.integers(1, 20, 5000)  # every digit count, not just fnvhash64's usual 18-19
    rand = (rng.random(5000) * 10.0**width).astype(np.uint64)
    v = np.concatenate([_edge_values(), rand])
    codes = _decimal_order_codes(v)
    assert codes.tolist() == [_ref_decimal_code(int(x)) for x in v]
    # the code sorts exactly like the text cut to 18 digits (the edges include 19- and
    # 20-digit values that share those 18 digits, hence tie)
    text18 = np.array([str(int(x))[:18] for x in v], dtype=object)
    np.testing.assert_array_equal(
        np.argsort(codes, kind="stable"), np.argsort(text18, kind="stable")
    )
    # shorter digit strings sort before their extensions ("user1" < "user10" < "user2")
    assert _decimal_order_codes(np.array([1, 10, 2], dtype=np.uint64)).argsort().tolist() == [
        0, 1, 2
    ]


def test_decimal_codes_tie_only_on_a_shared_18_digit_prefix() -> None:
    a, b, c = 123456789012345678, 1234567890123456789, 1234567890123456780
    codes = _decimal_order_codes(np.array([a, b, c, a + 1], dtype=np.uint64))
    assert codes[0] == codes[1] == codes[2]  # all start with the same 18 digits
    assert codes[3] > codes[0]
