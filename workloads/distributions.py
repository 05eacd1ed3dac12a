"""YCSB's request distributions, vectorized over numpy arrays of uniform draws.

The formulas and constants follow YCSB's core/src/main/java/site/ycsb/generator/
(ZipfianGenerator, ScrambledZipfianGenerator, SkewedLatestGenerator,
HotspotIntegerGenerator, UniformLongGenerator, SequentialGenerator) and
site/ycsb/Utils.fnvhash64, so a result here is comparable to a YCSB run. Every sampler
takes its uniform doubles from the caller, which keeps them deterministic per row.
"""

from __future__ import annotations

import functools
import math

import numpy as np

# --- YCSB constants (ZipfianGenerator / ScrambledZipfianGenerator / Utils) ---------------
ZIPFIAN_CONSTANT = 0.99
SCRAMBLED_ITEM_COUNT = 10_000_000_000
SCRAMBLED_ZETAN = 26.46902820178302  # zeta(ITEM_COUNT, 0.99), precomputed by YCSB
FNV_OFFSET_BASIS_64 = np.uint64(0xCBF29CE484222325)
FNV_PRIME_64 = np.uint64(1099511628211)

_EXACT_ZETA_LIMIT = 50_000_000  # sum term by term up to here; Euler-Maclaurin beyond
_CHUNK = 4_000_000


