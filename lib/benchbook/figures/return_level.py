"""Extreme-value figures: the return level of a peaks-over-threshold model against the return period,
and return levels fitted on each repeat next to the maxima the repeats observed.

A model is any object with ``zeta``, ``xi``, ``upper_endpoint``, ``return_level(m)`` and
``return_level_delta(m)`` (returning ``.level``, ``.low``, ``.high``), e.g.
benchbook.analysis.evt.PotModel."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from benchbook.figures.style import apply_style


def return_level_plot(model, m_max: float = 1e6, mark_m: float | None = None,
                      mark_ci: tuple[float, float] | None = None, title: str | None = None,
                      mark_level: float | None = None, mark_label: str = "published",
                      unit_label: str = "µs") -> go.Figure:
    """Return level against return period m (log axis) with the delta-method 95 % band; optionally a
    marked level (mark_level, default: the model's) and interval at m = mark_m."""
    ms = np.logspace(np.log10(max(1.0 / model.zeta, 1.0) * 1.01), np.log10(m_max), 200)
    lv = [model.return_level_delta(m) for m in ms]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=ms, y=[r.high for r in lv], mode="lines", line=dict(width=0), showlegend=False,
                             hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=ms, y=[r.low for r in lv], mode="lines", line=dict(width=0), fill="tonexty",
                             fillcolor="rgba(0, 114, 178, 0.18)", name="95 % CI (delta method)"))
    fig.add_trace(go.Scatter(x=ms, y=[r.level for r in lv], mode="lines", name="return level"))
    if mark_m is not None:
        lvl = model.return_level(mark_m) if mark_level is None else mark_level
        err = None
        label = f"{mark_label}: m = {mark_m:g}, {lvl:g} {unit_label}"
        if mark_ci is not None:
            err = dict(type="data", symmetric=False, array=[mark_ci[1] - lvl], arrayminus=[lvl - mark_ci[0]])
            label += f", CI [{mark_ci[0]:g}, {mark_ci[1]:g}]"
        fig.add_trace(go.Scatter(x=[mark_m], y=[lvl], mode="markers", error_y=err,
                                 marker=dict(symbol="diamond", size=10), name=label))
    if model.xi < 0:
        fig.add_hline(y=model.upper_endpoint, line_dash="dot",
                      annotation_text=f"upper end point {model.upper_endpoint:.0f} {unit_label}")
    fig.update_layout(title=title or "Return level against return period", xaxis_type="log",
                      xaxis_title="return period m [observations]", yaxis_title=f"return level [{unit_label}]")
    apply_style(fig)
    return fig


def return_levels_by_repeat(table, title: str | None = None, cols: int = 4) -> go.Figure:
    """One panel per cell: the return level fitted on each repeat (95 % delta interval) next to the
    maximum each repeat observed.

    table: rows with name, fit_repeat, return_level_us, ci_low_us, ci_high_us, observed_max_us."""
    names = list(dict.fromkeys(table["name"]))
    rows = (len(names) + cols - 1) // cols
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[n.replace(" / ", "<br>") for n in names],
                        horizontal_spacing=0.06, vertical_spacing=0.18)
    for i, name in enumerate(names):
        d = table[table["name"] == name].sort_values("fit_repeat")
        r, c = i // cols + 1, i % cols + 1
        x = [f"r{k}" for k in d["fit_repeat"]]
        lvl = d["return_level_us"].to_numpy(dtype=float)
        hi = np.nan_to_num(d["ci_high_us"].to_numpy(dtype=float) - lvl, nan=0.0)
        lo = np.nan_to_num(lvl - d["ci_low_us"].to_numpy(dtype=float), nan=0.0)
        fig.add_trace(go.Scatter(x=x, y=lvl, mode="markers", name="return level fitted on the repeat (95 % CI)",
                                 legendgroup="rl", showlegend=i == 0, marker=dict(size=9, color="#0072B2"),
                                 error_y=dict(type="data", symmetric=False, array=hi, arrayminus=lo)),
                      row=r, col=c)
        fig.add_trace(go.Scatter(x=x, y=d["observed_max_us"], mode="markers", name="maximum observed in the repeat",
                                 legendgroup="max", showlegend=i == 0,
                                 marker=dict(symbol="x", size=10, color="#D55E00")),
                      row=r, col=c)
        fig.update_yaxes(type="log", row=r, col=c, title_text="latency [µs]" if c == 1 else None)
    apply_style(fig)
    fig.update_layout(title=title or "GPD return level of the run maximum against the observed maxima",
                      height=350 * rows, margin=dict(t=130),
                      legend=dict(orientation="h", yanchor="top", y=-0.08, x=0))
    return fig
