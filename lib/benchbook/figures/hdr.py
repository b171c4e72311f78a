"""The HDR percentile plot: latency against percentile on a 1/(1-p) log axis.

x = 1 / (1 - p) spreads the tail: 0 % sits at x = 1, 50 % at 2, 90 % at 10, 99 % at 100, and every
further "nine" one decade to the right. Ticks are labelled with the percentile, as in the
HdrHistogram plotter and the TUM group's `hdr-histogramaxis` template. The maximum (p = 100 %) lies
at infinity on this axis; it is left off the curve and reported in the hover text and the
figure's `layout.meta` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import plotly.graph_objects as go

from benchbook.figures.style import apply_style, color, ns_to_unit, unit_label

# Labels for 0 %, 50 %, 90 %, 99 %, ... ; index k >= 2 means k-1 nines.
_MAX_NINES = 12


def percentile_to_x(percent: np.ndarray) -> np.ndarray:
    """Map percentiles (0..100, < 100) to the HDR axis coordinate 1/(1-p)."""
    p = np.asarray(percent, dtype=np.float64) / 100.0
    with np.errstate(divide="ignore"):
        return 1.0 / (1.0 - p)


def _nines_label(n: int) -> str:
    """'90 %' for n=1, '99 %' for 2, '99.9 %' for 3, ..."""
    if n == 1:
        return "90 %"
    return "99" + ("." + "9" * (n - 2) if n > 2 else "") + " %"


def percentile_ticks(max_x: float, min_nines: int = 4) -> tuple[list[float], list[str]]:
    """Tick positions and labels for an HDR axis reaching x = `max_x`.

    Always 0 % and 50 %, then one tick per "nine" up to the first decade at or beyond `max_x`
    (at least `min_nines` nines, i.e. 99.99 % by default).
    """
    nines = int(np.ceil(np.log10(max(max_x, 1.0)) - 1e-9))
    nines = min(max(nines, min_nines), _MAX_NINES)
    vals = [1.0, 2.0] + [10.0**k for k in range(1, nines + 1)]
    text = ["0 %", "50 %"] + [_nines_label(k) for k in range(1, nines + 1)]
    return vals, text


def hdr_percentile_plot(
    series: Mapping[str, Any],
    unit: str = "us",
    title: str | None = None,
    log_y: bool = True,
    min_nines: int = 4,
    dash: Mapping[str, str] | None = None,
) -> go.Figure:
    """HDR percentile plot of several latency distributions.

    series: name -> (percent 0..100, values in ns), e.g. from a percentile ladder, or an object
        with a percentile_ladder() method (HdrHistogram, ExactDistribution). Points at
        100 % (the maximum) cannot be placed on the 1/(1-p) axis and are left off the line; the
        maximum appears in the hover text of the last point and in ``fig.layout.meta["max_ns"]``.
    unit: y-axis unit ("ns", "us", "ms", "s"); default µs.
    log_y: logarithmic latency axis (the TUM papers' style); False for linear.
    min_nines: the x axis reaches at least this many nines (4 -> 99.99 %).
    dash: optional name -> plotly dash style ("dot", "dash", ...) per series.
    """
    if not series:
        raise ValueError("hdr_percentile_plot: no series given")
    fig = go.Figure()
    max_x = 1.0
    maxima: dict[str, float] = {}
    for i, (name, value) in enumerate(series.items()):
        if hasattr(value, "percentile_ladder"):
            percent, values_ns = ladder_series(value.percentile_ladder())
        else:
            percent, values_ns = value
        percent = np.asarray(percent, dtype=np.float64)
        values_ns = np.asarray(values_ns, dtype=np.float64)
        if percent.shape != values_ns.shape:
            raise ValueError(
                f"series {name!r}: percent has shape {percent.shape}, values {values_ns.shape}"
            )
        if percent.size and (np.nanmin(percent) < 0 or np.nanmax(percent) > 100):
            raise ValueError(f"series {name!r}: percentiles must be in 0..100 (got a value outside)")
        order = np.argsort(percent, kind="stable")
        percent, values_ns = percent[order], values_ns[order]
        if values_ns.size:
            maxima[name] = float(values_ns.max())
        keep = percent < 100.0
        x = percentile_to_x(percent[keep])
        if x.size:
            max_x = max(max_x, float(x.max()))
        y = ns_to_unit(values_ns[keep], unit)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                name=name,
                mode="lines",
                line=dict(color=color(i), dash=(dash or {}).get(name)),
                customdata=np.stack([percent[keep], values_ns[keep]], axis=-1) if x.size else None,
                hovertemplate=(
                    f"{name}<br>p = %{{customdata[0]:.7g}} %<br>"
                    f"%{{y:.4g}} {unit_label(unit)}<extra>max {maxima.get(name, float('nan')):.0f} ns</extra>"
                ),
            )
        )
    tickvals, ticktext = percentile_ticks(max_x, min_nines=min_nines)
    fig.update_xaxes(
        type="log",
        tickmode="array",
        tickvals=tickvals,
        ticktext=ticktext,
        range=[0.0, np.log10(tickvals[-1])],
        title_text="Percentile",
    )
    fig.update_yaxes(type="log" if log_y else "linear", title_text=f"Latency [{unit_label(unit)}]")
    if log_y:
        fig.update_yaxes(dtick="D2")  # label 1, 2, 5 per decade only
    fig.update_layout(meta={"kind": "hdr_percentile_plot", "max_ns": maxima, "unit": unit})
    return apply_style(fig, title)


def ladder_series(df) -> tuple[np.ndarray, np.ndarray]:
    """(percent 0..100, values) from a percentile-ladder table.

    Accepts benchbook's ladder (columns `percentile` in 0..100 and `value`) and the TUM evaluator's
    `*.percentiles.csv` (`percentile` as a fraction 0..1, `value`, `onefraconeminuspercentile`).
    """
    if "percentile" not in df.columns or "value" not in df.columns:
        raise ValueError(
            f"percentile ladder needs columns 'percentile' and 'value', has {list(df.columns)}"
        )
    p = np.asarray(df["percentile"], dtype=np.float64)
    v = np.asarray(df["value"], dtype=np.float64)
    inv_col = next((c for c in ("inv_one_minus_p", "onefraconeminuspercentile") if c in df.columns), None)
    if not p.size or float(p.max()) > 1.0:
        as_fraction = False
    elif inv_col is not None:
        # Values all <= 1: a fraction ladder, unless its 1/(1-p) column says they are percents.
        inv = np.asarray(df[inv_col], dtype=np.float64)
        ok = (p < 1.0) & np.isfinite(inv)
        with np.errstate(divide="ignore"):
            as_fraction = not ok.any() or bool(np.allclose(1.0 / (1.0 - p[ok]), inv[ok], rtol=1e-3))
    else:
        as_fraction = True
    return (p * 100.0 if as_fraction else p), v
