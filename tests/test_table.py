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
                 "hoodie.table.type=COPY_ON_WRITE", "indexbench.param.hoodie.x=1"):
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
    lock = tmp_path / "t" / ".hoodie" / ".writer.lock"
    assert not lock.exists()  # released: the file is gone
    # a file left behind (a writer killed with SIGKILL, an older version) holds nothing:
    # the lock is the kernel's flock, not the file, whatever the file says
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    for stale in (json.dumps({"host": os.uname().nodename, "pid": int(dead)}),
                  json.dumps({"host": "elsewhere.invalid", "pid": 1}), ""):
        lock.write_text(stale)
        with Table(uri) as t2:
            assert t2.lock_holder()["pid"] == os.getpid()
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


# ---- Hudi table version 6 format (issue #15) ------------------------------------------
SPARK_SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "key", "type": "string", "nullable": True, "metadata": {}},
    {"name": "dt", "type": "string", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "long", "nullable": False, "metadata": {}},
    {"name": "amount", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
    {"name": "inner", "nullable": True, "metadata": {}, "type": {"type": "struct", "fields": [
        {"name": "x", "type": "integer", "nullable": True, "metadata": {}}]}},
]})


def _stat(partition: str, fid: str, instant: str, rows: int = 3) -> dict:
    """A write stat as the writer tasks return it (the project's fields included)."""
    return {"partitionPath": partition, "fileId": fid,
            "path": f"{partition}/{fid}_0-1-0_{instant}.parquet", "prevCommit": "null",
            "numWrites": rows, "numInserts": rows, "numUpdateWrites": 0, "numDeletes": 0,
            "totalWriteBytes": 100, "indexBytes": 7, "bucketId": None}


def test_instant_files_go_requested_inflight_completed(tmp_path):
    t = Table.create_or_open(str(tmp_path / "t"), config())
    meta = tmp_path / "t" / ".hoodie"
    with t:
        c = t.start_instant()
        r = t.start_instant("replacecommit")
        assert {f"{c}.commit.requested", f"{c}.inflight", f"{r}.replacecommit.requested",
                f"{r}.replacecommit.inflight"} <= set(os.listdir(meta))
        assert (meta / f"{c}.commit.requested").read_bytes() == b""  # as Hudi's upsert
        t.complete_instant(c, {"operationType": "UPSERT"})
        t.complete_instant(r, {"operationType": "CLUSTER"}, "replacecommit")
        assert {f"{c}.commit.requested", f"{c}.inflight", f"{c}.commit"} <= set(os.listdir(meta))
        assert t.completed_instants() == [(c, "commit"), (r, "replacecommit")]
        # a writer that died between the requested and the inflight file
        d = t.start_instant()
        (meta / f"{d}.inflight").unlink()
        assert t.pending_instants() == [d]
    with Table(str(tmp_path / "t")) as t2:
        assert t2.rolled_back[0] == [d]
    assert not [n for n in os.listdir(meta) if n.startswith(d)]


def test_properties_are_hudis_with_checksum_and_java_escapes(tmp_path):
    import zlib

    from tableformat import hoodie_properties as hp

    cfg = config(name="my t:1", index_params={"hoodie.x": "a=b:c#d ü"})
    Table.create_or_open(str(tmp_path / "t"), cfg)
    text = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    for line in ("hoodie.table.version=6", "hoodie.timeline.layout.version=1",
                 "hoodie.table.timeline.timezone=UTC", "hoodie.archivelog.folder=archived",
                 "hoodie.partition.metafile.use.base.format=false",
                 r"indexbench.param.hoodie.x=a\=b\:c\#d \u00FC", r"hoodie.table.name=my t\:1"):
        assert line in text.splitlines()
    assert text.splitlines()[-1] == f"hoodie.table.checksum={zlib.crc32(b'.my t:1')}"
    assert Table(str(tmp_path / "t")).config == cfg  # round trip, Hudi's keys not params
    assert hp.parse(text)["indexbench.param.hoodie.x"] == "a=b:c#d ü"


