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

The batch's validation job brings the batch's distinct partition values to the driver
anyway (the write plans per partition), so the rules run there, in Python, once per
distinct value (:func:`refusals`), not once per record. With them two distinct values
always name two distinct folders on a case-sensitive file system (on a case-insensitive
one ``P`` and ``p`` still collide: docs/driver.md, "Partition values").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_BYTES = 1024  # the whole value, UTF-8 (PATH_MAX is 4096 with the table root in it)
MAX_SEGMENT_BYTES = 255  # one folder name, UTF-8 (NAME_MAX of ext4, xfs, APFS)
# C0 controls, DEL and C1 controls
CONTROL_CLASS = r"[\x00-\x1f\x7f-\x9f]"
_CONTROL = re.compile(CONTROL_CLASS)


@dataclass(frozen=True)
class Rule:
    """One rule: its name and what a refused value has."""

    name: str
    message: str


RULES = (
    Rule("empty_partition", "an empty value"),
    Rule("empty_segment", "an empty path segment (a leading, trailing or doubled '/')"),
    Rule("dot_segment", "a '.' or '..' path segment"),
    Rule("hidden_segment", "a path segment starting with '.' or '_' (reserved: .hoodie, "
                           ".hoodie_partition_metadata; skipped by Hadoop and Spark readers)"),
    Rule("control_char", "a control character"),
    Rule("colon", "a ':' (Hadoop's Path reads it as a URI scheme and HDFS refuses it; "
                  "Hive escapes it as %3A)"),
    Rule("too_long", f"over {MAX_BYTES} bytes (UTF-8)"),
    Rule("segment_too_long", f"a path segment over {MAX_SEGMENT_BYTES} bytes (UTF-8)"),
)
_MESSAGE = {r.name: r.message for r in RULES}
EXAMPLES = 3  # offending values a refusal quotes per rule


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
    if ":" in value:
        found.append("colon")
    if len(value.encode()) > MAX_BYTES:
        found.append("too_long")
    if any(len(s.encode()) > MAX_SEGMENT_BYTES for s in segments):
        found.append("segment_too_long")
    return found


def refusals(values: Iterable[str]) -> list[str]:
    """One phrase per rule that some of ``values`` break, quoting a few of them."""
    broken: dict[str, list[str]] = {}
    for value in sorted(set(values)):
        for name in problems(value):
            broken.setdefault(name, []).append(value)
    out = []
    for rule in RULES:
        vals = broken.get(rule.name)
        if vals:
            more = f" and {len(vals) - EXAMPLES} more" if len(vals) > EXAMPLES else ""
            out.append(f"partition value(s) with {_MESSAGE[rule.name]}: "
                       + ", ".join(quote(v) for v in vals[:EXAMPLES]) + more)
    return out


def nesting_conflicts(values: Iterable[str], existing: Iterable[str] = ()) -> list[str]:
    """A phrase naming values of ``values`` that are a folder of another partition, or
    inside one (``a`` and ``a/b``), among themselves or with ``existing`` partitions.

    Why: readers list partitions as the leaf folders that hold data (hudi-rs) or stop at
    the first folder holding a partition metafile (Hudi's listing), so the records of one
    of two nested partitions are invisible to them."""
    new = set(values)
    every = new | set(existing)
    prefixes: dict[str, str] = {}
    for v in every:
        segs = v.split("/")
        for i in range(1, len(segs)):
            prefixes.setdefault("/".join(segs[:i]), v)
    pairs = set()
    for v in new:
        if v in prefixes:
            pairs.add((v, prefixes[v]))
        segs = v.split("/")
        pairs |= {("/".join(segs[:i]), v) for i in range(1, len(segs))
                  if "/".join(segs[:i]) in every}
    if not pairs:
        return []
    shown = sorted(pairs)[:EXAMPLES]
    more = f" and {len(pairs) - EXAMPLES} more" if len(pairs) > EXAMPLES else ""
    return ["partition value(s) nested in another partition (readers would miss one of "
            "the two): " + ", ".join(f"{quote(a)} holds {quote(b)}" for a, b in shown)
            + more]


def quote(value: str, limit: int = 60) -> str:
    """``repr`` of a value, cut short: an error stays one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 4] + "...'"
