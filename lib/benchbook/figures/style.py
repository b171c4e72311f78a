"""benchbook's house style for plotly figures: one template, one palette, one way to name units.

Every figure builder in benchbook.figures calls `apply_style(fig)`, so all figures share fonts,
colours, grid and legend placement. The template is registered with plotly as "benchbook" and can
also be used directly (`fig.update_layout(template="benchbook")`).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

TEMPLATE_NAME = "benchbook"

# Okabe-Ito palette: distinguishable for the common forms of colour blindness, prints in grey.
PALETTE: tuple[str, ...] = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#F0E442",  # yellow (last: weak on white)
)

FONT_FAMILY = "DejaVu Sans, Helvetica, Arial, sans-serif"
DEFAULT_WIDTH = 900
DEFAULT_HEIGHT = 540

# Latency units: factor to divide nanoseconds by, and the axis label.
_UNITS: dict[str, tuple[float, str]] = {
    "ns": (1.0, "ns"),
    "us": (1e3, "µs"),
    "µs": (1e3, "µs"),
    "ms": (1e6, "ms"),
    "s": (1e9, "s"),
}


def unit_scale(unit: str) -> float:
    """Nanoseconds per `unit` ("ns", "us"/"µs", "ms", "s")."""
    try:
        return _UNITS[unit][0]
    except KeyError:
        raise ValueError(f"unknown time unit {unit!r}: expected one of {sorted(_UNITS)}") from None


def unit_label(unit: str) -> str:
    """How the unit is written on an axis ("us" -> "µs")."""
    unit_scale(unit)  # validates
    return _UNITS[unit][1]


def ns_to_unit(values_ns: np.ndarray, unit: str) -> np.ndarray:
    """Convert nanosecond values to `unit` as float64."""
    return np.asarray(values_ns, dtype=np.float64) / unit_scale(unit)


def _build_template() -> go.layout.Template:
    axis = dict(
        showgrid=True,
        gridcolor="#E5E5E5",
        gridwidth=1,
        zeroline=False,
        showline=True,
        linecolor="#444444",
        linewidth=1,
        mirror=True,
        ticks="outside",
        tickcolor="#444444",
        ticklen=5,
        title=dict(standoff=8),
        automargin=True,
        minor=dict(showgrid=False),
    )
    return go.layout.Template(
        layout=go.Layout(
            font=dict(family=FONT_FAMILY, size=14, color="#222222"),
            title=dict(font=dict(size=17), x=0.0, xanchor="left", xref="paper"),
            colorway=list(PALETTE),
            plot_bgcolor="white",
            paper_bgcolor="white",
            xaxis=axis,
            yaxis=axis,
            legend=dict(
                bgcolor="rgba(255,255,255,0.85)",
                bordercolor="#CCCCCC",
                borderwidth=1,
                x=0.01,
                y=0.99,
                xanchor="left",
                yanchor="top",
            ),
            hovermode="closest",
            margin=dict(l=70, r=20, t=60, b=60),
            width=DEFAULT_WIDTH,
            height=DEFAULT_HEIGHT,
        ),
        data=dict(
            scatter=[go.Scatter(line=dict(width=2), marker=dict(size=6))],
            scattergl=[go.Scattergl(line=dict(width=2), marker=dict(size=5))],
            bar=[go.Bar(marker=dict(line=dict(width=0)))],
        ),
    )


def register_template() -> str:
    """Register (idempotently) the "benchbook" plotly template; return its name."""
    if TEMPLATE_NAME not in pio.templates:
        pio.templates[TEMPLATE_NAME] = _build_template()
    return TEMPLATE_NAME


def apply_style(fig: go.Figure, title: str | None = None) -> go.Figure:
    """Give `fig` the house style (and a title, if given); returns the same figure."""
    fig.update_layout(template=register_template())
    if title is not None:
        fig.update_layout(title_text=title)
    return fig


def color(i: int) -> str:
    """The i-th colour of the house palette (cycling)."""
    return PALETTE[i % len(PALETTE)]


register_template()
