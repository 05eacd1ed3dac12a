"""Hudi log blocks (``tableformat.hudi_log``): encoding and decoding a data block of
records shaped like the benchmark's (five meta columns, a uuid key, a partition, a long
ordering value, an index key and a 100-byte payload).

The merge-on-read speed target is a log append of at least 200k records/s per core once
records are tagged; ``track_*_records_per_s`` are the codec's share of that budget (best
of 3, in memory, no file system).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pyarrow as pa

from ._data import SAMPLING, uuid_keys

INSTANT = "20260101000000000"
FILE_ID = "00000001-0000-4035-a392-22a91eafd130-0"
PART = "2026-01-01"


def records(n: int) -> tuple[pa.Table, str]:
    """``n`` log records with Hudi's meta columns, and the table's Avro schema."""
    from tableformat.avro_schema import avro_schema_json

    keys = pa.array(uuid_keys(n, seed=7), pa.string())
    ts = np.random.default_rng(7).integers(0, 2**40, n)
    table = pa.table({
        "_hoodie_commit_time": pa.array([INSTANT] * n),
        "_hoodie_commit_seqno": pa.array([f"{INSTANT}_0_{i}" for i in range(n)]),
        "_hoodie_record_key": keys, "_hoodie_partition_path": pa.array([PART] * n),
        "_hoodie_file_name": pa.array([FILE_ID] * n), "key": keys,
        "dt": pa.array([PART] * n), "ts": pa.array(ts, pa.int64()), "index_key": keys,
        "payload": pa.array(["x" * 100] * n)})
    spark = json.dumps({"type": "struct", "fields": [
        {"name": c, "type": t, "nullable": True, "metadata": {}} for c, t in
        (("key", "string"), ("dt", "string"), ("ts", "long"), ("index_key", "string"),
         ("payload", "string"))]})
    return table, avro_schema_json(spark, "bench")


def _best_rate(n: int, fn, clock=time.perf_counter) -> float:
    """Records per second, best of 3 (``clock=time.process_time``: per CPU second of
    this process, the one-core figure on a machine shared with other work)."""
    best = float("inf")
    for _ in range(3):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return n / best


class LogBlockCodec:
    """Encode ``records`` into one data block (Avro or Parquet) and decode it back."""

    rounds, repeat = SAMPLING

    params = [[20_000, 100_000], ["avro", "parquet"]]
    param_names = ["records", "format"]

    def setup(self, n: int, fmt: str) -> None:
        from tableformat.hudi_log import encode_data_block, parse_log_bytes

        self.encode, self.parse, self.fmt = encode_data_block, parse_log_bytes, fmt
        self.table, self.schema = records(n)
        self.block = self._encode()

    def _encode(self) -> bytes:
        return self.encode(self.table, self.schema, INSTANT, fmt=self.fmt)

    def time_encode(self, n: int, fmt: str) -> None:
        self._encode()

    def _decode(self) -> list:
        return self.parse(self.block)

    def time_decode(self, n: int, fmt: str) -> None:
        self._decode()

    def track_encode_records_per_s(self, n: int, fmt: str) -> float:
        return _best_rate(n, self._encode)

    track_encode_records_per_s.unit = "records/s"

    def track_decode_records_per_s(self, n: int, fmt: str) -> float:
        return _best_rate(n, self._decode)

    track_decode_records_per_s.unit = "records/s"


class LogAppend:
    """The whole merge-on-read append of one file group once its records are tagged
    (``indexbench.log_writer.append_file_group``): pre-combine, meta columns, the data
    block, the marker and the log file on the local disk. Target: >= 200k records/s
    per core (``track_append_records_per_cpu_s``)."""

    rounds, repeat = SAMPLING

    params = [[20_000, 100_000]]
    param_names = ["records"]

    def setup(self, n: int) -> None:
        import tempfile

        from indexbench.log_writer import LogTarget, append_file_group
        from indexbench.writer import MergeSpec

        table, self.schema = records(n)
        self.data = table.select(["key", "dt", "ts", "index_key", "payload"])
        self.root = tempfile.mkdtemp(prefix="bench-append-")
        self.spec = MergeSpec(self.root, INSTANT, "key", "dt", "ts", self.data.schema)
        self.append, self.target, self.version = append_file_group, LogTarget, 0

    def _append(self) -> None:
        self.version += 1  # a new log file each time, as each delta commit writes one
        self.append(self.spec, PART, FILE_ID, self.data,
                    self.target(base_instant=INSTANT, version=self.version), "0-0-0",
                    "avro", self.schema)

    def teardown(self, n: int) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)

    def time_append(self, n: int) -> None:
        self._append()

    def track_append_records_per_cpu_s(self, n: int) -> float:
        return _best_rate(n, self._append, time.process_time)

    track_append_records_per_cpu_s.unit = "records/s"


if __name__ == "__main__":  # python -m benchmarks.bench_hudi_log [records ...]
    for n in map(int, sys.argv[1:] or ["200000"]):
        for fmt in ("avro", "parquet"):
            bench = LogBlockCodec()
            bench.setup(n, fmt)
            rates = [_best_rate(n, f, clock) for f in (bench._encode, bench._decode)
                     for clock in (time.process_time, time.perf_counter)]
            print(f"{fmt:8} {n:>9,} records, {len(bench.block) / n:.0f} B/record: encode "
                  f"{rates[0]:>10,.0f}/CPU s ({rates[1]:>10,.0f}/s), decode "
                  f"{rates[2]:>10,.0f}/CPU s ({rates[3]:>10,.0f}/s)")
        append = LogAppend()
        append.setup(n)
        rate = _best_rate(n, append._append, time.process_time)
        append.teardown(n)
        print(f"append   {n:>9,} records (pre-combine, meta columns, Avro block, file): "
              f"{rate:>10,.0f}/CPU s")
