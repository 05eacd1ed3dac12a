"""The numbers of Hudi's log format (table version 6, Hudi 0.14/0.15), as Hudi defines them.

Every value here is serialized by Hudi as an ordinal or a literal, so it is fixed by
Hudi's source, not chosen here:

- ``HoodieLogFormat.MAGIC`` (``#HUDI#``) opens every block;
- ``HoodieLogFormat.CURRENT_VERSION`` (1) is the *log format* version after the length;
- ``HoodieLogBlock.version`` (3 since Hudi 0.14, HUDI-5760) is the *block content*
  version at the start of an Avro data block's and a delete block's content;
- ``HoodieLogBlockType`` and ``HeaderMetadataType`` are written as their ordinals
  (Hudi: "This enum is serialized as the ordinal. Only add new enums at the end.");
- ``HoodieCommandBlock.HoodieCommandBlockTypeEnum.ROLLBACK_BLOCK`` is written as the
  decimal string of its ordinal (``"0"``) under ``COMMAND_BLOCK_TYPE``.
"""

from __future__ import annotations

from enum import IntEnum

MAGIC = b"#HUDI#"
LOG_FORMAT_VERSION = 1  # HoodieLogFormat.CURRENT_VERSION
BLOCK_CONTENT_VERSION = 3  # HoodieLogBlock.version (Avro data and delete block content)
LOG_EXTENSION = "log"  # HoodieFileFormat.HOODIE_LOG.getFileExtension() without its dot
BASE_LOG_VERSION = 1  # HoodieLogFile.LOGFILE_BASE_VERSION


class BlockType(IntEnum):
    """``HoodieLogBlock.HoodieLogBlockType``: the int after the log format version."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2  # never written: what a reader makes of bytes it cannot frame
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """``HoodieLogBlock.HeaderMetadataType``: the key ordinal of a header/footer entry."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6


class CommandType(IntEnum):
    """``HoodieCommandBlock.HoodieCommandBlockTypeEnum``."""

    ROLLBACK = 0
