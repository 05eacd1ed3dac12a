"""Figures from metrics DataFrames (the contract of docs/metrics.md): one function per question.

Every function takes the DataFrame ``indexbench.api.run/compare`` returns (or
``reports.load(dirs).df``, or ``indexbench.sim.driver.simulate_compare``'s) and returns a
matplotlib Figure, so notebooks, the report page and papers draw the same pictures.
Each series is drawn in its look (``reports.style.series_look``: the index's colour and
marker, the run's line style, hollow on merge-on-read), so no two series of a figure
share both colour and style; lines that lie on each other are drawn nested
(:func:`plot_nested`), so each shows. Any index name and any extra column is accepted.

Simulated series (``run_mode == "sim"``) are labelled ``<index> (sim)`` and drawn dashed
in the index's colour. Their byte and second figures are models
(``model_<column>``): a figure of measured seconds or bytes draws them from the
``model_*`` column and says "modelled" in its legend or title, never as measured.

Peer series (``run_mode == "peer"``, e.g. ``delta-merge``: the same batches through
delta-rs MERGE) have measured seconds and no index counters: they are drawn wherever
seconds per batch are (latency), and left out of figures of counters they leave empty
(files read, cost vs table size) rather than drawn as 0. A peer with buckets and index
files of its own (``paimon-fixed``, ``paimon-dynamic``) fills those columns and is drawn
in the bucket and index-bytes figures like an index.

One module per figure family (``fp_rate``, ``files_read``, ``scale``, ``latency``,
``buckets``, ``index_bytes``, ``rescale``, ``write_read``, ``declared``) over the shared
series and legend helpers of ``common``; this package re-exports their public names.
"""

from __future__ import annotations

from reports.figures.buckets import (
    bucket_growth_figure,
    bucket_series,
    bucket_size_figure,
    bucket_stats,
    counted_groups,
    has_bucket_growth,
)
from reports.figures.common import (
    MIB,
    NESTED_NOTE,
    _frame,
    _num,
    even_legend,
    is_mor_series,
    is_peer_series,
    is_sim_series,
    iter_series,
    label_log_axis,
    legend_handles,
    measured_or_model,
    nested_legend,
    plot_nested,
    room_for_legend,
    series_look,
)
from reports.figures.declared import (
    declared_figure,
)
from reports.figures.files_read import (
    files_read_figure,
)
from reports.figures.fp_rate import (
    FP_UPPER_BOUND_Z,
    SHARED_THEORY_STYLES,
    effective_n,
    filter_theory,
    fp_points,
    fp_rate_figure,
    theoretical_fp_curve,
    theory_groups,
)
from reports.figures.index_bytes import (
    index_bytes_figure,
    server_held,
)
from reports.figures.latency import (
    PHASES,
    human_seconds,
    latency_figure,
    seconds_unit,
)
from reports.figures.rescale import (
    MODE_HATCHES,
    RESCALE,
    RESCALE_METRICS,
    UNKNOWN_HATCH,
    has_rescale,
    mode_hatch,
    rescale_figure,
    rescale_modes,
)
from reports.figures.scale import (
    SCALE_ZERO_FILES,
    has_scale,
    scale_figure,
    scale_points,
)
from reports.figures.write_read import (
    WRITE_READ_PANELS,
    write_read_figure,
    write_read_points,
)

__all__ = [
    "_frame",
    "_num",
    "bucket_growth_figure",
    "bucket_series",
    "bucket_size_figure",
    "bucket_stats",
    "counted_groups",
    "declared_figure",
    "effective_n",
    "even_legend",
    "files_read_figure",
    "filter_theory",
    "fp_points",
    "fp_rate_figure",
    "FP_UPPER_BOUND_Z",
    "has_bucket_growth",
    "has_rescale",
    "has_scale",
    "human_seconds",
    "index_bytes_figure",
    "is_mor_series",
    "is_peer_series",
    "is_sim_series",
    "iter_series",
    "label_log_axis",
    "latency_figure",
    "legend_handles",
    "measured_or_model",
    "MIB",
    "mode_hatch",
    "MODE_HATCHES",
    "nested_legend",
    "NESTED_NOTE",
    "PHASES",
    "plot_nested",
    "RESCALE",
    "rescale_figure",
    "RESCALE_METRICS",
    "rescale_modes",
    "room_for_legend",
    "scale_figure",
    "scale_points",
    "SCALE_ZERO_FILES",
    "seconds_unit",
    "series_look",
    "server_held",
    "SHARED_THEORY_STYLES",
    "theoretical_fp_curve",
    "theory_groups",
    "UNKNOWN_HATCH",
    "write_read_figure",
    "WRITE_READ_PANELS",
    "write_read_points",
]
