"""The workload's oracle (workloads.oracle) against a plain dict fold, and its diff."""

from __future__ import annotations

import pyarrow as pa
import pytest

import workloads
from workloads import generator as G
from workloads.oracle import BATCH, Oracle, difference

W = workloads.Workload(initial_records=600, batches=4, batch_size=300, update_fraction=0.5,
                       delete_fraction=0.2, late_arrival_share=0.3, distribution="zipfian",
                       partitions=3)


def dict_fold(w: workloads.Workload, upto: int) -> dict[str, tuple]:
    """Hudi's upsert rule row by row: the larger ts wins; a winning delete removes."""
    live: dict[str, tuple] = {}
    newest: dict[str, int] = {}
    for b in range(upto + 1):
        rows = G.batch_table(w, b).to_pylist()
        for r in sorted(rows, key=lambda r: r["ts"]):
            if r["key"] in newest and r["ts"] < newest[r["key"]] and r["key"] in live:
                continue  # older than the live version: no change
            if r.get(G.DELETE_COLUMN):
                if r["key"] in live and r["ts"] >= newest[r["key"]]:
                    del live[r["key"]]
                continue
            live[r["key"]] = (r["dt"], r["ts"], r["payload"], b)
            newest[r["key"]] = r["ts"]
    return live


@pytest.mark.parametrize("batch", [0, 2, 4])
def test_each_state_is_the_dict_fold(batch):
    state = Oracle(W).state(batch)
    want = dict_fold(W, batch)
    got = {r["key"]: (r["dt"], r["ts"], r["payload"], r[BATCH]) for r in state.to_pylist()}
    assert got == want
    assert state.column("key").to_pylist() == sorted(want)  # sorted by key


def test_the_workload_has_deletes_and_late_rows_that_lose():
    rows = [r for b in range(W.batches + 1) for r in G.batch_table(W, b).to_pylist()]
    assert any(r[G.DELETE_COLUMN] for r in rows)
    first = Oracle(W)
    assert first.state(4).num_rows < sum(1 for r in rows if not r[G.DELETE_COLUMN])


def test_incremental_is_the_records_a_later_batch_won():
    o = Oracle(W)
    live = dict_fold(W, 4)
    got = o.changed_after(1)
    assert sorted(got.column("key").to_pylist()) == sorted(
        k for k, v in live.items() if v[3] > 1)
    assert o.changed_after(4).num_rows == 0


def test_versions_hold_every_live_version():
    o = Oracle(W)
    v = set(zip(*o.versions().select(["key", "ts"]).to_pydict().values(), strict=True))
    for b in range(W.batches + 1):
        assert set(zip(o.state(b).column("key").to_pylist(),
                       o.state(b).column("ts").to_pylist(), strict=True)) <= v


def test_a_batch_past_the_workload_is_refused():
    with pytest.raises(ValueError, match="batches 0..4"):
        Oracle(W).state(5)


def test_difference_counts_each_kind_of_miss():
    e = pa.table({"key": ["a", "b", "c", "d"], "dt": ["x"] * 4, "ts": [1, 2, 3, 4],
                  "payload": ["p"] * 4})
    r = pa.table({"key": ["a", "b", "b", "c", "z"], "dt": ["x"] * 5, "ts": [1, 2, 2, 9, 5],
                  "payload": ["p"] * 5})
    assert difference(e, r) == {"expected": 4, "read": 5, "missing": 1, "unexpected": 1,
                                "differ": 1, "duplicates": 1}
    assert difference(e, e) == {"expected": 4, "read": 4, "missing": 0, "unexpected": 0,
                                "differ": 0, "duplicates": 0}
