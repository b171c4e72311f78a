"""Histogram and (C)CDF plots of latency distributions, from raw samples or (value, count) pairs."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color, ns_to_unit, unit_label

Series = tuple[np.ndarray, "np.ndarray | None"]


def value_counts(values: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and their total counts. `counts=None` means raw samples (each 1).
    Zero counts are dropped; negative counts are an error."""
    values = np.asarray(values)
    if counts is None:
        uniq, cnt = np.unique(values, return_counts=True)
        return uniq, cnt.astype(np.int64)
    counts = np.asarray(counts)
    if counts.shape != values.shape:
        raise ValueError(f"values have shape {values.shape}, counts {counts.shape}")
    if counts.size and counts.min() < 0:
        raise ValueError("negative count in histogram")
    uniq, inv = np.unique(values, return_inverse=True)
    tot = np.zeros(uniq.size, dtype=np.float64 if counts.dtype.kind == "f" else np.int64)
    np.add.at(tot, inv, counts)
    keep = tot > 0
    return uniq[keep], tot[keep]


def ecdf(values: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF: distinct values x and F(x) = fraction of samples <= x."""
    x, c = value_counts(values, counts)
    total = c.sum()
    if total == 0:
        return x, np.zeros(0)
    return x, np.cumsum(c, dtype=np.float64) / float(total)


def _step_trace(name: str, i: int, x_ns: np.ndarray, y: np.ndarray, unit: str,
                line_width: float | None = None) -> go.Scatter:
    """One series as a step line (each value held until the next), x in `unit`, in the i-th house colour."""
    line = dict(color=color(i), shape="hv") | ({"width": line_width} if line_width is not None else {})
    return go.Scatter(x=ns_to_unit(x_ns, unit), y=y, name=name, mode="lines", line=line,
                      hovertemplate=f"{name}<br>%{{x:.4g}} {unit_label(unit)}<br>%{{y:.6g}}<extra></extra>")


def cdf_plot(
    series: Mapping[str, Series],
    unit: str = "us",
    ccdf: bool = False,
    log_x: bool = False,
    title: str | None = None,
) -> go.Figure:
    """CDF (or CCDF) of several distributions, drawn as exact step functions.

    series: name -> (values in ns, counts or None for raw samples).
    ccdf: plot P(X > x) on a logarithmic y axis instead of P(X <= x); the final point, where
        P(X > x) = 0, cannot be shown on a log axis and is left off.
    """
    if not series:
        raise ValueError("cdf_plot: no series given")
    fig = go.Figure()
    for i, (name, (values, counts)) in enumerate(series.items()):
        x, f = ecdf(values, counts)
        y = 1.0 - f if ccdf else f
        if ccdf:
            keep = y > 0
            x, y = x[keep], y[keep]
        fig.add_trace(_step_trace(name, i, x, y, unit))
    fig.update_xaxes(type="log" if log_x else "linear", title_text=f"Latency [{unit_label(unit)}]")
    if ccdf:
        fig.update_yaxes(type="log", title_text="P(latency > x)", exponentformat="power")
    else:
        fig.update_yaxes(type="linear", range=[0, 1.02], title_text="P(latency ≤ x)")
    fig.update_layout(meta={"kind": "ccdf_plot" if ccdf else "cdf_plot", "unit": unit})
    return apply_style(fig, title)


def histogram_plot(
    series: Mapping[str, Series],
    unit: str = "us",
    bin_width_ns: float | None = None,
    log_y: bool = True,
    normalize: bool = False,
    title: str | None = None,
) -> go.Figure:
    """Histogram of several distributions, drawn as outlined steps (readable when overlaid).

    series: name -> (values in ns, counts or None). With counts, the values are taken as the lower
        edges of buckets of width `bin_width_ns` (e.g. the TUM 100 ns `*.hist.csv`); without
        counts, raw samples are binned into buckets of `bin_width_ns` starting at a multiple of it.
    bin_width_ns: bucket width; None infers it (smallest gap between bucket values, or for raw
        samples a width giving about 200 buckets over the common range).
    normalize: plot fractions of each series' total instead of counts.
    """
    if not series:
        raise ValueError("histogram_plot: no series given")
    prepared: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    raw_ranges = []
    for values, counts in series.values():
        if counts is None:
            v = np.asarray(values)
            if v.size:
                raw_ranges.append((float(v.min()), float(v.max())))
    width = bin_width_ns
    if width is None and raw_ranges:
        lo = min(r[0] for r in raw_ranges)
        hi = max(r[1] for r in raw_ranges)
        width = _nice_width((hi - lo) / 200.0)
    for name, (values, counts) in series.items():
        if counts is None:
            v = np.asarray(values, dtype=np.float64)
            edges = np.floor(v / width) * width
            prepared[name] = value_counts(edges)
        else:
            prepared[name] = value_counts(values, counts)
    if width is None:
        gaps = [np.diff(x).min() for x, _ in prepared.values() if x.size > 1]
        width = float(min(gaps)) if gaps else 1.0
    fig = go.Figure()
    for i, (name, (x, c)) in enumerate(prepared.items()):
        y = c / c.sum() if (normalize and c.sum() > 0) else c
        # Step outline: each bucket [x, x + width) drawn flat, dropping to zero across gaps.
        xs, ys = _step_outline(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64), width)
        fig.add_trace(_step_trace(name, i, xs, ys, unit, line_width=1.5))
    fig.update_xaxes(title_text=f"Latency [{unit_label(unit)}]")
    fig.update_yaxes(type="log" if log_y else "linear",
                     title_text="Fraction of packets" if normalize else "Packets")
    fig.update_layout(meta={"kind": "histogram_plot", "bin_width_ns": width, "unit": unit})
    return apply_style(fig, title)


def _nice_width(w: float) -> float:
    """Round a bucket width up to 1, 2 or 5 times a power of ten (at least 1 ns)."""
    if not np.isfinite(w) or w <= 1:
        return 1.0
    exp = np.floor(np.log10(w))
    for m in (1, 2, 5, 10):
        if m * 10**exp >= w:
            return float(m * 10**exp)
    return float(10 ** (exp + 1))


def _step_outline(x: np.ndarray, y: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Points for a 'hv' line outlining buckets [x_i, x_i + width) with heights y_i; where the
    next bucket does not start at x_i + width the line drops to zero (or None on log axes would
    break it; zero is simply not drawn on a log axis)."""
    if x.size == 0:
        return x, y
    ends = x + width
    gap = np.ones(x.size, dtype=bool)
    gap[:-1] = ~np.isclose(x[1:], ends[:-1])
    n_extra = int(gap.sum())
    xs = np.empty(x.size + n_extra)
    ys = np.empty(x.size + n_extra)
    pos = np.arange(x.size) + np.concatenate(([0], np.cumsum(gap)[:-1]))
    xs[pos] = x
    ys[pos] = y
    xs[pos[gap] + 1] = ends[gap]
    ys[pos[gap] + 1] = 0.0
    return xs, ys
