"""The simulator's cost profiles: constants that turn counted work into seconds for one
storage + compute setting (:class:`CostProfile`), the built-in ones taken from published
figures (``local``, ``hdfs``, ``s3``, each constant cited), and :func:`profile`, which
finds one by name or loads a calibrated one (:mod:`indexbench.sim.calibrate`) from its
JSON file. The model that reads them is :mod:`indexbench.sim.time_model`.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

FORMAT = "indexbench.cost_profile/1"
# whose writer ``calibrate`` fits a profile to: ours, or Apache Hudi's own
OUR_WRITER = "indexbench"
HUDI_WRITER = "hudi"
CALIBRATED_WRITERS = (OUR_WRITER, HUDI_WRITER)


def hudis(writer: str) -> bool:
    """Whether a profile's writer is Apache Hudi's own (``calibrate --writer hudi``:
    ``hudi <version>``)."""
    return writer.startswith(HUDI_WRITER)

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
    # whose writer the constants are of: "" for the built-in published figures, else the
    # writer ``calibrate`` fitted them to ("indexbench", or Hudi's, "hudi 1.2.0": the
    # profile ``advise --hudi-storage`` prices Hudi's own writer with)
    writer: str = ""
    # One record key added to an index's footer filter when a base file is written (every
    # key of a rewritten file: footer_keys_written). Hudi's bloom filter at its default
    # fpp 1e-9 sets k ~ 30 bits per key, the hashes of a probe (cpu_probe_s): ~1 us
    # (_HUDI_CONFIG, _DEAN). The same in every profile; ``calibrate`` fits it.
    cpu_footer_key_s: float = 1e-6
    # One footer filter built, serialized and written with its base file, whatever its
    # keys (footer_filters_written): what a small file with a filter costs beyond a
    # plain one. Hudi's default filter (60,000 entries at fpp 1e-9: 431 KB of base64 in
    # the footer) built and serialized by this project's filter code: about 1 ms
    # (measured 2026-12-02, 2 cores; 0.35 ms at the harness's 1/1000 file scale). The
    # same in every profile; ``calibrate`` fits it where rows wrote files with and
    # without filters (a profile fitted before the counter existed keeps 0).
    cpu_footer_filter_s: float = 1e-3
    # A Spark job an index runs itself in the commit phase, to update its state on the
    # executors (external-kv's puts: the inserts shuffled by file group, a Python task
    # per group): its fixed cost, as the tagging job's overhead (_SPARK_TUNING), and the
    # cost of a record it carries, as a record through a shuffle and join
    # (_SPARK_CODEGEN). The same in every profile; ``calibrate`` fits both from the
    # commit seconds of rows that ran such a job.
    index_job_s: float = 0.2
    index_job_record_s: float = 750e-9
    # The commit's driver-side cost per file the batch wrote, one after another: its
    # write stat in the commit and, for Hudi's writer, the file's entries in the metadata
    # table (files, column stats) and its marker. Not in any published figure; 0 here
    # and fitted by ``calibrate`` from the commit seconds of rows that wrote different
    # numbers of files (Hudi 1.2's writer on this project's machine: docs/simulator.md).
    commit_file_s: float = 0.0
    # An external key-value index server (Hudi's HBase index; external-kv's redis): one
    # request's round trip and its cost per key carried, the p99/p50 ratio of requests,
    # and the server's memory as base + bytes per entry (``calibrate`` fits all five from
    # a real run's kv_* columns). Defaults measured on this project's machine (2 cores,
    # load ~10 from other jobs, 2026-11-25) with asv's ExternalKvRequests: a multi-get of
    # 1, 10, 100 uuid keys on a loopback redis-server of 100k entries, p50 83/106/304 us,
    # p99 18x the p50 at 100 keys; INFO used_memory 0.96 MB empty, 171 B per entry
    # (docs/simulator.md). hdfs and s3: a datacenter round trip.
    kv_round_trip_s: float = 82e-6
    kv_key_s: float = 2.2e-6
    # The client's own work on each key it looks up or puts (external-kv: building the
    # entry keys, decoding and tagging the answers in a Python task), beside the server's
    # ``kv_key_s`` in the request latency: 0 here; ``calibrate`` fits it from the
    # tagging's seconds (our writer on this machine, 2026-12-02: 9.2 us a key)
    cpu_kv_key_s: float = 0.0
    kv_tail_ratio: float = 18.0
    kv_base_bytes: float = 0.96e6
    kv_entry_bytes: float = 171.0
    # real bytes of base files over the simulator's model of them (``calibrate``; 0: the
    # model as is, measured on a sample of the workload's rows by the writers' encoders,
    # indexbench.sim.record_size). Bloom's file sizing (small files, room per file) reads
    # file bytes; as a ratio it carries over to workloads of other record sizes.
    record_bytes_ratio: float = 0.0
    # A copy-on-write merge's read of the old base file, in the task that writes the new
    # one (merge_files_read, merge_bytes_read): its open and one stream's bytes/s. -1 and
    # 0 (the defaults): as read_latency_s and read_stream_bps (the built-in profiles: the
    # same device; a profile saved before these fields existed). ``calibrate`` fits them
    # from the write phase alone, when its rows separate them: the tagging's reads (a
    # bloom lookup's footers and key columns, decoded to probe) cost more per file and
    # byte than a merge's, and one pair of constants for both priced our writer's merges
    # at 1,000,000 records 1.6-2.0 times what they measured (docs/simulator.md).
    merge_read_latency_s: float = -1.0
    merge_read_stream_bps: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("name", "note", "writer"):
                if not isinstance(value, str):
                    raise ValueError(f"cost profile {f.name} must be a string, got {value!r}")
                continue
            if f.name == "merge_read_latency_s" and value == -1.0:  # as read_latency_s
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

    def merge_read_latency(self) -> float:
        """A merge's open of the old base file: ``merge_read_latency_s``, else the
        tagging's ``read_latency_s``."""
        return self.read_latency_s if self.merge_read_latency_s < 0 else \
            self.merge_read_latency_s

    def merge_read_bandwidth(self, cores: int | None = None) -> float:
        """Aggregate bytes/s of a merge's reads of the old base files: one
        ``merge_read_stream_bps`` stream per core (a calibrated or kept rate: the
        tagging's ceiling is not a merge's); without one, :meth:`read_bandwidth`."""
        if not self.merge_read_stream_bps:
            return self.read_bandwidth(cores)
        return self.cores(cores) * self.merge_read_stream_bps

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

