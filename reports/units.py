"""The unit of a metrics column, from its name (the contract's naming: ``*_s`` seconds,
``*bytes*`` bytes, ...), so every table a report or the CLI prints says what a number
counts."""

from __future__ import annotations

# (test on the column name, unit), first match wins
_RULES: tuple[tuple[str, str, str], ...] = (
    ("suffix", "_ms", "ms"),
    ("suffix", "_s", "s"),
    ("contains", "bytes", "bytes"),
    ("suffix", "_rate", "fraction"),
    ("suffix", "_cov", "CoV"),
    ("suffix", "_ratio", "×"),
    ("suffix", "_amplification", "×"),
    ("contains", "files", "files"),
    ("contains", "footers", "footers"),
    ("prefix", "bloom_", "probes"),
    ("contains", "positives", "probes"),
    ("contains", "bucket_records", "records"),
    ("contains", "buckets", "buckets"),
    ("contains", "partitions", "partitions"),
    ("contains", "keys", "keys"),
    ("contains", "records", "records"),
    ("suffix", "inserts", "records"),
    ("suffix", "updates", "records"),
    ("suffix", "deletes", "records"),
)


def unit_of(column: str) -> str:
    """The unit of ``column`` (``model_<c>`` has ``c``'s), or "count"."""
    name = column.removeprefix("model_")
    for how, part, unit in _RULES:
        if (how == "suffix" and name.endswith(part)) or (how == "prefix" and name.startswith(
                part)) or (how == "contains" and part in name):
            return unit
    return "count"


def with_unit(column: str) -> str:
    """``column (unit)``: a table row's label."""
    return f"{column} ({unit_of(column)})"


def human_bytes(v: float, spec: str = ",.1f") -> str:
    """Bytes in the largest binary unit they fill (``14.7 KiB``, ``1.39 GiB`` with
    ``spec=".3g"``); below a KiB, whole bytes."""
    for div, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if v >= div:
            return f"{v / div:{spec}} {unit}"
    return f"{v:,.0f} B"
