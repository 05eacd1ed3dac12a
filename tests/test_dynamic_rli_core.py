"""dynamic-rli's Spark-free cores: the compact cache, the assigners' rules, the eviction
flow step by step, and the RLI store's visibility (committed instants only)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pyarrow as pa
import pytest

from indexes.dynamic_rli import rli
from indexes.dynamic_rli.assigner import BYTES, Capacity, PartitionIndex, assigner_of
from indexes.dynamic_rli.cache import HashBucketMap
from indexes.dynamic_rli.eviction import PartitionCaches
from tableformat.errors import IndexBenchError
from tableformat.table import Table, TableConfig


def test_cache_matches_a_dict_model_and_stays_compact():
    rng = np.random.default_rng(0)
    m, model = HashBucketMap(), {}
    for _ in range(30):
        h = np.unique(rng.integers(-2**31, 2**31 - 1, 7000, dtype=np.int64).astype(np.int32))
        h = h[m.lookup(h) < 0]
        b = rng.integers(0, 3000, len(h)).astype(np.int16)
        m.insert(h, b)
        model.update(zip(h.tolist(), b.tolist(), strict=True))
    q = np.concatenate([np.fromiter(model, np.int32), rng.integers(-2**31, 2**31 - 1, 5000,
                                                                    dtype=np.int64)
                        .astype(np.int32)])
    want = np.array([model.get(int(x), -1) for x in q], np.int16)
    np.testing.assert_array_equal(m.lookup(q), want)
    assert len(m) == len(model)
    assert m.nbytes / len(m) <= 6.5  # 4 + 2 bytes per key, delta at most 1/16 extra
    keys, vals = m.items()
    assert (np.diff(keys) > 0).all() and len(keys) == len(model)


def test_cache_bootstrap_counts_shared_hashes():
    m, dup = HashBucketMap.from_entries(np.array([5, 3, 5, 9], np.int32),
                                        np.array([1, 2, 1, 4], np.int16))
    assert dup == 1 and len(m) == 3
    np.testing.assert_array_equal(m.lookup(np.array([3, 5, 9, 7], np.int32)), [2, 1, 4, -1])


def test_assigner_id_spaces_are_disjoint():
    P = 3
    rng = np.random.default_rng(1)
    idx = PartitionIndex(P)
    h = np.unique(rng.integers(-2**31, 2**31 - 1, 5000, dtype=np.int64).astype(np.int32))
    buckets, new, created = idx.assign(h, Capacity(max_records=100))
    assert new.all()
    owner = assigner_of(h, P)
    np.testing.assert_array_equal(buckets % P, owner)  # assigner a only uses a, a+P, ...
    assert set(created) == set(np.unique(buckets).tolist())
    assert sorted(created)[:P] == list(range(P))  # initial bucket count = P


def test_existing_keys_never_move_across_many_batches():
    rng = np.random.default_rng(2)
    idx, model = PartitionIndex(4), {}
    for _ in range(40):
        h = np.unique(rng.integers(-50_000, 50_000, 800).astype(np.int32))
        buckets, new, _ = idx.assign(h, Capacity(max_records=37))
        for x, b, n in zip(h.tolist(), buckets.tolist(), new.tolist(), strict=True):
            assert n == (x not in model)
            assert model.setdefault(x, b) == b
    assert len(idx.map) == len(model)


def test_fill_existing_buckets_before_creating():
    idx = PartitionIndex(1)
    cap = Capacity(max_records=10)
    first, _, created = idx.assign(np.arange(25, dtype=np.int32), cap)
    assert created == [0, 1, 2] and np.bincount(first).tolist() == [10, 10, 5]
    # bucket 2 has room for 5: the next 5 new keys go there, none creates a bucket
    second, _, created = idx.assign(np.arange(100, 105, dtype=np.int32), cap)
    assert created == [] and set(second.tolist()) == {2}
    # all full now: exactly one more bucket for one more key
    third, _, created = idx.assign(np.array([200], np.int32), cap)
    assert created == [3] and third.tolist() == [3]


def test_new_bucket_exactly_when_all_of_the_assigners_buckets_are_full():
    P, cap = 2, Capacity(max_records=4)
    idx = PartitionIndex(P)
    rng = np.random.default_rng(3)
    for _ in range(25):
        h = np.unique(rng.integers(-10**6, 10**6, 9).astype(np.int32))
        before = idx.keys_per_bucket.copy()
        _, new, created = idx.assign(h, cap)
        for a in range(P):
            own = np.flatnonzero(before > 0)
            room = np.maximum(cap.max_records - before[own[own % P == a]], 0).sum()
            k = int((assigner_of(h[new], P) == a).sum())
            want = max(0, -(-(k - room) // cap.max_records))  # ceil: only the overflow
            assert len([b for b in created if b % P == a]) == want
        counts = idx.keys_per_bucket
        for a in range(P):  # at most one non-full bucket per assigner
            own = np.flatnonzero(counts > 0)
            own = own[own % P == a]
            assert (counts[own] < cap.max_records).sum() <= 1
            assert counts[own].max(initial=0) <= cap.max_records


def test_bytes_capacity_reads_committed_file_sizes():
    idx = PartitionIndex.bootstrap(1, np.array([1, 2, 3], np.int32), np.array([0, 0, 1], np.int16))
    cap = Capacity(mode=BYTES, max_bytes=1000, record_bytes=100)
    # bucket 0's latest base file is full (1000 B); bucket 1 has room for 3 records
    buckets, _, created = idx.assign(np.arange(10, 15, dtype=np.int32), cap,
                                     file_bytes={0: 1000, 1: 700}, record_bytes=100)
    assert buckets.tolist() == [1, 1, 1, 2, 2] and created == [2]


def test_bucket_ids_are_bounded_by_int16():
    idx = PartitionIndex(1)
    with pytest.raises(IndexBenchError, match="no free bucket id"):
        idx.assign(np.arange(40_000, dtype=np.int32), Capacity(max_records=1))


def test_eviction_flow_step_by_step():
    caches = PartitionCaches()
    for p in "ABC":
        caches[p] = PartitionIndex(2)
    caches["A"].assign(np.array([1], np.int32), Capacity())  # new key: updated
    caches["B"].assign(np.array([2], np.int32), Capacity())
    # checkpoint 1 while nothing committed: updated partitions record checkpoint 1 and
    # stay; C (never updated) goes
    assert caches.snapshot("00000000000000001", None) == ["C"]
    assert caches["A"].last_updated_checkpoint == "00000000000000001"
    assert not caches["A"].updated and not caches["B"].updated
    # checkpoint 2 before checkpoint 1 completed: A, B not updated but their mappings
    # are not in a committed RLI yet (1 > latest successful 0): keep
    caches["B"].assign(np.array([3], np.int32), Capacity())
    assert caches.snapshot("00000000000000002", "00000000000000000") == []
    assert caches["B"].last_updated_checkpoint == "00000000000000002"
    # checkpoint 3 after 1 completed: A (last 1 <= 1) goes, B (last 2 > 1) stays
    assert caches.snapshot("00000000000000003", "00000000000000001") == ["A"]
    # a lookup of existing keys is not an update: B goes once 2 completed
    caches["B"].assign(np.array([3], np.int32), Capacity())
    assert caches.snapshot("00000000000000004", "00000000000000003") == ["B"]
    assert len(caches) == 0


def test_keep_accessed_option_and_failed_checkpoint():
    caches = PartitionCaches(keep_accessed=True)
    caches["A"] = PartitionIndex(1)
    caches["A"].assign(np.array([1], np.int32), Capacity())
    caches.snapshot("00000000000000001", None)
    caches["A"].assign(np.array([1], np.int32), Capacity())  # only a lookup
    assert caches.snapshot("00000000000000002", "00000000000000001") == []
    caches["A"].assign(np.array([9], np.int32), Capacity())  # uncommitted mapping
    assert caches.invalidate_uncommitted("00000000000000002") == ["A"]


def _table(tmp_path) -> Table:
    cfg = TableConfig("t", "key", "dt", "ts", "dynamic-rli", "BUCKET")
    return Table.create_or_open(str(tmp_path / "t"), cfg)


def _entries(keys, instant, bucket=0):
    return rli.entries_table(keys, np.arange(len(keys)), [bucket] * len(keys),
                             ["f"] * len(keys), instant)


def test_rli_readers_see_only_committed_instants_and_rollback_removes_the_rest(tmp_path):
    table = _table(tmp_path)
    with table:
        i1 = table.start_instant()
        rli.write_file(table, "p", i1, _entries(["a", "b"], i1))
        table.complete_instant(i1, {"partitionToWriteStats": {}})
        i2 = table.start_instant()  # never completes (a crash)
        rli.write_file(table, "p", i2, _entries(["c"], i2))
    got = rli.read_record_index_locations(table, "p", table.snapshot().completed)
    assert got.column("record_key").to_pylist() == ["a", "b"]
    with table:  # the next writer rolls i2 back, RLI file included
        pass
    names = [f.path for f in rli.visible_files(table, "p", [i1, i2])]
    assert names == [f"{rli.RLI_DIR}/p/rli-0_{i1}.parquet"]


def test_rli_compaction_replaces_files_with_one(tmp_path):
    table = _table(tmp_path)
    with table:
        for keys in (["a"], ["b", "c"]):
            i = table.start_instant()
            rel, size = rli.write_file(table, "p", i, _entries(keys, i))
            table.complete_instant(i, {"partitionToWriteStats": {}, "extraMetadata": {
                rli.FILES_KEY: json.dumps([{"path": rel, "bytes": size}])}})
        snap = table.snapshot()
        files = [f.path for f in rli.visible_files(table, "p", snap.completed)]
        c = table.start_instant("replacecommit")
        rel, size, rows = rli.compact_partition(table, "p", files, c)
        table.complete_instant(c, {"partitionToWriteStats": {}, "extraMetadata": {
            rli.FILES_KEY: json.dumps([{"path": rel, "bytes": size}]),
            rli.REPLACED_KEY: json.dumps(files)}}, action="replacecommit")
    snap = table.snapshot()
    assert rows == 3
    visible = rli.visible_files(table, "p", snap.completed, rli.replaced_files(snap.extra))
    assert [f.path for f in visible] == [rel]
    got = rli.read_record_index_locations(table, "p", snap.completed,
                                          rli.replaced_files(snap.extra))
    assert sorted(got.column("record_key").to_pylist()) == ["a", "b", "c"]
    assert got.schema == rli.SCHEMA and isinstance(got, pa.Table)


def test_partition_index_copies_route_alike():
    rng = np.random.default_rng(4)
    h = np.unique(rng.integers(-10**6, 10**6, 500).astype(np.int32))
    a = PartitionIndex(3)
    a.assign(h, Capacity(max_records=20))
    hashes, buckets = a.map.items()
    b = PartitionIndex.bootstrap(3, hashes, buckets)  # a restart from the same entries
    np.testing.assert_array_equal(b.keys_per_bucket, a.keys_per_bucket)
    more = np.unique(rng.integers(-10**6, 10**6, 300).astype(np.int32))
    np.testing.assert_array_equal(copy.deepcopy(a).assign(more, Capacity(max_records=20))[0],
                                  b.assign(more, Capacity(max_records=20))[0])
