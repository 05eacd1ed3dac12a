"""multi-fg-bucket on Spark with file groups of a few records, so every bucket holds
several: the dict oracles of tests/test_oracle.py and tests/test_mor.py (upserts,
deletes, re-inserts, killed writers), and merge-on-read's routing (updates to their
group's log, inserts only to base files, a group with logs closed to inserts)."""

from __future__ import annotations

import shutil
import tempfile

import pandas as pd
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from test_mor import MOR, check_mor
from test_oracle import check, step

from indexbench.driver import open_table, upsert
from indexbench.verify import verify_table
from indexes.multi_fg_bucket.layout import ordinal_of
from tableformat.basefile import bucket_of_file_id
from tableformat.table import Table

NAME = "multi-fg-bucket"
# a file group is full at 200 / 100 = 2 records (the estimate stays the average)
SMALL = {"hoodie.bucket.index.num.buckets": "2", "indexbench.scale": "1",
         "hoodie.parquet.max.file.size": "200", "hoodie.copyonwrite.record.size.estimate": "100",
         "hoodie.record.size.estimation.threshold": str(10**6),
         "hoodie.index.bloom.num_entries": "4", "hoodie.index.bloom.fpp": "0.1"}


@pytest.mark.parametrize("mor", [False, True], ids=["cow", "mor"])
def test_small_file_groups_equal_the_dict_oracle(spark, mor):
    @settings(max_examples=1, deadline=None, phases=(Phase.explicit, Phase.generate))
    @given(st.lists(step, min_size=3, max_size=3))
    def run(steps):
        root = tempfile.mkdtemp(prefix="mfg-oracle-")
        try:
            uri = f"{root}/t"
            open_table(uri, NAME, {**SMALL, **(MOR if mor else {})})  # the table's params
            (check_mor if mor else check)(spark, uri, NAME, steps)
        finally:
            shutil.rmtree(root, ignore_errors=True)

    run()


def frame(keys, ts: int) -> pd.DataFrame:
    return pd.DataFrame({"key": keys, "dt": "d", "ts": ts, "payload": f"t{ts}"})


def test_merge_on_read_sends_updates_to_logs_and_inserts_to_base_files(spark, tmp_path):
    uri = str(tmp_path / "t")
    table, index = open_table(uri, NAME, {**SMALL, "hoodie.bucket.index.num.buckets": "1",
                                          "hoodie.table.type": "mor",
                                          "hoodie.compact.inline": "false"})
    batches = [["a", "b", "c"], ["c", "a"], ["d"], ["d", "e"]]
    with table:
        done = [upsert(spark, table, index, spark.createDataFrame(frame(keys, b)), batch_no=b)
                for b, keys in enumerate(batches)]
    # by key: a, b fill group 0, c starts group 1
    assert done[0].metrics["file_groups_opened"] == 2
    # updates only: each group's log
    assert all(s["logVersion"] is not None and s["numUpdateWrites"] == 1
               for s in done[1].write_stats) and len(done[1].write_stats) == 2
    assert done[1].metrics["files_read"] == 2 and done[1].metrics["candidates_per_key"] >= 1
    # group 1 has room for one more record but a log: d opens group 2, as a base file
    (d,) = done[2].write_stats
    assert ordinal_of(d["fileId"]) == 2 and d["logVersion"] is None and d["numInserts"] == 1
    # group 2 has no log: e tops it up, merged with d's update into a new base file
    (e,) = done[3].write_stats
    assert e["fileId"] == d["fileId"] and e["logVersion"] is None
    assert (e["numInserts"], e["numUpdateWrites"]) == (1, 1)
    assert done[3].metrics["small_file_inserts"] == 1
    snap = Table(uri).snapshot()
    assert sorted((bucket_of_file_id(f), ordinal_of(f)) for _, f in snap.slices) == [
        (0, 0), (0, 1), (0, 2)]
    assert verify_table(spark, uri) == []
