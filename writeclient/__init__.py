"""Hudi's write client, engine-neutral: what a writer does around the table format.

File sizing (``UpsertPartitioner``'s small files and insert buckets), the create
handle's roll-over, and the fault points crash-safety tests inject at. Hudi keeps these
in ``hudi-client-common``, not in ``hudi-common``; here they sit above the table format
(:mod:`tableformat`) and below the indexes, and import no pyspark.
"""
