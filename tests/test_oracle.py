"""Property-based oracle (issue #14): random upserts and deletes through every index, and
writers killed at random points, against a dict of what must be committed.

Each example is a short sequence of batches over a small key space (so updates, deletes,
re-inserts, in-batch duplicates and ordering ties are common), in partitions with nested
paths. After every step the committed snapshot equals the oracle; a step may "kill" the
writer at a crash point (:func:`writeclient.faults.simulated_crash`), and the next writer
must roll back to the oracle's last committed state. ``verify`` passes at the end.
The profile "ci" (tests/conftest.py) runs 3 examples per index; ``--hypothesis-profile=long``
runs 60.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest
from conftest import read_snapshot
from hypothesis import given
from hypothesis import strategies as st

import indexes
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from writeclient.faults import SimulatedCrash, simulated_crash

KEYS = [f"k{i:02d}" for i in range(10)]
PARTITIONS = ["p", "q/r", "s"]
CRASH_POINTS = [None, None, None, "after_write", "before_commit"]
DDL = "key string, dt string, ts bigint, payload string, _hoodie_is_deleted boolean"

# (key, partition, ordering value, delete?): a delete may come without an ordering value
record = st.tuples(st.sampled_from(KEYS), st.sampled_from(PARTITIONS),
                   st.one_of(st.integers(0, 4), st.none()), st.booleans())
step = st.tuples(st.lists(record, min_size=1, max_size=14), st.sampled_from(CRASH_POINTS))


def apply_batch(oracle: dict, rows: list[tuple]) -> None:
    """Hudi's upsert rules on a dict keyed by (partition, key): per identity the larger
    ordering value wins the batch (a missing one ranks lowest, the later row on ties);
    it replaces the stored record unless older; a winning delete removes it."""
    best: dict = {}
    for i, (key, part, ts, delete, payload) in enumerate(rows):
        rank = (ts is not None, ts if ts is not None else 0, i)
        if (part, key) not in best or rank > best[(part, key)][0]:
            best[(part, key)] = (rank, ts, delete, payload)
    for ident, (_, ts, delete, payload) in best.items():
        stored = oracle.get(ident)
        if stored is not None and ts is not None and ts < stored[0]:
            continue  # an older record loses to the stored one
        if delete:
            oracle.pop(ident, None)
        else:
            oracle[ident] = (ts, payload)


def committed(uri: str) -> dict:
    snap = read_snapshot(uri)
    if snap.empty:
        return {}
    return {(d, k): (int(t), p) for k, d, t, p in
            zip(snap["key"], snap["dt"], snap["ts"], snap["payload"], strict=True)}


@pytest.mark.parametrize("index_name", indexes.names())
def test_random_upserts_deletes_and_crashes_equal_a_dict_oracle(spark, index_name):
    @given(st.lists(step, min_size=1, max_size=3))
    def run(steps):
        root = tempfile.mkdtemp(prefix="oracle-")
        try:
            check(spark, f"{root}/t", index_name, steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    run()


def check(spark, uri: str, index_name: str, steps: list) -> None:
    oracle: dict = {}
    table, index = open_table(uri, index_name)
    for n, (records, crash_at) in enumerate(steps):
        rows = [(k, p, None if (ts is None and not d) else ts, d, f"s{n}-{i}")
                for i, (k, p, ts, d) in enumerate(records)]
        rows = [(k, p, 0 if ts is None and not d else ts, d, pl) for k, p, ts, d, pl in rows]
        batch = spark.createDataFrame([(k, p, ts, pl, d) for k, p, ts, d, pl in rows], DDL)
        if crash_at is None:
            with table:
                upsert(spark, table, index, batch, batch_no=n)
            apply_batch(oracle, rows)
        else:
            with simulated_crash(crash_at), pytest.raises(SimulatedCrash), table:
                upsert(spark, table, index, batch, batch_no=n)
            # the writer "died": a new one (fresh index state) takes over the table
            table, index = open_table(uri, index_name)
        assert committed(uri) == oracle, (n, crash_at)
    with table:
        assert not table.pending_instants()  # the last crash, if any, is rolled back
    assert verify_table(spark, uri) == []
