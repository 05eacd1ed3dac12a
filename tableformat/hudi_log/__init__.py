"""Hudi's log file format (table version 6, as Hudi 0.14/0.15 write it), Spark-free.

Merge-on-read tables keep a file group's updates and deletes in log files next to its
base file: ``.{fileId}_{baseInstant}.log.{version}_{writeToken}``, each a sequence of
blocks (``#HUDI#`` magic, lengths, header, content, footer). This package writes those
files byte for byte as Hudi does and reads them back, with the Avro record encoding and
decoding vectorized (numpy + Arrow, no Python loop over records when encoding).

Modules, one job each: :mod:`.constants` (Hudi's ordinals), :mod:`.names` (file
names), :mod:`.schema` (the block schema), :mod:`.avro_encode` / :mod:`.avro_decode`
(records), :mod:`.delete_records` (delete block content), :mod:`.framing` (block bytes
and the corruption rule), :mod:`.blocks` (the four block kinds), :mod:`.log_file`
(files on a pyarrow file system).
"""

from tableformat.hudi_log.blocks import (
    Block,
    CommandBlock,
    DataBlock,
    DeleteBlock,
    RawBlock,
    encode_command_block,
    encode_data_block,
    encode_delete_block,
)
from tableformat.hudi_log.constants import (
    BLOCK_CONTENT_VERSION,
    LOG_FORMAT_VERSION,
    MAGIC,
    BlockType,
    CommandType,
    HeaderKey,
)
from tableformat.hudi_log.framing import CorruptBlockError, LogFormatError
from tableformat.hudi_log.log_file import parse_log_bytes, read_log_file, write_log_file
from tableformat.hudi_log.names import LOG_FILE_PATTERN, LogFileName, is_log_file
from tableformat.hudi_log.schema import META_FIELDS, UnsupportedAvroSchema, with_meta_fields

__all__ = [
    "BLOCK_CONTENT_VERSION", "LOG_FILE_PATTERN", "LOG_FORMAT_VERSION", "MAGIC", "META_FIELDS",
    "Block", "BlockType", "CommandBlock", "CommandType", "CorruptBlockError", "DataBlock",
    "DeleteBlock", "HeaderKey", "LogFileName", "LogFormatError", "RawBlock",
    "UnsupportedAvroSchema", "encode_command_block", "encode_data_block",
    "encode_delete_block", "is_log_file", "parse_log_bytes", "read_log_file",
    "with_meta_fields", "write_log_file",
]
