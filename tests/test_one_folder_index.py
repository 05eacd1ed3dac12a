"""The one-folder contract, proven: an index written in a package folder outside
``indexes/`` and registered with one call runs through ``run``, ``sim``, ``verify``,
``report`` and the contract tests' checks (the dict oracle with a crash), with its
declared metric reaching the rows and the report. If this test needs anything else of
the harness, the extension points are not done (docs/adding-an-index.md)."""

from __future__ import annotations

import shutil
import sys
import textwrap
import warnings

import pandas as pd
import pytest
from test_oracle import check

import indexes
from indexbench import api
from indexbench.sim.driver import simulate
from reports.data import UnknownColumnWarning, check_columns

pytestmark = pytest.mark.spark

NAME = "toy-length"
SIZES = {"initial_records": 300, "batches": 2, "batch_size": 120}

FILES = {
    "__init__.py": '''
        """toy-length: bucket = record key length % N (a toy: the contract, not a design)."""
        import numpy as np

        from indexes.base import Metric, Param, RecordIndex, bucket_fill
        from indexes.roles import Bucketed, FooterData, TableFigures
        from toyidx.core import buckets

        FOOTER = "toy.num.buckets"


        class ToyIndex(FooterData, TableFigures, Bucketed, RecordIndex):
            name = "toy-length"
            index_type = "BUCKET"
            assigns_inserts = True
            SPARK_ADAPTER = "toyidx.spark:ToySpark"
            SIM_ADAPTER = "toyidx.sim:ToySim"
            PARAMS = (Param("num_buckets", "toy.num.buckets", int, 4, "buckets"),)
            METRICS = (Metric("toy_keys_routed", "keys routed by length", counter=True),)

            def base_file_footer(self, record_keys):
                return {FOOTER: str(self.params["num_buckets"])}, 0

            def verify_base_file(self, path, footer, keys):
                want = str(self.params["num_buckets"])
                return [] if footer.get(FOOTER) == want else [f"footer {FOOTER} is not {want}"]

            def row_buckets(self, data, partition, config, snapshot):
                return buckets(data[config.record_key_field], self.params["num_buckets"])

            def table_metrics(self, snapshot):
                counts = np.array([s.num_records for s in snapshot.slices.values()])
                return {**bucket_fill(counts), "index_mem_bytes": 0, "index_disk_bytes": 0}
    ''',
    "core.py": '''
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc


        def buckets(keys, n: int) -> np.ndarray:
            """Bucket of every key: its length in characters % n."""
            lengths = pc.utf8_length(pa.array(keys, pa.string())).to_numpy(zero_copy_only=False)
            return (lengths % n).astype(np.int64)
    ''',
    "spark.py": '''
        import numpy as np

        from indexes.base import BUCKET_COL, FILE_ID_COL, SparkAdapter
        from indexes.bucket.files import existing_bucket_files, file_id_table
        from indexes.bucket.spark_routing import tagged_schema
        from toyidx.core import buckets


        class ToySpark(SparkAdapter):
            def tag_location(self, batch, ctx):
                cfg = ctx.table.config
                existing = existing_bucket_files(ctx.snapshot.in_partitions(ctx.partitions))
                key, part, n = cfg.record_key_field, cfg.partition_field, \\
                    self.index.params["num_buckets"]
                instant, acc = ctx.instant, ctx.counters

                def tag(batches):
                    import pyarrow as pa

                    for rb in batches:
                        b = buckets(rb.column(key), n)
                        acc.add({"toy_keys_routed": rb.num_rows})
                        names, inverse = file_id_table(rb.column(part), b, existing, instant)
                        yield pa.RecordBatch.from_arrays(
                            [*rb.columns, pa.array(names, pa.string()).take(pa.array(inverse)),
                             pa.array(b.astype(np.int32))],
                            schema=rb.schema.append(pa.field(FILE_ID_COL, pa.string(), False))
                            .append(pa.field(BUCKET_COL, pa.int32(), False)))

                return batch.mapInArrow(tag, tagged_schema(batch.schema))
    ''',
    "sim.py": '''
        import numpy as np

        from indexes.bucket.files import existing_bucket_files, new_bucket_file_id
        from indexes.bucket.sim import SlotCounts
        from indexes.simulation import GroupWrites, SimAdapter
        from toyidx.core import buckets


        class ToySim(SimAdapter):
            def begin(self, batch):
                super().begin(batch)
                n = self.index.params["num_buckets"]
                self.slots = SlotCounts(np.full(len(batch.partitions), n, dtype=np.int64))

            def add(self, chunk):
                keys = self.batch.keys.record_keys(chunk.ordinals)
                b = buckets(keys, self.index.params["num_buckets"])
                self.counts["toy_keys_routed"] += len(b)
                self.slots.add(self.slots.offset[chunk.part] + b, chunk.is_new)

            def finish(self):
                parts = self.batch.partitions
                existing = existing_bucket_files(self.model.snapshot.in_partitions(parts))
                out = GroupWrites()
                for p, b, new, old in self.slots.touched():
                    fid = existing.get((parts[p], b)) or new_bucket_file_id(
                        self.batch.instant, parts[p], b)
                    out.add(parts[p], fid, b, new, old)
                return out
    ''',
}


