"""A log block's frame, byte for byte as ``HoodieLogFormatWriter.appendBlocks`` (Hudi
0.14/0.15) writes it, and the reader's corruption rule of ``HoodieLogFileReader``.

A block (all integers big-endian, Java ``DataOutputStream``)::

    #HUDI#                      magic, 6 bytes
    long  block length          everything after this field up to the block's end
    int   log format version    1
    int   block type            HoodieLogBlockType ordinal
    header                      int count, then per entry: int key ordinal, int byte
                                length, UTF-8 value (HoodieLogBlock.getLogMetadataBytes)
    long  content length
    content
    footer                      same encoding as the header (Hudi writes it empty)
    long  total length          block length + 6: the bytes written before this field,
                                magic included (the writer takes the stream's size
                                just before writing it; the reader subtracts the magic)

so ``block length = 4 + 4 + header + 8 + content + footer + 8``
(``HoodieLogFormatWriter.getLogBlockLength``) and the whole block is ``6 + 8 + block
length`` bytes.

Header entry order: Hudi iterates a ``HashMap<HeaderMetadataType, String>``, whose
order follows the enum constants' identity hash codes — it differs between JVM runs
(Hudi's own files show ``SCHEMA`` before or after ``INSTANT_TIME``). Readers look
entries up by key. Blocks written here list them in ordinal order, one of the orders
Hudi writes; :func:`frame` keeps any other order it is given.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from tableformat.hudi_log.constants import LOG_FORMAT_VERSION, MAGIC, BlockType, HeaderKey

_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_TWO_INTS = struct.Struct(">ii")


class LogFormatError(ValueError):
    """Bytes that are not a well-formed Hudi log file (bad magic, version, header)."""


class CorruptBlockError(LogFormatError):
    """A block Hudi's reader would call corrupt (``HoodieLogFileReader.isBlockCorrupt``):
    its length runs past the end of the file, its trailing length disagrees, or what
    follows it is neither another block nor the end of the file — what a writer that
    died mid-block leaves. Hudi skips such a block as a ``HoodieCorruptBlock``."""

    def __init__(self, path: str, offset: int, reason: str):
        super().__init__(f"{path}: corrupt log block at byte {offset}: {reason}")
        self.path, self.offset, self.reason = path, offset, reason


def metadata_bytes(entries: Mapping[HeaderKey, str]) -> bytes:
    """``HoodieLogBlock.getLogMetadataBytes``: count, then (ordinal, length, UTF-8)."""
    out = [_INT.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        out += [_TWO_INTS.pack(int(key), len(raw)), raw]
    return b"".join(out)


def frame(block_type: BlockType, header: Mapping[HeaderKey, str],
          content: bytes | Sequence[bytes | memoryview | pa.Buffer],
          footer: Mapping[HeaderKey, str] | None = None) -> bytes:
    """One whole block: magic, lengths, version, type, header, content, footer.

    ``content`` may be given in parts (joined once, straight into the block: a large
    data block is copied once, not once per layer)."""
    parts = [content] if isinstance(content, bytes | bytearray) else list(content)
    size = sum(memoryview(p).nbytes for p in parts)
    head, foot = metadata_bytes(header), metadata_bytes(footer or {})
    length = 4 + 4 + len(head) + 8 + size + len(foot) + 8
    if len(MAGIC) + 8 + length >= 2**31 - 1:
        # HoodieLogFormatWriter: "Blocks appended may overflow"; readers cast to int
        raise LogFormatError("a log block must stay under 2 GiB: split its records")
    return b"".join([MAGIC, _LONG.pack(length), _TWO_INTS.pack(LOG_FORMAT_VERSION, block_type),
                     head, _LONG.pack(size), *parts, foot, _LONG.pack(length + len(MAGIC))])


@dataclass(frozen=True)
class Frame:
    """A block's frame as read: where it is, its type, header, footer and content."""

    offset: int  # of the magic
    size: int  # bytes, magic to trailing length included
    block_type: BlockType
    header: dict[HeaderKey, str]
    footer: dict[HeaderKey, str]
    content: memoryview


