"""asv suite of indexbench (see asv.conf.json at the repository root).

Modelled on Apache Spark's own asv suite: no SparkSession is created at import, the
Spark-free index cores get ``time_*``/``peakmem_*`` benchmarks across sizes, and a real
Spark run is done once in ``setup_cache`` and exposed through ``track_*`` with units.
"""
