"""Hudi's log file format (``tableformat.hudi_log``): names, exact block bytes derived by
hand from Hudi 0.14/0.15's source, round trips of every supported Avro type, fastavro as
the Avro oracle both ways, Hudi's corruption rule, and hudi-rs reading a hand-built
merge-on-read table (base file + Avro/Parquet data blocks + delete blocks) merged as Hudi
merges it. Spark-free."""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import struct
from decimal import Decimal

import fastavro
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from tableformat import basefile as bf
from tableformat import hoodie_properties as hp
from tableformat.avro_schema import avro_schema_json
from tableformat.commit_metadata import hoodie_write_stat
from tableformat.fs import IOStats
from tableformat.hudi_log import (
    META_FIELDS,
    BlockType,
    CommandBlock,
    CommandType,
    CorruptBlockError,
    DataBlock,
    DeleteBlock,
    HeaderKey,
    LogFileName,
    LogFormatError,
    RawBlock,
    UnsupportedAvroSchema,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
    is_log_file,
    parse_log_bytes,
    read_log_file,
    with_meta_fields,
    write_log_file,
)
from tableformat.hudi_log.avro_decode import record_starts
from tableformat.hudi_log.avro_encode import AvroEncodeError
from tableformat.hudi_log.blocks import avro_content
from tableformat.hudi_log.framing import frame
from tableformat.hudi_log.schema import arrow_schema, parse_fields

I1, I2, I3 = "20260101000000000", "20260101000001000", "20260101000002000"


def spark_struct(types: dict[str, str], nullable: bool = True) -> str:
    return json.dumps({"type": "struct", "fields": [
        {"name": k, "type": v, "nullable": nullable, "metadata": {}} for k, v in types.items()]})


def be(fmt: str, *values: int) -> bytes:
    return struct.pack(">" + fmt, *values)


# ---------------------------------------------------------------------------- names


def test_log_file_names_as_hudi_makes_and_parses_them():
    # FSUtils.makeLogFileName: "." + fileId + "_" + baseCommitTime + ".log" + "." + version
    # + "_" + writeToken; the example in FSUtils' comment on LOG_FILE_PATTERN
    name = LogFileName.parse(".b5068208-e1a4-11e6-bf01-fe55135034f3_20170101134598.log.1_1-0-1")
    assert name == LogFileName("b5068208-e1a4-11e6-bf01-fe55135034f3", "20170101134598", 1,
                               "1-0-1")
    real = ".54e9a5e9-ee5d-4ed2-acee-720b5810d380-0_20250109233025121.log.12_0-51-115"
    parsed = LogFileName.parse(f"part=1/{real}")
    assert (parsed.file_id, parsed.base_instant, parsed.version, parsed.write_token) == \
        ("54e9a5e9-ee5d-4ed2-acee-720b5810d380-0", "20250109233025121", 12, "0-51-115")
    assert parsed.name == str(parsed) == real
    assert parsed.next_version("1-2-3").name == \
        ".54e9a5e9-ee5d-4ed2-acee-720b5810d380-0_20250109233025121.log.13_1-2-3"
    assert is_log_file(real) and not is_log_file(f"{parsed.file_id}_0-1-2_{I1}.parquet")
    for bad in (".commits_.archive.1_1-0-1",  # archive log
                ".fid_20250109233025121.log.1",  # no write token
                ".fid_20250109233025121.log.1_0-1-2.cdc",  # CDC log
                "fid_20250109233025121.log.1_0-1-2",  # no leading dot
                ".fid_20250109233025121.log.x_0-1-2"):
        assert not is_log_file(bad), bad
    with pytest.raises(ValueError, match="start at 1"):
        LogFileName("fid", I1, 0)
    with pytest.raises(ValueError, match="write token"):
        LogFileName("fid", I1, 1, "a-b")
    with pytest.raises(ValueError, match="without '_'"):
        LogFileName("f_id", I1)


# ---------------------------------------------------------------- exact block bytes


