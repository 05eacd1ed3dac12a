"""Record keys, index keys and payloads as pure functions of ordinals, vectorized.

Strings are built as fixed-width (or masked) uint8 matrices and wrapped as Arrow string
arrays without a per-row Python loop; the key format decides the keys' lexicographic
order, which is what bloom-index range pruning sees:
- "uuid": random-looking UUIDv4 text from (seed, ordinal): no order, no pruning;
- "time-ordered": zero-padded ordinal then a short random suffix: increasing with the
  insert ordinal, so a batch's new keys fall after every file's max key;
- "ycsb": YCSB CoreWorkload.buildKeyName with hashed inserts: "user" + fnvhash64(ordinal).
order_codes gives uint64 codes that sort like the keys (exact for time-ordered only) without
building any string.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .distributions import fnvhash64

_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
_ALPHABET = np.frombuffer(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", dtype=np.uint8
)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

# stream ids: independent hash streams per purpose
STREAM_UUID_HI = 1
STREAM_UUID_LO = 2
STREAM_SUFFIX = 3
STREAM_LATE = 4
STREAM_PARTITION = 5
STREAM_LATE_DAY = 6
STREAM_INDEX_KEY = 7

TIME_ORDERED_WIDTH = 13  # digits of the ordinal: up to 10^13 keys keep their order


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer over uint64 (Steele et al.): a cheap, well-mixed bijection."""
    z = np.asarray(x, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def ordinal_hash(seed: int, stream: int, ordinals: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (seed, stream, ordinal): per-key randomness that needs no RNG state."""
    with np.errstate(over="ignore"):
        k = splitmix64(np.array([seed], dtype=np.uint64) * _GOLDEN + np.uint64(stream))
    return splitmix64(np.asarray(ordinals, dtype=np.int64).astype(np.uint64) ^ k[0])


def hash_uniform(seed: int, stream: int, ordinals: np.ndarray) -> np.ndarray:
    """A double in [0, 1) per ordinal, from its 53 high hash bits."""
    h = ordinal_hash(seed, stream, ordinals)
    return (h >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


# --------------------------------------------------------------------------- string arrays


def fixed_width_strings(mat: np.ndarray) -> pa.Array:
    """Arrow string array whose row i is the bytes of mat[i] (uint8, shape (n, width))."""
    mat = np.ascontiguousarray(mat, dtype=np.uint8)
    n, width = mat.shape
    large = n * width >= 2**31 - 1
    otype = np.int64 if large else np.int32
    offsets = np.arange(n + 1, dtype=otype) * width
    return pa.Array.from_buffers(
        pa.large_string() if large else pa.string(),
        n,
        [None, pa.py_buffer(offsets), pa.py_buffer(mat.reshape(-1))],
    )


def masked_strings(mat: np.ndarray, mask: np.ndarray) -> pa.Array:
    """Arrow string array whose row i is mat[i][mask[i]] (variable width, row-major)."""
    mat = np.ascontiguousarray(mat, dtype=np.uint8)
    data = mat[mask]
    lengths = mask.sum(axis=1)
    large = data.size >= 2**31 - 1
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return pa.Array.from_buffers(
        pa.large_string() if large else pa.string(),
        len(lengths),
        [None, pa.py_buffer(offsets), pa.py_buffer(data)],
    )


# byte -> its two lowercase hex digits, as one uint16 (memory order = text order)
_HEX_PAIRS = np.ascontiguousarray(
    np.stack([_HEX[np.arange(256) >> 4], _HEX[np.arange(256) & 15]], axis=1)).view(np.uint16)[:, 0]


def _hex_matrix(h: np.ndarray, digits: int = 16) -> np.ndarray:
    """(n, digits) uint8 ASCII hex of the low `digits` nibbles of uint64 h, big-endian."""
    be = np.ascontiguousarray(np.asarray(h, dtype=np.uint64).astype(">u8")).view(np.uint8)
    mat = _HEX_PAIRS[be.reshape(-1, 8)].view(np.uint8)  # one table lookup per byte
    return mat[:, 16 - digits:]


def _decimal_matrix(v: np.ndarray, width: int) -> np.ndarray:
    """(n, width) uint8 ASCII zero-padded decimal of non-negative v (uint64)."""
    v = np.asarray(v, dtype=np.uint64).copy()
    out = np.empty((v.shape[0], width), dtype=np.uint8)
    ten = np.uint64(10)
    for j in range(width - 1, -1, -1):
        out[:, j] = _DIGITS[(v % ten).astype(np.intp)]
        v //= ten
    return out


def _prefixed(prefix: bytes, mat: np.ndarray) -> np.ndarray:
    pre = np.frombuffer(prefix, dtype=np.uint8)
    return np.concatenate([np.broadcast_to(pre, (mat.shape[0], len(pre))), mat], axis=1)


# --------------------------------------------------------------------------- key formats


def uuid_keys(seed: int, ordinals: np.ndarray) -> pa.Array:
    """UUIDv4-shaped text, a deterministic pseudo-random function of (seed, ordinal)."""
    hi = ordinal_hash(seed, STREAM_UUID_HI, ordinals)
    lo = ordinal_hash(seed, STREAM_UUID_LO, ordinals)
    # version 4 in nibble 12, RFC 4122 variant (10xx) in the top bits of lo
    hi = (hi & np.uint64(0xFFFFFFFFFFFF0FFF)) | np.uint64(0x0000000000004000)
    lo = (lo & np.uint64(0x3FFFFFFFFFFFFFFF)) | np.uint64(0x8000000000000000)
    hx, lx = _hex_matrix(hi), _hex_matrix(lo)  # (n, 16) each
    out = np.empty((hx.shape[0], 36), dtype=np.uint8)
    out[:, [8, 13, 18, 23]] = ord("-")
    out[:, 0:8] = hx[:, 0:8]
    out[:, 9:13] = hx[:, 8:12]
    out[:, 14:18] = hx[:, 12:16]
    out[:, 19:23] = lx[:, 0:4]
    out[:, 24:36] = lx[:, 4:16]
    return fixed_width_strings(out)


def time_ordered_keys(seed: int, ordinals: np.ndarray) -> pa.Array:
    """`<13-digit ordinal>-<6 hex>`: lexicographic order = insert order, like an event id."""
    o = np.asarray(ordinals, dtype=np.int64)
    dec = _decimal_matrix(o.astype(np.uint64), TIME_ORDERED_WIDTH)
    suf = _hex_matrix(ordinal_hash(seed, STREAM_SUFFIX, o), 6)
    dash = np.full((o.shape[0], 1), ord("-"), dtype=np.uint8)
    return fixed_width_strings(np.concatenate([dec, dash, suf], axis=1))


def ycsb_keys(ordinals: np.ndarray) -> pa.Array:
    """YCSB `buildKeyName(keynum, zeropadding=1, orderedinserts=false)`: "user" + fnvhash64."""
    h = fnvhash64(np.asarray(ordinals, dtype=np.int64)).astype(np.uint64)
    dec = _decimal_matrix(h, 19)
    ndig = np.ones(h.shape[0], dtype=np.int64)
    for k in range(1, 19):  # number of decimal digits (no leading zeros; 0 -> "0")
        ndig += h >= np.uint64(10**k)
    mat = _prefixed(b"user", dec)
    col = np.arange(4 + 19)[None, :]
    mask = (col < 4) | (col >= 4 + 19 - ndig[:, None])
    return masked_strings(mat, mask)


def record_keys(key_format: str, seed: int, ordinals: np.ndarray) -> pa.Array:
    """The record key of each insert ordinal under `key_format`."""
    if key_format == "uuid":
        return uuid_keys(seed, ordinals)
    if key_format == "time-ordered":
        return time_ordered_keys(seed, ordinals)
    if key_format == "ycsb":
        return ycsb_keys(ordinals)
    raise ValueError(f"key_format: unknown {key_format!r}")


def index_key_values(seed: int, ordinals: np.ndarray, cardinality: int,
                     skew: float) -> np.ndarray:
    """Index-key value in [0, cardinality) per ordinal; value v has weight (v+1)^-skew."""
    u = hash_uniform(seed, STREAM_INDEX_KEY, ordinals)
    if skew == 0:
        return np.minimum((u * cardinality).astype(np.int64), cardinality - 1)
    cdf = _zipf_cdf(cardinality, skew)
    return np.minimum(np.searchsorted(cdf, u, side="right"), cardinality - 1).astype(np.int64)


_CDF_CACHE: dict[tuple[int, float], np.ndarray] = {}


def _zipf_cdf(n: int, s: float) -> np.ndarray:
    key = (n, s)
    if key not in _CDF_CACHE:
        w = np.arange(1, n + 1, dtype=np.float64) ** (-s)
        c = np.cumsum(w)
        if len(_CDF_CACHE) > 16:
            _CDF_CACHE.clear()
        _CDF_CACHE[key] = c / c[-1]
    return _CDF_CACHE[key]


def index_keys(seed: int, ordinals: np.ndarray, cardinality: int, skew: float) -> pa.Array:
    """`ik<zero-padded value>`: fixed width so order follows the value."""
    v = index_key_values(seed, ordinals, cardinality, skew)
    width = len(str(max(cardinality - 1, 0)))
    return fixed_width_strings(_prefixed(b"ik", _decimal_matrix(v.astype(np.uint64), width)))


def payloads(raw: np.ndarray) -> pa.Array:
    """Random text payloads from a (n, payload_bytes) uint8 matrix of random bytes."""
    return fixed_width_strings(_ALPHABET[raw & np.uint8(63)])


# --------------------------------------------------------------------------- order codes
#
# The simulator sorts and range-prunes keys constantly; comparing integers instead of strings
# keeps that vectorized. A code is a uint64 whose numeric order is the keys' byte order wherever
# two codes differ; equal codes only arise for keys that agree on the part the code covers.

YCSB_CODE_DIGITS = 18  # 11**18 < 2**64 < 11**19: leading decimal digits a ycsb code covers

_POW10 = np.array([10**k for k in range(20)], dtype=np.uint64)
_POW11 = np.array([11**k for k in range(YCSB_CODE_DIGITS + 1)], dtype=np.uint64)
_POW11_GROUP = [np.uint64(11 ** (3 * k)) for k in range(YCSB_CODE_DIGITS // 3)]
# _DIGITS_BY_EXP[E]: for the biased float64 exponent E of a uint64 v, the decimal digits of
# 2**(E-1023), the fewest any number with that bit length has (E = 0 is v = 0: one digit);
# E = 1087 (2**64) only comes from rounding a 64-bit value up, so it gets the 2**63 entry.
_DIGITS_BY_EXP = np.ones(2048, dtype=np.intp)
_DIGITS_BY_EXP[1023:1088] = [len(str(2 ** min(b, 63))) for b in range(65)]
# _PREFIX11[m]: sum of 11**(17-i) for i < m, i.e. +1 on every symbol of an m-digit string.
_PREFIX11 = np.array(
    [sum(11 ** (YCSB_CODE_DIGITS - 1 - i) for i in range(m)) for m in range(YCSB_CODE_DIGITS + 1)],
    dtype=np.uint64,
)
# _BASE11_OF_3[r]: the three zero-padded decimal digits of r (< 1000) read as base-11 digits.
_BASE11_OF_3 = np.array([(r // 100) * 121 + (r // 10 % 10) * 11 + r % 10 for r in range(1000)],
                        dtype=np.uint64)
# Rows per block in order_codes: the ~40 passes then run on 128 KiB temporaries that stay in
# L2 and that malloc recycles; at 2**15 rows and up they were mmapped and page-faulted afresh on
# every pass, which measured ~40% slower overall.
_CODE_BLOCK = 1 << 14


def _decimal_digit_count(v: np.ndarray) -> np.ndarray:
    """Number of decimal digits of each uint64 (0 -> 1), without a per-digit loop.

    The float64 exponent gives the bit length b, which pins the digit count to d(2**(b-1)) or
    one more; one comparison with a power of ten picks it. When float rounding bumps b up by one
    (v just below 2**b), the guess is d(2**b) = d(v) (no power of ten lies that close below a
    power of two) and the comparison is false, so the count is still exact.
    """
    v = np.asarray(v, dtype=np.uint64)
    g = _DIGITS_BY_EXP[v.astype(np.float64).view(np.int64) >> 52]
    return g + (v >= _POW10[g])


def _decimal_order_codes(v: np.ndarray) -> np.ndarray:
    """Order code of the unpadded decimal text of each uint64 over its first 18 digits.

    The text is read as a base-11 number of 18 symbols, with 0 for "no more digits" and d+1
    for digit d, so a shorter string sorts before its extensions, exactly like byte order.
    """
    v = np.asarray(v, dtype=np.uint64)
    nd = _decimal_digit_count(v)
    t = v
    if v.size and int(nd.max()) > YCSB_CODE_DIGITS:
        ten = np.uint64(10)
        for extra in range(1, int(nd.max()) - YCSB_CODE_DIGITS + 1):  # uint64: <= 20 digits
            t = np.where(v >= _POW10[YCSB_CODE_DIGITS - 1 + extra], t // ten, t)
        nd = np.minimum(nd, YCSB_CODE_DIGITS)
    # t < 10**18: six groups of three digits, each reread in base 11 by table lookup.
    thousand = np.uint64(1000)
    raw = np.zeros(v.shape, dtype=np.uint64)
    for mult in _POW11_GROUP:
        q = t // thousand  # uint64 division by a constant is cheap in numpy; % is not
        r = t - q * thousand
        raw += _BASE11_OF_3[r.view(np.int64)] * mult
        t = q
    return raw * _POW11[YCSB_CODE_DIGITS - nd] + _PREFIX11[nd]


def order_codes(key_format: str, seed: int, ordinals: np.ndarray) -> np.ndarray:
    """uint64 codes whose order is the byte order of ``record_keys(key_format, seed, ordinals)``.

    Exact wherever two codes differ; equal codes mean equal leading parts: "time-ordered" is the
    ordinal (exact, ordinals must be in [0, 10**13)); "uuid" is the uuid's first 16 hex digits
    (ties only if those all agree); "ycsb" encodes the first 18 digits after "user" (ties only
    if those agree). Pure integer arithmetic, so sorting keys never has to build them.
    """
    o = np.asarray(ordinals, dtype=np.int64)
    if key_format == "time-ordered":
        if o.size and (int(o.min()) < 0 or int(o.max()) >= 10**TIME_ORDERED_WIDTH):
            raise ValueError(
                f"time-ordered keys keep their order only for ordinals in [0, "
                f"10**{TIME_ORDERED_WIDTH})"
            )
        return o.astype(np.uint64)
    if key_format == "uuid":
        # the `hi` word of uuid_keys (same masking): its 16 hex digits lead the text
        hi = ordinal_hash(seed, STREAM_UUID_HI, o)
        return (hi & np.uint64(0xFFFFFFFFFFFF0FFF)) | np.uint64(0x0000000000004000)
    if key_format == "ycsb":
        out = np.empty(o.shape, dtype=np.uint64)
        for a in range(0, len(o), _CODE_BLOCK):
            h = fnvhash64(o[a : a + _CODE_BLOCK]).astype(np.uint64)  # as ycsb_keys prints it
            out[a : a + _CODE_BLOCK] = _decimal_order_codes(h)
        return out
    raise ValueError(f"key_format: unknown {key_format!r}")


def order_code_is_exact(key_format: str) -> bool:
    """Whether equal codes imply equal keys: only "time-ordered", whose code is the ordinal."""
    if key_format not in ("uuid", "time-ordered", "ycsb"):
        raise ValueError(f"key_format: unknown {key_format!r}")
    return key_format == "time-ordered"
