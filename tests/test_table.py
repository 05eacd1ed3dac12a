"""Table format: names, properties, timeline, writer lock, rollback (no Spark)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tableformat import basefile as bf
from tableformat.errors import ConcurrentWriterError, IndexBenchError, TableConfigError
from tableformat.table import Table, TableConfig, format_instant, parse_instant


def config(**kw) -> TableConfig:
    base = dict(name="t", record_key_field="key", partition_field="dt", ordering_field="ts",
                index_name="bloom", index_type="BLOOM", index_params={"hoodie.x": "1"})
    base.update(kw)
    return TableConfig(**base)


def test_instant_is_17_digits_and_round_trips():
    ms = 1_790_000_000_123
    s = format_instant(ms)
    assert len(s) == 17 and s.isdigit() and s.endswith("123")
    assert parse_instant(s) == ms


def test_instants_strictly_increase(tmp_path):
    t = Table.create_or_open(str(tmp_path / "t"), config())
    with t:
        seen = [t.start_instant() for _ in range(50)]
    assert seen == sorted(seen) and len(set(seen)) == 50


def test_base_file_name_round_trip():
    name = bf.BaseFileName("00000002-0000-4035-a392-22a91eafd130-0", "3-12-0", "20260101010101001")
    assert name.name == "00000002-0000-4035-a392-22a91eafd130-0_3-12-0_20260101010101001.parquet"
    assert bf.BaseFileName.parse("dt/" + name.name) == name
    with pytest.raises(ValueError):
        bf.BaseFileName.parse("nope.parquet")


@pytest.mark.parametrize("bucket", [0, 7, 149, 99_999_999])
def test_bucket_file_id_round_trip(bucket):
    fid = bf.bucket_file_id(bucket, "seed")
    assert fid == bf.bucket_file_id(bucket, "seed")  # deterministic given a seed
    assert len(fid) == len("00000002-0000-4035-a392-22a91eafd130-0") and fid.endswith("-0")
    assert bf.bucket_of_file_id(fid) == bucket
    with pytest.raises(ValueError):
        bf.bucket_of_file_id("abc" + fid[3:])


def test_properties_hold_config_and_refuse_another_identity(tmp_path):
    uri = str(tmp_path / "t")
    Table.create_or_open(uri, config())
    text = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    for line in ("hoodie.table.recordkey.fields=key", "hoodie.table.partition.fields=dt",
                 "hoodie.table.precombine.field=ts", "hoodie.index.type=BLOOM",
                 "hoodie.table.type=COPY_ON_WRITE", "hoodie.x=1"):
        assert line in text
    assert Table(uri).config == config()
    with pytest.raises(TableConfigError, match="indexbench.index.name"):
        Table.create_or_open(uri, config(index_name="simple-bucket", index_type="BUCKET"))
    with pytest.raises(TableConfigError, match="recordkey"):
        Table.create_or_open(uri, config(record_key_field="id"))


def test_second_writer_is_refused_and_stale_lock_taken_over(tmp_path):
    uri = str(tmp_path / "t")
    t = Table.create_or_open(uri, config())
    with t:
        with pytest.raises(ConcurrentWriterError, match="concurrent writers"):
            Table(uri).acquire_writer_lock()
    # a lock left by a dead process on this host is stale
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    lock = tmp_path / "t" / ".hoodie" / ".writer.lock"
    lock.write_text(json.dumps({"host": os.uname().nodename, "pid": int(dead)}))
    with Table(uri):
        pass
    assert not lock.exists()


def test_timeline_needs_the_lock(tmp_path):
    t = Table.create_or_open(str(tmp_path / "t"), config())
    with pytest.raises(IndexBenchError):
        t.start_instant()


def test_rollback_deletes_files_of_pending_instants(tmp_path):
    uri = str(tmp_path / "t")
    t = Table.create_or_open(uri, config())
    with t:
        instant = t.start_instant()
        (tmp_path / "t" / "p").mkdir()
        stray = tmp_path / "t" / "p" / f"abc-0_0-1-0_{instant}.parquet"
        stray.write_bytes(b"x")
    assert Table(uri).pending_instants() == [instant]
    assert Table(uri).snapshot().slices == {}
    with Table(uri) as t2:
        pass
    assert not stray.exists()
    assert t2.pending_instants() == []
    rollbacks = [p for p in os.listdir(tmp_path / "t" / ".hoodie") if p.endswith(".rollback")]
    assert len(rollbacks) == 1
