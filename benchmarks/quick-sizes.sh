# Small sizes for one quick pass over every benchmark, shared by .ci/asv-check (CI) and
# the documented quick run (docs/reports.md):
#   (. benchmarks/quick-sizes.sh && asv run --quick --python=same)
# Every value already set in the environment is kept. asv's real runs leave these unset
# and use each benchmark's own defaults (1M-record compares, billion-key sim, ...).
export INDEXBENCH_ASV_SIZES="${INDEXBENCH_ASV_SIZES:-1000,1,200}"
export INDEXBENCH_ASV_WORKLOADS="${INDEXBENCH_ASV_WORKLOADS:-uniform}"
export INDEXBENCH_ASV_SIM_SIZES="${INDEXBENCH_ASV_SIM_SIZES:-50000,1,10000}"
export INDEXBENCH_ASV_ADVISE_SIZES="${INDEXBENCH_ASV_ADVISE_SIZES:-20000,2000,5,20000}"
export INDEXBENCH_ASV_PEER_SIZES="${INDEXBENCH_ASV_PEER_SIZES:-2000,1,500}"
export INDEXBENCH_ASV_CACHE_KEYS="${INDEXBENCH_ASV_CACHE_KEYS:-500000}"
export INDEXBENCH_ASV_QUERY_KEYS="${INDEXBENCH_ASV_QUERY_KEYS:-200}"
# two indexes (one bloom, one bucket-aware) build query tables in a quick pass (CI's check
# leaves bench_query to asv run); tests/test_query.py
# queries every index
export INDEXBENCH_ASV_QUERY_INDEXES="${INDEXBENCH_ASV_QUERY_INDEXES-bloom,simple-bucket}"
export INDEXBENCH_ASV_FLOOR_REPEATS="${INDEXBENCH_ASV_FLOOR_REPEATS:-1}"
export INDEXBENCH_ASV_PAIMON_KEYS="${INDEXBENCH_ASV_PAIMON_KEYS:-20000}"
export INDEXBENCH_ASV_KV_ENTRIES="${INDEXBENCH_ASV_KV_ENTRIES:-20000}"
export INDEXBENCH_ASV_STREAM_SIZES="${INDEXBENCH_ASV_STREAM_SIZES:-2,200}"
export INDEXBENCH_ASV_SPLIT_RECORDS="${INDEXBENCH_ASV_SPLIT_RECORDS:-4000}"
export INDEXBENCH_ASV_SHARE_KEYS="${INDEXBENCH_ASV_SHARE_KEYS:-20000}"
# Hudi's writer beside one index on one table type (tests/test_hudi_peer.py covers more)
export INDEXBENCH_ASV_HUDI_SIZES="${INDEXBENCH_ASV_HUDI_SIZES:-1000,1,200}"
export INDEXBENCH_ASV_HUDI_INDEXES="${INDEXBENCH_ASV_HUDI_INDEXES:-simple-bucket}"
export INDEXBENCH_ASV_HUDI_TYPES="${INDEXBENCH_ASV_HUDI_TYPES:-cow}"
export INDEXBENCH_ASV_SCALEOUT_SIZES="${INDEXBENCH_ASV_SCALEOUT_SIZES:-0}"  # two clusters: minutes
# The JVMs of the Spark-backed setup_caches compile with C1 only (as in
# tests/conftest.py: short runs, and a dry run times nothing); under .ci/run they also
# start from its class archive (tests/jvm_archive.py).
export SPARK_SUBMIT_OPTS="${SPARK_SUBMIT_OPTS--XX:TieredStopAtLevel=1}"
