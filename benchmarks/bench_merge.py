"""Copy-on-write merge of one file group (the core every write task runs), against the
bare Parquet I/O it wraps.

``track_merge_over_io`` is the ratio the Arrow-native merge exists to keep low: merge
seconds over the seconds pyarrow takes to read and write the same file. The pandas merge
it replaced (before commit ``1d592e0``) measured 12x; a ratio near 1 means the merge
costs about its I/O.
"""

from __future__ import annotations

import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ._data import SAMPLING, uuid_keys

SCHEMA = pa.schema([("key", pa.string()), ("dt", pa.string()), ("ts", pa.int64()),
                    ("index_key", pa.string()), ("payload", pa.string())])
PART = "2024-01-01"


def _records(keys: np.ndarray, ts: np.ndarray) -> pa.Table:
    n = len(keys)
    return pa.table({"key": pa.array(keys, pa.string()), "dt": pa.repeat(pa.scalar(PART), n),
                     "ts": pa.array(ts, pa.int64()), "index_key": pa.array(keys, pa.string()),
                     "payload": pa.repeat(pa.scalar("x" * 100), n)}, schema=SCHEMA)


class MergeFileGroup:
    """Merge 10% updates + 2% inserts into a base file of ``rows`` records."""

    rounds, repeat = SAMPLING

    params = [[20_000, 200_000]]
    param_names = ["rows"]

    def setup(self, rows: int) -> None:
        from indexbench.writer import MergeSpec, merge_file_group
        from tableformat.table import Table, TableConfig

        self.dir = tempfile.mkdtemp(prefix="indexbench-merge-")
        cfg = TableConfig(name="t", record_key_field="key", partition_field="dt",
                          ordering_field="ts", index_name="simple-bucket",
                          index_type="BUCKET", index_params={})
        self.table = Table.create_or_open(f"{self.dir}/t", cfg)
        keys = uuid_keys(rows, seed=3)
        spec = MergeSpec(self.table.uri, "20240101000000000", "key", "dt", "ts", SCHEMA)
        self.merge = merge_file_group
        self.footer = lambda k: ({}, 0)
        self.base = merge_file_group(spec, PART, "fg-0", _records(keys, np.arange(rows)),
                                     None, "0-0-0", self.footer)["path"]
        rng = np.random.default_rng(4)
        upd = rng.choice(keys, rows // 10, replace=False)
        new = uuid_keys(rows // 50, seed=5)
        both = np.concatenate([upd, new])
        self.incoming = _records(both, np.full(len(both), rows + 1))
        self.spec = MergeSpec(self.table.uri, "20240101000000001", "key", "dt", "ts", SCHEMA)
        self.round = 0

    def teardown(self, rows: int) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _merge(self) -> None:
        self.round += 1
        self.merge(self.spec, PART, "fg-0", self.incoming, self.base, f"{self.round}-1-0",
                   self.footer)

    def time_merge(self, rows: int) -> None:
        self._merge()

    def peakmem_merge(self, rows: int) -> None:
        self._merge()

    def track_merge_over_io(self, rows: int) -> float:
        """Merge seconds / (pyarrow read + write of the same base file), best of 3."""
        path = self.table.abs_path(self.base)
        merge, io = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            self._merge()
            merge.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            pq.write_table(pq.read_table(path), f"{self.dir}/copy.parquet",
                           compression="snappy")
            io.append(time.perf_counter() - t0)
        return min(merge) / min(io)

    track_merge_over_io.unit = "ratio"
