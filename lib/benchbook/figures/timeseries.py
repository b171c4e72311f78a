"""Time series: throughput, packet rate, congestion window, queue length ... over time."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color


def time_series_plot(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    y_title: str,
    title: str | None = None,
    x_title: str = "Time [s]",
    relative_time: bool = False,
    mode: str = "lines",
    step: bool = False,
    log_y: bool = False,
    y_range: tuple[float, float] | None = None,
) -> go.Figure:
    """One line per series: name -> (t in seconds, y). `step=True` draws sample-and-hold steps
    (for per-interval values such as packets per second); `relative_time` starts each series at 0."""
    if not series:
        raise ValueError("time_series_plot: no series given")
    fig = go.Figure()
    many = sum(np.asarray(t).size for t, _ in series.values()) > 20_000
    trace_cls = go.Scattergl if many else go.Scatter
    for i, (name, (t, y)) in enumerate(series.items()):
        t = np.asarray(t, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if t.shape != y.shape:
            raise ValueError(f"series {name!r}: t has shape {t.shape}, y {y.shape}")
        if relative_time and t.size:
            t = t - t.min()
        fig.add_trace(
            trace_cls(
                x=t,
                y=y,
                name=name,
                mode=mode,
                line=dict(color=color(i), shape="hv" if step else "linear"),
                marker=dict(color=color(i)),
            )
        )
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    fig.update_layout(meta={"kind": "time_series_plot"})
    return apply_style(fig, title)


def line_plot(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    x_title: str,
    y_title: str,
    title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    markers: bool = True,
    errors: Mapping[str, np.ndarray] | None = None,
) -> go.Figure:
    """Lines over any x (e.g. latency percentiles against packet rate): name -> (x, y), points
    sorted by x; `errors` gives symmetric error bars per series (e.g. spread over repeats)."""
    if not series:
        raise ValueError("line_plot: no series given")
    fig = go.Figure()
    for i, (name, (x, y)) in enumerate(series.items()):
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            raise ValueError(f"series {name!r}: x has shape {x.shape}, y {y.shape}")
        order = np.argsort(x, kind="stable")
        err = None
        if errors is not None and name in errors:
            e = np.asarray(errors[name], dtype=np.float64)
            if e.shape != y.shape:
                raise ValueError(f"series {name!r}: errors have shape {e.shape}, y {y.shape}")
            err = dict(type="data", array=e[order], visible=True)
        fig.add_trace(
            go.Scatter(
                x=x[order],
                y=y[order],
                name=name,
                mode="lines+markers" if markers else "lines",
                line=dict(color=color(i)),
                marker=dict(color=color(i)),
                error_y=err,
            )
        )
    fig.update_xaxes(title_text=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title_text=y_title, type="log" if log_y else "linear")
    fig.update_layout(meta={"kind": "line_plot"})
    return apply_style(fig, title)
