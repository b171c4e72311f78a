"""Worst-N latencies over time (the TUM papers' "5000 worst latencies" scatter)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color, ns_to_unit, unit_label


def worst_n_indices(latency_ns: np.ndarray, n: int) -> np.ndarray:
    """Indices of the `n` largest latencies, in time (index) order. Ties at the cut are broken
    by position (earlier packets first), so the result is deterministic."""
    latency_ns = np.asarray(latency_ns)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n >= latency_ns.size:
        return np.arange(latency_ns.size)
    # Stable sort by descending latency: equal latencies keep their time order.
    order = np.argsort(-latency_ns.astype(np.float64), kind="stable")[:n]
    return np.sort(order)


def worst_latency_scatter(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    n: int | None = None,
    unit: str = "us",
    title: str | None = None,
    relative_time: bool = False,
    log_y: bool = False,
) -> go.Figure:
    """Scatter of latency against time, one marker per packet.

    series: name -> (t in seconds, latency in ns); typically already the worst N packets (e.g.
        benchbook.analysis.jitter.worst_n or a `*.worst.csv`), or all packets with `n` set.
    n: keep only the n largest latencies of each series (None: plot what is given).
    relative_time: shift each series so that its first packet is at t = 0.
    """
    if not series:
        raise ValueError("worst_latency_scatter: no series given")
    fig = go.Figure()
    for i, (name, (t_s, latency_ns)) in enumerate(series.items()):
        t_s = np.asarray(t_s, dtype=np.float64)
        latency_ns = np.asarray(latency_ns)
        if t_s.shape != latency_ns.shape:
            raise ValueError(f"series {name!r}: t has shape {t_s.shape}, latency {latency_ns.shape}")
        if n is not None:
            idx = worst_n_indices(latency_ns, n)
            t_s, latency_ns = t_s[idx], latency_ns[idx]
        if relative_time and t_s.size:
            t_s = t_s - t_s.min()
        fig.add_trace(
            go.Scattergl(
                x=t_s,
                y=ns_to_unit(latency_ns, unit),
                name=name,
                mode="markers",
                marker=dict(color=color(i), size=4, opacity=0.7),
                hovertemplate=f"{name}<br>t = %{{x:.6f}} s<br>%{{y:.4g}} {unit_label(unit)}<extra></extra>",
            )
        )
    fig.update_xaxes(title_text="Time [s]")
    fig.update_yaxes(type="log" if log_y else "linear", title_text=f"Latency [{unit_label(unit)}]")
    fig.update_layout(meta={"kind": "worst_latency_scatter", "n": n, "unit": unit})
    return apply_style(fig, title)