def _metadata(data: memoryview, p: int, end: int, what: str) -> tuple[dict[HeaderKey, str], int]:
    if p + 4 > end:
        raise LogFormatError(f"the block's {what} runs past the block")
    (count,) = _INT.unpack_from(data, p)
    p += 4
    out: dict[HeaderKey, str] = {}
    for _ in range(count):
        if p + 8 > end:
            raise LogFormatError(f"the block's {what} runs past the block")
        key, n = _TWO_INTS.unpack_from(data, p)
        p += 8
        if n < 0 or p + n > end:
            raise LogFormatError(f"a {what} value runs past the block")
        try:
            out[HeaderKey(key)] = bytes(data[p:p + n]).decode("utf-8")
        except ValueError:
            raise LogFormatError(f"{what} key ordinal {key} is not one of Hudi's "
                                 "HeaderMetadataType (or its value is not UTF-8)") from None
        p += n
    return out, p


def corruption(data: memoryview, offset: int) -> str | None:
    """Why the block at ``offset`` is corrupt by ``HoodieLogFileReader``'s rule, or None.

    The rule, in Hudi's order: the length after the magic must be readable, the block it
    announces must end within the file, its last 8 bytes must hold that length + 6, and
    after it must come the end of the file or another magic (Hudi also accepts fewer
    than 6 trailing bytes as the end)."""
    size = len(data)
    start = offset + len(MAGIC)
    if start + 8 > size:
        return "the file ends inside the block length"
    (length,) = _LONG.unpack_from(data, start)
    end = start + 8 + length
    if length < 8 or end > size:
        return f"its length {length} runs past the end of the file ({size} bytes)"
    (trailer,) = _LONG.unpack_from(data, end - 8)
    if trailer - len(MAGIC) != length:
        return f"its trailing length {trailer} does not match its length {length} + 6"
    if size - end >= len(MAGIC) and bytes(data[end:end + len(MAGIC)]) != MAGIC:
        return "what follows it is neither the end of the file nor another block"
    return None


def next_magic(data: memoryview, offset: int) -> int:
    """``HoodieLogFileReader.scanForNextAvailableBlockOffset``: the next magic at or
    after ``offset``, or the end of the file."""
    found = bytes(data[offset:]).find(MAGIC)
    return len(data) if found < 0 else offset + found


def unframe(data: memoryview, offset: int) -> Frame:
    """Parse the (not corrupt) block at ``offset``."""
    start = offset + len(MAGIC)
    (length,) = _LONG.unpack_from(data, start)
    end = start + 8 + length
    version, kind = _TWO_INTS.unpack_from(data, start + 8)
    if version != LOG_FORMAT_VERSION:
        raise LogFormatError(f"block at byte {offset}: log format version {version} "
                             f"(Hudi 0.14/0.15 write {LOG_FORMAT_VERSION})")
    try:
        block_type = BlockType(kind)
    except ValueError:
        raise LogFormatError(f"block at byte {offset}: block type {kind} is not one of "
                             "Hudi's HoodieLogBlockType") from None
    header, p = _metadata(data, start + 16, end - 8, "header")
    if p + 8 > end - 8:
        raise LogFormatError(f"block at byte {offset}: no content length")
    (content_length,) = _LONG.unpack_from(data, p)
    p += 8
    if content_length < 0 or p + content_length > end - 8:
        raise LogFormatError(f"block at byte {offset}: content length {content_length} "
                             "runs past the block")
    content = data[p:p + content_length]
    footer, p = _metadata(data, p + content_length, end - 8, "footer")
    if p != end - 8:
        raise LogFormatError(f"block at byte {offset}: {end - 8 - p} bytes between the "
                             "footer and the trailing length")
    return Frame(offset, end - offset, block_type, header, footer, content)
