"""What the hash-bucket indexes share, as Hudi keeps it in ``org.apache.hudi.index.bucket``.

No index folder imports another: simple-bucket, multiple-rehash, partition-bucket,
consistent-hashing and dynamic-rli take their common pieces from here, one job a module.
Spark-free: :mod:`~indexes.bucket.routing` (row and key → bucket),
:mod:`~indexes.bucket.files` (bucket file groups: names, the snapshot's, the invariant,
fill), :mod:`~indexes.bucket.rescale` (rescale plans and their metadata),
:mod:`~indexes.bucket.index` (the hash-bucket index base class),
:mod:`~indexes.bucket.sim` (the simulator adapters' slot counting). Spark:
:mod:`~indexes.bucket.spark_routing` (hash-routing ``tag_location`` and the tagged schema)
and :mod:`~indexes.bucket.slices` (writing bucket file slices; the rescale jobs). This
package imports no submodule, so importing it loads nothing.
"""
