"""dynamic-rli's Spark-free cores: the compact cache, the assigners' rules, the eviction
flow step by step, and the RLI store's visibility (committed instants only)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pyarrow as pa
import pytest

from indexes.dynamic_rli import cache, rli
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
    assert m.nbytes / len(m) <= 6.5  # the small layout: 4 + 2 bytes per key, no slack
    keys, vals = m.items()
    assert (np.diff(keys) > 0).all() and len(keys) == len(model)


def test_cache_bootstrap_counts_shared_hashes():
    m, dup = HashBucketMap.from_entries(np.array([5, 3, 5, 9], np.int32),
                                        np.array([1, 2, 1, 4], np.int16))
    assert dup == 1 and len(m) == 3
    np.testing.assert_array_equal(m.lookup(np.array([3, 5, 9, 7], np.int32)), [2, 1, 4, -1])


INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
EXTREMES = np.array([INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX], np.int32)


def _reference(keys: np.ndarray, vals: np.ndarray, q: np.ndarray) -> np.ndarray:
    """What a lookup must return, from sorted (hash, bucket) arrays."""
    pos = np.minimum(np.searchsorted(keys, q), len(keys) - 1)
    return np.where(keys[pos] == q, vals[pos], -1).astype(np.int16)


def _not_in(candidates: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``candidates`` that are not ``keys`` (np.isin / np.unique hash: much slower here)."""
    return candidates[_reference(np.sort(keys), np.zeros(len(keys), np.int16), candidates) < 0]


def _check(m: HashBucketMap, keys: np.ndarray, vals: np.ndarray, absent: np.ndarray) -> None:
    """``m`` holds exactly ``keys -> vals``: every key, shuffled among hashes it does not
    hold (``absent``) and the int32 extremes; ``items()`` sorted by hash; ``len``."""
    order = np.argsort(keys)
    keys, vals = keys[order], vals[order]
    q = np.concatenate([keys, absent, EXTREMES])
    want = np.concatenate([vals, np.full(len(absent), -1, np.int16),
                           _reference(keys, vals, EXTREMES)])
    shuffle = np.random.default_rng(len(keys)).permutation(len(q))
    np.testing.assert_array_equal(m.lookup(q[shuffle]), want[shuffle])
    got_keys, got_vals = m.items()
    np.testing.assert_array_equal(got_keys, keys)
    np.testing.assert_array_equal(got_vals, vals)
    assert len(m) == len(keys)


@pytest.fixture(scope="module")
def many_hashes() -> np.ndarray:
    """Distinct hashes, shuffled: enough for the large (rows) layout, the extremes first."""
    rng = np.random.default_rng(11)
    h = np.sort(rng.integers(INT32_MIN, INT32_MAX + 1, cache.ROWS_MIN + 3_000_000,
                             dtype=np.int64).astype(np.int32))
    h = h[np.r_[True, h[1:] != h[:-1]] & ~np.isin(h, EXTREMES)]  # (np.unique: ~20x slower)
    rng.shuffle(h)
    return np.concatenate([EXTREMES, h])


def test_empty_cache():
    m = HashBucketMap()
    assert len(m) == 0 and m.nbytes == 0
    assert m.lookup(np.empty(0, np.int32)).shape == (0,)
    np.testing.assert_array_equal(m.lookup(EXTREMES), np.full(len(EXTREMES), -1))
    m.insert(np.empty(0, np.int32), np.empty(0, np.int16))
    m.compact()
    keys, vals = m.items()
    assert len(keys) == len(vals) == len(m) == 0
    m, dup = HashBucketMap.from_entries(np.empty(0, np.int32), np.empty(0, np.int16))
    assert len(m) == dup == 0 and (m.lookup(EXTREMES) == -1).all()


@pytest.mark.parametrize("n", [len(EXTREMES), 50_000, cache.ROWS_MIN + 1000])
def test_cache_holds_int32_extremes_in_either_layout(many_hashes, n):
    keys = many_hashes[:n]  # starts with the extremes
    vals = (np.arange(n) % 200).astype(np.int16)
    m, dup = HashBucketMap.from_entries(keys, vals)
    assert dup == 0
    _check(m, keys, vals, many_hashes[-100_000:])
    without = many_hashes[len(EXTREMES):n + len(EXTREMES)]  # the same size, no extremes
    m, _ = HashBucketMap.from_entries(without, vals)
    assert (m.lookup(EXTREMES) == -1).all()


def test_large_cache_is_compact_and_keeps_the_first_bucket_of_a_shared_hash(many_hashes):
    keys = many_hashes[:cache.ROWS_MIN + 200_000]
    vals = (keys.view(np.uint32) % 200).astype(np.int16)
    again = keys[::50]  # repeated later with another bucket: the first entry wins
    h = np.concatenate([keys, again])
    b = np.concatenate([vals, (vals[::50] + 1).astype(np.int16)])
    m, dup = HashBucketMap.from_entries(h, b)
    assert dup == len(again)
    assert m.nbytes / len(m) < 5  # 2-byte remainders, 1-byte buckets, ~1/3 slack
    _check(m, keys, vals, many_hashes[-300_000:])
    # absent hashes sharing rows with present ones: only the exact hash is found
    near = np.concatenate([keys[:1000] + 1, keys[:1000] - 1])
    near = _not_in(near, keys)
    assert (m.lookup(near) == -1).all()


