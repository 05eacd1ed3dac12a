"""multi-fg-bucket's Spark-free core: file group ids, the insert plan, the lookup bounded
to a bucket (candidates, range pruning, probes and reads), the layout invariants and the
simulator's key order on tied order codes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

import indexes
from indexes.bloom_filter.key_check import check_filter
from indexes.multi_fg_bucket.core import candidate_pairs, expand
from indexes.multi_fg_bucket.layout import (
    MAX_FILE_GROUPS,
    file_group_id,
    fill,
    groups_of_files,
    layout_problems,
    new_group_id,
    ordinal_of,
    partition_groups,
)
from indexes.multi_fg_bucket.plan import plan_bucket, plan_counters, plan_inserts
from indexes.multi_fg_bucket.sim import KeyText, Route, pack
from tableformat.basefile import BaseFileName, bucket_of_file_id
from tableformat.errors import IndexBenchError
from tableformat.table import FileSlice, LogFile
from tableformat.table_type import COPY_ON_WRITE, MERGE_ON_READ


def test_file_group_ids_have_hudis_shape_with_the_ordinal_second():
    fid = new_group_id("20260101000000000", "2026-01-01", 2, 1)
    assert len(fid) == len("00000002-0000-4035-a392-22a91eafd130-0")
    assert fid.startswith("00000002-0000-0001-") and fid.endswith("-0")
    assert (bucket_of_file_id(fid), ordinal_of(fid)) == (2, 1)
    assert new_group_id("20260101000000000", "2026-01-01", 2, 1) == fid  # pure
    assert new_group_id("20260101000000001", "2026-01-01", 2, 1) != fid
    # Hudi's FSUtils.getFileId: the text before the first "_" of a base file name
    name = BaseFileName(fid, "0-0-0", "20260101000000000").name
    assert name.split("_")[0] == fid and BaseFileName.parse(name).file_id == fid
    assert ordinal_of(file_group_id(7, 12_345_678, "s")) == 12_345_678
    with pytest.raises(IndexBenchError, match="at most 100,000,000 per bucket"):
        file_group_id(0, MAX_FILE_GROUPS, "s")
    with pytest.raises(ValueError, match="8-digit file group ordinal"):
        ordinal_of("00000002-4a35-a392-22a91eafd130-0")


def test_inserts_fill_the_newest_group_then_open_new_ones():
    name = "new-{}".format
    plan = plan_bucket(25, ("g3", 3, 6, True), 10, name)
    assert plan.file_ids == ["g3", "new-4", "new-5", "new-6"]
    assert plan.counts == [4, 10, 10, 1]
    assert plan.opened == 3 and plan.topped_up == 4
    np.testing.assert_array_equal(plan.target_of_ranks(np.array([0, 3, 4, 13, 14, 24])),
                                  [0, 0, 1, 1, 2, 3])
    # a full newest group, or one with logs (merge-on-read): new groups only
    assert plan_bucket(3, ("g3", 3, 10, True), 10, name).file_ids == ["new-4"]
    assert plan_bucket(3, ("g3", 3, 2, False), 10, name).file_ids == ["new-4"]
    assert plan_bucket(3, None, 10, name).file_ids == ["new-0"]  # a bucket's first group


def test_plan_inserts_names_groups_by_instant_partition_bucket_ordinal():
    slices = [FileSlice("p", new_group_id("i0", "p", 1, 0), "p/a.parquet", "i0", 8, 800)]
    groups = partition_groups(slices, COPY_ON_WRITE)
    plans = plan_inserts({("p", 1): 5, ("p", 0): 2, ("q", 1): 0}, groups, 10, "i1")
    assert plans[("p", 1)].file_ids == [slices[0].file_id, new_group_id("i1", "p", 1, 1)]
    assert plans[("p", 1)].counts == [2, 3]
    assert plans[("p", 0)].file_ids == [new_group_id("i1", "p", 0, 0)]
    assert ("q", 1) not in plans
    assert plan_counters(plans) == {"file_groups_opened": 2, "small_files_topped_up": 1,
                                    "small_file_inserts": 2}


def test_on_merge_on_read_a_group_with_logs_takes_no_inserts():
    fid = new_group_id("i0", "p", 0, 0)
    log = LogFile(f"p/.{fid}_i0.log.1_0-0-0", "i1", 3, 0, 100)
    s = FileSlice("p", fid, "p/a.parquet", "i0", 8, 800).with_log(log)
    assert partition_groups([s], MERGE_ON_READ)["p"].open.tolist() == [False]
    g = partition_groups([s], COPY_ON_WRITE)["p"]
    assert g.open.tolist() == [True] and g.records.tolist() == [8]  # base records only


def _groups(*ids_and_paths):
    return groups_of_files([(new_group_id("i", "p", b, o), f"p/{b}-{o}") for b, o in
                            ids_and_paths])


def test_a_key_is_compared_with_its_own_buckets_groups_only():
    g = _groups((0, 0), (2, 0), (2, 1), (2, 2), (5, 0))
    assert g.buckets.tolist() == [0, 2, 2, 2, 5] and g.newest(2) == 3 and g.newest(1) is None
    keys = pa.array(["a", "b", "c", "d"])
    k, j = candidate_pairs(np.array([2, 1, 0, 2]), g, keys)
    assert list(zip(k.tolist(), j.tolist(), strict=True)) == [
        (0, 1), (0, 2), (0, 3), (2, 0), (3, 1), (3, 2), (3, 3)]
    # footer ranges prune; a group without one (an emptied base file) is compared
    mins = pa.array(["a", "c", None, "a", "a"])
    maxs = pa.array(["z", "z", None, "b", "z"])
    k, j = candidate_pairs(np.array([2, 2]), g, pa.array(["b", "d"]), (mins, maxs))
    assert sorted(zip(k.tolist(), j.tolist(), strict=True)) == [(0, 2), (0, 3), (1, 1), (1, 2)]
    # the same pairs as comparing every key with every group of its bucket
    rng = np.random.default_rng(4)
    keys = pa.array([f"{x:05d}" for x in rng.integers(0, 10**5, 300)])
    buckets = rng.choice([0, 2, 5, 7], 300)
    lo = pa.array([f"{x:05d}" for x in rng.integers(0, 50_000, 5)])
    hi = pa.array([f"{x:05d}" for x in rng.integers(50_000, 10**5, 5)])
    k, j = candidate_pairs(buckets, g, keys, (lo, hi))
    k0, j0 = candidate_pairs(buckets, g, keys)
    ks = keys.to_pylist()
    want = sorted((a, c) for a, c in zip(k0.tolist(), j0.tolist(), strict=True)
                  if lo[c].as_py() <= ks[a] <= hi[c].as_py())
    assert sorted(zip(k.tolist(), j.tolist(), strict=True)) == want and len(want) > 50
    rows, items = expand(np.array([5, 0, 2]), np.array([2, 0, 1]))
    assert rows.tolist() == [0, 0, 2] and items.tolist() == [5, 6, 2]


def test_check_group_reads_the_keys_only_on_a_positive_probe():
    index = indexes.get("multi-fg-bucket", **{"indexbench.scale": "1",
                                              "hoodie.index.bloom.num_entries": "20",
                                              "hoodie.index.bloom.fpp": "0.2"})
    stored = [f"k{i:03d}" for i in range(40)]
    bloom = index.new_filter()
    bloom.add_keys(stored)
    reads = []

    def file_keys():
        reads.append(1)
        return pa.array(stored)

    counts = Counter()
    probes = pa.array(["k005", "k017"] + [f"x{i}" for i in range(200)])
    found = check_filter(bloom, probes, counts, file_keys)
    assert found[:2].all() and not found[2:].any() and reads == [1]
    assert counts["bloom_checks"] == 202 and counts["candidate_files"] == 1
    assert counts["false_positives"] == counts["bloom_positives"] - 2 > 0  # a tiny filter
    counts = Counter()
    assert not check_filter(index.new_filter(), pa.array(["k005"]), counts, file_keys).any()
    assert reads == [1] and counts["bloom_positives"] == 0  # no positive: nothing read


def test_layout_invariants_name_the_broken_bucket():
    def s(fid, part="p"):
        return FileSlice(part, fid, f"{part}/{fid}_0-0-0_i.parquet", "i", 1, 10)

    good = [s(new_group_id("i", "p", 1, o)) for o in range(3)]
    assert layout_problems(good, {"p": 4}) == []
    gap = [good[0], good[2]]
    assert layout_problems(gap, {"p": 4}) == ["bucket 1 of 'p' has file group ordinals "
                                              "[0, 2], not 0..1"]
    twice = layout_problems(good + [s(new_group_id("j", "p", 1, 2))], {"p": 4})
    assert twice == ["bucket 1 of 'p' has file group ordinals [0, 1, 2, 2], not 0..3"]
    out = layout_problems([s(new_group_id("i", "p", 4, 0))], {"p": 4})
    assert out and "outside 0..3" in out[0]
    assert "8-digit file group ordinal" in layout_problems([s("00000001-4a35-a392-22a91eafd130-0")],
                                                {"p": 4})[0]


def test_fill_counts_records_per_bucket_and_groups_per_bucket():
    sl = [FileSlice(p, new_group_id("i", p, b, o), "x", "i", n, 1)
          for p, b, o, n in (("p", 0, 0, 10), ("p", 0, 1, 30), ("p", 1, 0, 20),
                             ("q", 0, 0, 5))]
    f = fill(sl)
    assert f["buckets"] == 3 and f["bucket_records_max"] == 40
    assert f["file_groups_per_bucket_max"] == 2 and f["file_groups_per_bucket_mean"] == 4 / 3
    assert f["file_group_records_max"] == 30


def test_index_parameters_and_verify_hook():
    index = indexes.get("multi-fg-bucket")
    assert not index.CAN_INDEX_LOG_FILES and index.assigns_inserts
    assert index.sizing().max_file_size == round(125829120 / 1000)
    assert index.describe()["effective_num_entries"] == 60
    for bad in ({"indexbench.scale": "2"}, {"hoodie.index.bloom.fpp": "1"},
                {"hoodie.parquet.max.file.size": "0"}, {"hoodie.bucket.index.num.buckets": 0}):
        with pytest.raises(IndexBenchError):
            indexes.get("multi-fg-bucket", **bad)
    keys = pa.array(["a", "b", "c"])
    footer, nbytes = index.base_file_footer(keys)
    assert nbytes > 0 and index.verify_base_file("f", footer, keys.to_numpy(
        zero_copy_only=False)) == []
    other, _ = index.base_file_footer(pa.array(["a"]))
    assert index.verify_base_file("f", other, np.array(["a", "b", "c"], dtype=object)) == [
        "bloom filter misses 2 of its keys"]
    assert index.verify_base_file("f", {}, np.array(["a"])) == ["no bloom filter in the footer"]


class TiedKeys:
    """Keys whose order codes tie in pairs: the simulator must settle ties on the text."""

    TEXT = ["b2", "b1", "a9", "c0", "a1", "c5"]
    CODES = np.array([2, 2, 1, 3, 1, 3], np.uint64)

    def record_keys(self, ordinals):
        return pa.array([self.TEXT[int(o)] for o in ordinals])

    def order_codes(self, ordinals):
        return self.CODES[np.asarray(ordinals, np.int64)]


def test_simulator_orders_keys_and_finds_runs_exactly_on_tied_codes():
    keys = TiedKeys()
    text = KeyText(keys)
    ords = np.arange(6)
    buckets = np.array([0, 0, 0, 0, 1, 1])
    order = text.order(buckets, keys.order_codes(ords), ords)
    assert [keys.TEXT[i] for i in order] == ["a9", "b1", "b2", "c0", "a1", "c5"]
    # runs of bucket 0 start at "a9" and "b2": "b1" (code tied with "b2") is in run 0
    route = Route(pack(np.array([0, 0, 1]), np.array([1, 2, 1], np.uint64)),
                  np.array([2, 0, 4]), np.array([7, 8, 9]))
    got = route.locate(buckets, keys.order_codes(ords), ords, text)
    assert got.tolist() == [8, 7, 7, 8, 9, 9]
    assert text.less(np.array([2, 2], np.uint64), np.array([1, 0]),
                     np.array([2, 2], np.uint64), np.array([0, 1])).tolist() == [True, False]


def test_the_simulator_persists_the_routed_rows_only_where_the_batch_has_groups():
    """As the Spark adapter: the routed batch is persisted for the lookup only when the
    batch's own partitions hold file groups (a batch of inserts into a new, late
    partition has none there, whatever the other partitions hold); the located rows
    always; the insert count is a job of the tagging's own, the range read another."""
    import workloads
    from indexbench.sim.driver import simulate

    w = workloads.load("uniform").with_overrides(
        initial_records=2000, batches=2, batch_size=300, update_fraction=0.0,
        late_arrival_share=1.0, late_arrival_depth=1, partitions=2)
    df = simulate("multi-fg-bucket", w, write=False)
    up = df[df["operation"] == "upsert"].sort_values("batch").set_index("batch")
    assert (up.loc[1, "tag_rows_persisted"], up.loc[1, "tag_jobs"]) == (300, 1)
    # a batch whose partition has groups (batch 1's, or an older one) looks them up
    looked = up["tag_rows_persisted"] == 2 * up["keys_hashed"]
    assert ((up["tag_rows_persisted"] == up["keys_hashed"]) | looked).all()
    assert (up["tag_jobs"] == np.where(looked, 2, 1)).all()
    later = workloads.load("uniform").with_overrides(initial_records=2000, batches=1,
                                                    batch_size=300)
    up = simulate("multi-fg-bucket", later, write=False)
    row = up[(up["operation"] == "upsert") & (up["batch"] == 1)].iloc[0]
    assert row["tag_rows_persisted"] == 2 * row["keys_hashed"] and row["tag_jobs"] == 2
