"""Merge-on-read (issue #27): every index writes log files, compacts, and reads merged.

The oracle of tests/test_oracle.py on merge-on-read tables: random upserts and deletes
(with killed writers) through every index in ``indexes.names()``, with inline compaction
every second delta commit, must leave exactly the dict oracle's records in the merged
snapshot; the timeline holds delta commits and compactions as Hudi names them, and
``verify`` passes. Spark-free tests pin the snapshot's assembly and the merge fold.
"""

from __future__ import annotations

import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_oracle import DDL, apply_batch, committed, step

import indexes
from indexbench import services
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from tableformat.errors import TableConfigError
from tableformat.faults import SimulatedCrash, simulated_crash
from tableformat.hudi_log.names import LogFileName, is_log_file
from tableformat.merge import fold
from tableformat.table_type import MERGE_ON_READ, check_table_type
from tableformat.write_config import WriteConfig

MOR = {"hoodie.table.type": "MERGE_ON_READ", "hoodie.compact.inline.max.delta.commits": "2"}


# ---------------------------------------------------------------- Spark-free
def test_log_file_names_round_trip_as_hudi_writes_them():
    name = LogFileName("00000003-0000-4035-a392-22a91eafd130-0", "20260101000000123", 2,
                       "1-5-0")
    assert name.name == ".00000003-0000-4035-a392-22a91eafd130-0_20260101000000123.log.2_1-5-0"
    assert LogFileName.parse(f"dt=1/{name.name}") == name
    assert is_log_file(name.name)
    assert not is_log_file("00000003-0000-4035-a392-22a91eafd130-0_1-5-0_20260101000000123.parquet")


def test_write_configs_refuse_bad_values_in_one_line():
    assert WriteConfig.parse({"hoodie.table.type": "mor"}).table_type == MERGE_ON_READ
    assert check_table_type("merge_on_read") == MERGE_ON_READ
    for given_ in ({"hoodie.table.type": "HYBRID"},
                   {"hoodie.logfile.data.block.format": "orc"},
                   {"hoodie.compact.inline.max.delta.commits": "0"},
                   {"hoodie.compact.inline": "yes"}):
        with pytest.raises(TableConfigError) as e:
            WriteConfig.parse(given_)
        assert "\n" not in str(e.value) and next(iter(given_)) in str(e.value)


def _cow(state: dict, batch: list[tuple]) -> None:
    """One pre-combined batch on a dict: (key, ts, delete) under the merge rule."""
    for key, ts, delete in batch:
        stored = state.get(key)
        if stored is not None and ts is not None and ts < stored:
            continue
        if delete:
            state.pop(key, None)
        else:
            state[key] = ts


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"),
                                st.tuples(st.one_of(st.none(), st.integers(0, 3)),
                                          st.booleans()), max_size=8),
                min_size=1, max_size=5))
def test_folding_logs_over_a_base_equals_merging_batch_by_batch(layers):
    """The reader's fold over a slice's layers = the copy-on-write merge applied per batch."""
    want: dict = {}
    state = pa.table({"_hoodie_record_key": pa.array([], pa.string()),
                      "ts": pa.array([], pa.int64())})
    for layer in layers:
        rows = [(k, ts if ts is not None or d else 0, d) for k, (ts, d) in sorted(layer.items())]
        _cow(want, rows)
        ups = [(k, ts) for k, ts, d in rows if not d]
        dels = [(k, ts) for k, ts, d in rows if d]
        upserts = pa.table({"_hoodie_record_key": pa.array([k for k, _ in ups], pa.string()),
                            "ts": pa.array([t for _, t in ups], pa.int64())})
        state = fold(state, upserts, pa.array([k for k, _ in dels], pa.string()),
                     pa.array([t for _, t in dels], pa.int64()), "_hoodie_record_key", "ts")
    got = dict(zip(state.column(0).to_pylist(), state.column(1).to_pylist(), strict=True))
    assert got == want
    assert len(np.unique(state.column(0).to_numpy(zero_copy_only=False))) == state.num_rows


# ---------------------------------------------------------------- on Spark
@pytest.mark.parametrize("index_name", indexes.names())
def test_mor_upserts_deletes_crashes_and_compactions_equal_a_dict_oracle(spark, index_name):
    @settings(max_examples=2, deadline=None, phases=(Phase.explicit, Phase.generate))
    @given(st.lists(step, min_size=2, max_size=4))
    def run(steps):
        root = tempfile.mkdtemp(prefix="mor-oracle-")
        try:
            check_mor(spark, f"{root}/t", index_name, steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    run()


def check_mor(spark, uri: str, index_name: str, steps: list) -> None:
    oracle: dict = {}
    table, index = open_table(uri, index_name, MOR)
    assert table.config.table_type == MERGE_ON_READ
    for n, (records, crash_at) in enumerate(steps):
        rows = [(k, p, 0 if ts is None and not d else ts, d, f"s{n}-{i}")
                for i, (k, p, ts, d) in enumerate(records)]
        batch = spark.createDataFrame([(k, p, ts, pl, d) for k, p, ts, d, pl in rows], DDL)
        if crash_at is None:
            with table:
                upsert(spark, table, index, batch, batch_no=n)
                services.run_inline(spark, table, index, n)
            apply_batch(oracle, rows)
        else:
            with simulated_crash(crash_at), pytest.raises(SimulatedCrash), table:
                upsert(spark, table, index, batch, batch_no=n)
            table, index = open_table(uri, index_name, MOR)
        assert committed(uri) == oracle, (n, crash_at)
    with table:
        assert not table.pending_instants()
    actions = {a for _, a in table.completed_instants()}
    if any(crash is None for _, crash in steps):  # something committed: as delta commits
        assert "deltacommit" in actions and "commit" not in actions or \
            any(table.read_commit(i).get("operationType") == "COMPACT"
                for i, a in table.completed_instants() if a == "commit")
    assert verify_table(spark, uri) == []


def test_write_read_figure_puts_each_table_type_of_an_index_side_by_side():
    """The report's write-vs-read points: per series, write cost per batch with its
    compactions spread over the batches, and the lookups' cost per key."""
    from reports.figures import write_read_figure, write_read_points
    from tableformat.metrics import to_frame

    rows = []
    for tt, write_s, compact_s, read in (("cow", 4.0, 0.0, 100.0), ("mor", 1.0, 2.0, 300.0)):
        for b in range(3):
            rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt,
                         "operation": "upsert",
                         "batch": b, "write_s": write_s, "bytes_written": 1000.0 * write_s})
        if compact_s:
            rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt, "batch": 2,
                         "operation": "compaction", "write_s": compact_s,
                         "bytes_written": 500.0})
        rows.append({"index": "simple-bucket", "workload": "w", "table_type": tt,
                     "operation": "query",
                     "query": "lookup", "keys": 10, "bytes_read": read * 10,
                     "latency_p50_s": read / 1000})
    rows = [{"run_id": "r1", **r} for r in rows]
    pts = write_read_points(to_frame(rows)).set_index("series")
    assert pts.loc["simple-bucket", "write_s"] == 4.0
    assert pts.loc["simple-bucket (mor)", "write_s"] == (2 * 1.0 + 2.0) / 2
    assert pts.loc["simple-bucket (mor)", "bytes_read_per_key"] == 300.0
    assert write_read_figure(to_frame(rows)) is not None
    assert write_read_figure(to_frame(rows[:3])) is None  # no lookups: no figure