def fnvhash64(values: np.ndarray) -> np.ndarray:
    """YCSB `Utils.fnvhash64` over int64 values (>= 0): FNV-1a on 8 octets, then |h|.

    Returns int64. Java's Math.abs(Long.MIN_VALUE) stays negative; we return it as is
    (probability 2**-64).
    """
    v = np.asarray(values, dtype=np.int64).astype(np.uint64)
    h = np.full(v.shape, FNV_OFFSET_BASIS_64, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for i in range(8):
            octet = (v >> np.uint64(8 * i)) & np.uint64(0xFF)
            h = (h ^ octet) * FNV_PRIME_64
    s = h.view(np.int64)
    return np.where(s < 0, -s, s)


def _zeta_exact(start: int, stop: int, theta: float) -> float:
    """sum_{i=start}^{stop-1} 1/(i+1)^theta, in chunks so memory stays small."""
    total = 0.0
    for lo in range(start, stop, _CHUNK):
        hi = min(stop, lo + _CHUNK)
        i = np.arange(lo + 1, hi + 1, dtype=np.float64)
        total += float(np.sum(i ** (-theta)))
    return total


@functools.lru_cache(maxsize=256)
def zeta(n: int, theta: float) -> float:
    """YCSB `ZipfianGenerator.zetastatic(n, theta)` = sum_{i=1}^{n} i^-theta.

    Exact (numpy, chunked) up to 50M terms; beyond, the Euler-Maclaurin tail, which
    reproduces YCSB's precomputed ZETAN for 10^10 items to ~1e-12 relative.
    """
    if n <= _EXACT_ZETA_LIMIT:
        return _zeta_exact(0, n, theta)
    a = _EXACT_ZETA_LIMIT
    head = _zeta_exact(0, a, theta)
    # sum_{i=a+1}^{n} f(i), f(x) = x^-theta
    if theta == 1.0:
        integral = math.log(n / a)
    else:
        integral = (n ** (1 - theta) - a ** (1 - theta)) / (1 - theta)
    def f(x: float) -> float:
        return x ** (-theta)

    def d1(x: float) -> float:  # first derivative of f
        return -theta * x ** (-theta - 1)

    def d3(x: float) -> float:  # third derivative of f
        return -theta * (theta + 1) * (theta + 2) * x ** (-theta - 3)

    tail = integral + (f(n) - f(a)) / 2 + (d1(n) - d1(a)) / 12 - (d3(n) - d3(a)) / 720
    return head + tail


class Zipfian:
    """Gray et al.'s zipfian over [0, items) as YCSB's ZipfianGenerator computes it.

    `eta_items` is the item count YCSB fixed at construction (it keeps using it in eta
    even when `itemcount` later grows; SkewedLatestGenerator relies on that).
    """

    def __init__(self, items: int, theta: float = ZIPFIAN_CONSTANT,
                 zetan: float | None = None, eta_items: int | None = None) -> None:
        if items < 1:
            raise ValueError(f"zipfian needs >= 1 item, got {items}")
        self.items = int(items)
        self.theta = float(theta)
        self.zetan = zeta(self.items, self.theta) if zetan is None else float(zetan)
        self.zeta2theta = zeta(2, self.theta)
        self.alpha = 1.0 / (1.0 - self.theta)
        ei = self.items if eta_items is None else int(eta_items)
        self.eta = (1 - math.pow(2.0 / ei, 1 - self.theta)) / (1 - self.zeta2theta / self.zetan)

    def sample(self, u: np.ndarray) -> np.ndarray:
        """Map uniform doubles in [0,1) to item numbers (int64), YCSB `nextLong(items)`."""
        u = np.asarray(u, dtype=np.float64)
        uz = u * self.zetan
        with np.errstate(invalid="ignore", over="ignore"):
            base = np.power(self.eta * u - self.eta + 1.0, self.alpha)
            cont = np.floor(self.items * base)
        cont = np.nan_to_num(cont, nan=0.0, posinf=self.items - 1, neginf=0.0)
        ret = np.where(uz < 1.0, 0, np.where(uz < 1.0 + 0.5**self.theta, 1, cont))
        return np.clip(ret, 0, self.items - 1).astype(np.int64)

    def probabilities(self) -> np.ndarray:
        """Exact output distribution of `sample` (what a chi-square test compares to)."""
        k = np.arange(self.items + 1, dtype=np.float64)
        # P(ret >= k) for k >= 2: u >= 1 + ((k/n)^(1-theta) - 1)/eta, and u >= u2
        u2 = (1.0 + 0.5**self.theta) / self.zetan
        with np.errstate(divide="ignore", invalid="ignore"):
            thr = 1.0 + (np.power(k / self.items, 1 - self.theta) - 1.0) / self.eta
        thr = np.clip(np.maximum(thr, u2), 0.0, 1.0)
        surv = 1.0 - thr  # P(ret >= k)
        surv[0] = 1.0
        surv[1] = 1.0 - min(1.0, 1.0 / self.zetan)
        surv[-1] = 0.0
        p = surv[:-1] - surv[1:]
        return np.clip(p, 0.0, None)


def uniform(u: np.ndarray, n: int) -> np.ndarray:
    """YCSB UniformLongGenerator over [0, n)."""
    return np.minimum(np.floor(np.asarray(u) * n).astype(np.int64), n - 1)


def zipfian(u: np.ndarray, n: int, theta: float = ZIPFIAN_CONSTANT) -> np.ndarray:
    """YCSB ZipfianGenerator over [0, n): item 0 is the most popular (oldest key)."""
    return _zipf(n, theta).sample(u)


@functools.lru_cache(maxsize=64)
def _zipf(n: int, theta: float, eta_items: int | None = None) -> Zipfian:
    return Zipfian(n, theta, eta_items=eta_items)


@functools.lru_cache(maxsize=8)
def _scrambled_base(theta: float) -> Zipfian:
    items = SCRAMBLED_ITEM_COUNT + 1  # ZipfianGenerator(0, ITEM_COUNT): max - min + 1
    zetan = SCRAMBLED_ZETAN if theta == ZIPFIAN_CONSTANT else None
    return Zipfian(items, theta, zetan=zetan)


def scrambled_zipfian(u: np.ndarray, n: int, theta: float = ZIPFIAN_CONSTANT) -> np.ndarray:
    """YCSB ScrambledZipfianGenerator over [0, n): zipfian over 10^10 items, fnv-hashed mod n.

    Popular items are scattered over the key space instead of clustered at 0.
    """
    z = _scrambled_base(theta).sample(u)
    return np.fmod(fnvhash64(z), n).astype(np.int64)


def latest(u: np.ndarray, n: int, theta: float = ZIPFIAN_CONSTANT,
           initial: int | None = None) -> np.ndarray:
    """YCSB SkewedLatestGenerator: `max - zipfian.nextLong(max)` with max = newest ordinal.

    As in YCSB the zipfian is built on the initial record count (`initial`, its eta
    stays) and grows its zeta with the key count; ordinal 0 is never chosen when n > 1.
    """
    mx = n - 1
    if mx < 1:
        return np.zeros(np.shape(u), dtype=np.int64)
    ei = mx if initial is None else max(1, initial - 1)
    return mx - _zipf(mx, theta, ei).sample(u)


def hotspot(u_op: np.ndarray, u_pos: np.ndarray, n: int, hot_set: float,
            hot_opn: float) -> np.ndarray:
    """YCSB HotspotIntegerGenerator over [0, n): the first `hot_set` share of items
    receives `hot_opn` of the operations."""
    hot = int(n * hot_set)
    cold = n - hot
    u_pos = np.asarray(u_pos)
    hot_v = np.minimum(np.floor(u_pos * max(hot, 1)).astype(np.int64), max(hot, 1) - 1)
    cold_v = hot + np.minimum(np.floor(u_pos * max(cold, 1)).astype(np.int64), max(cold, 1) - 1)
    if hot == 0:
        return cold_v
    if cold == 0:
        return hot_v
    return np.where(np.asarray(u_op) < hot_opn, hot_v, cold_v)


def sequential(counter: np.ndarray, n: int) -> np.ndarray:
    """YCSB SequentialGenerator over [0, n): `counter % n`, the counter running over
    the whole run's updates."""
    return np.asarray(counter, dtype=np.int64) % n
