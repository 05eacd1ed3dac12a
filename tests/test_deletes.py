"""Deletes through every index (issue #14): Hudi's delete marker in an upsert and
``api.delete``, with the ordering rule, no-ops, empty files and dynamic-rli's dead
RLI entries. The contract is taken from ``indexes.names()``."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest
from conftest import read_snapshot

import indexes
from indexbench import api
from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from tableformat import basefile as bf
from tableformat.table import Table

DDL = "key string, dt string, ts bigint, payload string, _hoodie_is_deleted boolean"


def rows(spark, *records):
    return spark.createDataFrame(list(records), DDL)


@pytest.mark.parametrize("index_name", indexes.names())
def test_deletes_through_every_index(spark, tmp_path, index_name):
    """The delete marker in an upsert (ordering rule, no-ops, next to inserts), then
    ``api.delete`` (no ordering value: whatever is stored goes; a file group can become
    empty), then a re-insert of a deleted key."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, index_name)
    load = [(f"k{i}", "p" if i % 2 else "q/r", 5, f"v{i}", False) for i in range(12)]
    load.append(("c", "s", 9, "z", False))
    with table:
        upsert(spark, table, index, rows(spark, *load))
        m = upsert(spark, table, index, rows(
            spark,
            ("k1", "p", 5, "", True),      # a tie: the delete wins
            ("k3", "p", 4, "", True),      # older than the stored record: loses
            ("k2", "p", 9, "", True),      # k2 lives in q/r: (p, k2) does not exist
            ("k4", "q/r", 6, "", True),    # deleted ...
            ("k4", "q/r", 7, "back", False),  # ... but a newer upsert of it wins the batch
            ("k6", "q/r", 8, "", True),    # a newer delete beats an older upsert
            ("k6", "q/r", 7, "no", False),
            ("zz", "p", 1, "", True),      # never existed
            ("new", "p", 1, "n", False),   # an insert next to the deletes
        ), batch_no=1).metrics
    assert m["deletes"] == 2 and m["inserts"] == 1
    want = {(d, k): p for k, d, _, p, _ in load if k not in ("k1", "k6")}
    want[("q/r", "k4")] = "back"
    want[("p", "new")] = "n"
    got = {(r.dt, r.key): r.payload for r in read_snapshot(uri).itertuples()}
    assert got == want and m["table_records"] == len(want)

    # api.delete: no ordering column; an absent key is a no-op
    out = api.delete(uri, pd.DataFrame({"key": ["c", "k0", "nope"], "dt": ["s", "q/r", "p"]}),
                     spark=spark)
    row = out.iloc[0]
    assert (row["operation"], row["deletes"], row["inserts"], row["table_records"]) == \
        ("delete", 2, 0, len(want) - 2)
    t = Table(uri)
    assert t.read_commit(t.completed_instants()[-1][0])["operationType"] == "DELETE"
    empty = [s for s in t.snapshot().slices.values() if s.partition == "s"]
    assert [s.num_records for s in empty] == [0]  # "c"'s file group: an empty base file
    assert bf.MIN_KEY_FOOTER not in bf.read_footer(t.fs, t.abs_path(empty[0].path))
    with table:  # the key comes back, into its partition
        upsert(spark, table, index, rows(spark, ("c", "s", 1, "again", False)), batch_no=2)
    got = {(r.dt, r.key): r.payload for r in read_snapshot(uri).itertuples()}
    assert got[("s", "c")] == "again" and ("q/r", "k0") not in got
    assert verify_table(spark, uri) == []
    hudi_rs_reads(uri)  # DELETE commits, an emptied file


def hudi_rs_reads(uri: str) -> None:
    """hudi-rs's snapshot equals the harness's (tests/test_hudi_interop.py)."""
    pytest.importorskip("hudi", minversion="0.5.0")
    from test_hudi_interop import assert_hudi_rs_reads_the_harness_snapshot

    assert_hudi_rs_reads_the_harness_snapshot(uri)


def test_bloom_filters_are_rebuilt_without_the_deleted_keys(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "bloom")
    keys = [f"k{i:03d}" for i in range(50)]
    with table:
        upsert(spark, table, index, spark.createDataFrame(pd.DataFrame(
            {"key": keys, "dt": "p", "ts": 1, "payload": "x"})))
    api.delete(uri, pd.DataFrame({"key": keys[:10], "dt": "p"}), spark=spark)
    t = Table(uri)
    from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter

    [s] = list(t.snapshot().slices.values())
    footer = bf.read_footer(t.fs, t.abs_path(s.path))
    assert footer[bf.MIN_KEY_FOOTER] == "k010"  # the range shrank with the deletes
    rebuilt = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
    fresh = index.base_file_footer(pa.array(keys[10:]))[0][FOOTER_KEY]
    assert rebuilt.serialize() == HoodieBloomFilter.deserialize(
        fresh, footer.get(TYPE_CODE_KEY)).serialize()


def test_dynamic_rli_keeps_dead_entries_and_counts_them(spark, tmp_path):
    """The documented choice: a deleted key keeps its RLI entry (and bucket), counted as
    ``rli_dead_entries``; a re-insert goes back to its bucket and writes no entry."""
    uri = str(tmp_path / "t")
    table, index = open_table(uri, "dynamic-rli")
    keys = [f"k{i:03d}" for i in range(30)]
    with table:
        first = upsert(spark, table, index, spark.createDataFrame(pd.DataFrame(
            {"key": keys, "dt": "p", "ts": 1, "payload": "x"}))).metrics
        gone = upsert(spark, table, index, rows(
            spark, *[(k, "p", 2, "", True) for k in keys[:8]],
            ("k000", "nowhere", 2, "", True)), batch_no=1).metrics  # no cache for it
        back = upsert(spark, table, index, rows(
            spark, *[(k, "p", 3, "y", False) for k in keys[:3]]), batch_no=2).metrics
    assert (first["rli_entries"], first["rli_dead_entries"]) == (30, 0)
    assert (gone["deletes"], gone["rli_entries"], gone["rli_dead_entries"]) == (8, 30, 8)
    assert gone["rli_entries_written"] == 0 and gone["buckets_created"] == 0
    assert gone["partitions_bootstrapped"] == 0  # "nowhere" got no cache
    assert (back["inserts"], back["rli_entries_written"], back["rli_dead_entries"]) == (3, 0, 5)
    assert verify_table(spark, uri) == []
