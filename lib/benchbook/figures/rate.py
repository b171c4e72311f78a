"""Latency against offered packet rate: one panel per group, one line per variant, the median over
repeats with error bars spanning their range."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchbook.figures.style import apply_style, color


def rate_panels(runs, metric: str, panel: str = "technology_label", line: str = "variant",
                rate: str = "rate_pps", title: str | None = None, cols: int = 2):
    """Median over repeats of `metric` (ns, shown in µs) against `rate` (pkt/s, shown in Mpkt/s).

    runs: a DataFrame with one row per run and the columns `panel`, `line`, `rate` and `metric`
    (rows where `metric` is NaN are left out). The error bars span the repeats' minimum and maximum.
    """
    ok = runs[runs[metric].notna()]
    agg = ok.groupby([panel, line, rate])[metric].agg(["median", "min", "max"]).reset_index()
    panels = sorted(agg[panel].unique())
    rows = max(1, (len(panels) + cols - 1) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=panels, shared_xaxes=True,
                        horizontal_spacing=0.08, vertical_spacing=0.12)
    variants = sorted(agg[line].unique())
    shown: set[str] = set()
    for i, name in enumerate(panels):
        r, c = i // cols + 1, i % cols + 1
        for variant, d in agg[agg[panel] == name].groupby(line, sort=True):
            d = d.sort_values(rate)
            fig.add_trace(
                go.Scatter(
                    x=d[rate] / 1e6, y=d["median"] / 1000.0, mode="lines+markers", name=variant,
                    legendgroup=variant, showlegend=variant not in shown,
                    line=dict(color=color(variants.index(variant))),
                    error_y=dict(type="data", symmetric=False, array=(d["max"] - d["median"]) / 1000.0,
                                 arrayminus=(d["median"] - d["min"]) / 1000.0, thickness=1),
                ),
                row=r, col=c,
            )
            shown.add(variant)
        fig.update_yaxes(type="log", title_text="latency [µs]" if c == 1 else None, row=r, col=c)
        fig.update_xaxes(title_text="offered rate [Mpkt/s]" if r == rows else None, row=r, col=c)
    apply_style(fig)
    fig.update_layout(
        title=title or f"Latency ({metric.removesuffix('_ns')}) against packet rate, median of the repeats",
        height=400 * rows, legend=dict(orientation="h", yanchor="top", y=-0.12, xanchor="left", x=0),
    )
    return fig
