"""One number per repeat for each named cell (e.g. the maximum latency of each of 3 runs), grouped
bars on a log axis, with the published value of each cell as a marker."""

from __future__ import annotations

from collections.abc import Mapping

import plotly.graph_objects as go

from benchbook.figures.style import apply_style


def per_repeat_bars(values: Mapping[str, Mapping[int, float]], published: Mapping[str, float] | None = None,
                    title: str = "", y_title: str = "", log_y: bool = True,
                    published_label: str = "published") -> go.Figure:
    """values: cell name -> {repeat -> value}; published: cell name -> printed value (optional).

    One bar group per cell, one bar colour per repeat (missing repeats leave a gap)."""
    if not values:
        raise ValueError("per_repeat_bars: no values given")
    names = list(values)
    repeats = sorted({k for v in values.values() for k in v})
    fig = go.Figure()
    for rep in repeats:
        fig.add_trace(go.Bar(x=names, y=[values[n].get(rep) for n in names], name=f"repeat {rep}"))
    if published:
        fig.add_trace(go.Scatter(x=names, y=[published.get(n) for n in names], mode="markers",
                                 marker=dict(symbol="diamond-open", size=14, line=dict(width=2)),
                                 name=published_label))
    fig.update_layout(title=title, yaxis_title=y_title, yaxis_type="log" if log_y else "linear", barmode="group")
    apply_style(fig)
    return fig
