"""external-kv's store: one lookup request (a multi-get) against the keys it carries, and
the server's bytes per entry, on a real redis-server started here on 127.0.0.1.

``ExternalKvRequests`` loads ``INDEXBENCH_ASV_KV_ENTRIES`` entries (default 200,000;
``.ci/asv-check`` runs 20,000) of uuid-like keys in 4 date partitions, as the index
writes them, then times one multi-get of 1, 10, 100 (Hudi's default
``hoodie.index.hbase.get.batch.size``) and 1,000 keys: the curve of the report's
``kv_latency.png`` without Spark around it. ``track_bytes_per_entry``: the server's own
memory report (INFO ``used_memory``) less its empty size, per entry.

Skipped (``NotImplementedError`` in setup) when the index has not landed at the commit or
no ``redis-server`` is installed.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pyarrow as pa

from benchmarks._data import SAMPLING, uuid_keys

ENTRIES = int(os.environ.get("INDEXBENCH_ASV_KV_ENTRIES", "200000"))
PARTITIONS = ("2026/01/01", "2026/01/02", "2026/01/03", "2026/01/04")
INSTANT = "20260101000000001"


def _index():
    try:
        from indexes.external_kv import core, server
        from indexes.external_kv.store import KvStore
    except ImportError as exc:  # the index has not landed at this commit
        raise NotImplementedError(f"indexes.external_kv not available: {exc}") from None
    if server.binary() is None:
        raise NotImplementedError("redis-server is not installed")
    return core, server, KvStore


class ExternalKvRequests:
    """Multi-gets of existing keys on a loaded server."""

    rounds, repeat = SAMPLING
    params = [[1, 10, 100, 1000]]
    param_names = ["keys_per_request"]

    def setup(self, keys_per_request: int) -> None:
        core, server, KvStore = _index()
        self.folder = tempfile.mkdtemp(prefix="indexbench-asv-kv-")
        self.server = server.RedisServer(os.path.join(self.folder, "kv"))
        try:
            self.store = KvStore(self.server.start())
            self.empty = self.store.memory_bytes()
            keys = pa.array(uuid_keys(ENTRIES), pa.string())
            parts = pa.array(np.array(PARTITIONS, dtype=object)[np.arange(ENTRIES) % 4])
            self.keys = core.entry_keys(parts, keys)
            fids = pa.array([f"{i:08d}-0000-4035-a392-22a91eafd130-0" for i in range(64)])
            values = core.entry_values(INSTANT, fids.take(pa.array(np.arange(ENTRIES) % 64)))
            for lo, hi in core.batch_bounds(ENTRIES, 10_000):
                self.store.put(self.keys.slice(lo, hi - lo), values.slice(lo, hi - lo))
            rng = np.random.default_rng(1)
            self.request = self.keys.take(pa.array(rng.integers(0, ENTRIES, keys_per_request)))
        except BaseException:
            self.teardown(keys_per_request)
            raise

    def teardown(self, keys_per_request: int) -> None:
        if getattr(self, "store", None) is not None:
            self.store.close()
        self.server.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def time_multi_get(self, keys_per_request: int) -> None:
        self.store.get(self.request)

    def track_bytes_per_entry(self, keys_per_request: int) -> float:
        return (self.store.memory_bytes() - self.empty) / ENTRIES

    track_bytes_per_entry.unit = "bytes"
