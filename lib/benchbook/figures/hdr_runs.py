"""HDR percentile plot of two sets of runs: per set, the median over runs at each percentile as a line and a
run-level band around it (the caller says what the band is: an interval of the median across runs, or the range
of the runs), cut at the highest percentile every run resolves, with the percentiles where the sign of the
difference between the sets flips marked by vertical lines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.hdr import percentile_ticks, percentile_to_x
from benchbook.figures.style import PALETTE, apply_style, ns_to_unit, unit_label


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    return f"rgba({int(h[0:2], 16)}, {int(h[2:4], 16)}, {int(h[4:6], 16)}, {alpha})"


def hdr_run_bands_plot(percent: np.ndarray, median_ns: Mapping[str, np.ndarray], low_ns: Mapping[str, np.ndarray],
                       high_ns: Mapping[str, np.ndarray], band_label: Mapping[str, str], flips: Sequence[float] = (),
                       limit_percent: float | None = None, unit: str = "us", title: str | None = None) -> go.Figure:
    """percent: the common grid (0..100, < 100); per set name: median, band low and high in ns on that grid.
    flips: percentiles where the sign of the difference between the sets changes (a dashed line each).
    limit_percent: the highest percentile every run resolves (noted in the title of the x axis)."""
    pct = np.asarray(percent, dtype=np.float64)
    if pct.size == 0 or np.any(pct >= 100) or np.any(pct < 0):
        raise ValueError("hdr_run_bands_plot: percentiles must lie in [0, 100)")
    x = percentile_to_x(pct)
    fig = go.Figure()
    for i, name in enumerate(median_ns):
        colour = PALETTE[i % len(PALETTE)]
        med, lo, hi = (ns_to_unit(np.asarray(v[name]), unit) for v in (median_ns, low_ns, high_ns))
        if med.shape != pct.shape or lo.shape != pct.shape or hi.shape != pct.shape:
            raise ValueError(f"set {name!r}: median and band must have the grid's {pct.size} points")
        fig.add_trace(go.Scatter(x=x, y=hi, mode="lines", line=dict(width=0, color=colour), hoverinfo="skip",
                                 showlegend=False, legendgroup=name))
        fig.add_trace(go.Scatter(x=x, y=lo, mode="lines", line=dict(width=0, color=colour), fill="tonexty",
                                 fillcolor=_rgba(colour, 0.2), name=f"{name}: {band_label[name]}", legendgroup=name,
                                 hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=x, y=med, mode="lines", line=dict(color=colour), name=f"{name}: median of runs",
                                 legendgroup=name, customdata=pct,
                                 hovertemplate=f"{name}<br>p = %{{customdata:.6g}} %<br>%{{y:.4g}} {unit_label(unit)}"
                                               "<extra></extra>"))
    for p in flips:
        fig.add_vline(x=float(percentile_to_x(np.array([p]))[0]), line=dict(dash="dash", color="#444444", width=1),
                      annotation_text=f"sign flips near p{p:.4g}", annotation_position="top")
    vals, text = percentile_ticks(float(x.max()), min_nines=2)
    xtitle = "Percentile" if limit_percent is None else f"Percentile (runs resolve up to p{limit_percent:.6g})"
    fig.update_xaxes(type="log", tickmode="array", tickvals=vals, ticktext=text, range=[0.0, np.log10(vals[-1])],
                     title_text=xtitle)
    fig.update_yaxes(type="log", title_text=f"Latency [{unit_label(unit)}]", dtick="D2")
    fig.update_layout(meta={"kind": "hdr_run_bands_plot", "flips_percent": list(map(float, flips)),
                            "limit_percent": limit_percent, "unit": unit})
    return apply_style(fig, title)


__all__ = ["hdr_run_bands_plot"]
