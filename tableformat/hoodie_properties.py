"""``.hoodie/hoodie.properties``: the keys Hudi writes for a table version 6, and the
Java properties file format Hudi reads it with.

Why these keys: Hudi readers validate them before reading anything (hudi-rs refuses a
table without ``hoodie.timeline.layout.version``; Hudi checks ``hoodie.table.checksum``),
and the rest say how to interpret the files (instants in UTC, plain partition folders,
partition metafiles as properties files, the merge semantics of the writer).
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime

TABLE_VERSION = "6"
TIMELINE_LAYOUT_VERSION = "1"  # Hudi's layout for table versions below 8
CHECKSUM = "hoodie.table.checksum"
NAME = "hoodie.table.name"
DATABASE = "hoodie.database.name"

# Fixed for every table this project writes, as Hudi 0.14/0.15 (table version 6) writes
# them for a Spark copy-on-write table with a SimpleKeyGenerator.
HUDI_TABLE_PROPERTIES: dict[str, str] = {
    "hoodie.table.type": "COPY_ON_WRITE",
    "hoodie.table.version": TABLE_VERSION,
    "hoodie.timeline.layout.version": TIMELINE_LAYOUT_VERSION,
    "hoodie.table.base.file.format": "PARQUET",
    "hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.populate.meta.fields": "true",
    # instants are UTC (Hudi's default is LOCAL, which would shift them by the zone)
    "hoodie.table.timeline.timezone": "UTC",
    "hoodie.archivelog.folder": "archived",
    "hoodie.datasource.write.hive_style_partitioning": "false",
    "hoodie.datasource.write.partitionpath.urlencode": "false",
    "hoodie.datasource.write.drop.partition.columns": "false",
    "hoodie.partition.metafile.use.base.format": "false",
    "hoodie.table.cdc.enabled": "false",
    # the copy-on-write merge: larger ordering value wins, ties go to the incoming record
    "hoodie.compaction.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload",
    "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
}
# Keys Hudi itself owns (so they are table format, not index parameters).
HUDI_OWNED_KEYS = frozenset({*HUDI_TABLE_PROPERTIES, NAME, DATABASE, CHECKSUM})


def checksum(props: dict[str, str]) -> str:
    """``hoodie.table.checksum``: CRC32 of ``<database>.<table name>`` (Hudi's
    ``HoodieTableConfig.generateChecksum``), which Hudi checks on reading the file."""
    text = f"{props.get(DATABASE, '')}.{props[NAME]}"
    return str(zlib.crc32(text.encode()))


def _escape(text: str, key: bool) -> str:
    r"""Java ``Properties.store`` escaping: ``\``, separators, comment marks, control
    characters, non-ASCII as ``\uXXXX`` (Java reads the file as ISO-8859-1)."""
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch == " " and (key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            units = ch.encode("utf-16-be")
            out += [f"\\u{units[j] << 8 | units[j + 1]:04X}" for j in range(0, len(units), 2)]
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    """Inverse of :func:`_escape` (what Java ``Properties.load`` does with escapes)."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= len(text):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
            continue
        out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
        i += 2
    # surrogate pairs from \uXXXX\uXXXX back to one character
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def store(props: dict[str, str], comment: str) -> str:
    """Java ``Properties.store``: a comment line, a date line, ``key=value`` lines."""
    lines = [f"#{comment}", f"#{datetime.now(UTC):%a %b %d %H:%M:%S UTC %Y}"]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return "\n".join(lines) + "\n"


def render(props: dict[str, str]) -> str:
    """``hoodie.properties``' text: keys sorted, the checksum last (as Hudi writes it)."""
    props = dict(sorted((k, v) for k, v in props.items() if k != CHECKSUM))
    props[CHECKSUM] = checksum(props)
    return store(props, "Properties saved by indexbench")


def parse(text: str) -> dict[str, str]:
    """Key-value pairs of a Java properties file (``key=value`` lines, ``#``/``!``
    comments; the forms Hudi and :func:`render` write)."""
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        i = 0
        while i < len(line) and line[i] not in "=:":
            i += 2 if line[i] == "\\" else 1
        props[_unescape(line[:i].strip())] = _unescape(line[i + 1:].strip())
    return props
