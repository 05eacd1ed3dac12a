"""Paimon's dynamic bucket index in memory (next to dynamic-rli's cache): bytes per key.

pypaimon's native writer keeps each partition's ``key hash → bucket`` map (restored from
the HASH index files) in Rust's heap, where no Python code can count it. So it is
measured from outside: the resident set size (``/proc/self/statm``) a fresh process
gains when one stream write of one row into a partition of ``keys`` keys makes the
writer load that partition's index, minus what the same write gains on the fixed-bucket
table of the same keys (which has no index: the writer's own overhead), over ``keys``.
dynamic-rli's caches are counted from their arrays (``DynamicRliCacheSize``).

The tables are written by the paimon peer (``peers.paimon``, one partition, ``uniform``
keys, ``dynamic-bucket.target-row-num`` 2,000 as dynamic-rli's default).
``INDEXBENCH_ASV_PAIMON_KEYS`` (default 2,000,000; ``.ci/asv-check`` runs 20,000).
Skipped without ``pypaimon`` (``pip install -e ".[peers]"``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

KEYS = int(os.environ.get("INDEXBENCH_ASV_PAIMON_KEYS", "2000000"))

# Runs in a fresh interpreter: RSS gained by loading one partition's index for one row.
MEASURE = """
import gc, json, os, sys, time
import pyarrow  # noqa: F401 - loaded before the first RSS reading
from pypaimon import CatalogFactory
import peers.paimon as P
import workloads
from workloads import generator as G

warehouse, series, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
w = workloads.Workload(**spec)
table = CatalogFactory.create({"warehouse": warehouse}).get_table(P.identifier(series))
row = P.to_paimon(G.batch_table(w, 1))
builder = table.new_stream_write_builder()
write = builder.new_write()


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


gc.collect()
before, t0 = rss(), time.perf_counter()
write.write_arrow(row)
write.prepare_commit(1)
print(json.dumps({"rss": rss() - before, "seconds": time.perf_counter() - t0}))
"""


def measure(warehouse: str, series: str, w) -> dict[str, float]:
    """RSS gained and seconds taken by the one-row write, in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", MEASURE, warehouse, series,
                          json.dumps(vars(w))], capture_output=True, text=True, check=True,
                         timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


class PaimonDynamicIndexMemory:
    """Bytes per key of pypaimon's dynamic bucket index, resident in its writer."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, Any]:
        import peers

        if not peers.installed("pypaimon"):
            return {"skip": "pypaimon is not installed (pip install -e '.[peers]')"}
        import peers.paimon as P
        from indexbench import api

        w = api.load_workload("uniform", initial_records=KEYS, batches=1,
                              batch_size=1).with_overrides(partitions=1)
        root = tempfile.mkdtemp(prefix="indexbench-asv-paimon-")
        try:
            got = {}
            for series in P.SERIES:
                tbl = P.open_table(root, "asv", series=series)
                tbl.upsert(w, 0)
                tbl.close()
                got[series] = measure(root, series, w)
            index = got["paimon-dynamic"]["rss"] - got["paimon-fixed"]["rss"]
            return {"bytes_per_key": index / KEYS,
                    "load_s": got["paimon-dynamic"]["seconds"],
                    "writer": "native" if P.native_available() else "python"}
        finally:
            shutil.rmtree(root, ignore_errors=True)

    setup_cache.timeout = 1800

    def setup(self, cache) -> None:
        if "skip" in cache:
            raise NotImplementedError(cache["skip"])

    def track_index_bytes_per_key(self, cache) -> float:
        return cache["bytes_per_key"]

    track_index_bytes_per_key.unit = "bytes/key"

    def track_index_load_s(self, cache) -> float:
        return cache["load_s"]

    track_index_load_s.unit = "seconds"