def test_large_cache_grows_by_inserts_and_keeps_every_bucket(many_hashes):
    """Batches of new keys: the small layout turns into rows, rows widen as keys spill to
    the stash, the widest rows are laid out again; nothing moves between buckets."""
    rng = np.random.default_rng(5)
    start = cache.ROWS_MIN - 100_000
    keys, vals = many_hashes[:start], (np.arange(start) % 7).astype(np.int16)
    m, _ = HashBucketMap.from_entries(keys, vals)
    assert m.nbytes / len(m) == 6  # small layout
    widths = set()
    for i, n in enumerate([150_000, 400_000, 30_000] + [400_000] * 5):
        h = many_hashes[len(keys):len(keys) + n].copy()
        b = rng.integers(0, 300 if i > 5 else 250, n).astype(np.int16)  # int16 buckets later
        if i % 2:
            h.sort()  # engines pass sorted hashes; anything else is sorted by insert
        m.insert(h, b)
        keys, vals = np.concatenate([keys, h]), np.concatenate([vals, b])
        widths.add(m._rows.shape[1])
        assert m.nbytes / len(m) < (6 if m._rvals.dtype == np.uint8 else 7.6)
        sample = rng.integers(0, len(keys), 200_000)
        np.testing.assert_array_equal(m.lookup(keys[sample]), vals[sample])
    assert widths >= {cache.WIDTH, cache.MAX_WIDTH}
    assert m._rows.shape[0] - 1 > cache.MIN_ROWS * 1.25  # laid out again for its size
    _check(m, keys, vals, many_hashes[-300_000:])
    m.compact()
    _check(m, keys, vals, many_hashes[-300_000:])


def test_overflowing_rows_spill_to_the_stash_without_relayout_loops(many_hashes, monkeypatch):
    """Hashes packed into a few rows (a clustered hash function) fill them and the rest
    spill to the stash: still exact, and a new layout is only tried after real growth."""
    keys = many_hashes[:cache.ROWS_MIN + 10_000]
    vals = (np.arange(len(keys)) % 100).astype(np.int16)
    m, _ = HashBucketMap.from_entries(keys, vals)
    layouts = []
    monkeypatch.setattr(HashBucketMap, "compact",
                        lambda self, f=HashBucketMap.compact: layouts.append(1) or f(self))
    dense = np.arange(1_000_000, 1_400_000, 3, dtype=np.int32)  # ~12 rows' hash ranges
    dense = _not_in(dense, keys)
    for part in np.array_split(dense, 6):
        b = np.full(len(part), 7, np.int16)
        m.insert(part, b)
        keys, vals = np.concatenate([keys, part]), np.concatenate([vals, b])
    stash = len(m._keys) + len(m._dkeys)
    assert m._rows.shape[1] == cache.MAX_WIDTH and stash > len(dense) // 2
    assert layouts == []  # the map barely grew: laying it out again would spill the same
    between = np.arange(1_000_001, 1_400_000, 3, dtype=np.int32)
    _check(m, keys, vals, _not_in(between, keys))


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


@pytest.mark.parametrize("P", [1, 3, 4, 7, 16, 300])
def test_assignment_depends_on_the_hashes_not_their_order(P):
    """New keys fill buckets in hash order, whatever order the batch comes in; the owner
    of a hash is ``(hash & 0x7fffffff) % P`` (powers of two take the low bits)."""
    rng = np.random.default_rng(P)
    h = np.unique(rng.integers(INT32_MIN, INT32_MAX + 1, 60_000, dtype=np.int64)
                  .astype(np.int32))
    np.testing.assert_array_equal(assigner_of(h, P),
                                  (h.view(np.uint32) & 0x7FFFFFFF) % P)
    a, b = PartitionIndex(P), PartitionIndex(P)
    cap = Capacity(max_records=997)
    for part in np.array_split(h, 3):  # existing buckets, then new ones
        order = rng.permutation(len(part))
        got_a, new_a, created_a = a.assign(part, cap)
        got_b, new_b, created_b = b.assign(part[order], cap)
        np.testing.assert_array_equal(got_a[order], got_b)
        assert new_a.all() and new_b.all() and created_a == created_b
    np.testing.assert_array_equal(a.keys_per_bucket, b.keys_per_bucket)
    assert (a.keys_per_bucket <= 997).all()


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


def test_rli_compaction_replaces_files_with_one_per_share(tmp_path):
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
        made = rli.compact_partition(table, "p", files, c, 2)
        table.complete_instant(c, {"partitionToWriteStats": {}, "extraMetadata": {
            rli.FILES_KEY: json.dumps([{"path": r, "bytes": n} for r, n, _ in made]),
            rli.REPLACED_KEY: json.dumps(files)}}, action="replacecommit")
    snap = table.snapshot()
    assert sum(rows for *_, rows in made) == 3
    visible = rli.visible_files(table, "p", snap.completed, rli.replaced_files(snap.extra))
    assert [f.path for f in visible] == sorted(r for r, *_ in made)
    # each file holds one share's keys, and a share's bootstrap reads only its own
    paths = [f.path for f in visible]
    for a in (0, 1):
        h, _ = rli.share_entries(table, paths, a, 2)
        assert (assigner_of(h, 2) == a).all()
        assert all(rli.share_of(f) in (a, 1 - a) for f in paths)
    assert sum(len(rli.share_entries(table, paths, a, 2)[0]) for a in (0, 1)) == 3
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
