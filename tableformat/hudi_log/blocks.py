"""Log blocks: Hudi's four kinds a data table's log holds, encoded and decoded.

- **Avro data block** (``HoodieAvroDataBlock``, the default
  ``hoodie.logfile.data.block.format``): content = int block version (3), int record
  count, then per record an int length and the record's Avro binary encoding under the
  header's schema — the writer schema with Hudi's meta fields.
- **Parquet data block** (``HoodieParquetDataBlock``, ``...format=parquet``): content =
  one whole Parquet file of the records (no version, no count). Hudi's default codec
  for it is ``hoodie.parquet.compression.codec`` = gzip.
- **Delete block** (``HoodieDeleteBlock``): content = int block version (3), int byte
  length, Avro ``HoodieDeleteRecordList`` (:mod:`~tableformat.hudi_log.delete_records`).
- **Command block** (``HoodieCommandBlock``): no content; the header says
  ``COMMAND_BLOCK_TYPE`` = ``"0"`` (rollback) of ``TARGET_INSTANT_TIME``.

Data and delete blocks carry ``INSTANT_TIME`` and ``SCHEMA`` headers, as
``HoodieAppendHandle`` writes both from one header map; command blocks carry
``INSTANT_TIME``, ``TARGET_INSTANT_TIME`` and ``COMMAND_BLOCK_TYPE``.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from tableformat.hudi_log import avro_decode, avro_encode, delete_records
from tableformat.hudi_log.constants import BLOCK_CONTENT_VERSION, BlockType, CommandType, HeaderKey
from tableformat.hudi_log.framing import Frame, LogFormatError, frame
from tableformat.hudi_log.schema import arrow_schema, parse_fields, with_meta_fields

_TWO_INTS = struct.Struct(">ii")
DATA_FORMATS = {"avro": BlockType.AVRO_DATA, "parquet": BlockType.PARQUET_DATA}
# parquet-mr compresses gzip with Hadoop's GzipCodec at zlib's default level 6; Arrow's
# own default is 9, ~4x slower for the same size
_COMPRESSION_LEVELS = {"gzip": 6}


@dataclass(frozen=True, kw_only=True)
class Block:
    """A block as read: its type, header and footer, and where it is in the file."""

    block_type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[HeaderKey, str]
    offset: int  # of its magic
    size: int  # bytes, magic to trailing length

    @property
    def instant(self) -> str | None:
        """The instant that wrote the block (``INSTANT_TIME``)."""
        return self.header.get(HeaderKey.INSTANT_TIME)


@dataclass(frozen=True, kw_only=True)
class DataBlock(Block):
    """An Avro or Parquet data block: its records (meta columns first)."""

    records: pa.Table

    @property
    def schema(self) -> str:
        return self.header[HeaderKey.SCHEMA]


@dataclass(frozen=True, kw_only=True)
class DeleteBlock(Block):
    """Deleted record keys, their partitions and ordering values (null: none)."""

    keys: pa.Array
    partitions: pa.Array
    ordering_values: pa.Array


@dataclass(frozen=True, kw_only=True)
class CommandBlock(Block):
    """A command: rollback of ``target_instant``'s blocks."""

    command: CommandType
    target_instant: str


@dataclass(frozen=True, kw_only=True)
class RawBlock(Block):
    """A block this codec does not decode (HFile, CDC) or, read with
    ``on_corrupt="skip"``, corrupt bytes up to the next magic (``CORRUPT``)."""

    content: bytes


def _header(instant: str, schema: str) -> dict[HeaderKey, str]:
    return {HeaderKey.INSTANT_TIME: instant, HeaderKey.SCHEMA: schema}


def avro_content(records: pa.Table, schema_with_meta: str) -> list[bytes | pa.Buffer]:
    """An Avro data block's content in parts: version, count, length-prefixed records."""
    fields = parse_fields(schema_with_meta)
    _, data = avro_encode.encode_records(records, fields)
    return [_TWO_INTS.pack(BLOCK_CONTENT_VERSION, records.num_rows), data]


def parquet_content(records: pa.Table, schema_with_meta: str,
                    compression: str = "gzip") -> bytes:
    """A Parquet data block's content: the records as one Parquet file, typed by the
    Avro schema (so a reader sees the same columns either way)."""
    fields = parse_fields(schema_with_meta)
    table = pa.table({f.name: avro_encode.column(
        f, records.column(f.name) if f.name in records.column_names
        else pa.nulls(records.num_rows, f.arrow_type)) for f in fields},
        schema=arrow_schema(fields))
    extra = set(records.column_names) - {f.name for f in fields}
    if extra:
        raise avro_encode.AvroEncodeError(f"columns {sorted(extra)} are not in the block's "
                                          "schema")
    out = io.BytesIO()
    pq.write_table(table, out, compression=compression, store_schema=False,
                   compression_level=_COMPRESSION_LEVELS.get(compression.lower()))
    return out.getvalue()


