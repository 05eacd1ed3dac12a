"""The metrics contract (docs/metrics.md): the one row builder (:mod:`metrics.rows`) and
the files a run writes and reports read (:mod:`metrics.contract`: metrics.parquet,
metrics.csv, run.json). Above the table format, below the indexes; no pyspark.
"""
