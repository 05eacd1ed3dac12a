"""bloom: Hudi's default index (``HoodieBloomIndex``), engine-neutral definition.

Tagging is (1) read the min/max key from the footers of the partitions' base files,
(2) prune: a key is compared only with files whose [min, max] holds it, (3) per
candidate file probe its bloom filter and read its record-key column once if a probe
was positive. The core (:mod:`indexes.bloom.core`) does (2) and (3) over arrays; the
Spark adapter (:mod:`indexes.bloom.spark`) distributes it; the simulator
(:mod:`indexes.bloom.sim`) runs it over a model table.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pyarrow as pa

from indexes.base import TAG_JOBS, Metric, Param, RecordIndex, fraction
from indexes.bloom_filter import FOOTER_KEY, HASHINGS, PYBLOOM, TYPE_CODE_KEY, HoodieBloomFilter
from indexes.bloom_filter.metrics import FOOTER_METRICS
from indexes.bloom_filter.roles import BloomFilterTheory, BloomSimOptions
from indexes.hudi_counterpart import HudiCounterpart, flag
from indexes.hudi_params import (
    ESTIMATION_THRESHOLD,
    FILTER_TYPE,
    FPP,
    RECORD_SIZE_ESTIMATE,
    RECORD_SIZE_MAX_COMMITS,
    RECORD_SIZE_METADATA,
    SMALL_FILE_CANDIDATES,
)
from indexes.roles import (
    AdvisedSettings,
    Candidate,
    FileSizing,
    FooterData,
    HudiCounterpartRole,
    PointLookups,
    SizeNotes,
    TableFigures,
    TableShape,
)
from metrics.rows import measured_fp_rate
from tableformat.errors import IndexBenchError
from writeclient import sizing

__all__ = ["BloomIndex", "measured_fp_rate", "fraction"]

DEFAULT_SCALE = 1 / 1000  # see fraction; README.md here, "Scale"
# A scaled table expected to hold this many base files or more gets a note (size_notes).
MANY_FILES = 10_000


def _hudi_options(index: BloomIndex) -> dict[str, str]:
    """Hudi's BLOOM with the sizes this run used: the scale applies to Hudi's file sizes
    and filter entries exactly as to ours (``describe()``'s effective values)."""
    p, cfg = index.params, index.sizing()
    num, mx = index.filter_entries
    return {"hoodie.index.type": "BLOOM",
            "hoodie.index.bloom.num_entries": str(num),
            "hoodie.index.bloom.fpp": repr(p["fpp"]),
            "hoodie.bloom.index.filter.type": p["filter_type"],
            "hoodie.bloom.index.filter.dynamic.max.entries": str(mx),
            "hoodie.bloom.index.prune.by.ranges": flag(p["prune_by_ranges"]),
            "hoodie.parquet.max.file.size": str(cfg.max_file_size),
            "hoodie.parquet.small.file.limit": str(cfg.small_file_limit),
            "hoodie.copyonwrite.insert.split.size": str(cfg.insert_split_size),
            "hoodie.copyonwrite.insert.auto.split": flag(cfg.auto_split),
            "hoodie.copyonwrite.record.size.estimate": str(cfg.record_size_estimate),
            "hoodie.record.size.estimation.threshold": repr(cfg.estimation_threshold),
            RECORD_SIZE_MAX_COMMITS.key: str(cfg.record_size_max_commits),
            RECORD_SIZE_METADATA.key: str(cfg.record_size_metadata_bytes),
            SMALL_FILE_CANDIDATES.key: str(cfg.small_file_candidates)}


class BloomIndex(AdvisedSettings, BloomFilterTheory, BloomSimOptions, SizeNotes, FileSizing,
                 FooterData, TableFigures, PointLookups, HudiCounterpartRole, RecordIndex):
    """Hudi's BLOOM index with Hudi's defaults."""

    ADVICE_TRADEOFF = ("tagging reads the footers and key columns of every candidate file: "
                       "its cost follows the table's file count, and keys without order "
                       "(uuid) prune no file by their key ranges")

    @classmethod
    def advice_candidates(cls, shape: TableShape) -> tuple[Candidate, ...]:
        """Hudi's own file sizing (120 MiB files, filters of 60,000 entries): the table
        a Hudi job would write (``indexbench.scale`` shrinks both alike in a similar
        smaller table)."""
        return (Candidate("Hudi's file sizing", {"scale": shape.scale}),)


    HUDI = HudiCounterpart(
        _hudi_options,
        note="Hudi's filters use Hadoop's murmur bit positions (indexbench.bloom.hash=hudi "
             "gives ours the same); the tree-based, bucketized lookup is Hudi's default",
        fidelity_params=(("indexbench.bloom.hash", "hudi"),),
        continue_refusal=lambda index: None if index.params["hashing"] != PYBLOOM else (
            "its footer filters hold pybloom-live's bit positions, which Hudi's bloom "
            "index cannot probe (it would miss keys and write them again); make the "
            "table with indexbench.bloom.hash=hudi"),
        explained=tuple((check, "cow", "copy-on-write small files are topped up in Hudi's file-"
                         "system view order, a HashSet of its random file ids, ours in "
                         "creation order: other files fill, and a file given neither an "
                         "update nor an insert is not written (docs/fidelity.md#bloom)")
                        for check in ("records per file group", "false positives",
                                      "base files written", "file groups written"))
        + tuple((check, "mor", "where a new file group rolls over and how much a small "
                 "file takes follow record bytes (ours 2-3% fewer: shorter meta columns), so "
                 "one side can write a file group more or fewer, and a later top-up rewrites "
                 "a fuller or an emptier smallest file (docs/fidelity.md#bloom-on-merge-on-"
                 "read-hudis-create-handle-rolls-files-over)")
                for check in ("base files written", "file groups written", "records written",
                              "base files per partition", "records per file group",
                              "log files written", "log records written",
                              "log files compacted", "compacted base files")))

    name = "bloom"
    index_type = "BLOOM"
    SPARK_ADAPTER = "indexes.bloom.spark:BloomSpark"
    SIM_ADAPTER = "indexes.bloom.sim:BloomSim"
    METRICS = (
        *FOOTER_METRICS,
        TAG_JOBS,
        Metric("bloom_mode", "simulator: 'exact' (real filters) or 'model' (drawn FPs)"),
    )
    PARAMS = (
        Param("num_entries", "hoodie.index.bloom.num_entries", int, 60000,
              "entries each filter (row) is sized for"),
        FPP,
        FILTER_TYPE,
        Param("max_entries", "hoodie.bloom.index.filter.dynamic.max.entries", int, 100000,
              "bound of a DYNAMIC_V0 filter before adds go round-robin"),
        Param("max_file_size", "hoodie.parquet.max.file.size", int, sizing.MAX_FILE_SIZE,
              "target base file size in bytes (times indexbench.scale)"),
        Param("small_file_limit", "hoodie.parquet.small.file.limit", int,
              sizing.SMALL_FILE_LIMIT, "files under this many bytes are topped up with "
              "inserts first (times indexbench.scale; 0 turns top-up off)"),
        RECORD_SIZE_ESTIMATE,
        ESTIMATION_THRESHOLD,
        RECORD_SIZE_MAX_COMMITS,
        RECORD_SIZE_METADATA,
        SMALL_FILE_CANDIDATES,
        Param("insert_split_size", "hoodie.copyonwrite.insert.split.size", int,
              sizing.INSERT_SPLIT_SIZE, "inserts per new file group when auto split is off "
              "(times indexbench.scale)"),
        Param("auto_split", "hoodie.copyonwrite.insert.auto.split", bool, sizing.AUTO_SPLIT,
              "size new file groups as max.file.size / average record size"),
        Param("scale", "indexbench.scale", fraction, DEFAULT_SCALE,
              "shrinks file sizes and filter entries together, keeping Hudi's ratio of keys "
              "per file to filter capacity (1 = Hudi's sizes; accepts 1/1000)"),
        Param("prune_by_ranges", "hoodie.bloom.index.prune.by.ranges", bool, True,
              "compare keys only with files whose min/max range holds them"),
        Param("hashing", "indexbench.bloom.hash", str, PYBLOOM,
              "bit positions of the footer filters: pybloom (pybloom-live's, the default) or "
              "hudi (Hadoop's murmur, byte for byte what Hudi writes: Hudi can probe them)",
              choices=HASHINGS),
    )

    def validate(self) -> None:
        p = self.params
        if p["num_entries"] < 1 or p["max_entries"] < 1:
            raise IndexBenchError("bloom num_entries and max_entries must be >= 1")
        if p["insert_split_size"] < 1:
            raise IndexBenchError("hoodie.copyonwrite.insert.split.size must be >= 1")
        if p["max_file_size"] < 1 or p["small_file_limit"] < 0:
            raise IndexBenchError("hoodie.parquet.max.file.size must be >= 1 and "
                                  "hoodie.parquet.small.file.limit >= 0")
        if p["record_size_estimate"] < 1 or p["estimation_threshold"] < 0:
            raise IndexBenchError("hoodie.copyonwrite.record.size.estimate must be >= 1 and "
                                  "hoodie.record.size.estimation.threshold >= 0")
        if (p["record_size_max_commits"] < 1 or p["record_size_metadata_bytes"] < 0
                or p["small_file_candidates"] < 0):
            raise IndexBenchError(
                "_hoodie.record.size.estimator.max.commits must be >= 1, "
                "hoodie.record.size.estimator.average.metadata.size and "
                "hoodie.merge.small.file.group.candidates.limit >= 0")
        if not 0 < p["scale"] <= 1:
            raise IndexBenchError("indexbench.scale must be in (0, 1]")
        if self._scaled(p["max_file_size"]) < p["record_size_estimate"]:
            raise IndexBenchError(
                f"indexbench.scale {p['scale']:g} leaves hoodie.parquet.max.file.size at "
                f"{self._scaled(p['max_file_size'])} bytes, under one record's estimate "
                f"({p['record_size_estimate']}): raise the scale")
        if not 0 < p["fpp"] < 1:
            raise IndexBenchError("hoodie.index.bloom.fpp must be in (0, 1)")

    def _scaled(self, value: int) -> int:
        return max(1, round(value * self.params["scale"]))

    @property
    def filter_entries(self) -> tuple[int, int]:
        """(num_entries, max_entries) the filters are built with, after the scale."""
        return self._scaled(self.params["num_entries"]), self._scaled(self.params["max_entries"])

    def sizing(self) -> sizing.SizingConfig:
        """The file-sizing configs the insert planner uses, byte sizes after the scale."""
        p = self.params
        return sizing.SizingConfig(
            max_file_size=self._scaled(p["max_file_size"]),
            small_file_limit=round(p["small_file_limit"] * p["scale"]),
            record_size_estimate=p["record_size_estimate"],
            insert_split_size=self._scaled(p["insert_split_size"]),
            auto_split=p["auto_split"], estimation_threshold=p["estimation_threshold"],
            record_size_max_commits=p["record_size_max_commits"],
            record_size_metadata_bytes=p["record_size_metadata_bytes"],
            small_file_candidates=p["small_file_candidates"])

    def size_notes(self, records: int, record_bytes: float) -> list[str]:
        """A scale under 1 that makes :data:`MANY_FILES` base files or more: each is a
        candidate whose keys bloom may read, so a batch's tag cost follows the file
        count, not Hudi's (a 100M-key table at 1/1000 has hundreds of thousands). The
        count is a lower bound: no file holds more than the scaled max file size."""
        cfg, scale = self.sizing(), self.params["scale"]
        files = records * record_bytes / cfg.max_file_size
        if scale >= 1 or files < MANY_FILES:
            return []
        scale_text = f"1/{round(1 / scale)}" if (1 / scale).is_integer() else f"{scale:g}"
        true_size = self.params["max_file_size"] / 2**20
        return [f"{self.name}: at indexbench.scale {scale_text} a base file holds "
                f"~{cfg.max_file_size / 1000:,.0f} KB, so {records:,} records make at "
                f"least {files:,.0f} files, each one bloom may have to read; "
                f"--set {self.name}:indexbench.scale=1 gives Hudi's true sizing "
                f"({true_size:,.0f} MiB files)"]

    def describe(self) -> dict:
        """Parameters (``hashing``: whose bit positions the filters hold), plus the sizes
        the scale gives (what the run really used)."""
        num, mx = self.filter_entries
        cfg = self.sizing()
        return {**super().describe(), "effective_num_entries": num,
                "effective_max_entries": mx, "effective_max_file_size": cfg.max_file_size,
                "effective_small_file_limit": cfg.small_file_limit,
                "effective_insert_split_size": cfg.insert_split_size}

    def new_filter(self) -> HoodieBloomFilter:
        return self.filter_factory()()

    def filter_factory(self) -> Callable[[], HoodieBloomFilter]:
        """A picklable maker of this table's empty filters, for Spark task closures (a
        filter itself holds hashlib objects, which do not pickle)."""
        p = self.params
        num, mx = self.filter_entries
        return partial(HoodieBloomFilter.create, p["filter_type"], num, p["fpp"], mx,
                       hashing=p["hashing"])

    def verify_base_file(self, path: str, footer: dict[str, str], keys) -> list[str]:
        """The footer's bloom filter holds every key of its file."""
        if FOOTER_KEY not in footer:
            return ["no bloom filter in the footer"]
        bloom = HoodieBloomFilter.deserialize(footer[FOOTER_KEY], footer.get(TYPE_CODE_KEY))
        missing = int((~bloom.might_contain_many(keys)).sum())
        return [f"bloom filter misses {missing} of its keys"] if missing else []

    def base_file_footer(self, record_keys: pa.Array) -> tuple[dict[str, str], int]:
        """The filter's footer entries as Hudi's HoodieBloomFilterWriteSupport writes them:
        the type-code key only for DYNAMIC_V0 (a reader without it reads SIMPLE)."""
        bloom = self.new_filter()
        bloom.add_keys(record_keys if bloom.hashing != PYBLOOM else record_keys.to_pylist())
        entries = bloom.footer_entries()
        return entries, len(entries[FOOTER_KEY])

    def lookup_candidates(self, table, view, partition, keys, stats, counts):
        """Footer ranges, then bloom probes: the files whose filter may hold a key."""
        from indexes.bloom.core import lookup_candidates

        files = [(fid, table.abs_path(path)) for fid, path in view.files.get(partition, ())]
        return lookup_candidates(table.fs, files, keys.column(view.record_key_field), stats,
                                 counts, self.params["prune_by_ranges"])

    def table_metrics(self, snapshot) -> dict[str, float]:
        disk = sum(s.index_bytes for s in snapshot.slices.values())
        return {"index_disk_bytes": disk, "index_mem_bytes": 0}
