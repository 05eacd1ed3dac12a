"""Bloom and simple-bucket tagging counters, checked against an exact reference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from indexbench.driver import open_table, upsert
from indexes.bloom.core import FileRanges, candidate_pairs
from indexes.bloom_filter import FOOTER_KEY, TYPE_CODE_KEY, HoodieBloomFilter
from tableformat import basefile as bf
from tableformat.table import Table

SMALL_BLOOM = {"num_entries": 20, "fpp": 0.3, "filter_type": "SIMPLE", "scale": 1,
               "insert_split_size": 50, "auto_split": False, "small_file_limit": 0}


def batch(keys, ts=1) -> pd.DataFrame:
    return pd.DataFrame({"key": list(keys), "dt": "p", "ts": ts,
                         "payload": [f"v{k}" for k in keys]})


def reference_counts(uri: str, keys: list[str], prune: bool) -> dict[str, int]:
    """Count what Hudi's lookup must do, key by key and file by file (plain loops)."""
    table = Table(uri)
    out = dict(bloom_checks=0, bloom_positives=0, true_positives=0, false_positives=0,
               files_read=0, candidate_files=0)
    for s in table.snapshot().slices.values():
        path = table.abs_path(s.path)
        footer = bf.read_footer(table.fs, path)
        bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
        file_keys = set(bf.read_record_keys(table.fs, path).to_pylist())
        lo, hi = footer[bf.MIN_KEY_FOOTER], footer[bf.MAX_KEY_FOOTER]
        cands = [k for k in keys if not prune or lo <= k <= hi]
        if not cands:
            continue
        out["candidate_files"] += 1
        positives = [k for k in cands if bloom.might_contain(k)]
        out["bloom_checks"] += len(cands)
        out["bloom_positives"] += len(positives)
        out["true_positives"] += sum(k in file_keys for k in positives)
        out["false_positives"] += sum(k not in file_keys for k in positives)
        out["files_read"] += bool(positives)
    return out


@pytest.fixture(scope="module")
def loaded_tables(spark, tmp_path_factory):
    """Two bloom tables (pruning on/off) of 200 ordered keys in 4 files of 50."""
    tables = {}
    for prune in (True, False):
        uri = str(tmp_path_factory.mktemp("bloom") / f"prune-{prune}")
        table, index = open_table(uri, "bloom", {**SMALL_BLOOM, "prune_by_ranges": prune})
        with table:
            upsert(spark, table, index, spark.createDataFrame(batch(
                [f"k{i:04d}" for i in range(0, 400, 2)])))
        tables[prune] = (table, index)
    return tables


@pytest.mark.parametrize("prune", [True, False])
def test_counters_equal_exact_reference(spark, loaded_tables, prune):
    table, index = loaded_tables[prune]
    assert len(table.snapshot().slices) == 4
    # 40 existing keys, 60 new keys inside the ranges (odd numbers), 20 beyond every range
    keys = ([f"k{i:04d}" for i in range(0, 400, 10)] + [f"k{i:04d}" for i in range(1, 360, 6)]
            + [f"z{i:03d}" for i in range(20)])
    expected = reference_counts(table.uri, keys, prune)
    assert expected["false_positives"] > 0, "the constructed filter must produce FPs"
    with table:
        m = upsert(spark, table, index, spark.createDataFrame(batch(keys, ts=2))).metrics
    for name in ("bloom_checks", "bloom_positives", "false_positives", "files_read",
                 "candidate_files"):
        assert m[name] == expected[name], name
    assert m["updates"] == expected["true_positives"] == 40
    assert m["inserts"] == 80
    assert m["fp_rate"] == pytest.approx(
        expected["false_positives"] / (expected["bloom_checks"] - expected["true_positives"]))
    assert m["bytes_read"] > 0 and m["footers_read"] > 0