def encode_data_block(records: pa.Table, avro_schema_json: str, instant: str,
                      fmt: str = "avro", compression: str = "gzip") -> bytes:
    """One data block of ``records`` written by ``instant``.

    ``avro_schema_json`` is the table's Avro schema (as commit metadata stores it); the
    header gets it with Hudi's meta fields, and ``records`` must hold those meta columns
    (as Hudi fills them for a log record: ``_hoodie_file_name`` is the *file id*) and
    the data columns. ``fmt`` is ``hoodie.logfile.data.block.format``; ``compression``
    applies to Parquet blocks only."""
    if fmt not in DATA_FORMATS:
        raise ValueError(f"data block format {fmt!r}: use one of {sorted(DATA_FORMATS)}")
    schema = with_meta_fields(avro_schema_json)
    content = avro_content(records, schema) if fmt == "avro" else \
        parquet_content(records, schema, compression)
    return frame(DATA_FORMATS[fmt], _header(instant, schema), content)


def _as_array(values: pa.Array | pa.ChunkedArray | Sequence, dtype: pa.DataType | None
              ) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    return values if isinstance(values, pa.Array) else pa.array(values, dtype)


def encode_delete_block(keys: pa.Array | Sequence[str], partitions: pa.Array | Sequence[str],
                        ordering_values: pa.Array | Sequence | None, instant: str,
                        schema: str) -> bytes:
    """One delete block: ``keys`` in ``partitions`` deleted by ``instant``.

    ``ordering_values`` (None: all null) become Hudi's ``orderingVal`` wrapper of their
    Arrow type (int64 → ``LongWrapper``, ...). Hudi's ``DELETE`` operation writes the
    integer 0 (``IntWrapper``), which readers take as "delete regardless of ordering";
    an upsert's ``_hoodie_is_deleted`` record writes its own ordering value. ``schema``
    is the table's Avro schema; the header gets it with the meta fields, as Hudi's."""
    key_array, part_array = _as_array(keys, pa.string()), _as_array(partitions, pa.string())
    ordering = pa.nulls(len(key_array)) if ordering_values is None else \
        _as_array(ordering_values, None)
    data = delete_records.encode_delete_records(key_array, part_array, ordering)
    content = _TWO_INTS.pack(BLOCK_CONTENT_VERSION, len(data)) + data
    return frame(BlockType.DELETE, _header(instant, with_meta_fields(schema)), content)


def encode_command_block(target_instant: str, instant: str) -> bytes:
    """A rollback command block: ``instant`` rolls back ``target_instant``'s blocks."""
    header = {HeaderKey.INSTANT_TIME: instant, HeaderKey.TARGET_INSTANT_TIME: target_instant,
              HeaderKey.COMMAND_BLOCK_TYPE: str(int(CommandType.ROLLBACK))}
    return frame(BlockType.COMMAND, header, b"")


def _content_version(f: Frame, what: str, supported: tuple[int, ...]) -> int:
    if len(f.content) < 4:
        raise LogFormatError(f"{what} block at byte {f.offset}: no content version")
    (version,) = struct.unpack_from(">i", f.content, 0)
    if version not in supported:
        raise LogFormatError(f"{what} block at byte {f.offset}: content version {version} "
                             f"is not supported (only {supported})")
    return version


def decode(f: Frame) -> Block:
    """The block a frame holds, its content decoded."""
    common = {"block_type": f.block_type, "header": f.header, "footer": f.footer,
              "offset": f.offset, "size": f.size}
    if f.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
        if HeaderKey.SCHEMA not in f.header:
            raise LogFormatError(f"data block at byte {f.offset} has no SCHEMA header")
        fields = parse_fields(f.header[HeaderKey.SCHEMA])
        if f.block_type == BlockType.PARQUET_DATA:
            # ParquetFile, single-threaded: pq.read_table goes through pyarrow.dataset,
            # whose scanner thread (started even with use_threads=False) aborted the
            # interpreter at exit under load (tests/test_hudi_log.py)
            records = pq.ParquetFile(pa.BufferReader(f.content)).read(use_threads=False)
        else:
            # versions 2 and 3 share this layout (HoodieAvroDataBlockVersion.hasRecordCount)
            _content_version(f, "Avro data", (2, 3))
            (count,) = struct.unpack_from(">i", f.content, 4)
            records = avro_decode.decode_records(f.content, 8, count, fields)
        return DataBlock(**common, records=records)
    if f.block_type == BlockType.DELETE:
        # versions 1 and 2 are Kryo-serialized Java objects, unreadable outside the JVM
        _content_version(f, "delete", (3,))
        (length,) = struct.unpack_from(">i", f.content, 4)
        if length != len(f.content) - 8:
            raise LogFormatError(f"delete block at byte {f.offset}: its records take "
                                 f"{length} bytes of {len(f.content) - 8}")
        keys, parts, ordering = delete_records.decode_delete_records(bytes(f.content[8:]))
        return DeleteBlock(**common, keys=keys, partitions=parts, ordering_values=ordering)
    if f.block_type == BlockType.COMMAND:
        try:
            command = CommandType(int(f.header[HeaderKey.COMMAND_BLOCK_TYPE]))
            target = f.header[HeaderKey.TARGET_INSTANT_TIME]
        except (KeyError, ValueError):
            raise LogFormatError(f"command block at byte {f.offset}: no rollback command "
                                 "and target instant in its header") from None
        return CommandBlock(**common, command=command, target_instant=target)
    return RawBlock(**common, content=bytes(f.content))