def test_rollback_command_block_bytes():
    """Derived by hand from HoodieLogFormatWriter.appendBlocks (Hudi 0.14/0.15):
    1. MAGIC "#HUDI#"; 2. writeLong(getLogBlockLength(content, header, footer)) =
    Integer.BYTES + Integer.BYTES + header + Long.BYTES + content + footer + Long.BYTES;
    3. writeInt(CURRENT_VERSION = 1); 4. writeInt(blockType.ordinal()), COMMAND_BLOCK = 0;
    5. header = HoodieLogBlock.getLogMetadataBytes: writeInt(size), then per entry
    writeInt(key.ordinal()), writeInt(bytes.length), bytes; 6. writeLong(content.length),
    HoodieCommandBlock's content is empty; 7. content; 8. footer (an empty map: writeInt
    0); 9. writeLong(outputStream.size() - startSize), the bytes written so far.
    The header is HoodieCommandBlock's: INSTANT_TIME (0), TARGET_INSTANT_TIME (1),
    COMMAND_BLOCK_TYPE (3) = String.valueOf(ROLLBACK_BLOCK.ordinal()) = "0"."""
    header = (be("i", 3)
              + be("ii", 0, 17) + b"20260101000002000"
              + be("ii", 1, 17) + b"20260101000001000"
              + be("ii", 3, 1) + b"0")
    assert len(header) == 63
    length = 4 + 4 + 63 + 8 + 0 + 4 + 8  # = 91
    expected = (b"#HUDI#" + be("q", length) + be("i", 1) + be("i", 0) + header
                + be("q", 0) + be("i", 0) + be("q", 6 + 8 + length - 8))
    assert len(expected) == 105  # a real Hudi rollback log file has these sizes: 91, 97, 105
    assert encode_command_block(target_instant=I2, instant=I3) == expected


def test_delete_block_bytes():
    """HoodieDeleteBlock.getContentBytes (0.14, log block version 3): writeInt(version 3),
    writeInt(bytes.length), then serializeV3(): SpecificDatumWriter of
    HoodieDeleteRecordList through a buffered BinaryEncoder. The list is one Avro array
    block: varint count 1 (zigzag 2), then the record — recordKey ["null","string"]
    branch 1 (0x02) + zigzag length 2 (0x04) + "k1"; partitionPath branch 1 + length 1
    (0x02) + "p"; orderingVal branch 3 = LongWrapper (wrapValueIntoAvro(Long)) (0x06) +
    long 5 (zigzag 10 = 0x0a) — then the end-of-array 0. Header: INSTANT_TIME and
    SCHEMA (HoodieAppendHandle writes both into the delete block's header)."""
    schema = avro_schema_json(spark_struct({"key": "string"}), "t")
    avro = bytes.fromhex("02" "02 04 6b31" "02 02 70" "06 0a" "00")
    content = be("i", 3) + be("i", len(avro)) + avro
    s = with_meta_fields(schema).encode()
    header = be("i", 2) + be("ii", 0, 17) + I2.encode() + be("ii", 2, len(s)) + s
    length = 4 + 4 + len(header) + 8 + len(content) + 4 + 8
    expected = (b"#HUDI#" + be("q", length) + be("ii", 1, 1) + header + be("q", len(content))
                + content + be("i", 0) + be("q", length + 6))
    got = encode_delete_block(["k1"], ["p"], pa.array([5], pa.int64()), I2, schema)
    assert got == expected
    # Hudi's DELETE operation writes ordering value 0 as an IntWrapper (branch 2)
    zero = encode_delete_block(["k1"], ["p"], pa.array([0], pa.int32()), I2, schema)
    assert bytes.fromhex("02 02 04 6b31 02 02 70 04 00 00") in zero


def test_avro_data_block_bytes():
    """HoodieAvroDataBlock.serializeRecords: writeInt(HoodieLogBlock.version = 3),
    writeInt(records.size()), then per record writeInt(size) and the GenericDatumWriter
    bytes. The header SCHEMA is the writer schema with the meta fields first, as
    HoodieAvroUtils.addMetadataFields makes them (["null","string"], doc "", default
    null); _hoodie_file_name holds the file id in a log record."""
    schema = avro_schema_json(spark_struct({"ts": "long"}, nullable=False), "t")
    s = with_meta_fields(schema)
    meta = ('{"name":"%s","type":["null","string"],"doc":"","default":null}')
    assert s == ('{"type":"record","name":"t_record","namespace":"hoodie.t","fields":['
                 + ",".join(meta % n for n in META_FIELDS)
                 + ',{"name":"ts","type":"long"}]}')
    record = (b"\x02\x22" + I1.encode() + b"\x02\x2a" + f"{I1}_0_1".encode()
              + b"\x02\x02k" + b"\x02\x02p" + b"\x02\x06f-0"
              + bytes([0xD8, 0x04]))  # 300 → zigzag 600 → varint 0xd8 0x04
    assert len(record) == 55
    content = be("iii", 3, 1, 55) + record
    header = be("i", 2) + be("ii", 0, 17) + I1.encode() + be("ii", 2, len(s)) + s.encode()
    length = 4 + 4 + len(header) + 8 + len(content) + 4 + 8
    expected = (b"#HUDI#" + be("q", length) + be("ii", 1, 3) + header + be("q", len(content))
                + content + be("i", 0) + be("q", length + 6))
    records = pa.table({"_hoodie_commit_time": [I1], "_hoodie_commit_seqno": [f"{I1}_0_1"],
                        "_hoodie_record_key": ["k"], "_hoodie_partition_path": ["p"],
                        "_hoodie_file_name": ["f-0"], "ts": pa.array([300], pa.int64())})
    assert encode_data_block(records, schema, I1) == expected
    assert encode_data_block(records, s, I1) == expected  # meta fields are added once


