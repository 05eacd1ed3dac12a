"""The simulator's time model: seconds from counted work and a storage/compute profile.

The simulator runs the real index code, so the work of an upsert (keys hashed, bloom
probes, footers and files read, files and bytes written, ...) is counted exactly; but it
writes no files, so its seconds cannot be measured. They are *modelled* here from the
counts and a :class:`CostProfile` of constants taken from published figures (``local``,
``hdfs``, ``s3``) or fitted to a real run by :func:`calibrate`. Every figure this module
produces is named ``model_*`` so it can never be mistaken for a measured column.

Model (deterministic, linear in the profile's constants). ``p`` is the parallelism (the
profile's ``parallelism``, else the executor cores given, else 1); counts missing from a
row are 0, byte columns are read from ``model_<col>`` (simulated rows) or ``<col>``
(measured rows)::

    lat(n)  = max(n / p, min(n, 1))        # n requests spread over p cores; >= 1 round trip
    BW_r    = min(p * read_stream_bps,  max_read_bps  or inf)
    BW_w    = min(p * write_stream_bps, max_write_bps or inf)

    tag     = tag_overhead_s
            + read_latency_s * lat(footers_read + files_read + rli_files_read)
            + (bytes_read + rli_bytes_read) / BW_r
            + (cpu_hash_s * keys_hashed + cpu_probe_s * bloom_checks
               + cpu_record_tag_s * records) / p
            + kv_round_trip_s * lat(kv_get_round_trips) + kv_key_s * kv_gets / p
    write   = write_overhead_s
            + write_latency_s * lat(files_written) + bytes_written / BW_w
            + read_latency_s * lat(merge_files_read) + merge_bytes_read / BW_r
            + shuffle_bytes / (p * shuffle_core_bps)
            + cpu_record_write_s * records_written / p
    commit  = commit_overhead_s
            + write_latency_s * (commit_files + lat(rli_files_written))
            + read_latency_s * partitions_touched      # driver lists each partition
            + rli_bytes_written / BW_w
            + kv_round_trip_s * (lat(kv_put_round_trips) + kv_other_round_trips)
            + kv_key_s * kv_puts / p
    total   = tag + write + commit  ( = model_io_s + model_cpu_s + model_overhead_s )

The ``kv_*`` terms are an external key-value index's requests (Hudi's HBase index):
multi-gets while tagging, puts before the commit, the driver's own (journals,
rollbacks: ``kv_round_trips`` less the other two). :func:`calibrate` fits their
constants from the run's measured request latencies (:func:`fit_kv`), not from seconds.

A table service's row (``operation`` a rescale or a compaction: not an upsert or a
delete) has no tagging: ``model_tag_s`` is empty and the reads and hashing it counted
are charged to its write phase, where they happen.
``records_written`` falls back to ``inserts + updates + records_rewritten``.

Known simplifications: no request-rate limits (S3's per-prefix 3,500 PUT / 5,500 GET per
second), no stragglers or skew, no page cache, CPU divides perfectly over ``p`` cores.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

FORMAT = "indexbench.cost_profile/1"
MODEL_COLUMNS = ("model_tag_s", "model_write_s", "model_commit_s", "model_total_s",
                 "model_io_s", "model_cpu_s", "model_overhead_s")
COUNT_COLUMNS = ("records", "keys_hashed", "bloom_checks", "footers_read", "files_read",
                 "files_written", "merge_files_read", "records_written", "rli_files_read",
                 "rli_files_written", "partitions_touched", "kv_gets", "kv_get_round_trips",
                 "kv_puts", "kv_put_round_trips", "kv_round_trips")
# Bytes are measured in a real run and modelled (``model_<col>``) in a simulated one.
BYTE_COLUMNS = ("bytes_read", "bytes_written", "merge_bytes_read", "rli_bytes_read",
                "rli_bytes_written", "shuffle_bytes")

# Sources, cited next to the constants below.
_AWS_S3 = ("Best practices design patterns: optimizing Amazon S3 performance, "
           "https://docs.aws.amazon.com/AmazonS3/latest/userguide/optimizing-performance.html")
_AWS_S3_PATTERNS = ("Performance design patterns for Amazon S3, https://docs.aws.amazon.com/"
                    "AmazonS3/latest/userguide/optimizing-performance-design-patterns.html")
_DEAN = ("Latency Numbers Every Programmer Should Know (J. Dean, P. Norvig), "
         "https://gist.github.com/jboner/2841832")
_HDFS_PAPER = ("K. Shvachko, H. Kuang, S. Radia, R. Chansler: The Hadoop Distributed File "
               "System, MSST 2010, https://storageconference.us/2010/Papers/MSST/Shvachko.pdf")
_HDFS_DESIGN = ("HDFS Architecture, Replication Pipelining, https://hadoop.apache.org/docs/"
                "stable/hadoop-project-dist/hadoop-hdfs/HdfsDesign.html")
_SSD = ("Samsung 980 PRO 1TB NVMe (PCIe 4.0) spec, https://www.pugetsystems.com/parts/"
        "Hard-Drive/Samsung-980-Pro-1TB-Gen4-M-2-SSD-13816/")
_SPARK_CODEGEN = ("Apache Spark as a Compiler: Joining a Billion Rows per Second on a Laptop "
                  "(Databricks, 2016), https://www.databricks.com/blog/2016/05/23/"
                  "apache-spark-as-a-compiler-joining-a-billion-rows-per-second-on-a-laptop.html")
_HUDI_CONFIG = "Apache Hudi configurations, https://hudi.apache.org/docs/configurations"
_SPARK_TUNING = "Tuning Spark, Level of Parallelism, https://spark.apache.org/docs/latest/tuning.html"


@dataclass(frozen=True)
class CostProfile:
    """Constants that turn counted work into seconds for one storage + compute setting.

    Latencies are per request, ``*_stream_bps`` bytes per second of one connection or
    stream, ``max_*_bps`` the device/NIC ceiling (0 = none), CPU costs seconds per unit
    on one core, overheads fixed seconds per phase.
    """

    name: str
    read_latency_s: float
    write_latency_s: float
    read_stream_bps: float
    write_stream_bps: float
    max_read_bps: float
    max_write_bps: float
    shuffle_core_bps: float
    cpu_hash_s: float
    cpu_probe_s: float
    cpu_record_tag_s: float
    cpu_record_write_s: float
    tag_overhead_s: float
    write_overhead_s: float
    commit_overhead_s: float
    commit_files: int = 1
    parallelism: int = 0  # 0: the executor cores given to the model
    note: str = ""
    # An external key-value index server (Hudi's HBase index; external-kv's redis): one
    # request's round trip and its cost per key carried, the p99/p50 ratio of requests,
    # and the server's memory as base + bytes per entry (``calibrate`` fits all five from
    # a real run's kv_* columns). Defaults measured on this project's machine (2 cores,
    # load ~10 from other jobs, 2026-11-25) with asv's ExternalKvRequests: a multi-get of
    # 1, 10, 100 uuid keys on a loopback redis-server of 100k entries, p50 83/106/304 us,
    # p99 18x the p50 at 100 keys; INFO used_memory 0.96 MB empty, 171 B per entry
    # (docs/indexes/external-kv.md). hdfs and s3: a datacenter round trip.
    kv_round_trip_s: float = 82e-6
    kv_key_s: float = 2.2e-6
    kv_tail_ratio: float = 18.0
    kv_base_bytes: float = 0.96e6
    kv_entry_bytes: float = 171.0
    # real bytes of base files over the simulator's model of them (``calibrate``; 0: the
    # model as is, measured on a sample of the workload's rows by the writers' encoders,
    # indexbench.sim.record_size). Bloom's file sizing (small files, room per file) reads
    # file bytes; as a ratio it carries over to workloads of other record sizes.
    record_bytes_ratio: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("name", "note"):
                if not isinstance(value, str):
                    raise ValueError(f"cost profile {f.name} must be a string, got {value!r}")
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"cost profile {self.name!r}: {f.name} must be a finite "
                                 f"number >= 0, got {value!r}")
        for f in ("read_stream_bps", "write_stream_bps", "shuffle_core_bps"):
            if getattr(self, f) <= 0:
                raise ValueError(f"cost profile {self.name!r}: {f} must be > 0")
        for f in ("commit_files", "parallelism"):
            if int(getattr(self, f)) != getattr(self, f):
                raise ValueError(f"cost profile {self.name!r}: {f} must be an integer")

    def cores(self, cores: int | None = None) -> int:
        """Parallelism the model spreads work over: the profile's, else ``cores``, else 1."""
        if self.parallelism:
            return int(self.parallelism)
        return max(1, int(cores)) if cores else 1

    def read_bandwidth(self, cores: int | None = None) -> float:
        """Aggregate read bytes/s: one stream per core, capped by the device or NIC."""
        bw = self.cores(cores) * self.read_stream_bps
        return min(bw, self.max_read_bps) if self.max_read_bps else bw

    def write_bandwidth(self, cores: int | None = None) -> float:
        """Aggregate write bytes/s: one stream per core, capped by the device or NIC."""
        bw = self.cores(cores) * self.write_stream_bps
        return min(bw, self.max_write_bps) if self.max_write_bps else bw

    def to_json(self) -> str:
        """JSON text that :meth:`from_json` reads back to an equal profile."""
        return json.dumps({"format": FORMAT, **asdict(self)}, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> CostProfile:
        """A profile from :meth:`to_json` text; unknown or missing fields are errors."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.pop("format", FORMAT) != FORMAT:
            raise ValueError(f"not a cost profile of format {FORMAT}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"cost profile has unknown fields: {unknown}")
        try:
            return cls(**data)
        except TypeError as exc:  # a required field is missing
            raise ValueError(f"incomplete cost profile: {exc}") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the profile as JSON (what :func:`profile` loads by path)."""
        out = Path(path)
        out.write_text(self.to_json())
        return out

    @classmethod
    def load(cls, path: str | os.PathLike) -> CostProfile:
        """Read a profile written by :meth:`save`."""
        return cls.from_json(Path(path).read_text())


# Compute and fixed costs: the same in every profile (they do not depend on storage).
_COMPUTE: dict[str, float] = {
    # Hash join, 115 ns/row without whole-stage codegen (keys go through UDFs): _SPARK_CODEGEN
    "cpu_hash_s": 115e-9,
    # One bloom probe: Hudi's default fpp 1e-9 (_HUDI_CONFIG) needs k = log2(1e9) ~ 30
    # hash functions, all evaluated per probe, plus a few 100 ns memory refs (_DEAN): ~1 us.
    "cpu_probe_s": 1e-6,
    # Tagging joins every input record to a location; sort-merge join 750 ns/row: _SPARK_CODEGEN
    "cpu_record_tag_s": 750e-9,
    # Merge + encode + compress a ~10-column record: 10 x 120 ns Parquet value codec
    # (_SPARK_CODEGEN) + Snappy 3 us/KB x ~0.2 KB (_DEAN) ~ 2 us.
    "cpu_record_write_s": 2e-6,
    # Shuffle per core ~ a 1 Gbps link: 1 KB in 10 us = 100 MB/s (_DEAN).
    "shuffle_core_bps": 100e6,
    # Fixed cost of a Spark job; Spark handles tasks "as short as 200 ms" (_SPARK_TUNING).
    "tag_overhead_s": 0.2,
    "write_overhead_s": 0.2,
    # Driver-side commit bookkeeping besides the file writes: an assumption; calibrate it.
    "commit_overhead_s": 0.01,
}

PROFILES: dict[str, CostProfile] = {
    "local": CostProfile(
        name="local",
        read_latency_s=150e-6,  # read 4K randomly from SSD 150 us: _DEAN
        write_latency_s=150e-6,  # assumed = one random SSD access (create/close): _DEAN
        read_stream_bps=1e9,  # read 1 MB sequentially from SSD 1 ms ~ 1 GB/s: _DEAN
        write_stream_bps=1e9,  # assumed = the sequential read figure: _DEAN
        max_read_bps=7e9,  # sequential read up to 7,000 MB/s: _SSD
        max_write_bps=5e9,  # sequential write up to 5,000 MB/s: _SSD
        note="NVMe SSD on one machine; " + _DEAN + "; " + _SSD,
        **_COMPUTE,
    ),
    "hdfs": CostProfile(
        name="hdfs",
        # NameNode RPC (0.5 ms datacenter round trip) + DataNode round trip (0.5 ms)
        # + one disk seek (10 ms): _DEAN
        read_latency_s=0.011,
        # create + addBlock + complete NameNode RPCs and the ack through a 3-DataNode
        # pipeline (6 x 0.5 ms, _HDFS_DESIGN) + one disk seek 10 ms (_DEAN)
        write_latency_s=0.013,
        read_stream_bps=66e6,  # DFSIO read 66 MB/s per node: _HDFS_PAPER
        write_stream_bps=40e6,  # DFSIO write 40 MB/s per node, 3 replicas pipelined: _HDFS_PAPER
        max_read_bps=0.0,  # scales with the cluster
        max_write_bps=0.0,
        note="HDFS on HDD DataNodes, 3 replicas; " + _HDFS_PAPER + "; " + _HDFS_DESIGN,
        kv_round_trip_s=500e-6,  # round trip within the same datacenter 500 us: _DEAN
        **_COMPUTE,
    ),
    "s3": CostProfile(
        name="s3",
        # "small object latencies (and first-byte-out latencies for larger objects) of
        # roughly 100-200 milliseconds": midpoint, _AWS_S3
        read_latency_s=0.15,
        write_latency_s=0.15,  # same figure for small-object PUTs: _AWS_S3
        read_stream_bps=85e6,  # one concurrent request per 85-90 MB/s: _AWS_S3_PATTERNS
        write_stream_bps=85e6,  # assumed as for GETs (PUTs parallelise alike): _AWS_S3_PATTERNS
        max_read_bps=12.5e9,  # up to 100 Gb/s on a single EC2 instance: _AWS_S3
        max_write_bps=12.5e9,
        note="Amazon S3 from EC2 in the same region; " + _AWS_S3 + "; " + _AWS_S3_PATTERNS,
        kv_round_trip_s=500e-6,  # a key-value server in the same datacenter: _DEAN
        **_COMPUTE,
    ),
}


def profile(name_or_path: str, cores: int | None = None) -> CostProfile:
    """A built-in profile by name or a calibrated one from its JSON file.

    ``cores`` fills ``parallelism`` when the profile leaves it open (0).
    """
    if name_or_path in PROFILES:
        found = PROFILES[name_or_path]
    elif Path(name_or_path).is_file():
        found = CostProfile.load(name_or_path)
    else:
        raise ValueError(f"unknown cost profile {name_or_path!r}: choose one of "
                         f"{', '.join(sorted(PROFILES))} or the path of a profile JSON file")
    if cores and not found.parallelism:
        found = replace(found, parallelism=int(cores))
    return found


# ---- work and features --------------------------------------------------------------

_THETA = ("tag_overhead_s", "write_overhead_s", "commit_overhead_s", "cpu_hash_s",
          "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s", "read_latency_s",
          "write_latency_s", "read_byte_s", "write_byte_s", "shuffle_byte_s",
          "kv_round_trip_s", "kv_key_s")
# the key-value server's constants: fitted from its measured requests, not from seconds
_KV = ("kv_round_trip_s", "kv_key_s")
_OVERHEAD = {"tag_overhead_s", "write_overhead_s", "commit_overhead_s"}
_CPU = {"cpu_hash_s", "cpu_probe_s", "cpu_record_tag_s", "cpu_record_write_s"}


def _numeric(df: pd.DataFrame, col: str) -> pd.Series | None:
    if col not in df.columns:
        return None
    return pd.to_numeric(df[col], errors="coerce").astype(float)


def _first(df: pd.DataFrame, names: list[str]) -> np.ndarray:
    """The first column of ``names`` present, gaps filled from the next ones, then 0."""
    out: pd.Series | None = None
    for name in names:
        col = _numeric(df, name)
        if col is not None:
            out = col if out is None else out.fillna(col)
    if out is None:
        return np.zeros(len(df))
    return out.fillna(0.0).to_numpy(dtype=float)


def _work(df: pd.DataFrame, prefer_model: bool) -> dict[str, np.ndarray]:
    """Counted work per row; byte columns from ``model_<col>`` or ``<col>``."""
    w = {c: _first(df, [c]) for c in COUNT_COLUMNS}
    for c in BYTE_COLUMNS:
        names = [f"model_{c}", c] if prefer_model else [c, f"model_{c}"]
        w[c] = _first(df, names)
    given = _numeric(df, "records_written")
    if given is None or given.isna().any():  # a row built before records_written existed
        derived = pd.Series(sum(_first(df, [c]) for c in ("inserts", "updates",
                                                          "records_rewritten")), index=df.index)
        w["records_written"] = (derived if given is None else given.fillna(derived)
                                ).to_numpy(dtype=float)
    op = df["operation"] if "operation" in df.columns else pd.Series(None, index=df.index)
    # a table service (a rescale, a resize, a compaction) tags nothing
    w["rescale"] = (~op.astype("string").fillna("").isin(("upsert", "delete", ""))
                    ).to_numpy(dtype=float)
    return w


def _lat(n: np.ndarray, p: int) -> np.ndarray:
    """Round trips of ``n`` requests over ``p`` cores; any request waits one at least."""
    return np.maximum(n / p, np.minimum(n, 1.0))


def _features(w: dict[str, np.ndarray], p: int, commit_files: int
              ) -> dict[str, dict[str, np.ndarray]]:
    """Per phase, the quantity each constant of ``_THETA`` multiplies (the model is linear)."""
    zero = np.zeros_like(w["records"])
    # the key-value index's requests: lookups while tagging (tasks in parallel), puts
    # before the commit (tasks in parallel) and the driver's own (journals, rollbacks)
    kv_other = np.maximum(w["kv_round_trips"] - w["kv_get_round_trips"]
                          - w["kv_put_round_trips"], 0.0)
    tag = {
        "kv_round_trip_s": _lat(w["kv_get_round_trips"], p),
        "kv_key_s": w["kv_gets"] / p,
        "tag_overhead_s": 1.0 - w["rescale"],
        "cpu_hash_s": w["keys_hashed"] / p,
        "cpu_probe_s": w["bloom_checks"] / p,
        "cpu_record_tag_s": w["records"] / p,
        "read_latency_s": _lat(w["footers_read"] + w["files_read"] + w["rli_files_read"], p),
        "read_byte_s": w["bytes_read"] + w["rli_bytes_read"],
    }
    write = {
        "write_overhead_s": np.ones_like(zero),
        "cpu_record_write_s": w["records_written"] / p,
        "write_latency_s": _lat(w["files_written"], p),
        "read_latency_s": _lat(w["merge_files_read"], p),
        "read_byte_s": w["merge_bytes_read"],
        "write_byte_s": w["bytes_written"],
        "shuffle_byte_s": w["shuffle_bytes"],
    }
    for key in tag:  # a rescale does its reads and hashing while it writes
        if key != "tag_overhead_s":
            write[key] = write.get(key, zero) + tag[key] * w["rescale"]
            tag[key] = tag[key] * (1.0 - w["rescale"])
    commit = {
        "commit_overhead_s": np.ones_like(zero),
        "write_latency_s": commit_files + _lat(w["rli_files_written"], p),
        "read_latency_s": w["partitions_touched"],
        "write_byte_s": w["rli_bytes_written"],
        "kv_round_trip_s": _lat(w["kv_put_round_trips"], p) + kv_other,
        "kv_key_s": w["kv_puts"] / p,
    }
    return {"tag": tag, "write": write, "commit": commit}


def _theta(prof: CostProfile, p: int) -> dict[str, float]:
    """The profile as the coefficients of the linear model at parallelism ``p``."""
    theta = {k: float(getattr(prof, k)) for k in _THETA if hasattr(prof, k)}
    theta["read_byte_s"] = 1.0 / prof.read_bandwidth(p)
    theta["write_byte_s"] = 1.0 / prof.write_bandwidth(p)
    theta["shuffle_byte_s"] = 1.0 / (p * prof.shuffle_core_bps)
    return theta


def _phase_seconds(feats: dict[str, np.ndarray], theta: dict[str, float],
                   keys: set[str] | None = None, rowwise: bool = False) -> np.ndarray:
    """Σ constant × quantity per row. ``rowwise``: each row's terms summed as a one-row
    frame sums them (numpy sums a row's terms pairwise, a column of rows one by one:
    the last bits can differ), so :func:`model_rows` gives :func:`model_seconds`'s floats."""
    parts = [theta[k] * v for k, v in feats.items() if keys is None or k in keys]
    if not parts:
        return 0.0
    return np.stack(parts, axis=1).sum(axis=1) if rowwise else np.sum(parts, axis=0)


def _model_columns(df: pd.DataFrame, profile: CostProfile, cores: int | None,
                   rowwise: bool) -> dict[str, np.ndarray]:
    """The ``model_*`` second columns of every row of ``df``."""
    p = profile.cores(cores)
    w = _work(df, prefer_model=True)
    feats = _features(w, p, profile.commit_files)
    theta = _theta(profile, p)
    phase = {name: _phase_seconds(f, theta, rowwise=rowwise) for name, f in feats.items()}
    io_keys = set(_THETA) - _OVERHEAD - _CPU
    split = {kind: sum(_phase_seconds(f, theta, keys, rowwise) for f in feats.values())
             for kind, keys in (("io", io_keys), ("cpu", _CPU), ("overhead", _OVERHEAD))}
    rescale = w["rescale"] > 0
    return {"model_tag_s": np.where(rescale, np.nan, phase["tag"]),
            "model_write_s": phase["write"], "model_commit_s": phase["commit"],
            "model_total_s": phase["tag"] + phase["write"] + phase["commit"],
            "model_io_s": split["io"], "model_cpu_s": split["cpu"],
            "model_overhead_s": split["overhead"]}


def model_frame(df: pd.DataFrame, profile: CostProfile, cores: int | None = None
                ) -> pd.DataFrame:
    """``df`` with the ``model_*`` second columns added (vectorised :func:`model_seconds`)."""
    out = df.copy()
    for col, values in _model_columns(df, profile, cores, rowwise=False).items():
        out[col] = values
    return out


def model_seconds(row: dict[str, Any], profile: CostProfile, cores: int | None = None
                  ) -> dict[str, float]:
    """Modelled seconds of one metrics row: ``model_tag_s`` ... ``model_total_s`` + split."""
    out = model_frame(pd.DataFrame([row]), profile, cores)
    return {c: float(out[c].iat[0]) for c in MODEL_COLUMNS}


# what _work reads of a row (a byte column also as model_<col>)
_INPUTS = (*COUNT_COLUMNS, *BYTE_COLUMNS, *(f"model_{c}" for c in BYTE_COLUMNS),
           "inserts", "updates", "records_rewritten", "operation")


def model_rows(rows: list[dict[str, Any]], profile: CostProfile, cores: int | None = None
               ) -> list[dict[str, float]]:
    """:func:`model_seconds` of every row, bit for bit, from one frame of the columns
    the model reads rather than one frame per row (a simulated run of thousands of
    table-service rows spent most of its time building one-row frames). A column a row
    lacks is a gap in the frame, which the model reads as it reads a missing column."""
    if not rows:
        return []
    present = [c for c in _INPUTS if any(c in r for r in rows)]
    df = pd.DataFrame({c: [r.get(c) for r in rows] for c in present}, index=range(len(rows)))
    cols = _model_columns(df, profile, cores, rowwise=True)
    return [{c: float(cols[c][i]) for c in MODEL_COLUMNS} for i in range(len(rows))]


# ---- calibration ----------------------------------------------------------------------

# Constants fitted from tag_s and write_s, in the order they win when two are collinear.
_FIT = ("tag_overhead_s", "write_overhead_s", "cpu_hash_s", "cpu_probe_s",
        "cpu_record_write_s", "read_latency_s", "write_latency_s", "read_byte_s",
        "write_byte_s", "cpu_record_tag_s", "shuffle_byte_s")
_MIN_INDEPENDENT = 0.02  # share of a work column not explained by the kept ones
# The profile field behind each per-byte coefficient (what a report names).
_FIELD = {"read_byte_s": "read_stream_bps", "write_byte_s": "write_stream_bps",
          "shuffle_byte_s": "shuffle_core_bps"}


def _field(key: str) -> str:
    return _FIELD.get(key, key)


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson-Hanson active set; no scipy at runtime)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * max(m, n) * max(1.0, float(np.abs(a).sum(axis=0).max()))
    grad = a.T @ (b - a @ x)
    for _ in range(3 * n + 30):
        if passive.all() or not (grad[~passive] > tol).any():
            break
        passive[int(np.argmax(np.where(passive, -np.inf, grad)))] = True
        for _ in range(3 * n + 30):
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (s[passive] > tol).all():
                break
            neg = passive & (s <= tol)
            alpha = float(np.min(x[neg] / np.maximum(x[neg] - s[neg], tol)))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
        x = s if passive.any() else x
        x[~passive] = 0.0
        grad = a.T @ (b - a @ x)
    return np.maximum(x, 0.0)


