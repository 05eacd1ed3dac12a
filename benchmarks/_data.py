"""Deterministic inputs for the core benchmarks (no Spark, cheap to build)."""

from __future__ import annotations

import numpy as np

# One round, 1-5 samples within ~4 s per benchmark: keeps the whole suite (cores + the
# Spark tracks) near 15 minutes on 2 cores; regressions worth tracking are > 10%.
SAMPLING = (1, (1, 5, 4.0))


def uuid_keys(n: int, seed: int = 0) -> np.ndarray:
    """``n`` random 32-hex-digit record keys as an object array (uuid-like, fast to build)."""
    rng = np.random.default_rng(seed)
    text = rng.bytes(16 * n).hex()
    return np.array([text[i:i + 32] for i in range(0, 32 * n, 32)], dtype=object)


def int32_hashes(n: int, seed: int = 0) -> np.ndarray:
    """``n`` distinct random int32 key hashes (what dynamic-rli's cache is keyed by)."""
    rng = np.random.default_rng(seed)
    h = np.sort(rng.integers(-(2**31), 2**31 - 1, size=int(n * 1.01) + 16, dtype=np.int64))
    h = h[np.r_[True, h[1:] != h[:-1]]]  # distinct (np.unique: ~20x slower on numpy 2.4)
    rng.shuffle(h)
    return h[:n].astype(np.int32)