# ------------------------------------------------------------ every type, round trip

TYPES = {"key": "string", "dt": "string", "ts": "long", "b": "boolean", "i": "integer",
         "s": "short", "by": "byte", "f": "float", "d": "double", "bin": "binary",
         "day": "date", "t": "timestamp", "ntz": "timestamp_ntz", "dec": "decimal(10,2)",
         "dec38": "decimal(38,18)", "c": "varchar(8)", "nothing": "void"}
UTC = dt.UTC


def every_type_records() -> tuple[str, pa.Table]:
    """The table's Avro schema and records holding every supported type, nulls in
    every nullable column, unicode, empty and long strings, extreme values."""
    schema = avro_schema_json(spark_struct(TYPES), "every_type")
    fields = parse_fields(with_meta_fields(schema))
    long_text = "λ" * 700 + "end"
    values = {
        "key": ["a", "é", "日本語キー", "🙂 emoji", "", "k" * 40],
        "dt": ["2026-01-01", None, "p", "p", "p", long_text],
        "ts": [0, -1, 2**63 - 1, -(2**63), 300, None],
        "b": [True, False, None, True, False, True],
        "i": [0, 2**31 - 1, -(2**31), None, 64, -65],
        "s": [1, -1, None, 32767, -32768, 0], "by": [127, -128, None, 0, 1, -1],
        "f": [1.5, -0.0, math.inf, None, 3.4e38, -1e-38],
        "d": [1e300, -math.inf, None, 5e-324, 0.1, -2.5],
        "bin": [b"", b"\x00\xff\x80", None, bytes(range(256)), b"x" * 13, b"y" * 12],
        "day": [dt.date(1970, 1, 1), dt.date(1900, 3, 1), None, dt.date(9999, 12, 31),
                dt.date(2026, 2, 28), dt.date(1969, 12, 31)],
        "t": [dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), None,
              dt.datetime(1900, 1, 1, tzinfo=UTC), dt.datetime(1970, 1, 1, tzinfo=UTC),
              dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
              dt.datetime(2262, 4, 11, tzinfo=UTC)],
        "ntz": [dt.datetime(2026, 1, 2), None, dt.datetime(1960, 5, 6, 7, 8, 9, 10),
                dt.datetime(1970, 1, 1), dt.datetime(2100, 1, 1), dt.datetime(2000, 2, 29)],
        "dec": [Decimal("12.34"), Decimal("-0.01"), None, Decimal("99999999.99"),
                Decimal("-99999999.99"), Decimal("0.00")],
        "dec38": [Decimal("1.000000000000000001"), None,
                  Decimal("-99999999999999999999.999999999999999999"),
                  Decimal("99999999999999999999.999999999999999999"), Decimal("0E-18"),
                  Decimal("-0.000000000000000001")],
        "c": ["abc", None, "ü", "", "12345678", "x"],
        "nothing": [None] * 6,
    }
    n = 6
    values.update({"_hoodie_commit_time": [I1] * n,
                   "_hoodie_commit_seqno": [f"{I1}_0_{i}" for i in range(n)],
                   "_hoodie_record_key": values["key"],
                   "_hoodie_partition_path": values["dt"],
                   "_hoodie_file_name": ["fid-0"] * n})
    return schema, pa.Table.from_pydict({f.name: values[f.name] for f in fields},
                                        schema=arrow_schema(fields))


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_every_type_round_trips(fmt):
    schema, records = every_type_records()
    block = encode_data_block(records, schema, I1, fmt=fmt)
    [got] = parse_log_bytes(block)
    assert isinstance(got, DataBlock)
    assert got.block_type == (BlockType.AVRO_DATA if fmt == "avro" else BlockType.PARQUET_DATA)
    assert got.instant == I1 and got.schema == with_meta_fields(schema)
    assert got.header == {HeaderKey.INSTANT_TIME: I1, HeaderKey.SCHEMA: got.schema}
    assert got.records.schema == records.schema
    assert got.records.equals(records)


