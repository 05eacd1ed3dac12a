"""A benchmark's counters are a pure function of (workload, parameters, code): the same
comparison run twice writes the same bytes and counts the same, batch for batch.

What used to vary: the wall-clock instant in every row's ``_hoodie_commit_time`` and
``_hoodie_commit_seqno`` and Spark's stage id in ``_hoodie_file_name`` changed the files'
compressed bytes, and Hudi's byte-based sizing (average record size, small-file top-up)
turned bytes into different counts downstream (docs/results.md, "Repeatable counters").
The second run here goes through the same Spark application after the first, so its
stage ids differ, as a notebook's would.
"""

from __future__ import annotations

import pandas as pd

import indexes
from indexbench import api
from tableformat.table import FIRST_INSTANT, Table

# bloom: Hudi's file sizing (small files topped up from batch 1 at the default scale);
# dynamic-rli: bucket files and its record-level index files
INDEXES = ["bloom", "dynamic-rli"]
SIZES = {"initial_records": 8000, "batches": 1, "batch_size": 2500}


def _compare(spark, out) -> pd.DataFrame:
    return api.compare(INDEXES, "uniform", out=str(out), spark=spark, query_phase=False,
                       **SIZES)


def test_the_same_comparison_twice_counts_the_same(spark, tmp_path):
    a = _compare(spark, tmp_path / "a")
    b = _compare(spark, tmp_path / "b")
    # where Spark ran a task (a warm Python worker or a cold one) is not the workload's
    placed = {c for name in indexes.names() for c in indexes.get(name).placement_columns()}
    counters = [c for c in a.columns if pd.api.types.is_numeric_dtype(a[c])
                and not c.endswith("_s")  # seconds are measured, everything else counted
                and c not in placed]
    assert {"bytes_written", "small_files_topped_up", "index_disk_bytes",
            "files_written", "avg_record_size"} <= set(counters)
    assert (a["small_files_topped_up"].fillna(0) > 0).any()  # sizing had bytes to follow
    pd.testing.assert_frame_equal(a[["index", "batch", *counters]],
                                  b[["index", "batch", *counters]], check_exact=True)
    # the instants are the benchmark clock's: the same in both tables, from FIRST_INSTANT
    for name in INDEXES:
        ia = [i for i, _ in Table(str(tmp_path / "a" / "tables" / name)).completed_instants()]
        ib = [i for i, _ in Table(str(tmp_path / "b" / "tables" / name)).completed_instants()]
        assert ia == ib and ia[0] > FIRST_INSTANT and ia[0].startswith(FIRST_INSTANT[:8])