def test_commit_metadata_is_hudis_and_partitions_get_their_metafile(tmp_path):
    from tableformat import commit_metadata as cm

    t = Table.create_or_open(str(tmp_path / "t"), config(name="my-t"))
    with t:
        i1 = t.start_instant()
        (tmp_path / "t" / "2026" / "01").mkdir(parents=True)
        t.complete_instant(i1, {"operationType": "UPSERT", "partitionToWriteStats": {
            "2026/01": [_stat("2026/01", "f1-0", i1)]}, "extraMetadata": {
            "schema": SPARK_SCHEMA, "indexbench.workload": "w"}})
        i2 = t.start_instant()
        t.complete_instant(i2, {"operationType": "UPSERT", "partitionToWriteStats": {
            "2026/01": [_stat("2026/01", "f2-0", i2)]}})  # no schema: the table's repeats
        with pytest.raises(ValueError, match="WriteOperationType"):
            t.complete_instant(t.start_instant(), {"operationType": "MY_OWN"})
        with pytest.raises(TypeError, match="string"):
            t.complete_instant(t.start_instant(), {"extraMetadata": {"n": 1}})
    meta = json.loads((tmp_path / "t" / ".hoodie" / f"{i1}.commit").read_text())
    assert list(meta) == ["partitionToWriteStats", "compacted", "extraMetadata",
                          "operationType"]
    stat = meta["partitionToWriteStats"]["2026/01"][0]
    assert list(stat)[:len(cm.WRITE_STAT_FIELDS)] == [n for n, _ in cm.WRITE_STAT_FIELDS]
    assert stat["partitionPath"] == "2026/01" and stat["fileSizeInBytes"] == 100
    assert stat["totalWriteErrors"] == 0 and stat["indexBytes"] == 7  # Hudi's, then ours
    avro = json.loads(meta["extraMetadata"]["schema"])
    assert (avro["name"], avro["namespace"]) == ("my__t_record", "hoodie.my__t")
    assert avro["fields"][2] == {"name": "ts", "type": "long"}
    assert avro["fields"][3] == {"name": "amount", "default": None, "type": ["null", {
        "type": "fixed", "name": "fixed", "namespace": "hoodie.my__t.my__t_record.amount",
        "size": 5, "logicalType": "decimal", "precision": 10, "scale": 2}]}
    assert avro["fields"][4]["type"][1]["namespace"] == "hoodie.my__t.my__t_record"
    assert meta["extraMetadata"][cm.SPARK_SCHEMA_KEY] == SPARK_SCHEMA
    second = json.loads((tmp_path / "t" / ".hoodie" / f"{i2}.commit").read_text())
    assert second["extraMetadata"]["schema"] == meta["extraMetadata"]["schema"]
    assert Table(str(tmp_path / "t")).snapshot().schema == SPARK_SCHEMA  # the Spark schema
    # the partition's metafile: written by the first instant into it, kept after
    text = (tmp_path / "t" / "2026" / "01" / ".hoodie_partition_metadata").read_text()
    assert text.startswith("#partition metadata\n")
    assert f"commitTime={i1}" in text.splitlines() and "partitionDepth=2" in text.splitlines()


def test_tables_written_before_hudi_format_stay_readable(tmp_path):
    """Commits of tables written before issue #15: ``partition`` in the write stats, the
    Spark schema under ``schema``, no requested files."""
    t = Table.create_or_open(str(tmp_path / "t"), config())
    instant = "20260101000000000"
    old = {"operationType": "UPSERT", "extraMetadata": {"schema": SPARK_SCHEMA},
           "partitionToWriteStats": {"p": [{**_stat("p", "f-0", instant), "partition": "p"}]}}
    old["partitionToWriteStats"]["p"][0].pop("partitionPath")
    (tmp_path / "t" / ".hoodie" / f"{instant}.inflight").write_text("{}")
    (tmp_path / "t" / ".hoodie" / f"{instant}.commit").write_text(json.dumps(old))
    snap = t.snapshot()
    assert snap.schema == SPARK_SCHEMA and list(snap.slices) == [("p", "f-0")]
    with t:
        i2 = t.start_instant()
        t.complete_instant(i2, {"operationType": "UPSERT"})
    assert json.loads(t.read_commit(i2)["extraMetadata"]["schema"])["type"] == "record"


