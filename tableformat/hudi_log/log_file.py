"""Whole log files: blocks written to, and read back from, a pyarrow file system.

Writing: a log file is its blocks back to back, nothing before or after. Hudi 0.14/0.15
never append to a log file another writer made — ``HoodieLogFormatWriter`` rolls over to
the next version when the file exists — so :func:`write_log_file` refuses an existing
path unless told to overwrite, and the caller picks ``LogFileName.next_version()``.

Reading: blocks in file order, each checked with Hudi's corruption rule
(:func:`~tableformat.hudi_log.framing.corruption`). Hudi's reader turns a corrupt
block — typically a truncated last block left by a writer that died — into a
``HoodieCorruptBlock`` and its log scanner skips it. Here a corrupt block is one clear
:class:`~tableformat.hudi_log.framing.CorruptBlockError` by default, since the
benchmark's writer never leaves one behind a completed instant and silently dropping
records would hide a bug; ``on_corrupt="skip"`` reads as Hudi does (a ``CORRUPT``
:class:`~tableformat.hudi_log.blocks.RawBlock` up to the next magic, then on).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.fs as pafs

from tableformat.fs import IOStats
from tableformat.hudi_log.avro_decode import AvroDecodeError
from tableformat.hudi_log.blocks import Block, RawBlock, decode
from tableformat.hudi_log.constants import MAGIC, BlockType
from tableformat.hudi_log.delete_records import DeleteRecordError
from tableformat.hudi_log.framing import (
    CorruptBlockError,
    LogFormatError,
    corruption,
    next_magic,
    unframe,
)


def write_log_file(fs: pafs.FileSystem, path: str, blocks: Iterable[bytes],
                   overwrite: bool = False) -> int:
    """Write encoded blocks as one log file; returns its size in bytes."""
    if not overwrite and fs.get_file_info(path).type != pafs.FileType.NotFound:
        raise FileExistsError(f"{path} exists: Hudi writes the next log version instead "
                              "of appending to another writer's log file")
    size = 0
    with fs.open_output_stream(path) as out:
        for block in blocks:
            if not block.startswith(MAGIC):
                raise LogFormatError("not an encoded log block (no #HUDI# magic)")
            out.write(block)
            size += len(block)
    return size


def parse_log_bytes(data: bytes | memoryview, path: str = "<bytes>",
                    on_corrupt: str = "raise") -> list[Block]:
    """Every block of a log file's bytes, decoded (see the module doc for corruption)."""
    if on_corrupt not in ("raise", "skip"):
        raise ValueError(f"on_corrupt={on_corrupt!r}: use 'raise' or 'skip'")
    view = memoryview(data)
    blocks: list[Block] = []
    p = 0
    while len(view) - p >= len(MAGIC):  # fewer bytes are the end (Hudi's readMagic)
        if bytes(view[p:p + len(MAGIC)]) != MAGIC:
            raise LogFormatError(f"{path}: no #HUDI# magic at byte {p}")
        reason = corruption(view, p)
        if reason is not None:
            if on_corrupt == "raise":
                raise CorruptBlockError(path, p, reason)
            start = p + len(MAGIC)
            end = next_magic(view, start)
            blocks.append(RawBlock(block_type=BlockType.CORRUPT, header={}, footer={},
                                   offset=p, size=end - p, content=bytes(view[start:end])))
            p = end
            continue
        try:
            frame = unframe(view, p)
            blocks.append(decode(frame))
        except (LogFormatError, AvroDecodeError, DeleteRecordError, pa.ArrowException) as e:
            raise LogFormatError(f"{path}: block at byte {p}: {e}") from None
        p += frame.size
    return blocks


def read_log_file(fs: pafs.FileSystem, path: str, on_corrupt: str = "raise",
                  stats: IOStats | None = None) -> list[Block]:
    """Every block of the log file at ``path``, decoded; the file and its bytes are
    counted in ``stats`` (merge-on-read's read amplification, next to base files')."""
    with fs.open_input_file(path) as f:
        data = f.read()
    if stats is not None:
        stats.files_read += 1
        stats.bytes_read += len(data)
        stats.paths.append(path)
    return parse_log_bytes(data, path, on_corrupt)
