"""Workload description: a named, seeded, reproducible spec, plus TOML presets.

A `Workload` is all a batch generator needs; everything else (keys, ordinals, timestamps)
is a pure function of it, so a run can be regenerated anywhere (driver, Spark executors,
simulator) from the spec alone.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from indexes.suggest import did_you_mean

DISTRIBUTIONS = ("uniform", "zipfian", "scrambled_zipfian", "latest", "hotspot", "sequential")
KEY_FORMATS = ("uuid", "time-ordered", "ycsb")
GROWTHS = ("constant", "accelerating")
KEYSPACES = ("ycsb", "existing-per-batch")
# update_fraction + delete_fraction may exceed 1 by float rounding only (0.7 + 0.3 is 1.0,
# but a sum of three decimal fractions need not be)
FRACTION_SLACK = 1e-9


@dataclass(frozen=True)
class Workload:
    """An upsert workload: an initial load (batch 0) followed by `batches` mixed batches.

    Fields are documented in docs/workloads.md; `__post_init__` refuses
    values that would make the generator silently wrong (the message names the field).

    `keyspace` is the range the update-key chooser draws over (generator.update_keyspace):
    "ycsb" (default) fixes it for the whole run as YCSB's CoreWorkload.init does --
    `initial_records` keys for uniform / hotspot / sequential, `initial_records +
    int(2.0 * run inserts) + 1` for zipfian / scrambled_zipfian, a draw of a key not
    inserted yet being redrawn -- so the hot set stays put from batch to batch;
    "existing-per-batch" draws every batch over all the keys existing before it (the
    behaviour before this field existed). `latest` follows the newest key either way.

    `delete_fraction` is YCSB's operation proportion for deletes: the share of a mixed
    batch's rows that delete an existing key, chosen as an update's key is. Inserts get
    `1 - update_fraction - delete_fraction` (scaled by `growth`); the other rows are split
    updates : deletes = update_fraction : delete_fraction (generator._block). With a
    delete_fraction > 0 every batch carries a `_hoodie_is_deleted` column
    (generator.DELETE_COLUMN); with 0 (the default) the batches are those of before.
    """

    name: str = "custom"
    seed: int = 42
    initial_records: int = 100_000
    batches: int = 5
    batch_size: int = 20_000
    update_fraction: float = 0.5
    delete_fraction: float = 0.0
    distribution: str = "uniform"
    zipfian_constant: float = 0.99
    hotspot_set_fraction: float = 0.2
    hotspot_opn_fraction: float = 0.8
    keyspace: str = "ycsb"
    key_format: str = "uuid"
    partitions: int = 4
    partition_skew: float = 0.0
    late_arrival_share: float = 0.0
    late_arrival_depth: int = 3
    growth: str = "constant"
    index_key_cardinality: int = 0
    index_key_skew: float = 0.0
    payload_bytes: int = 64
    start_date: str = "2026-01-01"
    description: str = ""

    def __post_init__(self) -> None:
        _validate(self)

    def with_overrides(self, **kw: Any) -> Workload:
        """A copy with some fields replaced, validated like a fresh one."""
        _check_names(kw, "override")
        return dataclasses.replace(self, **kw)

    def to_toml(self) -> str:
        """TOML text that `load` reads back to an equal Workload (name from the file stem)."""
        lines = []
        for f in fields(self):
            if f.name == "name":
                continue
            lines.append(f"{f.name} = {_toml_value(getattr(self, f.name))}")
        return "\n".join(lines) + "\n"

    def dump(self, path: str | Path) -> Path:
        """Write `to_toml()` to `path`; the file stem becomes the name when loaded."""
        p = Path(path)
        p.write_text(self.to_toml(), encoding="utf-8")
        return p

    @property
    def start(self) -> _dt.date:
        """`start_date` parsed (validated in __post_init__)."""
        return _dt.date.fromisoformat(self.start_date)


_FIELD_TYPES: dict[str, type] = {
    "name": str,
    "seed": int,
    "initial_records": int,
    "batches": int,
    "batch_size": int,
    "update_fraction": float,
    "delete_fraction": float,
    "distribution": str,
    "zipfian_constant": float,
    "hotspot_set_fraction": float,
    "hotspot_opn_fraction": float,
    "keyspace": str,
    "key_format": str,
    "partitions": int,
    "partition_skew": float,
    "late_arrival_share": float,
    "late_arrival_depth": int,
    "growth": str,
    "index_key_cardinality": int,
    "index_key_skew": float,
    "payload_bytes": int,
    "start_date": str,
    "description": str,
}


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def _check_names(kw: dict[str, Any], what: str) -> None:
    for k in kw:
        if k not in _FIELD_TYPES:
            raise ValueError(f"unknown workload field {k!r} ({what})")


def _validate(w: Workload) -> None:
    for f in fields(w):
        v = getattr(w, f.name)
        t = _FIELD_TYPES[f.name]
        ok = (
            isinstance(v, t) and not isinstance(v, bool)
            if t is int
            else (isinstance(v, (int, float)) and not isinstance(v, bool))
            if t is float
            else isinstance(v, t)
        )
        if not ok:
            raise ValueError(f"{f.name}: expected {t.__name__}, got {v!r}")
        if t is float and not math.isfinite(v):
            raise ValueError(f"{f.name}: must be finite, got {v!r}")
    for name in ("seed", "initial_records", "batches", "batch_size", "payload_bytes",
                 "late_arrival_depth", "index_key_cardinality"):
        if getattr(w, name) < 0:
            raise ValueError(f"{name}: must be >= 0, got {getattr(w, name)!r}")
    if w.partitions < 1:
        raise ValueError(f"partitions: must be >= 1, got {w.partitions!r}")
    for name in ("update_fraction", "delete_fraction", "hotspot_set_fraction",
                 "hotspot_opn_fraction", "late_arrival_share"):
        v = getattr(w, name)
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name}: must be in [0, 1], got {v!r}")
    if w.update_fraction + w.delete_fraction > 1.0 + FRACTION_SLACK:
        raise ValueError(
            f"update_fraction + delete_fraction: must be <= 1 (inserts get the rest), "
            f"got {w.update_fraction!r} + {w.delete_fraction!r}"
        )
    for name in ("partition_skew", "index_key_skew"):
        if getattr(w, name) < 0:
            raise ValueError(f"{name}: must be >= 0, got {getattr(w, name)!r}")
    if w.zipfian_constant <= 0 or w.zipfian_constant == 1.0:
        raise ValueError(
            f"zipfian_constant: must be > 0 and != 1 (Gray's alpha = 1/(1-theta)), "
            f"got {w.zipfian_constant!r}"
        )
    if w.distribution not in DISTRIBUTIONS:
        raise ValueError(
            f"distribution: unknown {w.distribution!r}, expected one of {DISTRIBUTIONS}"
        )
    if w.keyspace not in KEYSPACES:
        raise ValueError(f"keyspace: unknown {w.keyspace!r}, expected one of {KEYSPACES}")
    if w.key_format not in KEY_FORMATS:
        raise ValueError(f"key_format: unknown {w.key_format!r}, expected one of {KEY_FORMATS}")
    if w.growth not in GROWTHS:
        raise ValueError(f"growth: unknown {w.growth!r}, expected one of {GROWTHS}")
    if w.late_arrival_share > 0 and w.late_arrival_depth < 1:
        raise ValueError("late_arrival_depth: must be >= 1 when late_arrival_share > 0")
    if w.seed >= 2**63:
        raise ValueError(f"seed: must be < 2**63, got {w.seed!r}")
    try:
        _dt.date.fromisoformat(w.start_date)
    except ValueError:
        raise ValueError(f"start_date: not an ISO date (YYYY-MM-DD): {w.start_date!r}") from None


# --------------------------------------------------------------------------- presets


def _preset_dir():
    return resources.files("workloads").joinpath("presets")


def _from_mapping(data: dict[str, Any], name: str, source: str) -> Workload:
    for k in data:
        if k not in _FIELD_TYPES or k == "name":
            raise ValueError(f"unknown workload field {k!r} in {source}")
    return Workload(name=name, **data)


def presets() -> dict[str, Workload]:
    """All shipped presets (workloads/presets/*.toml), by name, sorted."""
    out: dict[str, Workload] = {}
    for entry in sorted(_preset_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            name = entry.name[: -len(".toml")]
            data = tomllib.loads(entry.read_text(encoding="utf-8"))
            out[name] = _from_mapping(data, name, f"preset {entry.name}")
    return out


def describe(name: str) -> str:
    """One line for `indexbench list` (which shows the name apart): description + figures."""
    w = presets()[name] if name in presets() else load(name)
    deletes = f"{w.delete_fraction:.0%} deletes, " if w.delete_fraction > 0 else ""
    return (
        f"{w.description or 'no description'} "
        f"[{w.initial_records:,} initial + {w.batches}x{w.batch_size:,}, "
        f"{w.update_fraction:.0%} updates, {deletes}{w.distribution}, {w.key_format} keys, "
        f"{w.partitions} partitions]"
    )


def load(name_or_path: str | Path, **overrides: Any) -> Workload:
    """A preset by name, or a TOML file by path, with optional field overrides."""
    _check_names(overrides, "override")
    s = str(name_or_path)
    p = Path(s)
    if s.endswith(".toml") or p.is_file():
        if not p.is_file():
            raise FileNotFoundError(f"workload file not found: {s}")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"workload file {s}: not TOML ({exc}); a workload is a preset "
                             "name (`indexbench list`) or a TOML file (docs/workloads.md)"
                             ) from None
        w = _from_mapping(data, p.stem, str(p))
    else:
        known = presets()
        if s not in known:
            raise ValueError(f"unknown workload preset {s!r}{did_you_mean(s, known)}; known: "
                             f"{', '.join(known)} (or the path of a TOML file)")
        w = known[s]
    return w.with_overrides(**overrides) if overrides else w