def test_write_handle_millis_become_hudis_runtime_stats_and_the_straggler_column():
    """A writer's handle time is Hudi's ``runtimeStats`` in the commit (not a top-level
    field), and the row's ``write_task_max_s`` is the slowest file group's."""
    from metrics.rows import WriteTotals
    from tableformat import commit_metadata as cm

    base = {"fileId": "f-0", "path": "p/f", "partitionPath": "p", "totalWriteBytes": 1}
    stat = cm.hoodie_write_stat({**base, "totalCreateTime": 0, "totalUpsertTime": 1250}, "p")
    assert stat["runtimeStats"] == {"totalScanTime": 0, "totalUpsertTime": 1250,
                                    "totalCreateTime": 0}
    assert "totalUpsertTime" not in stat and list(stat)[:len(cm.WRITE_STAT_FIELDS)] == [
        n for n, _ in cm.WRITE_STAT_FIELDS]
    assert cm.hoodie_write_stat(base, "p")["runtimeStats"] is None  # a stat without times
    stats = [{"numWrites": 1, "numInserts": 1, "numUpdateWrites": 0, "totalWriteBytes": 1,
              "totalCreateTime": ms, "totalUpsertTime": 0} for ms in (40, 1700, 3)]
    assert WriteTotals.from_stats(stats).write_task_max_s == 1.7
    assert WriteTotals.from_stats([{**stats[0], "totalCreateTime": None,
                                    "totalUpsertTime": None}]).write_task_max_s is None


def test_footer_keys_are_the_records_of_new_base_files_with_index_bytes():
    """``footer_keys_written``: a bloom filter is built from every key of a base file the
    index keeps a footer in; log files and footer-less base files build none."""
    from metrics.rows import WriteTotals

    def stat(n, index_bytes, log=None):
        return {"numWrites": n, "numInserts": 0, "numUpdateWrites": n, "totalWriteBytes": 1,
                "indexBytes": index_bytes, "logVersion": log}

    stats = [stat(1000, 4096), stat(300, 0), stat(50, 4096, log=1), stat(7, 12)]
    totals = WriteTotals.from_stats(stats)
    assert totals.footer_keys_written == 1007 and totals.records_written == 1357
    assert totals.footer_filters_written == 2  # one filter a footed base file
    assert WriteTotals.from_stats([]).footer_keys_written == 0
    assert WriteTotals.from_stats([]).footer_filters_written == 0


def test_a_table_written_with_bare_hoodie_parameter_keys_reads_as_before(tmp_path):
    """Tables written before parameters moved under indexbench.param. keep their bare
    hoodie.* keys: read back as the same parameters."""
    from tableformat import hoodie_properties as hp
    from tableformat.table import PARAM_PREFIX

    uri = tmp_path / "t"
    cfg = config(index_params={"hoodie.x": "1", "indexbench.y": "2"})
    Table.create_or_open(str(uri), cfg)
    path = uri / ".hoodie" / "hoodie.properties"
    props = hp.parse(path.read_text())
    assert props[PARAM_PREFIX + "hoodie.x"] == "1" and "hoodie.x" not in props
    assert props["indexbench.y"] == "2"  # the project's own keys stay as they are
    props["hoodie.x"] = props.pop(PARAM_PREFIX + "hoodie.x")
    path.write_text(hp.render(props))
    assert Table(str(uri)).config == cfg


def test_a_completed_instant_is_stamped_with_its_own_time(tmp_path):
    """Hudi 1.x reads a version-6 instant's completion time from its file's mtime: ours
    is the instant itself (benchmark clock), set before the rename, also through a
    sub-tree file system; requested and inflight files keep the wall clock."""
    import pyarrow.fs as pafs

    from tableformat import fs as tfs

    uri = str(tmp_path / "t")
    table = Table.create_or_open(uri, config())
    with table:
        instant = table.start_instant()
        table.complete_instant(instant, {"partitionToWriteStats": {}})
    meta = tmp_path / "t" / ".hoodie"
    assert os.path.getmtime(meta / f"{instant}.commit") == parse_instant(instant) / 1000
    assert os.path.getmtime(meta / f"{instant}.commit.requested") != \
        parse_instant(instant) / 1000
    sub = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    (tmp_path / "f").write_bytes(b"x")
    assert tfs.set_mtime(sub, "f", 1_000_000.0) and os.path.getmtime(tmp_path / "f") == 1e6
    assert not tfs.set_mtime(pafs._MockFileSystem(), "f", 1.0)
