"""``indexbench verify``: a table's invariants, checked by Spark tasks over its files.

Every committed file exists; every partition has Hudi's ``.hoodie_partition_metadata``;
footer min/max and bloom filter hold every key of their file; records are unique across
the snapshot under the table's key scope, (partition, key) — on a merge-on-read table
the records a snapshot read gives, base files merged with their logs; the index's own
invariants (bucket of every record, RLI coverage) hold. Only problems (bounded) come back to the
driver.

A table Hudi's own writer made (``compare --peers hudi``) holds no indexbench index: it
gets every check above but the index's own, since which index wrote it is Hudi's write
config, which Hudi does not keep in ``hoodie.properties``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import indexes
from indexes import roles
from tableformat import basefile as bf
from tableformat import partition_meta
from tableformat.fs import exists
from tableformat.slice_reader import read_slice
from tableformat.table import FileSlice, Table

MAX_REPORTED = 20


def check_base_file(table: Table, partition: str, path: str, expected_rows: int, index,
                    snapshot) -> tuple[list[str], np.ndarray]:
    """Problems of one base file and its record keys (Spark-free: tests call it directly)."""
    full = table.abs_path(path)
    if not exists(table.fs, full):
        return [f"{path}: committed file is missing"], np.empty(0, dtype=object)
    footer = bf.read_footer(table.fs, full)
    data = bf.read_base_file(table.fs, full).to_pandas()
    keys = data[bf.RECORD_KEY].to_numpy(dtype=object)
    problems = []
    if len(keys) != expected_rows:
        problems.append(f"{path}: {len(keys)} rows, the commit says {expected_rows}")
    lo, hi = footer.get(bf.MIN_KEY_FOOTER), footer.get(bf.MAX_KEY_FOOTER)
    # Hudi's writer puts the key range beside its bloom filter, and writes neither with
    # hoodie.parquet.bloom.filter.enabled=false (the hudi peer's bucket tables, and ours
    # that Hudi's writer continued): a range it did not write is not wrong; every base
    # file of ours has one
    unranged = (index is None or bf.written_by_hudi(footer)) and lo is None and hi is None
    if len(keys) and not unranged:
        if lo != min(keys) or hi != max(keys):
            problems.append(f"{path}: footer range [{lo}, {hi}] is not the keys' "
                            f"[{min(keys)}, {max(keys)}]")
    if (data[bf.PARTITION_PATH] != partition).any():
        problems.append(f"{path}: records with another _hoodie_partition_path")
    if index is None:  # written by Hudi's own writer: no index of ours to check
        return problems, keys
    problems += [f"{path}: {p}" for p in roles.verify_base_file(index, path, footer, keys)]
    where = roles.misplaced(index, data, partition, bf.BaseFileName.parse(path).file_id,
                            table.config, snapshot) if len(keys) else None
    if where:
        problems.append(f"{path}: {where}")
    return problems, keys


def check_slice(table: Table, s: FileSlice, index, snapshot) -> tuple[list[str], np.ndarray]:
    """Problems of one file slice and its live record keys: its base file's (if any),
    then, when it has log files, the merged records' place (Spark-free)."""
    problems: list[str] = []
    keys = np.empty(0, dtype=object)
    if s.path is not None:
        problems, keys = check_base_file(table, s.partition, s.path, s.base_records, index,
                                         snapshot)
    if not s.logs:
        return problems, keys
    missing = [lf.path for lf in s.logs if not exists(table.fs, table.abs_path(lf.path))]
    if missing:
        return problems + [f"{p}: committed log file is missing" for p in missing], keys
    cfg = table.config
    data = read_slice(table.fs, table.root, s, cfg.record_key_field, cfg.ordering_field)
    if not data.num_rows:
        return problems, np.empty(0, dtype=object)
    frame = data.to_pandas()
    keys = frame[bf.RECORD_KEY].to_numpy(dtype=object)
    if (frame[bf.PARTITION_PATH] != s.partition).any():
        problems.append(f"{s.file_id} (merged): records with another _hoodie_partition_path")
    where = roles.misplaced(index, frame, s.partition, s.file_id, cfg, snapshot)
    if where:
        problems.append(f"{s.file_id} (merged with {len(s.logs)} log files): {where}")
    return problems, keys


def verify_table(spark: SparkSession, uri: str) -> list[str]:
    """All problems found in the table (empty list: every invariant holds)."""
    table = Table(uri)
    if not table.exists():
        return [f"{uri}: no table here (.hoodie/hoodie.properties is missing)"]
    if table.config.written_by_hudi:
        return _verify(spark, table, None)
    index = indexes.from_table_config(table.config)
    with roles.resources(index, table):  # what the index needs running (a server)
        return _verify(spark, table, index)


def _verify(spark: SparkSession, table: Table, index) -> list[str]:
    snapshot = table.snapshot()
    problems = roles.verify_state(index.spark, spark, table, snapshot) if index else []
    problems += partition_meta.missing(table.fs, table.root, snapshot.partitions())
    slices = list(snapshot.slices.values())
    if not slices:
        return problems
    files = spark.createDataFrame([(i,) for i in range(len(slices))], "slice long")

    def check(frames):
        for pdf in frames:
            out_p, out_k = [], []
            for i in pdf["slice"]:
                s = slices[int(i)]
                probs, keys = check_slice(table, s, index, snapshot)
                part = s.partition
                out_p += probs
                out_k.append(pd.DataFrame({"problem": None, "partition": part, "key": keys}))
            yield pd.concat([pd.DataFrame({"problem": out_p, "partition": None, "key": None})]
                            + out_k, ignore_index=True)

    n = max(1, min(len(slices), spark.sparkContext.defaultParallelism * 2))
    checked = files.repartition(n).mapInPandas(
        check, "problem string, partition string, key string").persist()
    problems += [r[0] for r in checked.where("problem is not null").limit(MAX_REPORTED * 10)
                 .collect()]  # ok: bounded by limit()
    # uniqueness under the table's key scope: (partition, key) for a non-global index
    dups = (checked.where("key is not null").groupBy("partition", "key").count()
            .where("count > 1").orderBy(F.desc("count")).limit(MAX_REPORTED)
            .collect())  # ok: bounded
    problems += [f"key {r['key']!r} of partition {r['partition']!r} is in {r['count']} files"
                 for r in dups]
    checked.unpersist()
    return problems
