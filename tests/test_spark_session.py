"""How the session plans its shuffles: from the executors' cores and the batch's size."""

from __future__ import annotations

from indexbench.spark import SHUFFLE_PARTITION_BYTES, cluster_cores, shuffle_partitions_for


def test_small_batches_get_two_partitions_per_core_and_big_ones_one_per_128_mib():
    assert shuffle_partitions_for(4, 0) == 4
    assert shuffle_partitions_for(4, 3 * SHUFFLE_PARTITION_BYTES) == 4
    assert shuffle_partitions_for(4, 10 * SHUFFLE_PARTITION_BYTES + 1) == 11


def test_a_batch_plans_its_own_partitions_and_restores_the_sessions(spark, tmp_path,
                                                                    monkeypatch):
    import indexbench.driver as driver
    from indexbench import api

    seen: list[int] = []
    real = driver.write_file_groups

    def spy(*args, **kwargs):
        seen.append(int(spark.conf.get("spark.sql.shuffle.partitions")))
        return real(*args, **kwargs)

    monkeypatch.setattr(driver, "write_file_groups", spy)
    monkeypatch.setattr(driver, "shuffle_partitions_for", lambda base, size: base + 3)
    before = spark.conf.get("spark.sql.shuffle.partitions")
    api.run("simple-bucket", "uniform", out=str(tmp_path), spark=spark, batches=1,
            initial_records=500, batch_size=100)
    assert seen == [int(before) + 3] * 2  # the load and one batch, each with its own plan
    assert spark.conf.get("spark.sql.shuffle.partitions") == before
    assert cluster_cores(spark) == spark.sparkContext.defaultParallelism == 2


def test_python_workers_read_pysparks_zip_directory_once(spark):
    """Workers fork from indexbench.python_daemon: the per-task invalidate_caches() that
    PySpark's worker calls leaves a zip importer's directory as read, not re-read."""
    import pyarrow as pa

    def probe(batches):
        import importlib
        import sys
        import zipimport

        zips = [i for i in sys.path_importer_cache.values()
                if isinstance(i, zipimport.zipimporter)]
        before = [id(zipimport._zip_directory_cache.get(z.archive)) for z in zips]
        importlib.invalidate_caches()
        after = [id(zipimport._zip_directory_cache.get(z.archive)) for z in zips]
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"zips": len(zips), "kept": before == after,
                                           "main": sys.modules["__main__"].__spec__.name}])

    rows = spark.range(4).repartition(2).mapInArrow(
        probe, "zips long, kept boolean, main string").collect()
    assert rows and all(r.kept for r in rows)
    assert all(r.zips >= 1 for r in rows)  # pyspark.zip and py4j's are on the workers' path
    assert {r.main for r in rows} == {"indexbench.python_daemon"}
    assert spark.conf.get("spark.python.daemon.module") == "indexbench.python_daemon"