def test_inputs_in_other_arrow_types_are_cast():
    """large_string/int32/chunked columns (what Arrow batches may hold) are cast to the
    schema's types; a missing nullable column is written as null."""
    schema = avro_schema_json(spark_struct({"key": "string", "ts": "long", "x": "double"}), "t")
    n = 3
    cols = {m: pa.array([m] * n, pa.large_string()) for m in META_FIELDS}
    cols["key"] = pa.chunked_array([pa.array(["a"], pa.large_string()),
                                    pa.array(["b", None], pa.large_string())])
    cols["ts"] = pa.array([1, 2, None], pa.int32())
    [got] = parse_log_bytes(encode_data_block(pa.table(cols), schema, I1))
    assert got.records.column("key").to_pylist() == ["a", "b", None]
    assert got.records.column("ts").to_pylist() == [1, 2, None]
    assert got.records.column("x").null_count == n


def test_refused_schemas_and_records():
    nested = avro_schema_json(json.dumps({"type": "struct", "fields": [
        {"name": "a", "type": {"type": "array", "elementType": "long", "containsNull": True},
         "nullable": True, "metadata": {}}]}), "t")
    with pytest.raises(UnsupportedAvroSchema, match="field 'a'.*not supported"):
        encode_data_block(pa.table({"a": [[1]]}), nested, I1)
    strict = avro_schema_json(spark_struct({"ts": "long"}, nullable=False), "t")
    meta = {m: ["x"] for m in META_FIELDS}
    with pytest.raises(AvroEncodeError, match="'ts' holds nulls"):
        encode_data_block(pa.table({**meta, "ts": pa.array([None], pa.int64())}), strict, I1)
    with pytest.raises(AvroEncodeError, match="'ts' is missing"):
        encode_data_block(pa.table(meta), strict, I1)
    with pytest.raises(AvroEncodeError, match=r"\['extra'\] are not in"):
        encode_data_block(pa.table({**meta, "ts": [1], "extra": [1]}), strict, I1)
    with pytest.raises(AvroEncodeError, match="cannot be written"):
        encode_data_block(pa.table({**meta, "ts": ["x"]}), strict, I1)
    with pytest.raises(ValueError, match="data block format 'orc'"):
        encode_data_block(pa.table({**meta, "ts": [1]}), strict, I1, fmt="orc")


# ------------------------------------------------------------- fastavro, the oracle


def _record_bytes(block: bytes) -> list[bytes]:
    """Each record's Avro bytes in an Avro data block (its length prefixes walked)."""
    [frame_block] = parse_log_bytes(block)
    assert isinstance(frame_block, DataBlock)
    start = block.index(be("i", 3) + be("i", frame_block.records.num_rows))
    count = frame_block.records.num_rows
    content = block[start:len(block) - 4 - 8]  # footer (empty) and trailing length
    starts, lengths = record_starts(content, 8, count)
    return [content[s:s + n] for s, n in zip(starts, lengths, strict=True)]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def test_fastavro_decodes_every_record_and_encodes_the_same_bytes():
    schema, records = every_type_records()
    block = encode_data_block(records, schema, I1)
    parsed = fastavro.parse_schema(json.loads(with_meta_fields(schema)))
    rows = records.to_pylist()
    for ours, row in zip(_record_bytes(block), rows, strict=True):
        theirs = fastavro.schemaless_reader(io.BytesIO(ours), parsed, parsed)
        assert set(theirs) == set(row)
        for name, value in row.items():
            assert _same(theirs[name], value), (name, theirs[name], value)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, row)
        assert out.getvalue() == ours


# HoodieDeleteRecordList.avsc of Hudi 0.14/0.15 (HUDI-5760), wrappers as in
# HoodieMetadata.avsc's column stats: each a record with one field "value"
_WRAPPERS = [("BooleanWrapper", "boolean"), ("IntWrapper", "int"), ("LongWrapper", "long"),
             ("FloatWrapper", "float"), ("DoubleWrapper", "double"),
             ("BytesWrapper", "bytes"), ("StringWrapper", "string"), ("DateWrapper", "int"),
             ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30,
                                 "scale": 15}),
             ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
             ("TimestampMicrosWrapper", "long")]
DELETE_LIST_SCHEMA = {
    "namespace": "org.apache.hudi.avro.model", "type": "record",
    "name": "HoodieDeleteRecordList",
    "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": {
        "name": "HoodieDeleteRecord", "type": "record", "fields": [
            {"name": "recordKey", "type": ["null", "string"], "default": None},
            {"name": "partitionPath", "type": ["null", "string"], "default": None},
            {"name": "orderingVal", "type": ["null"] + [
                {"type": "record", "name": name, "fields": [{"name": "value", "type": t}]}
                for name, t in _WRAPPERS], "default": None}]}}}]}

