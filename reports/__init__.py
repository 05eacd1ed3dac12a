"""Figures and report pages from metrics DataFrames and asv results.

``reports.load(dirs)`` reads metrics directories; the figure functions take the DataFrame
``indexbench.api.run/compare`` returns and give matplotlib Figures; ``write_report`` writes
PNGs and an offline ``index.html``; ``write_asv_charts`` draws asv results over commits.
Real and simulated runs (``run_mode == "sim"``) can share a page: simulated series are
labelled ``<index> (sim)``, drawn dashed, and their seconds/bytes are the modelled
``model_*`` columns, said so wherever they are drawn.
"""

from __future__ import annotations

from reports.asv_charts import read_results as read_asv_results
from reports.asv_charts import write_asv_charts
from reports.data import (
    KNOWN_EXTRA_COLUMNS,
    SIM_SUFFIX,
    MetricsColumnError,
    RunData,
    UnknownColumnWarning,
    check_columns,
    is_sim,
    load,
)
from reports.figures import (
    bucket_growth_figure,
    bucket_size_figure,
    bucket_stats,
    files_read_figure,
    fp_rate_figure,
    has_bucket_growth,
    has_rescale,
    has_scale,
    index_bytes_figure,
    is_sim_series,
    latency_figure,
    measured_or_model,
    rescale_figure,
    scale_figure,
    theoretical_fp_curve,
)
from reports.page import FIGURES, index_summary, write_asv_report, write_report
from reports.query import has_queries, query_figure
from reports.style import index_color

__all__ = [
    "FIGURES", "KNOWN_EXTRA_COLUMNS", "SIM_SUFFIX", "MetricsColumnError", "RunData",
    "UnknownColumnWarning", "bucket_growth_figure", "bucket_size_figure", "bucket_stats",
    "check_columns",
    "files_read_figure", "fp_rate_figure", "has_bucket_growth", "has_queries",
    "has_rescale", "has_scale",
    "index_bytes_figure", "index_color", "index_summary", "is_sim", "is_sim_series",
    "latency_figure", "load", "measured_or_model", "query_figure", "read_asv_results",
    "rescale_figure", "scale_figure", "theoretical_fp_curve", "write_asv_charts",
    "write_asv_report", "write_report",
]
