"""The Arrow copy-on-write merge against an independent pandas oracle (no Spark).

Hudi's semantics: one record per key in the incoming batch (larger ordering wins, later
arrival on ties), then against the base file the larger ordering wins and a tie goes to
the incoming record; old records keep their commit metadata, every record gets the new
file name, the file is sorted by record key and its footer holds the min/max key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from indexbench.writer import WRITE_STATS_ARROW, MergeSpec, merge_file_group, precombine
from tableformat import basefile as bf
from tableformat.table import Table, TableConfig

SCHEMA = pa.schema([("key", pa.string()), ("dt", pa.string()), ("ts", pa.int64()),
                    ("payload", pa.string())])
PART = "2024-01-01"


def _table(tmp_path) -> Table:
    cfg = TableConfig(name="t", record_key_field="key", partition_field="dt",
                      ordering_field="ts", index_name="simple-bucket", index_type="BUCKET",
                      index_params={})
    return Table.create_or_open(str(tmp_path / "t"), cfg)


def _frame(keys, ts, tag) -> pd.DataFrame:
    return pd.DataFrame({"key": keys, "dt": PART, "ts": np.asarray(ts, np.int64),
                         "payload": [f"{tag}{i}" for i in range(len(keys))]})


def _footer(keys: pa.Array) -> tuple[dict[str, str], int]:
    return {"test_rows": str(len(keys))}, 7


def _oracle(old: pd.DataFrame | None, incoming: pd.DataFrame) -> pd.DataFrame:
    """Expected data rows, written with plain Python loops (no shared code)."""
    best: dict[str, tuple] = {}
    for i, r in enumerate(incoming.itertuples(index=False)):
        cur = best.get(r.key)
        if cur is None or (r.ts, i) >= (cur[0], cur[1]):
            best[r.key] = (r.ts, i, r.payload)
    rows = {} if old is None else {r.key: (r.ts, r.payload) for r in old.itertuples()}
    for k, (ts, _, payload) in best.items():
        if k not in rows or ts >= rows[k][0]:
            rows[k] = (ts, payload)
    return pd.DataFrame([{"key": k, "dt": PART, "ts": v[0], "payload": v[1]}
                         for k, v in sorted(rows.items())])


@pytest.mark.parametrize("as_arrow", [False, True])
def test_merge_matches_oracle(tmp_path, as_arrow):
    t = _table(tmp_path)
    rng = np.random.default_rng(7)
    keys = [f"k{i:05d}" for i in rng.permutation(3000)]
    first = _frame(keys, rng.integers(100, 200, 3000), "a")
    spec1 = MergeSpec(t.uri, "20240101000000001", "key", "dt", "ts", SCHEMA)
    s1 = merge_file_group(spec1, PART, "fg-0", first, None, "0-1-0", _footer)
    assert (s1["numWrites"], s1["numInserts"], s1["numUpdateWrites"]) == (3000, 3000, 0)

    # updates older, equal and newer than the stored ts, duplicates within the batch, inserts
    upd_keys = list(rng.choice(keys, 800, replace=False))
    stored = dict(zip(first["key"], first["ts"], strict=True))
    upd_ts = [stored[k] + d for k, d in zip(upd_keys, rng.integers(-1, 2, 800), strict=True)]
    dups = _frame(upd_keys[:100], [stored[k] + 5 for k in upd_keys[:100]], "d")
    new = _frame([f"n{i:04d}" for i in range(300)], rng.integers(0, 50, 300), "n")
    incoming = pd.concat([_frame(upd_keys, upd_ts, "u"), dups, new,
                          _frame(["n0000"], [49], "late")], ignore_index=True)
    spec2 = MergeSpec(t.uri, "20240101000000002", "key", "dt", "ts", SCHEMA)
    arg = pa.Table.from_pandas(incoming, schema=SCHEMA, preserve_index=False) \
        if as_arrow else incoming
    s2 = merge_file_group(spec2, PART, "fg-0", arg, s1["path"], "3-2-0", _footer)

    got = pq.read_table(t.abs_path(s2["path"])).to_pandas()
    want = _oracle(first, incoming)
    pd.testing.assert_frame_equal(got[["key", "dt", "ts", "payload"]].reset_index(drop=True),
                                  want, check_dtype=False)
    assert got[bf.RECORD_KEY].tolist() == sorted(got[bf.RECORD_KEY])
    assert (got[bf.FILE_NAME] == s2["path"].split("/")[-1]).all()
    assert (got[bf.PARTITION_PATH] == PART).all()
    # a record the batch did not replace keeps the commit metadata of its first write
    untouched = got[~got["key"].isin(incoming["key"])]
    assert (untouched[bf.COMMIT_TIME] == spec1.instant).all()
    replaced = got[got["payload"].str[0].isin(["u", "d", "n", "l"])]
    assert (replaced[bf.COMMIT_TIME] == spec2.instant).all()
    assert replaced[bf.COMMIT_SEQNO].str.startswith(f"{spec2.instant}_3_").all()
    assert replaced[bf.COMMIT_SEQNO].is_unique
    # the write stat: updates are incoming keys already in the file (winning or not)
    assert s2["numInserts"] == 300 and s2["numUpdateWrites"] == 800
    assert s2["numWrites"] == len(want) == 3300
    assert s2["mergeFilesRead"] == 1 and s2["mergeBytesRead"] > 0
    assert s2["indexBytes"] == 7 and s2["prevCommit"] == spec1.instant
    meta = pq.read_metadata(t.abs_path(s2["path"])).metadata
    assert meta[bf.MIN_KEY_FOOTER.encode()].decode() == got["key"].iat[0]
    assert meta[bf.MAX_KEY_FOOTER.encode()].decode() == got["key"].iat[-1]
    assert meta[b"test_rows"] == b"3300"
    log_only = {"logVersion", "logOffset", "baseFile", "logFiles", "totalLogBlocks",
                "totalLogRecords"}  # a log file's stat (merge-on-read)
    assert set(s2) == set(WRITE_STATS_ARROW.names) - log_only


def test_precombine_keeps_latest_then_last_arrival():
    df = _frame(["a", "b", "a", "a", "b"], [5, 1, 7, 7, 0], "p")
    out = precombine(df, "key", "ts").to_pandas()
    assert out["key"].tolist() == ["a", "b"]
    assert out["payload"].tolist() == ["p3", "p1"]  # tie at ts 7: the later arrival


def test_nan_ordering_is_the_largest_value(tmp_path):
    """A double ordering field: NaN orders above every number (Java's Double.compareTo),
    in the pre-combine and against the stored record; NaN vs NaN is a tie (incoming)."""
    t = _table(tmp_path)
    schema = pa.schema([("key", pa.string()), ("dt", pa.string()), ("ts", pa.float64()),
                        ("payload", pa.string())])
    nan = float("nan")
    first = pa.table({"key": ["a", "b", "c", "c"], "dt": [PART] * 4,  # Arrow keeps NaN
                      "ts": [5.0, nan, 1.0, nan], "payload": ["a0", "b0", "c0", "c1"]},
                     schema=schema)
    spec1 = MergeSpec(t.uri, "20240101000000001", "key", "dt", "ts", schema)
    s1 = merge_file_group(spec1, PART, "fg-0", first, None, "0-1-0", _footer)
    incoming = pa.table({"key": ["a", "b"], "dt": [PART] * 2, "ts": [nan, nan],
                         "payload": ["a1", "b1"]}, schema=schema)
    spec2 = MergeSpec(t.uri, "20240101000000002", "key", "dt", "ts", schema)
    s2 = merge_file_group(spec2, PART, "fg-0", incoming, s1["path"], "0-2-0", _footer)
    got = pq.read_table(t.abs_path(s2["path"])).to_pandas()
    assert got["payload"].tolist() == ["a1", "b1", "c1"]
    from peers.delta import precombine as delta_precombine

    assert delta_precombine(first).column("payload").to_pylist() == ["a0", "b0", "c1"]
