"""extendible-hash: a split's seconds and bytes on Spark, and its directory cores.

``Split*`` tracks one bucket split, run for real (a replacecommit through the service
runner, :mod:`indexbench.services`): a table of ``INDEXBENCH_ASV_SPLIT_RECORDS`` records
(default 20,000; ``.ci/asv-check`` runs 4,000) in one partition of 2 buckets, each over
a capacity of 0.45 × the records, so after the load each bucket splits once (local
depth 1 → 2; the first split doubles the directory). Copy-on-write and merge-on-read
(where the load is in log files, so a split reads the merged file slice). As in
bench_spark_run, the runs happen once in ``setup_cache`` (its own process), after a
small warm-up load that splits too; the tracks are the split rows' figures: the median
split's seconds, the mean bytes it read and wrote, the records it moved.
``Directory*`` times the cores: routing a batch of key hashes through a directory, and
a split that doubles a large directory.

Skipped (``NotImplementedError``) on commits before the index landed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import traceback
from typing import Any

import indexes
from benchmarks._data import SAMPLING, int32_hashes

NAME = "extendible-hash"
RECORDS = int(os.environ.get("INDEXBENCH_ASV_SPLIT_RECORDS", "20000"))
TABLE_TYPES = ["cow", "mor"]


def _require_index() -> None:
    if NAME not in indexes.names():
        raise NotImplementedError(f"{NAME} is not registered at this commit")


def split_figures(df) -> dict[str, float]:
    """The tracked numbers of a run's split rows."""
    split = df[df["operation"] == "rescale"]
    if split.empty:
        raise RuntimeError("the load made no split")
    return {"split_s": float(split["total_s"].median()),
            "bytes_read": float(split["bytes_read"].mean()),
            "bytes_written": float(split["bytes_written"].mean()),
            "records_moved": float(split["records_moved"].mean()),
            "records": float(split["records"].mean()), "splits": float(len(split))}


class _Split:
    """Base: one load + splits per table type, done once for all tracks."""

    params = [TABLE_TYPES]
    param_names = ["table_type"]
    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, dict[str, Any]]:
        import workloads
        from indexbench import api
        from indexbench.spark import get_session

        if NAME not in indexes.names():
            return {}
        spark = get_session("local[2]", app_name="indexbench-asv-split", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        root = tempfile.mkdtemp(prefix="indexbench-asv-split-")
        w = workloads.load("uniform").with_overrides(partitions=1)
        # each of the 2 buckets holds about half the records: all over 0.45 × records
        params = {"hoodie.bucket.index.num.buckets": 2,
                  "hoodie.bucket.index.extendible.max.records": int(RECORDS * 0.45)}
        out: dict[str, dict[str, Any]] = {}
        try:
            # a small load that splits first, so the tracked splits run in a warm JVM
            api.run(NAME, w, params={**params, "hoodie.bucket.index.extendible.max.records":
                                     90}, out=os.path.join(root, "warm-up"), spark=spark,
                    initial_records=200, batches=0, batch_size=1)
            for table_type in TABLE_TYPES:
                try:
                    typed = {**params, "hoodie.table.type": table_type}
                    df = api.run(NAME, w, params=typed, out=os.path.join(root, table_type),
                                 spark=spark, initial_records=RECORDS, batches=0,
                                 batch_size=1)
                    out[table_type] = split_figures(df)
                except Exception:  # noqa: BLE001 - one broken run fails its tracks only
                    out[table_type] = {"error": traceback.format_exc(limit=5)}
        finally:
            spark.stop()
            shutil.rmtree(root, ignore_errors=True)
        return out

    setup_cache.timeout = 900

    def setup(self, cache, table_type: str) -> None:
        _require_index()

    @staticmethod
    def _value(cache, table_type: str, key: str) -> float:
        result = cache.get(table_type)
        if result is None:
            raise NotImplementedError(f"{NAME} was not registered when the cache was built")
        if "error" in result:
            raise RuntimeError(f"split run on {table_type} failed:\n{result['error']}")
        return result[key]


class SplitSeconds(_Split):
    """Seconds of one split (median over the run's splits): plan, the one Spark task
    that reads and rewrites the bucket, the replacecommit."""

    def track_split_seconds(self, cache, table_type: str) -> float:
        return self._value(cache, table_type, "split_s")

    track_split_seconds.unit = "seconds"


class SplitBytesRead(_Split):
    """Bytes one split reads: its bucket's file slice (base file, and logs on MOR)."""

    def track_split_bytes_read(self, cache, table_type: str) -> float:
        return self._value(cache, table_type, "bytes_read")

    track_split_bytes_read.unit = "bytes"


class SplitBytesWritten(_Split):
    """Bytes one split writes: its two children's base files."""

    def track_split_bytes_written(self, cache, table_type: str) -> float:
        return self._value(cache, table_type, "bytes_written")

    track_split_bytes_written.unit = "bytes"


class SplitRecordsMoved(_Split):
    """Records one split moves to the new bucket (about half of the bucket's)."""

    def track_split_records_moved(self, cache, table_type: str) -> float:
        return self._value(cache, table_type, "records_moved")

    track_split_records_moved.unit = "records"


class DirectoryRoute:
    """Routing a batch of masked key hashes through a directory of 2^16 entries whose
    buckets have mixed local depths (one numpy gather per batch)."""

    rounds, repeat = SAMPLING
    params = [[100_000, 1_000_000]]
    param_names = ["keys"]

    def setup(self, keys: int) -> None:
        _require_index()
        from indexes.extendible_hash.core import Directory

        d = Directory.initial("p", 1 << 12)
        for b in range(0, 1 << 12, 7):  # every 7th bucket split to depth 16
            for _ in range(4):
                d = d.split(b)
        self.directory = d
        self.hashes = int32_hashes(keys).astype("int64") & 0x7FFFFFFF

    def time_route(self, keys: int) -> None:
        self.directory.route(self.hashes)


class DirectoryDoubling:
    """A split that doubles a directory of 2^d entries (copy, then repoint)."""

    rounds, repeat = SAMPLING
    params = [[1 << 12, 1 << 16, 1 << 20]]
    param_names = ["entries"]

    def setup(self, entries: int) -> None:
        _require_index()
        from indexes.extendible_hash.core import Directory

        self.directory = Directory.initial("p", entries)

    def time_split_doubling(self, entries: int) -> None:
        self.directory.split(0)

    def track_directory_bytes_after(self, entries: int) -> float:
        return float(len(self.directory.split(0).stored))

    track_directory_bytes_after.unit = "bytes"