@pytest.fixture(scope="module")
def toy(spark, tmp_path_factory):
    """The package written under a temporary folder, shipped to the executors as Spark
    ships any user code (addPyFile), and registered with one call."""
    root = tmp_path_factory.mktemp("outside")
    pkg = root / "toyidx"
    pkg.mkdir()
    for name, text in FILES.items():
        (pkg / name).write_text(textwrap.dedent(text).lstrip())
    sys.path.insert(0, str(root))
    spark.sparkContext.addPyFile(shutil.make_archive(str(root / "toyidx"), "zip", root,
                                                     "toyidx"))
    indexes.register(NAME, "toyidx:ToyIndex")  # the one registry line, as a call
    yield root
    indexes.unregister(NAME)
    sys.path.remove(str(root))


def test_a_toy_index_outside_indexes_runs_everywhere(spark, toy, tmp_path):
    assert NAME in indexes.names()
    out = str(tmp_path / "run")
    real = api.run(NAME, "uniform", out=out, spark=spark, **SIZES)
    ups = real[real["operation"] == "upsert"]
    assert ups["toy_keys_routed"].tolist() == ups["records"].tolist()  # its counter, counted
    assert ups["inserts"].iloc[0] == SIZES["initial_records"]  # the bulk load
    assert ups["files_read"].sum() == 0  # it reads nothing to tag
    table = f"{out}/tables/{NAME}"
    assert api.verify(table, spark=spark) == []

    sim = simulate(NAME, "uniform", write=False, parallelism=2, **SIZES)
    exact = ["records", "inserts", "updates", "files_written", "records_written",
             "table_records", "file_groups", "toy_keys_routed"]
    pd.testing.assert_frame_equal(sim[exact].reset_index(drop=True).astype(float),
                                  ups[exact].reset_index(drop=True).astype(float))

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownColumnWarning)  # its column is declared
        check_columns(pd.read_parquet(f"{out}/metrics.parquet"), strict=True)
    page = api.report(out)
    assert NAME in open(page, encoding="utf-8").read()


def test_a_toy_index_passes_the_oracle_with_a_crash(spark, toy, tmp_path):
    steps = [([("a", "p", 1, False), ("bb", "p", 1, False), ("ccc", "q", 2, False)], None),
             ([("a", "p", 3, False), ("dddd", "q", 1, False)], "before_commit"),
             ([("bb", "p", 5, True), ("eeeee", "p", 1, False)], None)]
    check(spark, str(tmp_path / "t"), NAME, steps)
