"""Counters summed across Spark tasks are the same whatever order the tasks finish in:
the driver's accumulator adds their dicts in completion order (tests/test_repeatable.py
runs a comparison twice and compares every counter exactly)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np

from indexes.bloom_filter.key_check import count_theory
from indexes.counters import DictSum
from metrics.rows import _as_float


def test_fp_theory_is_the_same_in_every_task_order():
    rng = np.random.default_rng(3)
    tasks = []
    for _ in range(6):  # each task probed a few filters, each at its own fill's fpp
        counts: Counter = Counter()
        for negatives, fpp in zip(rng.integers(1, 5000, 4), rng.uniform(1e-9, 1e-3, 4),
                                  strict=True):
            count_theory(counts, int(negatives), float(fpp), 1000)
        tasks.append(dict(counts))
    param = DictSum()
    totals = set()
    floats = set()
    for order in itertools.permutations(tasks):
        acc = param.zero({})
        for t in order:
            acc = param.addInPlace(acc, t)
        totals.add(_as_float(acc["fp_theory"]))
        floats.add(sum(float(t["fp_theory"]) for t in order))  # what plain floats give
    assert len(floats) > 1  # plain float sums differ in the last bit between orders
    assert len(totals) == 1