ORDERING_CASES = {
    "long": (pa.array([5, None, -(2**63)], pa.int64()), "LongWrapper"),
    "int": (pa.array([0, 2**31 - 1, None], pa.int32()), "IntWrapper"),
    "short": (pa.array([1, -1, 7], pa.int16()), "IntWrapper"),
    "double": (pa.array([0.5, None, -1e300], pa.float64()), "DoubleWrapper"),
    "float": (pa.array([0.5, 2.0, None], pa.float32()), "FloatWrapper"),
    "string": (pa.array(["b", None, "ü"], pa.string()), "StringWrapper"),
    "bool": (pa.array([True, False, None]), "BooleanWrapper"),
    "binary": (pa.array([b"\x00", b"", None], pa.binary()), "BytesWrapper"),
    "date": (pa.array([dt.date(2026, 1, 1), None, dt.date(1900, 1, 1)]), "DateWrapper"),
    "timestamp": (pa.array([dt.datetime(2026, 1, 1, tzinfo=UTC), None,
                            dt.datetime(1960, 1, 1, tzinfo=UTC)], pa.timestamp("us", "UTC")),
                  "LongWrapper"),
    "none": (None, None),
}


@pytest.mark.parametrize("case", sorted(ORDERING_CASES))
def test_delete_records_fastavro_and_round_trip(case):
    ordering, wrapper = ORDERING_CASES[case]
    keys, parts = ["k1", "ключ", "k" * 30], ["p", "", "2026/01/02"]
    schema = avro_schema_json(spark_struct({"key": "string"}), "t")
    [got] = parse_log_bytes(encode_delete_block(keys, parts, ordering, I2, schema))
    assert isinstance(got, DeleteBlock) and got.instant == I2
    assert got.header[HeaderKey.SCHEMA] == with_meta_fields(schema)
    assert got.keys.to_pylist() == keys and got.partitions.to_pylist() == parts
    want = [None] * 3 if ordering is None else \
        ordering.cast(pa.int64()).to_pylist() if case == "timestamp" else ordering.to_pylist()
    assert got.ordering_values.to_pylist() == want
    # fastavro reads the bytes with Hudi's schema, and writes the same bytes
    content = encode_delete_block(keys, parts, ordering, I2, schema)
    avro = content[content.rindex(be("i", 3)) + 8:len(content) - 12]
    parsed = fastavro.parse_schema(DELETE_LIST_SCHEMA)
    datum = fastavro.schemaless_reader(io.BytesIO(avro), parsed, parsed)
    records = datum["deleteRecordList"]
    assert [r["recordKey"] for r in records] == keys
    values = [None if r["orderingVal"] is None else r["orderingVal"]["value"] for r in records]
    if case == "date":
        want = [None if d is None else (d - dt.date(1970, 1, 1)).days for d in want]
    assert values == want
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, {"deleteRecordList": [
        {"recordKey": k, "partitionPath": p,
         "orderingVal": None if v is None else (f"org.apache.hudi.avro.model.{wrapper}",
                                                {"value": v})}
        for k, p, v in zip(keys, parts, values, strict=True)]})
    assert out.getvalue() == avro


def test_empty_delete_block_and_refused_ordering_type():
    schema = avro_schema_json(spark_struct({"key": "string"}), "t")
    [got] = parse_log_bytes(encode_delete_block([], [], None, I2, schema))
    assert len(got.keys) == 0
    with pytest.raises(ValueError, match="no delete-block ordering value"):
        encode_delete_block(["k"], ["p"], pa.array([Decimal("1.5")]), I2, schema)


def test_command_block_read_back():
    [got] = parse_log_bytes(encode_command_block(I2, I3))
    assert isinstance(got, CommandBlock)
    assert (got.command, got.target_instant, got.instant) == (CommandType.ROLLBACK, I2, I3)


# ----------------------------------------------------- files and the corruption rule


def _sample_blocks() -> list[bytes]:
    schema, records = every_type_records()
    return [encode_data_block(records, schema, I1),
            encode_delete_block(["a"], ["p"], pa.array([3], pa.int64()), I1, schema),
            encode_data_block(records.slice(0, 2), schema, I1, fmt="parquet"),
            encode_command_block(I1, I2)]


