"""benchbook.figures: plotly figure builders in one house style, and saving them.

    hdr_percentile_plot    latency vs percentile on a 1/(1-p) axis (HDR plot)
    hdr_run_bands_plot     the HDR plot of two sets of runs: median over runs with run-level bands, sign flips
    worst_latency_scatter  worst-N latencies over time
    histogram_plot         bucketed latency histograms (step outlines)
    cdf_plot               CDF or CCDF (exact step functions)
    time_series_plot       per-second rates, throughput, cwnd ...
    line_plot              y against any x (e.g. p99.9 latency against packet rate)
    bar_plot, fairness_bars
    per_repeat_bars        one bar per repeat for each named cell, with the published value marked
    rate_panels            latency against offered rate, one panel per group, median of the repeats
    return_level_plot      extreme-value return level against return period (delta-method band)
    return_levels_by_repeat  return level fitted on each repeat next to the observed maxima
    save_figure            HTML (offline) + PNG/SVG/PDF via kaleido, "unavailable: <reason>" if not
"""

from benchbook.figures.bars import bar_plot, fairness_bars
from benchbook.figures.distribution import cdf_plot, ecdf, histogram_plot, value_counts
from benchbook.figures.export import export_session, find_browser, save_figure, static_export_status
from benchbook.figures.hdr import hdr_percentile_plot, ladder_series, percentile_ticks, percentile_to_x
from benchbook.figures.hdr_runs import hdr_run_bands_plot
from benchbook.figures.rate import rate_panels
from benchbook.figures.repeats import per_repeat_bars
from benchbook.figures.return_level import return_level_plot, return_levels_by_repeat
from benchbook.figures.scatter import worst_latency_scatter, worst_n_indices
from benchbook.figures.style import PALETTE, TEMPLATE_NAME, apply_style, unit_label, unit_scale
from benchbook.figures.timeseries import line_plot, time_series_plot

__all__ = [
    "PALETTE",
    "TEMPLATE_NAME",
    "apply_style",
    "bar_plot",
    "cdf_plot",
    "ecdf",
    "export_session",
    "fairness_bars",
    "find_browser",
    "hdr_percentile_plot",
    "hdr_run_bands_plot",
    "histogram_plot",
    "ladder_series",
    "line_plot",
    "per_repeat_bars",
    "percentile_ticks",
    "percentile_to_x",
    "rate_panels",
    "return_level_plot",
    "return_levels_by_repeat",
    "save_figure",
    "static_export_status",
    "time_series_plot",
    "unit_label",
    "unit_scale",
    "value_counts",
    "worst_latency_scatter",
    "worst_n_indices",
]
