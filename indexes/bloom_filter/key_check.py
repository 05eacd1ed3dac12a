"""Hudi's ``HoodieKeyLookupHandle`` for one file: probe its bloom filter, confirm the
positives on its record keys, and count the work (candidate files, checks, positives,
false positives, the files read and why, the theoretical reference). Shared by every
index that finds keys through footer filters (bloom, multi-fg-bucket), in the Spark
tasks and the simulator alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from indexes.bloom_filter.hoodie_filter import HoodieBloomFilter


def count_key_check(counts: Counter, probes: int, positives: int, true_pos: int) -> None:
    """Hudi's lookup-handle counters for one candidate file."""
    counts["candidate_files"] += 1
    counts["bloom_checks"] += int(probes)
    counts["bloom_positives"] += int(positives)
    counts["true_positives"] += int(true_pos)
    counts["false_positives"] += int(positives) - int(true_pos)


def count_file_read(counts: Counter, needed: bool, nbytes: float) -> None:
    """One candidate file's key column was read: a read the index needed (the file held
    a probed key) or one only false positives caused, and its bytes."""
    kind = "needed" if needed else "fp_only"
    counts[f"files_read_{kind}"] += 1
    counts[f"bytes_read_{kind}"] += nbytes


def count_theory(counts: Counter, negatives: int, fpp: float, file_keys: int) -> None:
    """The reference figure next to the measured FPs: negative probes of a filter times
    its theoretical fpp at its row fill, and the keys each negative probe met."""
    if negatives:
        # exact (a float is a dyadic fraction): tasks' sums reach the driver in the order
        # they finish, and float addition in another order differs in the last bit
        counts["fp_theory"] += Fraction(negatives * fpp)
        counts["probed_file_keys"] += int(negatives) * int(file_keys)


def check_filter(bloom: HoodieBloomFilter, keys: pa.Array, counts: Counter,
                 file_keys: Callable[[], pa.Array | np.ndarray],
                 prehashed: np.ndarray | None = None) -> np.ndarray:
    """Probe ``bloom`` with ``keys``; if any probe is positive, read the file's keys
    (``file_keys``, called at most once) and confirm. Returns which keys the file holds;
    a positive the keys do not confirm is a false positive. ``prehashed``: the keys'
    ``HoodieBloomFilter.prehash`` positions, computed once for every file they meet."""
    maybe = bloom.might_contain_many(keys, prehashed)  # Arrow in: no strings unless hashed
    positives = int(maybe.sum())
    found = np.zeros(len(keys), dtype=bool)
    if positives:
        col = file_keys()
        col = col if isinstance(col, pa.Array | pa.ChunkedArray) else pa.array(col, pa.string())
        found[maybe] = pc.is_in(keys.filter(pa.array(maybe)), value_set=col).to_numpy(
            zero_copy_only=False)
    count_key_check(counts, len(keys), positives, int(found.sum()))
    count_theory(counts, len(keys) - int(found.sum()), bloom.theoretical_fpp(),
                 sum(bloom.row_counts))
    return found