def test_write_and_read_a_log_file(tmp_path):
    fs = pafs.LocalFileSystem()
    path = str(tmp_path / LogFileName("fid-0", I1, 1, "0-1-0").name)
    blocks = _sample_blocks()
    size = write_log_file(fs, path, blocks)
    assert size == sum(map(len, blocks)) == fs.get_file_info(path).size
    stats = IOStats()
    got = read_log_file(fs, path, stats=stats)
    assert (stats.files_read, stats.bytes_read, stats.paths) == (1, size, [path])
    assert [b.block_type for b in got] == [BlockType.AVRO_DATA, BlockType.DELETE,
                                           BlockType.PARQUET_DATA, BlockType.COMMAND]
    assert [b.offset for b in got] == [0, *[sum(map(len, blocks[:i])) for i in (1, 2, 3)]]
    assert [b.size for b in got] == [len(b) for b in blocks]
    with pytest.raises(FileExistsError, match="next log version"):
        write_log_file(fs, path, blocks)
    assert write_log_file(fs, path, blocks[:1], overwrite=True) == len(blocks[0])


def test_corrupt_blocks_by_hudis_rule():
    blocks = _sample_blocks()
    whole = b"".join(blocks)
    first = len(blocks[0]) + len(blocks[1]) + len(blocks[2])
    truncated = whole[:-5]  # a writer died inside the last block
    with pytest.raises(CorruptBlockError, match=f"at byte {first}: its length 91 runs past"):
        parse_log_bytes(truncated, "f.log")
    got = parse_log_bytes(truncated, on_corrupt="skip")  # as Hudi's reader: skip it
    assert [b.block_type for b in got][:3] == [BlockType.AVRO_DATA, BlockType.DELETE,
                                               BlockType.PARQUET_DATA]
    assert isinstance(got[3], RawBlock) and got[3].block_type == BlockType.CORRUPT
    assert got[3].offset == first and got[3].offset + got[3].size == len(truncated)
    # a trailing length that disagrees; garbage after a block; then a good block again
    bad_trailer = blocks[3][:-1] + b"\x60"  # 97 → 96
    with pytest.raises(CorruptBlockError, match="trailing length 96 does not match"):
        parse_log_bytes(bad_trailer)
    with pytest.raises(CorruptBlockError, match="neither the end of the file"):
        parse_log_bytes(blocks[3] + b"garbage" + blocks[3])
    skipped = parse_log_bytes(blocks[3] + b"#HUDI#junk" + blocks[3], on_corrupt="skip")
    assert [b.block_type for b in skipped] == [BlockType.COMMAND, BlockType.CORRUPT,
                                               BlockType.COMMAND]
    # fewer than 6 trailing bytes are the end of the file for Hudi's reader
    assert len(parse_log_bytes(blocks[3] + b"#HU")) == 1
    with pytest.raises(LogFormatError, match="no #HUDI# magic at byte 0"):
        parse_log_bytes(b"nothing here")


def test_record_bytes_that_disagree_with_their_prefix():
    schema = with_meta_fields(avro_schema_json(spark_struct({"ts": "long"}, nullable=False),
                                               "t"))
    records = pa.table({**{m: ["x"] for m in META_FIELDS}, "ts": pa.array([1], pa.int64())})
    content = b"".join(bytes(p) for p in avro_content(records, schema))
    assert content == be("iii", 3, 1, 16) + bytes.fromhex("02 02 78") * 5 + b"\x02"
    header = {HeaderKey.INSTANT_TIME: I1, HeaderKey.SCHEMA: schema}

    def read(content: bytes) -> None:
        parse_log_bytes(frame(BlockType.AVRO_DATA, header, content))

    with pytest.raises(LogFormatError, match="block at byte 0: field 'ts': a varint runs"):
        read(content[:-1] + b"\x80")  # ts's varint continues past the block
    with pytest.raises(LogFormatError, match="record 0: the schema's fields take 16 bytes, "
                                             "its length prefix says 17"):
        read(be("iii", 3, 1, 17) + content[12:] + b"\x00")
    with pytest.raises(LogFormatError, match="field '_hoodie_commit_time': a union index"):
        read(content[:12] + b"\x04" + content[13:])
    with pytest.raises(LogFormatError, match="2 bytes after the block's 1 records"):
        read(content + b"\x00\x00")


# ----------------------------------------------------------------- hudi-rs, a reader

try:  # hudi-rs (the dev extra); only the interop tests below need it
    import hudi
except ImportError:  # pragma: no cover
    hudi = None
needs_hudi_rs = pytest.mark.skipif(hudi is None, reason="hudi-rs (the hudi package) missing")

