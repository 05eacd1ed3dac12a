"""The fidelity checks' arithmetic (Spark-free): tolerances, the placement agreement
that is 1 exactly when both tables split the keys alike, file groups paired by size, and
the names the counterparts judge and explain. The checks on real tables beside Hudi's
writer are tests/test_hudi_peer.py's (marked hudi)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import indexes
from indexbench import cli
from indexes import roles
from indexes.insert_routes import InsertRoutes
from reports import fidelity as F
from writeclient.sizing import InsertPlan


def test_judge_is_relative_to_hudis_figure():
    assert F.judge(100, 100, 0.0) == F.PASS
    assert F.judge(101, 100, 0.0) == F.FAIL
    assert F.judge(102, 100, 0.02) == F.PASS and F.judge(103, 100, 0.02) == F.FAIL
    assert F.judge(0, 0, 0.05) == F.PASS
    assert F.judge(5, math.nan, 0.05) == F.INFO and F.judge(5, 5, None) == F.INFO


def test_placement_agreement_is_one_only_for_the_same_split():
    ours = np.array([0, 0, 1, 1, 2, 2])
    assert F._agreement(ours, np.array([7, 7, 3, 3, 9, 9])) == 1.0  # ids differ, split same
    assert F._agreement(ours, np.array([7, 7, 7, 7, 9, 9])) == pytest.approx(4 / 6)  # merged
    assert F._agreement(ours, np.array([7, 3, 3, 7, 9, 9])) == pytest.approx(4 / 6)
    assert F._agreement(np.array([], np.int64), np.array([], np.int64)) == 1.0


def test_file_groups_are_paired_by_size_per_partition():
    assert F._largest_gap({"p": [10, 20]}, {"p": [10, 20]}) == 0.0
    assert F._largest_gap({"p": [10, 21]}, {"p": [10, 20]}) == pytest.approx(0.05)
    assert math.isinf(F._largest_gap({"p": [10, 20]}, {"p": [30]}))


@pytest.mark.parametrize("name", [n for n in indexes.names()
                                  if roles.hudi_counterpart(indexes.index_class(n)) is not None])
def test_a_counterpart_judges_and_explains_checks_that_exist(name):
    hudi = indexes.index_class(name).HUDI
    named = set(hudi.judged or ()) | {check for check, _, _ in hudi.explained}
    assert named <= set(F.CHECKS), named - set(F.CHECKS)
    assert all(tt in ("", "cow", "mor") and why.strip() for _, tt, why in hudi.explained)
    assert all(k in indexes.index_class(name).param_keys() for k, _ in hudi.fidelity_params)


def test_a_folder_without_a_run_is_one_error(tmp_path, capsys):
    assert cli.main(["fidelity", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a run directory" in err[0]


def test_a_bucket_drawn_no_key_gets_no_file_and_keys_find_theirs_again():
    """The simulator's routes: new buckets drawn no key make no file group (as Hudi
    writes none), the plan's groups are remembered, and every key of the batch is found
    again in the file it was drawn into."""
    hashes = np.random.default_rng(3).integers(-2**63, 2**63 - 1, 200, dtype=np.int64)
    plan = InsertPlan(file_ids=["small", "new-0", "new-1"], counts=[100, 99, 1])
    drawn = np.bincount(plan.draw(hashes), minlength=3)
    routes = InsertRoutes(file_ids=["small"])
    files, got, ids = routes.add(0, hashes, plan)
    assert ids == plan.file_ids
    assert got.tolist() == drawn.tolist() and got.sum() == 200
    assert files[0] == 0 and (files[1:] >= 0).tolist() == (drawn[1:] > 0).tolist()
    assert len(routes.file_ids) == 1 + int((drawn[1:] > 0).sum())
    found = routes.file_of(np.arange(200), hashes)
    assert (found == files[plan.draw(hashes)]).all()


def test_record_index_bytes_are_the_latest_slices_as_of_an_instant(tmp_path):
    """Hudi's record-level index on disk: the record_index files its metadata table's
    commits wrote up to the instant, each at its latest size, newest slice per group."""
    import json
    import os

    mdt = tmp_path / ".hoodie" / "metadata"
    (mdt / F.RECORD_INDEX).mkdir(parents=True)
    (mdt / ".hoodie").mkdir()

    def commit(instant: str, files: dict[str, int]) -> None:
        stats = [{"partitionPath": F.RECORD_INDEX, "path": f"{F.RECORD_INDEX}/{n}",
                  "fileSizeInBytes": size} for n, size in files.items()]
        (mdt / ".hoodie" / f"{instant}.deltacommit").write_text(json.dumps(
            {"partitionToWriteStats": {F.RECORD_INDEX: stats}}))

    commit("00000000000000010", {"record-index-0000-0_0-1-1_00000000000000010.hfile": 1000})
    commit("20260101000000001", {".record-index-0000-0_00000000000000010.log.1_0-1-1": 200})
    commit("20260101000000002", {".record-index-0000-0_00000000000000010.log.1_0-1-1": 350})
    commit("20260101000000003", {"record-index-0000-0_0-2-2_20260101000000003.hfile": 1100})
    assert F.record_index_bytes(str(tmp_path), "20260101000000001") == 1200
    assert F.record_index_bytes(str(tmp_path), "20260101000000002") == 1350  # appended
    assert F.record_index_bytes(str(tmp_path), "20260101000000003") == 1100  # compacted
    assert F.record_index_bytes(str(tmp_path / "none"), "20260101000000003") is None
    assert os.path.isdir(mdt / F.RECORD_INDEX)


def test_index_bytes_are_per_live_key_on_both_sides():
    """Per live key on both sides: our merge-on-read `table_records` counts a logged
    update once per stored copy, so it is not the denominator (Hudi's snapshot count is,
    equal to ours after every batch)."""
    import pandas as pd

    ours = pd.DataFrame({"batch": [1], "index_disk_bytes": [43_000], "table_records": [1_200]})
    hudi = pd.DataFrame({"batch": [1], "table_records": [1_000]})
    pair = F.Pair("dynamic-rli", "mor", None, None, ours, hudi, pd.DataFrame())
    row = F._index_bytes_row(pair, 1, "20260101000000001", [("20260101000000001", 23_000)])
    assert (row["ours"], row["hudi"]) == (43.0, 23.0)


def test_a_hudi_series_run_at_other_settings_than_ours_is_not_paired():
    """``advise --check`` runs Hudi's writer at the settings its own model chose
    (``compare(peer_index_params=...)``); where those are not our table's, run.json says
    ``same_params: false`` and fidelity holds nothing of the two tables against each
    other (different bucket counts place records apart by design)."""
    info = {"peer": "hudi", "mirrors": "simple-bucket", "table": "/t/hudi-simple-bucket",
            "table_type": "COPY_ON_WRITE", "table_version": "6"}
    run = {"peers": {"hudi-simple-bucket": info,
                     "hudi-bloom": {**info, "mirrors": "bloom", "table": "/t/hudi-bloom",
                                    "same_params": True}}}
    assert set(F._peer_tables(run)) == {("simple-bucket", "cow"), ("bloom", "cow")}
    run["peers"]["hudi-simple-bucket"]["same_params"] = False
    assert set(F._peer_tables(run)) == {("bloom", "cow")}
