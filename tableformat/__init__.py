"""The bottom layer: the table format (files, base files, timeline, snapshot) and errors.

Everything above it (index cores, the Spark driver, the simulator, reports) imports from
here; nothing here imports from above, and nothing here imports pyspark.
"""