MOR_TYPES = {"key": "string", "dt": "string", "ts": "long", "payload": "string"}
PART = "p1"
FID = "00000000-0000-0000-0000-000000000001-0"


class MorTable:
    """A merge-on-read table built by hand, as Hudi 0.14/0.15 lay one out."""

    def __init__(self, root, types: dict[str, str] = MOR_TYPES):
        self.root, self.fs = str(root), pafs.LocalFileSystem()
        (root / ".hoodie").mkdir(parents=True)
        (root / PART).mkdir()
        props = {hp.NAME: "t", **hp.HUDI_TABLE_PROPERTIES, "hoodie.table.type": "MERGE_ON_READ",
                 "hoodie.table.recordkey.fields": "key", "hoodie.table.partition.fields": "dt",
                 "hoodie.table.precombine.field": "ts"}
        (root / ".hoodie" / "hoodie.properties").write_text(hp.render(props))
        (root / PART / ".hoodie_partition_metadata").write_text(
            hp.store({"commitTime": I1, "partitionDepth": "1"}, "partition metadata"))
        self.schema = avro_schema_json(spark_struct(types), "t")

    def rows(self, instant: str, keys: list[str], ts: list[int], file_name: str,
             tag: str) -> pa.Table:
        n = len(keys)
        return pa.table({"_hoodie_commit_time": [instant] * n,
                         "_hoodie_commit_seqno": [f"{instant}_0_{i}" for i in range(n)],
                         "_hoodie_record_key": keys, "_hoodie_partition_path": [PART] * n,
                         "_hoodie_file_name": [file_name] * n, "key": keys, "dt": [PART] * n,
                         "ts": pa.array(ts, pa.int64()),
                         "payload": [f"{tag}-{k}" for k in keys]})

    def commit(self, instant: str, stats: list[dict]) -> None:
        """A completed delta commit (requested → inflight → deltacommit)."""
        md = {"partitionToWriteStats": {PART: stats}, "compacted": False,
              "extraMetadata": {"schema": self.schema}, "operationType": "UPSERT"}
        hoodie = f"{self.root}/.hoodie/{instant}"
        for suffix, text in (("deltacommit.requested", ""), ("deltacommit.inflight", "{}"),
                             ("deltacommit", json.dumps(md, indent=2))):
            with open(f"{hoodie}.{suffix}", "w") as f:
                f.write(text)

    def log(self, name: LogFileName, blocks: list[bytes], base_file: str, writes: int,
            deletes: int = 0) -> dict:
        """Write a log file; its HoodieDeltaWriteStat as Hudi's Jackson mapper writes it."""
        size = write_log_file(self.fs, f"{self.root}/{PART}/{name.name}", blocks)
        stat = hoodie_write_stat({"fileId": name.file_id, "path": f"{PART}/{name.name}",
                                  "prevCommit": name.base_instant, "numWrites": writes,
                                  "numUpdateWrites": writes, "numDeletes": deletes,
                                  "totalWriteBytes": size}, PART)
        stat.update({"logVersion": name.version, "logOffset": 0, "baseFile": base_file,
                     "logFiles": [name.name], "recordsStats": {"val": None}})
        return stat

    def hudi_rs(self) -> pa.Table:
        table = hudi.HudiTableBuilder.from_base_uri(self.root).build()
        return pa.Table.from_batches(table.read()).sort_by("_hoodie_record_key")


def _build_mor(tmp_path, delete_ordering: pa.Array | None) -> MorTable:
    """Base file (k0..k5, ts 10) at I1; at I2 an Avro block updating k0 (ts 20, wins)
    and k1 (ts 5, loses to the base) and a delete block for k2; at I3 a Parquet block
    updating k3 (ts 30, wins) and k0 (ts 15, loses to I2's 20)."""
    t = MorTable(tmp_path / "mor")
    base_name = f"{FID}_0-1-0_{I1}.parquet"
    keys = [f"k{i}" for i in range(6)]
    size = bf.write_base_file(t.fs, f"{t.root}/{PART}/{base_name}",
                              t.rows(I1, keys, [10] * 6, base_name, "base"), {})
    t.commit(I1, [hoodie_write_stat({"fileId": FID, "path": f"{PART}/{base_name}",
                                     "numWrites": 6, "numInserts": 6,
                                     "totalWriteBytes": size}, PART)])
    log1 = LogFileName(FID, I1, 1, "0-2-0")  # named by the base instant, not the commit's
    t.commit(I2, [t.log(log1, [
        encode_data_block(t.rows(I2, ["k0", "k1"], [20, 5], FID, "i2"), t.schema, I2),
        encode_delete_block(["k2"], [PART], delete_ordering, I2, t.schema)],
        base_name, 2, 1)])
    log2 = log1.next_version("0-3-0")
    t.commit(I3, [t.log(log2, [encode_data_block(
        t.rows(I3, ["k3", "k0"], [30, 15], FID, "i3"), t.schema, I3, fmt="parquet")],
        base_name, 2)])
    return t