def test_range_pruning_reduces_candidates_for_ordered_keys():
    mins, maxs = ["a0", "b0", "c0", "d0"], ["a9", "b9", "c9", "d9"]
    ranges = FileRanges.build(["f1", "f2", "f3", "f4"], mins, maxs)
    keys = np.array(["a5", "b5", "c5", "c7", "e1"], dtype=object)
    k, f = candidate_pairs(keys, ranges, prune_by_ranges=True)
    pairs = sorted(zip(keys[k], ranges.file_ids[f], strict=True))
    assert pairs == [("a5", "f1"), ("b5", "f2"), ("c5", "f3"), ("c7", "f3")]
    k_all, _ = candidate_pairs(keys, ranges, prune_by_ranges=False)
    assert len(k_all) == 20 > len(k)


def test_candidate_pairs_match_bruteforce_on_random_ranges():
    rng = np.random.default_rng(3)
    keys = np.array([f"{x:06d}" for x in rng.integers(0, 10**6, 500)], dtype=object)
    lo = rng.integers(0, 10**6, 40)
    hi = lo + rng.integers(0, 10**5, 40)
    ranges = FileRanges.build([f"f{i}" for i in range(40)], [f"{x:06d}" for x in lo],
                              [f"{min(x, 999999):06d}" for x in hi])
    k, f = candidate_pairs(keys, ranges)
    got = sorted(zip(k.tolist(), f.tolist(), strict=True))
    want = sorted((i, j) for i, key in enumerate(keys) for j in range(40)
                  if ranges.mins[j] <= key <= ranges.maxs[j])
    assert got == want


def test_simple_bucket_tags_without_opening_a_base_file(spark, tmp_path):
    """files_read, footers_read and bytes_read are counted by the read path; for
    simple-bucket they stay 0 while bloom, tagging the same batch, reads files."""
    keys = [f"k{i:04d}" for i in range(300)]
    figures = {}
    for name, params in (("simple-bucket", {"num_buckets": 4}), ("bloom", SMALL_BLOOM)):
        table, index = open_table(str(tmp_path / name), name, params)
        with table:
            upsert(spark, table, index, spark.createDataFrame(batch(keys)))
            figures[name] = upsert(spark, table, index,
                                   spark.createDataFrame(batch(keys[::3], ts=2))).metrics
    sb, bl = figures["simple-bucket"], figures["bloom"]
    assert (sb["files_read"], sb["footers_read"], sb["bytes_read"]) == (0, 0, 0)
    assert bl["files_read"] > 0 and bl["footers_read"] > 0 and bl["bytes_read"] > 0
    assert sb["updates"] == bl["updates"] == 100
    assert sb["buckets"] == 4 and sb["bucket_records_max"] >= sb["bucket_records_mean"] == 75


def test_simple_bucket_core_never_opens_files(monkeypatch):
    """The Spark-free core that tags a frame: any open of a base file would raise."""
    from indexes.hashing import bucket_ids
    from indexes.simple_bucket import assign_file_ids

    def boom(*a, **k):
        raise AssertionError("a base file was opened")

    monkeypatch.setattr(bf, "_open", boom)
    pdf = batch([f"k{i}" for i in range(1000)])
    b = bucket_ids([pdf["key"]], 8)
    fids = assign_file_ids(pdf["dt"], b, {("p", 3): "00000003-x-0"}, "20260101000000000")
    assert set(fids[b == 3]) == {"00000003-x-0"}
    assert all(bf.bucket_of_file_id(f) == x for f, x in zip(fids, b, strict=True))


def test_two_file_groups_claiming_one_bucket_is_an_error():
    from indexes.simple_bucket import existing_bucket_files
    from tableformat.errors import InvariantViolation
    from tableformat.table import FileSlice

    s1 = FileSlice("p", bf.bucket_file_id(5, "a"), "p/x.parquet", "1" * 17, 1, 1)
    s2 = FileSlice("p", bf.bucket_file_id(5, "b"), "p/y.parquet", "1" * 17, 1, 1)
    with pytest.raises(InvariantViolation, match="bucket 5"):
        existing_bucket_files([s1, s2])
