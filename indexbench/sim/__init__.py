"""The simulator: the index cores driven without Spark over a model table (indexbench sim)."""
