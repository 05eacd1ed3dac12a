"""``hoodie.datasource.query.type``: how a query reads a table (Hudi's query types).

Hudi's ``DataSourceReadOptions.QUERY_TYPE``: ``snapshot`` (the default) reads every file
slice merged with its log files; ``read_optimized`` reads base files only, so on a
merge-on-read table it misses what only the logs hold (records since the last
compaction, a log-only file group entirely), and on a copy-on-write table it is the
snapshot (Hudi's ``DefaultSource`` answers both with the same base-file relation).
``incremental`` (changes since an instant) is Hudi's third type; no query here asks
for changes, so it is refused by name.
"""

from __future__ import annotations

from tableformat.errors import IndexBenchError

QUERY_TYPE = "hoodie.datasource.query.type"
SNAPSHOT = "snapshot"
READ_OPTIMIZED = "read_optimized"
INCREMENTAL = "incremental"
QUERY_TYPES = (SNAPSHOT, READ_OPTIMIZED)


def check_query_type(value: str) -> str:
    """Hudi's name of a query type (``snapshot`` or ``read_optimized``), or one error."""
    name = str(value).strip().lower()
    if name == INCREMENTAL:
        raise IndexBenchError(f"{QUERY_TYPE}={value}: incremental queries are not "
                              f"supported; use {' or '.join(QUERY_TYPES)}")
    if name not in QUERY_TYPES:
        raise IndexBenchError(f"{QUERY_TYPE}={value!r}: not a query type "
                              f"({', '.join(QUERY_TYPES)})")
    return name


def query_options(options: dict[str, str] | None) -> dict[str, str]:
    """Query options (``--set KEY=VALUE`` of ``indexbench query``) checked: the known
    keys with Hudi's canonical values; any other key is refused, naming the known."""
    out = {}
    for key, value in (options or {}).items():
        if key != QUERY_TYPE:
            raise IndexBenchError(f"--set {key}: not a query option (known: {QUERY_TYPE})")
        out[key] = check_query_type(value)
    return out
