"""dynamic-rli's assigner task without Spark: a worker's share is trusted only when its
tag is the driver's token; a retry, a failed instant or a stale copy reloads it from the
share's committed RLI files and routes exactly as before."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from indexes.base import BUCKET_COL, FILE_ID_COL
from indexes.dynamic_rli import executor, rli
from indexes.dynamic_rli.assigner import Capacity, assigner_of
from indexes.hashing import spark_murmur3_hash
from tableformat.table import Table, TableConfig

P = 2


class Counters:
    def add(self, _values: dict) -> None:
        pass


def _rows(keys: list[str], assigner: int) -> pa.Table:
    h = spark_murmur3_hash(np.array(keys, dtype=object))
    keep = assigner_of(h, P) == assigner
    return pa.table({"key": pa.array(np.array(keys, dtype=object)[keep], pa.string()),
                     "dt": pa.array(["p"] * int(keep.sum()), pa.string()),
                     executor.HASH_COL: pa.array(h[keep], pa.int32())})


def _plan(table: Table, instant: str, token: str | None, fresh: bool) -> executor.AssignPlan:
    snap = table.snapshot()
    files = tuple(sorted(f["path"] for i in snap.completed
                         for f in json.loads(snap.extra.get(i, {}).get(rli.FILES_KEY, "[]"))))
    part = executor.PartitionPlan(fresh=fresh, tokens=(token,) * P, files=files, file_ids={},
                                  file_bytes={}, per_record=None, has_files=bool(files))
    return executor.AssignPlan(table.uri, instant, P, Capacity(max_records=5), {"p": part},
                               {} if fresh else {"p": (token,) * P})


def _run(table: Table, plan: executor.AssignPlan, rows: pa.Table, a: int):
    schema = pa.schema([("key", pa.string()), ("dt", pa.string()),
                        (FILE_ID_COL, pa.string()), (BUCKET_COL, pa.int32())])
    out = pa.Table.from_batches(list(executor.assign_task(
        iter(rows.to_batches()), plan, a, "dt", "key", schema, Counters())), schema)
    stats = executor.read_task_stats(table, plan.instant, a)
    return dict(zip(out["key"].to_pylist(), out[BUCKET_COL].to_pylist(), strict=True)), stats


def _commit(table: Table, instant: str, stats: dict) -> None:
    w = stats["parts"]["p"]["rli"]
    table.complete_instant(instant, {"partitionToWriteStats": {}, "extraMetadata": {
        rli.FILES_KEY: json.dumps([{"path": w["path"], "bytes": w["bytes"]}])}})


@pytest.fixture(autouse=True)
def _clean_registry():
    executor.REGISTRY.clear()
    yield
    executor.REGISTRY.clear()


def test_retry_failed_instant_and_stale_copy_reload_from_committed_state(tmp_path):
    table = Table.create_or_open(str(tmp_path / "t"),
                                 TableConfig("t", "key", "dt", "ts", "dynamic-rli", "BUCKET"))
    a = 0
    first = _rows([f"k{i}" for i in range(40)], a)
    more = _rows([f"m{i}" for i in range(40)], a)
    with table:
        i1 = table.start_instant()
        got1, s1 = _run(table, _plan(table, i1, None, fresh=True), first, a)
        # a retry of the task in the same instant: the copy is tagged i1, so it reloads
        # from the committed (empty) share and answers the same
        again, s1b = _run(table, _plan(table, i1, None, fresh=True), first, a)
        assert again == got1 and s1b["parts"]["p"]["rli"] == s1["parts"]["p"]["rli"]
        assert s1b["bootstraps"] == 1 and s1b["parts"]["p"]["tag"] == i1
        _commit(table, i1, s1b)
        # the committed tag is the token: warm, nothing loaded
        i2 = table.start_instant()
        got2, s2 = _run(table, _plan(table, i2, i1, fresh=False), more, a)
        assert (s2["hits"], s2["bootstraps"]) == (1, 0)
        assert s2["parts"]["p"]["entries"] == more.num_rows
        # i2 fails: its RLI file goes with the rollback, the copy holds its mappings
        table.rollback_pending()
        assert not table.fs.get_file_info(table.abs_path(s2["parts"]["p"]["rli"]["path"])).size
        i3 = table.start_instant()
        got3, s3 = _run(table, _plan(table, i3, i1, fresh=False), more, a)
        assert (s3["hits"], s3["bootstraps"]) == (0, 1)
        assert s3["parts"]["p"]["keys_loaded"] == first.num_rows
        assert got3 == got2 and s3["parts"]["p"]["entries"] == more.num_rows
        _commit(table, i3, s3)
        # a copy another worker left behind (an older tag) is never trusted
        executor.REGISTRY[(table.uri, "p", a)].tag = i1
        i4 = table.start_instant()
        _, s4 = _run(table, _plan(table, i4, i3, fresh=False), first, a)
        assert (s4["hits"], s4["bootstraps"], s4["parts"]["p"]["new"]) == (0, 1, 0)
        assert s4["parts"]["p"]["keys_loaded"] == first.num_rows + more.num_rows
    # the task read only its own share's files
    assert all(rli.share_of(f) == a for f in _plan(table, "0", None, True)
               .partitions["p"].files)