def _identifiable(x: np.ndarray) -> tuple[list[int], dict[int, str]]:
    """Columns the data can separate, greedily in ``_FIT`` order; why the others cannot."""
    norms = np.linalg.norm(x, axis=0)
    kept: list[int] = []
    why: dict[int, str] = {}
    for j in range(x.shape[1]):
        if norms[j] == 0:
            why[j] = "no such work in the data"
            continue
        col = x[:, j] / norms[j]
        if kept:
            basis = x[:, kept] / norms[kept]
            q, _ = np.linalg.qr(basis)
            if np.linalg.norm(col - q @ (q.T @ col)) < _MIN_INDEPENDENT:
                other = kept[int(np.argmax(np.abs(basis.T @ col)))]
                why[j] = f"collinear with {_field(_FIT[other])} in the data"
                continue
        kept.append(j)
    return kept, why


def _r2(y: np.ndarray, pred: np.ndarray) -> float:
    ss_tot = float(((y - y.mean()) ** 2).sum()) if len(y) else 0.0
    return 1.0 - float(((y - pred) ** 2).sum()) / ss_tot if ss_tot > 0 else float("nan")


def fit_kv(metrics: pd.DataFrame, base: CostProfile) -> tuple[dict[str, float],
                                                               dict[str, str]]:
    """The key-value server's constants from a real run's own measurements: the round
    trip and the cost per key from the p50 request latency (``kv_get_p50_ms``) against
    the keys per request (``kv_gets / kv_get_round_trips``; unless the sizes differ by
    2x or more, as runs at several ``get.batch.size`` do, only the round trip is told
    apart), the p99/p50 ratio, and the memory as base + bytes per
    entry from ``kv_server_bytes`` against ``kv_entries``. Returns (fitted, why kept); a
    run without those columns (no key-value index) gives neither."""
    fitted: dict[str, float] = {}
    why: dict[str, str] = {}
    p50, p99 = _numeric(metrics, "kv_get_p50_ms"), _numeric(metrics, "kv_get_p99_ms")
    gets, rts = _numeric(metrics, "kv_gets"), _numeric(metrics, "kv_get_round_trips")
    if p50 is not None and gets is not None and rts is not None:  # a run with such an index
        x = (gets / rts.where(rts > 0)).to_numpy(dtype=float)
        y = p50.to_numpy(dtype=float) / 1000.0
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if not len(x):
            why.update(dict.fromkeys(("kv_round_trip_s", "kv_key_s", "kv_tail_ratio"),
                                     "no measured kv_get_p50_ms"))
        else:
            slope = base.kv_key_s
            if x.max() >= 2 * x.min():  # request sizes apart enough to tell a slope
                slope = max(0.0, float(np.polyfit(x, y, 1)[0]))
                fitted["kv_key_s"] = slope
            else:
                why["kv_key_s"] = "one request size only"
            fitted["kv_round_trip_s"] = max(0.0, float(np.median(y - slope * x)))
            if p99 is not None:
                r = p99.to_numpy(dtype=float)[ok] / 1000.0 / np.maximum(y, 1e-12)
                r = r[np.isfinite(r)]
                if len(r):
                    fitted["kv_tail_ratio"] = max(1.0, float(np.median(r)))
    mem, entries = _numeric(metrics, "kv_server_bytes"), _numeric(metrics, "kv_entries")
    if mem is None or entries is None:  # no key-value index in the run: nothing to say
        return fitted, why
    if not (mem.notna() & entries.notna()).any():
        why.update(dict.fromkeys(("kv_base_bytes", "kv_entry_bytes"),
                                 "no measured kv_server_bytes"))
    else:
        ok = (mem.notna() & entries.notna()).to_numpy()
        m, e = mem.to_numpy(dtype=float)[ok], entries.to_numpy(dtype=float)[ok]
        if np.ptp(e) > 0:
            per, at0 = np.polyfit(e, m, 1)
            fitted["kv_entry_bytes"], fitted["kv_base_bytes"] = max(0.0, float(per)), \
                max(0.0, float(at0))
        else:
            why["kv_base_bytes"] = "one table size only"
            fitted["kv_entry_bytes"] = max(0.0, float(np.median(
                (m - base.kv_base_bytes) / np.maximum(e, 1.0))))
    return fitted, why


