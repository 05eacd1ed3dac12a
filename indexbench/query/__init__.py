"""``indexbench query``: the read side of the tables ``run``/``compare`` wrote (RFC-29).

- :mod:`.keys` draws lookup keys from the table's workload (present and never inserted);
- :mod:`.lookup` runs one partition's point lookup through an index (no Spark);
- :mod:`.bucketed` aligns bucket files for a shuffle-free group-by/join (no Spark);
- :mod:`.spark_query` runs all three on Spark and measures them;
- :mod:`.runner` turns a list of tables into metrics rows (``operation = "query"``).
"""
