"""What a partition value may be: a normalized relative path that names its own folder.

Why: a partition value is a folder under the table root. Two spellings of one folder
(``q/r`` and ``q//r``, ``p`` and ``./p``) in one batch become two partitions writing into
one folder, and each commit's stray-file cleanup deletes the other's files; ``.hoodie``
puts records under the timeline, hidden from every reader; a NUL or a 300-byte segment
fails inside a write task. Hudi's rule is the model (``FSUtils``/``PartitionPathEncodeUtils``):
a partition path is a relative path of non-empty segments, none ``.`` or ``..``, no
control characters, not under ``.hoodie``. On top of Hudi's rule, names Hadoop and Spark
readers skip (a segment starting with ``.`` or ``_``) are refused, and the lengths are
bounded by what a POSIX file system holds.

The rules are checked in the batch's validation job (:func:`indexbench.driver.validate_batch`
builds one Spark expression per rule from :data:`RULES`) and, Spark-free, by
:func:`problems` for callers without Spark. With them two distinct values always name two
distinct folders on a case-sensitive file system (on a case-insensitive one ``P`` and
``p`` still collide: README, "Partition values").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_BYTES = 1024  # the whole value, UTF-8 (PATH_MAX is 4096 with the table root in it)
MAX_SEGMENT_BYTES = 255  # one folder name, UTF-8 (NAME_MAX of ext4, xfs, APFS)
# C0 controls, DEL and C1 controls; as a Java regex class for Spark's rlike as well
CONTROL_CLASS = r"[\x00-\x1f\x7f-\x9f]"
_CONTROL = re.compile(CONTROL_CLASS)


@dataclass(frozen=True)
class Rule:
    """One rule: its name (an aggregate's alias) and what a refused record has."""

    name: str
    message: str


RULES = (
    Rule("empty_partition", "a null or empty partition value"),
    Rule("empty_segment", "a partition value with an empty path segment (a leading, "
                          "trailing or doubled '/')"),
    Rule("dot_segment", "a partition value with a '.' or '..' path segment"),
    Rule("hidden_segment", "a partition value with a path segment starting with '.' or '_' "
                           "(reserved: .hoodie, .hoodie_partition_metadata; skipped by Hadoop "
                           "and Spark readers)"),
    Rule("control_char", "a partition value with a control character"),
    Rule("too_long", f"a partition value over {MAX_BYTES} bytes (UTF-8)"),
    Rule("segment_too_long", f"a partition value with a path segment over "
                             f"{MAX_SEGMENT_BYTES} bytes (UTF-8)"),
)


def problems(value: str | None) -> list[str]:
    """Names of the rules ``value`` breaks (empty: a valid partition value)."""
    if value is None or value == "":
        return ["empty_partition"]
    segments = value.split("/")
    found = []
    if any(s == "" for s in segments):
        found.append("empty_segment")
    if any(s in (".", "..") for s in segments):
        found.append("dot_segment")
    if any(s[:1] in (".", "_") and s not in (".", "..") for s in segments):
        found.append("hidden_segment")
    if _CONTROL.search(value):
        found.append("control_char")
    if len(value.encode()) > MAX_BYTES:
        found.append("too_long")
    if any(len(s.encode()) > MAX_SEGMENT_BYTES for s in segments):
        found.append("segment_too_long")
    return found
