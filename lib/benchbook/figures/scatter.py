"""Worst-N latencies over time (the TUM papers' "5000 worst latencies" scatter)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color, ns_to_unit, unit_label


def worst_n_indices(latency_ns: np.ndarray, n: int) -> np.ndarray:
    """Indices of the `n` largest latencies, in time (index) order. Ties at the cut are broken
    by position (earlier packets first), so the result is deterministic. O(len) via partition."""
    lat = np.asarray(latency_ns)
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n >= lat.size:
        return np.arange(lat.size)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    thr = np.partition(lat, lat.size - n)[lat.size - n]
    above = np.flatnonzero(lat > thr)
    at = np.flatnonzero(lat == thr)[: n - above.size]
    return np.sort(np.concatenate([above, at]))


def _series_arrays(name: str, value) -> tuple[np.ndarray, np.ndarray]:
    """(t in s, latency in ns) from a (t_s, latency_ns) pair or a table with columns
    latency_ns and t_ns (benchbook.analysis.jitter.worst_n) or t_s."""
    if isinstance(value, tuple):
        t_s, lat = value
        return np.asarray(t_s, dtype=np.float64), np.asarray(lat)
    cols = getattr(value, "columns", None)
    if cols is not None and "latency_ns" in cols:
        if "t_s" in cols:
            return np.asarray(value["t_s"], dtype=np.float64), np.asarray(value["latency_ns"])
        if "t_ns" in cols:
            return np.asarray(value["t_ns"], dtype=np.float64) / 1e9, np.asarray(value["latency_ns"])
    raise TypeError(f"series {name!r}: expected (t_s, latency_ns) or a table with latency_ns and t_ns columns")


def worst_latency_scatter(
    series: Mapping[str, Any],
    n: int | None = None,
    unit: str = "us",
    title: str | None = None,
    relative_time: bool = False,
    log_y: bool = False,
) -> go.Figure:
    """Scatter of latency against time, one marker per packet.

    series: name -> (t in seconds, latency in ns), or a table with columns latency_ns and t_ns
        (e.g. benchbook.analysis.jitter.worst_n's result); typically already the worst N packets,
        or all packets with `n` set.
    n: keep only the n largest latencies of each series (None: plot what is given).
    relative_time: shift each series so that its first packet is at t = 0.
    """
    if not series:
        raise ValueError("worst_latency_scatter: no series given")
    fig = go.Figure()
    for i, (name, value) in enumerate(series.items()):
        t_s, latency_ns = _series_arrays(name, value)
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
