"""asv suite of indexbench (see asv.conf.json at the repository root).

Modelled on Apache Spark's own asv suite: no SparkSession is created at import, the
Spark-free index cores get ``time_*``/``peakmem_*`` benchmarks across sizes, and a real
Spark run is done once in ``setup_cache`` and exposed through ``track_*`` with units.

An index's own benchmarks live in its folder, ``indexes/<folder>/benchmarks/bench_*.py``
(everything about an index in its folder). This package's ``__path__`` takes each such
folder of this checkout, so asv's discovery (``pkgutil.iter_modules`` over ``__path__``)
finds ``bench_bloom.py`` there and imports it as ``benchmarks.bench_bloom``: its
benchmarks keep the names ``bench_bloom.<Class>.<method>``. The folders are found by
listing, not by importing ``indexes``: importing the registry would load ~10 MB of
modules into every benchmark's process, and ``peakmem_*`` counts them. Which folders are
indexes of the registry is checked by tests/test_index_folders.py.
"""

import os

# the repository checkout this suite belongs to (asv's benchmark_dir is its benchmarks/)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def index_benchmark_dirs(root: str = ROOT) -> list[str]:
    """``indexes/<folder>/benchmarks`` of every package directly under ``indexes/`` that
    has one, in folder order."""
    base = os.path.join(root, "indexes")
    out = []
    for folder in sorted(os.listdir(base)):
        bench = os.path.join(base, folder, "benchmarks")
        if os.path.isfile(os.path.join(base, folder, "__init__.py")) and os.path.isdir(bench):
            out.append(bench)
    return out


__path__ += index_benchmark_dirs()  # noqa: F821 - a package's __path__, set by the import