@needs_hudi_rs
@pytest.mark.parametrize("ordering", ["int 0 (DELETE)", "long", "null"])
def test_hudi_rs_merges_base_avro_parquet_and_delete_blocks(tmp_path, ordering):
    """Avro and Parquet data blocks and a delete block, whose ordering value is the
    IntWrapper 0 of Hudi's DELETE operation, a LongWrapper (an upsert's
    _hoodie_is_deleted record) or null: hudi-rs merges them as Hudi does."""
    delete_ordering = {"int 0 (DELETE)": pa.array([0], pa.int32()),
                       "long": pa.array([99], pa.int64()), "null": None}[ordering]
    t = _build_mor(tmp_path, delete_ordering)
    got = t.hudi_rs()
    assert got.column("_hoodie_record_key").to_pylist() == ["k0", "k1", "k3", "k4", "k5"]
    assert got.column("payload").to_pylist() == ["i2-k0", "base-k1", "i3-k3", "base-k4",
                                                 "base-k5"]
    assert got.column("ts").to_pylist() == [20, 10, 30, 10, 10]
    assert got.column("_hoodie_commit_time").to_pylist() == [I2, I1, I3, I1, I1]
    slices = hudi.HudiTableBuilder.from_base_uri(t.root).build().get_file_slices()
    assert [s.log_files_relative_paths() for s in slices] == [[
        f"{PART}/{LogFileName(FID, I1, v, f'0-{v + 1}-0').name}" for v in (1, 2)]]


@needs_hudi_rs
def test_hudi_rs_skips_a_truncated_last_block_which_we_refuse(tmp_path):
    """Hudi's rule: a block cut short is corrupt and skipped. hudi-rs drops it silently
    (k3 keeps its base version); this reader raises unless asked to skip."""
    t = _build_mor(tmp_path, pa.array([0], pa.int32()))
    path = f"{t.root}/{PART}/{LogFileName(FID, I1, 2, '0-3-0').name}"
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:-10])
    assert t.hudi_rs().column("payload").to_pylist()[2] == "base-k3"
    with pytest.raises(CorruptBlockError, match="runs past the end"):
        read_log_file(t.fs, path)
    assert read_log_file(t.fs, path, on_corrupt="skip")[0].block_type == BlockType.CORRUPT


@needs_hudi_rs
@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_hudi_rs_reads_every_type_from_a_log_only_file_group(tmp_path, fmt):
    """A file group with no base file yet (bucket indexes' inserts on MOR): its write
    stat has baseFile "", its log is named by the delta commit's instant. hudi-rs reads
    every supported type but timestamp_ntz (Avro local-timestamp-micros), which it
    cannot convert yet (the same limitation as for base files)."""
    types = {k: v for k, v in TYPES.items() if k not in ("ntz", "nothing")}
    t = MorTable(tmp_path / "mor", types)
    _, all_records = every_type_records()
    records = all_records.drop_columns(["ntz", "nothing"])
    records = records.set_column(records.schema.get_field_index("_hoodie_partition_path"),
                                 "_hoodie_partition_path", pa.array([PART] * 6))
    name = LogFileName(FID, I1, 1, "0-1-0")
    stat = t.log(name, [encode_data_block(records, t.schema, I1, fmt=fmt)], "", 6)
    t.commit(I1, [stat])
    got = t.hudi_rs().select(records.column_names)
    want = records.sort_by("_hoodie_record_key")
    for name_ in want.column_names:
        assert got.column(name_).to_pylist() == want.column(name_).to_pylist(), name_


def test_decoding_a_parquet_block_lets_the_interpreter_exit_cleanly():
    """pyarrow's threaded read of an in-memory Parquet block left a pool thread that made
    the interpreter abort at exit ("terminate called without an active exception", exit
    134) in 2 of 6 fresh processes (pyarrow 19.0.1); the block is read single-threaded."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("from benchmarks.bench_hudi_log import LogBlockCodec as L\n"
            "b = L(); b.setup(20000, 'parquet'); b.time_decode(20000, 'parquet')\n")
    root = Path(__file__).resolve().parents[1]
    codes = [subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                            timeout=120, check=False).returncode for _ in range(4)]
    assert codes == [0, 0, 0, 0]
