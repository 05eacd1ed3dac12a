"""Write configs of the table, not of its index: the table type and merge-on-read's knobs.

``--set`` takes them beside the index's parameters, under Hudi's keys. The table type is
stored in ``hoodie.properties`` when the table is created and fixed from then on; the
others are a writer's settings, as in Hudi, and may change from run to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tableformat.errors import TableConfigError
from tableformat.table_type import COPY_ON_WRITE, MERGE_ON_READ, TABLE_TYPE, check_table_type

MAX_FILE_SIZE = 125829120  # hoodie.parquet.max.file.size
LOG_BLOCK_FORMAT = "hoodie.logfile.data.block.format"
COMPACT_INLINE = "hoodie.compact.inline"
MAX_DELTA_COMMITS = "hoodie.compact.inline.max.delta.commits"
BLOCK_FORMATS = ("avro", "parquet")
KEYS = (TABLE_TYPE, LOG_BLOCK_FORMAT, COMPACT_INLINE, MAX_DELTA_COMMITS)


@dataclass(frozen=True)
class WriteConfig:
    """``table_type`` None: the table's own (COPY_ON_WRITE for a new table).

    ``compact_inline`` is the harness's default on merge-on-read (Hudi's own default is
    false: Hudi leaves compaction to an asynchronous service, which a benchmark run
    would have to schedule itself to keep its tables bounded)."""

    table_type: str | None = None
    log_block_format: str = "avro"  # Hudi's default: HoodieAvroDataBlock
    compact_inline: bool = True
    max_delta_commits: int = 5  # Hudi's default

    @classmethod
    def pop_from(cls, params: dict[str, Any]) -> WriteConfig:
        """Take this config's keys out of ``params`` (the rest are the index's)."""
        given = {k: params.pop(k) for k in KEYS if k in params}
        return cls.parse(given)

    @classmethod
    def parse(cls, given: Mapping[str, Any]) -> WriteConfig:
        """The config from Hudi's keys; one clear error per bad value."""
        out: dict[str, Any] = {}
        if TABLE_TYPE in given:
            out["table_type"] = check_table_type(str(given[TABLE_TYPE]))
        if LOG_BLOCK_FORMAT in given:
            fmt = str(given[LOG_BLOCK_FORMAT]).lower()
            if fmt not in BLOCK_FORMATS:
                raise TableConfigError(f"{LOG_BLOCK_FORMAT}={given[LOG_BLOCK_FORMAT]!r}: "
                                       f"one of {', '.join(BLOCK_FORMATS)}")
            out["log_block_format"] = fmt
        if COMPACT_INLINE in given:
            value = str(given[COMPACT_INLINE]).lower()
            if value not in ("true", "false"):
                raise TableConfigError(f"{COMPACT_INLINE} must be true or false, "
                                       f"not {given[COMPACT_INLINE]!r}")
            out["compact_inline"] = value == "true"
        if MAX_DELTA_COMMITS in given:
            try:
                n = int(str(given[MAX_DELTA_COMMITS]))
            except ValueError:
                n = 0
            if n < 1:
                raise TableConfigError(f"{MAX_DELTA_COMMITS} must be a whole number >= 1, "
                                       f"not {given[MAX_DELTA_COMMITS]!r}")
            out["max_delta_commits"] = n
        return cls(**out)

    def resolved_type(self, stored: str | None) -> str:
        """The type a table gets: the stored one, else the asked one, else copy-on-write."""
        return stored or self.table_type or COPY_ON_WRITE

    @property
    def merge_on_read(self) -> bool:
        return self.table_type == MERGE_ON_READ
