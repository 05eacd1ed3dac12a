"""Log file names: ``.{fileId}_{baseInstant}.log.{version}_{writeToken}``.

Hudi 0.14/0.15 make them with ``FSUtils.makeLogFileName`` (prefix ``.``, the file id,
``_``, the *base instant* of the file slice the log belongs to — not the delta commit's
instant —, the ``.log`` extension, ``.``, the version, ``_`` and the write token) and
parse them with ``FSUtils.LOG_FILE_PATTERN``, reproduced here unchanged so a name this
module accepts is one Hudi accepts. Versions start at 1 (``LOGFILE_BASE_VERSION``); a
writer that finds the file already there rolls over to the next version
(``HoodieLogFormatWriter.getOutputStream``), so Hudi never appends to another writer's
log file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tableformat.hudi_log.constants import BASE_LOG_VERSION, LOG_EXTENSION

# FSUtils.LOG_FILE_PATTERN (Hudi 0.14/0.15), used there with Matcher.find() from "^".
LOG_FILE_PATTERN = re.compile(
    r"^\.(.+)_(.*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(.cdc)?)?")
_WRITE_TOKEN = re.compile(r"^\d+-\d+-\d+$")


@dataclass(frozen=True)
class LogFileName:
    """A log file's name parsed into Hudi's parts (``write_token`` is
    ``{taskPartitionId}-{stageId}-{taskAttemptId}``)."""

    file_id: str
    base_instant: str
    version: int = BASE_LOG_VERSION
    write_token: str = "0-0-0"

    def __post_init__(self) -> None:
        if self.version < BASE_LOG_VERSION:
            raise ValueError(f"log versions start at {BASE_LOG_VERSION}, not {self.version}")
        if not _WRITE_TOKEN.match(self.write_token):
            raise ValueError(f"write token {self.write_token!r} is not Hudi's "
                             "'<partition>-<stage>-<attempt>'")
        if "_" in self.file_id or not self.file_id:
            # Hudi's pattern would split such an id at the wrong underscore
            raise ValueError(f"file id {self.file_id!r} must be non-empty, without '_'")
        if "." in self.base_instant or "_" in self.base_instant:
            raise ValueError(f"base instant {self.base_instant!r} is not an instant time")

    @property
    def name(self) -> str:
        """``FSUtils.makeLogFileName(fileId, ".log", baseInstant, version, writeToken)``."""
        return (f".{self.file_id}_{self.base_instant}.{LOG_EXTENSION}."
                f"{self.version}_{self.write_token}")

    def __str__(self) -> str:
        return self.name

    def next_version(self, write_token: str | None = None) -> LogFileName:
        """The name a writer rolls over to (``HoodieLogFile.rollOver``): version + 1."""
        return LogFileName(self.file_id, self.base_instant, self.version + 1,
                           write_token or self.write_token)

    @classmethod
    def parse(cls, name: str) -> LogFileName:
        """Parse a log file name (or a path ending in one) with Hudi's own pattern.

        Refuses archive logs, CDC logs and names without a write token, which Hudi's
        pattern allows but a data table version 6 never holds."""
        base = name.rsplit("/", 1)[-1]
        m = LOG_FILE_PATTERN.match(base)
        if not m or m.end() != len(base):
            raise ValueError(f"not a Hudi log file name: {name!r}")
        if m[3] != LOG_EXTENSION or m[6] is None or m[10] is not None:
            raise ValueError(f"not a data log file name (archive, CDC or no write token): "
                             f"{name!r}")
        return cls(m[1], m[2], int(m[4]), m[6])


def is_log_file(name: str) -> bool:
    """Whether a file name (or path) is a data log file name Hudi would list."""
    try:
        LogFileName.parse(name)
    except ValueError:
        return False
    return True
