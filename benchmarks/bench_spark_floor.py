"""The floor of throughput mode's two Spark jobs with nothing written (the merge-on-read
speed target at 1M + 3 x 100k: MOR simple-bucket <= 1x delta-rs MERGE, 0.81 s a batch
here).

A bucket index's batch in throughput mode is two jobs: the validation job, which must
finish before anything is written, and the write job (the batch generated again, hashed
to buckets in ``mapInArrow``, shuffled by (partition, bucket) into one ``applyInArrow``
call per file group). Here both run with nothing written: the write-shaped job's
``applyInArrow`` returns one row per group. What they take is what Spark costs before
any index or file work; when it exceeds the peer's whole batch, no driver change short of
leaving Spark meets the target. Seconds: min and median over ``REPEATS`` batches after a
warm-up, in one ``setup_cache`` (Spark starts there, never at import).

Size: the batch of ``INDEXBENCH_ASV_PEER_SIZES`` (default 100,000 records);
``INDEXBENCH_ASV_FLOOR_REPEATS`` batches timed (default 7).
"""

from __future__ import annotations

import os
import time
from typing import Any

_sizes = [int(x) for x in
          os.environ.get("INDEXBENCH_ASV_PEER_SIZES", "1000000,3,100000").split(",")]
BATCH = _sizes[2]
BUCKETS = 64  # simple-bucket's count in the docs' comparison
REPEATS = int(os.environ.get("INDEXBENCH_ASV_FLOOR_REPEATS", "7"))  # batches timed


def _write_shaped(batch, key: str, part: str):
    """The write job's shape: generate, hash to buckets, shuffle, one call per group."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql import types as T

    from indexes.hashing import bucket_ids

    def tag(batches):
        for rb in batches:
            b = bucket_ids([rb.column(key)], np.full(rb.num_rows, BUCKETS, np.int64))
            yield rb.append_column("bucket", pa.array(b.astype(np.int32)))

    schema = T.StructType([*batch.schema.fields, T.StructField("bucket", T.IntegerType())])
    return (batch.mapInArrow(tag, schema)
            .groupBy(part, "bucket")
            .applyInArrow(lambda t: pa.table({"n": [t.num_rows]}), "n long"))


class ThroughputJobsFloor:
    """Seconds of the validation job and the write-shaped job, nothing written."""

    rounds = 1
    repeat = 1
    number = 1
    timeout = 120

    def setup_cache(self) -> dict[str, Any]:
        import numpy as np

        import workloads
        from indexbench.driver import validate_batch
        from indexbench.spark import get_session
        from tableformat.table import TableConfig
        from workloads.spark_source import batch_df

        w = workloads.load("uniform", initial_records=BATCH * 10, batches=REPEATS + 1,
                           batch_size=BATCH)
        cfg = TableConfig(name="floor", record_key_field="key", partition_field="dt",
                          ordering_field="ts", index_name="simple-bucket", index_type="BUCKET")
        spark = get_session("local[2]", app_name="indexbench-asv-floor", shuffle_partitions=4,
                            conf={"spark.default.parallelism": "2"})
        try:
            seconds: dict[str, list[float]] = {"validate": [], "write_shaped": [], "both": []}
            for b in range(1, REPEATS + 2):  # batch 1 warms the JVM and the workers up
                batch = batch_df(spark, w, b)
                t0 = time.perf_counter()
                validate_batch(batch, cfg, None)
                t1 = time.perf_counter()
                _write_shaped(batch, cfg.record_key_field, cfg.partition_field).collect()
                t2 = time.perf_counter()
                if b > 1:
                    for name, s in (("validate", t1 - t0), ("write_shaped", t2 - t1),
                                    ("both", t2 - t0)):
                        seconds[name].append(s)
            return {f"{k}_{stat}": float(fn(v)) for k, v in seconds.items()
                    for stat, fn in (("min", np.min), ("median", np.median))}
        finally:
            spark.stop()

    setup_cache.timeout = 900

    def track_both_min_s(self, cache) -> float:
        return cache["both_min"]

    track_both_min_s.unit = "seconds"

    def track_both_median_s(self, cache) -> float:
        return cache["both_median"]

    track_both_median_s.unit = "seconds"

    def track_validate_median_s(self, cache) -> float:
        return cache["validate_median"]

    track_validate_median_s.unit = "seconds"

    def track_write_shaped_median_s(self, cache) -> float:
        return cache["write_shaped_median"]

    track_write_shaped_median_s.unit = "seconds"