def _refuse_untimed_upserts(metrics: pd.DataFrame) -> None:
    """The model is fitted to upserts: a run none of whose upsert rows timed a phase (a
    throughput run) is refused, even when its table-service rows (rescales, splits,
    compactions: the service runner times those in any mode) have a ``write_s``."""
    op = metrics["operation"] if "operation" in metrics.columns else None
    upserts = np.ones(len(metrics), bool) if op is None else (op == "upsert").to_numpy()
    timed = np.zeros(len(metrics), bool)
    for phase in ("tag", "write"):
        y = _numeric(metrics, f"{phase}_s")
        if y is not None:
            timed |= np.isfinite(y.to_numpy(dtype=float))
    if not (timed & upserts).any():
        raise ValueError("calibration needs upsert rows with a measured tag_s or write_s; "
                         "a run in throughput mode (--throughput) has none: calibrate from "
                         "a run without it")


def calibrate(metrics: pd.DataFrame, base: str = "local", *, cores: int | None = None,
              modelled_record_bytes: float | None = None,
              modelled_file_bytes: float = 0.0) -> tuple[CostProfile, dict[str, Any]]:
    """Fit CPU, disk and overhead constants to a real run's measured seconds.

    Non-negative least squares of measured ``tag_s`` and ``write_s`` against the counted
    work of the same rows (same features as the model); ``commit_overhead_s`` is the median
    of ``commit_s`` left after the modelled commit I/O. Constants the data cannot separate
    (no such work, or collinear with a constant fitted first) keep ``base``'s value.
    ``modelled_record_bytes`` (and ``modelled_file_bytes``): the simulator's model of a
    base file of the run's workload, bytes per record (and per file); with it the ratio
    of the real base-file bytes to the model's is fitted too, as ``record_bytes_ratio``
    (rows that wrote log files are left out: their bytes are not base files').
    Returns the fitted profile and a report (R², residuals, rows used, what was kept).
    """
    base_prof = profile(base)
    p = base_prof.cores(cores)
    _refuse_untimed_upserts(metrics)
    w = _work(metrics, prefer_model=False)
    feats = _features(w, p, base_prof.commit_files)
    kv_fit, kv_why = fit_kv(metrics, base_prof)
    theta = {**_theta(base_prof, p), **{k: v for k, v in kv_fit.items() if k in _KV}}
    n = len(metrics)

    blocks, ys, phases, used = [], [], [], np.zeros(n, dtype=bool)
    for phase in ("tag", "write"):
        y = _numeric(metrics, f"{phase}_s")
        if y is None:
            continue
        ok = np.isfinite(y.to_numpy(dtype=float))
        if phase == "tag":
            ok &= w["rescale"] == 0
        f = feats[phase]
        mat = np.column_stack([f.get(k, np.zeros(n)) for k in _FIT])
        ok &= np.isfinite(mat).all(axis=1)
        # the key-value server's requests, fitted from their own latencies: taken out
        kv_s = sum(theta[k] * f.get(k, np.zeros(n)) for k in _KV)
        blocks.append(mat[ok])
        ys.append((y.to_numpy(dtype=float) - kv_s)[ok])
        phases += [phase] * int(ok.sum())
        used |= ok
    if not phases:
        raise ValueError("calibration needs rows with a measured tag_s or write_s; a run "
                         "in throughput mode (--throughput) has none: calibrate from a "
                         "run without it")
    x = np.vstack(blocks)
    y = np.concatenate(ys)
    phase_of = np.array(phases)

    kept, why = _identifiable(x)
    fixed = [j for j in range(len(_FIT)) if j not in kept]
    base_vec = np.array([theta[k] for k in _FIT])
    y_adj = y - x[:, fixed] @ base_vec[fixed]
    norms = np.linalg.norm(x[:, kept], axis=0)
    fit = _nnls(x[:, kept] / norms, y_adj) / norms
    new = dict(theta)
    for j, value in zip(kept, fit, strict=True):
        new[_FIT[j]] = float(value)

    changes: dict[str, Any] = {k: new[k] for k in _FIT if k in {_FIT[j] for j in kept}
                               and not k.endswith("_byte_s")}
    changes.update(kv_fit)
    kept_base = {_field(_FIT[j]): why[j] for j in fixed}
    kept_base.update(kv_why)
    for key, stream, cap in (("read_byte_s", "read_stream_bps", "max_read_bps"),
                             ("write_byte_s", "write_stream_bps", "max_write_bps")):
        if stream in kept_base:
            continue
        if new[key] <= 0:
            kept_base[stream] = "fit gave no cost per byte"
            new[key] = theta[key]
            continue
        bandwidth = 1.0 / new[key]  # aggregate at p; one stream per core up to the device
        changes[stream] = bandwidth / p
        changes[cap] = bandwidth
    if "shuffle_core_bps" not in kept_base:
        if new["shuffle_byte_s"] > 0:
            changes["shuffle_core_bps"] = 1.0 / (p * new["shuffle_byte_s"])
        else:
            kept_base["shuffle_core_bps"] = "fit gave no cost per byte"
            new["shuffle_byte_s"] = theta["shuffle_byte_s"]

    commit_rows = 0
    commit_y = _numeric(metrics, "commit_s")
    if commit_y is not None and np.isfinite(commit_y.to_numpy(dtype=float)).any():
        ok = np.isfinite(commit_y.to_numpy(dtype=float))
        rest = _phase_seconds({k: v for k, v in feats["commit"].items()
                               if k != "commit_overhead_s"}, new)
        rest = np.broadcast_to(rest, (n,))
        left = commit_y.to_numpy(dtype=float)[ok] - rest[ok]
        changes["commit_overhead_s"] = max(0.0, float(np.median(left)))
        commit_rows = int(ok.sum())
    else:
        kept_base["commit_overhead_s"] = "no measured commit_s"

    pred = x @ np.array([new[k] for k in _FIT])
    resid = y - pred
    report: dict[str, Any] = {
        "base": base_prof.name,
        "parallelism": p,
        "rows": int(used.sum()),
        "equations": {"tag": int((phase_of == "tag").sum()),
                      "write": int((phase_of == "write").sum()), "commit": commit_rows},
        "r2": _r2(y, pred),
        "r2_tag": _r2(y[phase_of == "tag"], pred[phase_of == "tag"]),
        "r2_write": _r2(y[phase_of == "write"], pred[phase_of == "write"]),
        "rmse_s": float(np.sqrt(np.mean(resid ** 2))),
        "max_abs_residual_s": float(np.max(np.abs(resid))),
        "fitted": changes,
        "kept_base": kept_base,
    }
    written = _numeric(metrics, "bytes_written")
    if written is None or not written.notna().any():
        written = _numeric(metrics, "model_bytes_written")
    records = _numeric(metrics, "records_written")
    files = _numeric(metrics, "files_written")
    files = files.fillna(0.0) if files is not None else pd.Series(0.0, index=metrics.index)
    keep = pd.Series(True, index=metrics.index)
    logs = _numeric(metrics, "log_files_written")
    if logs is not None:
        keep &= logs.fillna(0) == 0
    sized = _numeric(metrics, "avg_record_size")  # rows whose inserts were sized by bytes
    if sized is not None and (sized.notna() & keep).any():
        keep &= sized.notna()
    if written is not None and records is not None:
        written, records, files = written[keep], records[keep], files[keep]
    if not modelled_record_bytes:
        kept_base["record_bytes_ratio"] = "the run's workload (modelled record size) unknown"
    elif written is not None and records is not None and records.sum() > 0:
        modelled = records.sum() * modelled_record_bytes + files.sum() * modelled_file_bytes
        changes["record_bytes_ratio"] = float(written.sum() / modelled)
    else:
        kept_base["record_bytes_ratio"] = "no bytes_written / records_written"
    fitted = replace(base_prof, name=f"{base_prof.name}-calibrated",
                     note=f"calibrated on {report['rows']} rows of a real run at "
                          f"parallelism {p} (R² {report['r2']:.3f}) from base "
                          f"{base_prof.name!r}", **changes)
    return fitted, report
