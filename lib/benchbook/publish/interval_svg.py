"""One interval drawing of a measured verdict as static SVG: a row's 90 % and 95 % intervals against its +-delta
band around the published value, or a claim's interval against its threshold, with the per-run values as points.

Drawn here, not by plotly.js: the drawings need no script (they render from file://, in print and with scripts
off), a page of twenty rows stays light, and every mark is an element whose position a test can read back. The
colours are the house palette (benchbook.figures.style). The numbers are also in the table beside each drawing.

Geometry: the value axis maps ``domain`` (low, high) linearly onto x in ``[PLOT_X0, PLOT_X1]`` of the viewBox;
the ``<svg>`` carries ``data-domain`` and ``data-plot`` so a reader can map positions back to values.
Marks (classes): ``bb-band`` (the margin or the region where a claim holds), ``bb-ref`` (the published value or
the threshold), ``bb-ci95``, ``bb-ci90`` (rects spanning the interval), ``bb-estimate``, ``bb-run`` (one circle
per run), ``bb-axis`` with ``bb-tick`` labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

from benchbook.figures.style import FONT_FAMILY, PALETTE

WIDTH = 420
HEIGHT = 86
PLOT_X0, PLOT_X1 = 12.0, WIDTH - 62.0   # the unit is written right of the axis
TRACK_Y = 22.0          # the intervals' centre line
RUN_Y = (42.0, 49.0)    # the runs' points, in two lanes so close values stay apart
AXIS_Y = 62.0
PAD = 0.06              # of the data's span, each side
# status words -> colour: holds/reproduced green, fails/mismatch vermillion, inconclusive purple, others orange
STATUS_COLOURS = {"reproduced": PALETTE[2], "holds": PALETTE[2], "mismatch": PALETTE[1], "fails": PALETTE[1],
                  "inconclusive": PALETTE[3]}
OTHER_COLOUR = PALETTE[4]
BAND_COLOUR = PALETTE[5]


@dataclass
class Drawing:
    """What one drawing shows, all on one axis (the value's unit, or the claim's scale).

    ``band``: the margin around the published value, a claim's range, or (one side open: None) the region where
    a one-sided claim holds. ``reference``: the published value or the threshold (a dashed line). ``points``:
    (value, what the point is) per run."""

    label: str
    status: str
    unit: str = ""
    band: tuple[float | None, float | None] | None = None
    reference: float | None = None
    ci90: tuple[float, float] | None = None
    ci95: tuple[float, float] | None = None
    estimate: float | None = None
    points: list[tuple[float, str]] = field(default_factory=list)
    level90: str = "90 %"
    level95: str = "95 %"
    note: str = ""      # said in the drawing when there is no interval (why)

    def numbers(self) -> list[float]:
        out = [x for x in (self.reference, self.estimate) if x is not None]
        for pair in (self.band, self.ci90, self.ci95):
            if pair is not None:
                out += [x for x in pair if x is not None]
        out += [v for v, _ in self.points]
        return [x for x in out if math.isfinite(x)]


def domain_of(drawing: Drawing) -> tuple[float, float]:
    """The axis range: every number of the drawing, padded by PAD of their span on each side."""
    xs = drawing.numbers()
    if not xs:
        return 0.0, 1.0
    lo, hi = min(xs), max(xs)
    span = hi - lo
    if span <= 0:
        span = abs(lo) * 0.02 or 1.0
    return lo - PAD * span, hi + PAD * span


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values inside [lo, hi]: steps of 1, 2, 2.5 or 5 times a power of ten, about ``target`` ticks."""
    span = hi - lo
    if not (span > 0 and math.isfinite(span)):
        return [lo]
    raw = span / target
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9)
    ticks = []
    k = first
    while k * step <= hi + 1e-9 * step:
        ticks.append(round(k * step, 12))
        k += 1
    return ticks


def tick_text(value: float, ticks: list[float]) -> str:
    """A tick label with as many decimals as the step needs (0.025 -> 3, 0.5 -> 1, 20 -> 0; at most 6)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(value) or 1.0
    decimals = next((d for d in range(7) if abs(round(step, d) - step) <= 1e-6 * step), 6)
    return f"{value:,.{decimals}f}"


def _num(x: float) -> str:
    return f"{x:.2f}"


def colour(status: str) -> str:
    return STATUS_COLOURS.get(status, OTHER_COLOUR)


def render(drawing: Drawing, element_id: str = "") -> str:
    """The drawing as an inline ``<svg>`` (role img, its label as <title>)."""
    lo, hi = domain_of(drawing)

    def x(v: float) -> float:
        return PLOT_X0 + (v - lo) / (hi - lo) * (PLOT_X1 - PLOT_X0)

    fill = colour(drawing.status)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="bb-interval" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(drawing.label)}" '
             f'font-family="{escape(FONT_FAMILY)}" '
             f'data-domain="{lo!r} {hi!r}" data-plot="{PLOT_X0!r} {PLOT_X1!r}" data-status="{escape(drawing.status)}"'
             + (f' id="{escape(element_id)}"' if element_id else "") + ">",
             f"<title>{escape(drawing.label)}</title>"]
    if drawing.band is not None:
        b_lo = drawing.band[0] if drawing.band[0] is not None else lo
        b_hi = drawing.band[1] if drawing.band[1] is not None else hi
        parts.append(f'<rect class="bb-band" x="{_num(x(b_lo))}" y="4" width="{_num(x(b_hi) - x(b_lo))}" '
                     f'height="{_num(AXIS_Y - 4)}" fill="{BAND_COLOUR}" fill-opacity="0.22"/>')
    if drawing.reference is not None:
        xr = _num(x(drawing.reference))
        parts.append(f'<line class="bb-ref" x1="{xr}" x2="{xr}" y1="2" y2="{_num(AXIS_Y)}" stroke="#222" '
                     'stroke-width="1.2" stroke-dasharray="4 3"/>')
    for cls, level, pair, height, opacity in (("bb-ci95", drawing.level95, drawing.ci95, 4.0, 1.0),
                                              ("bb-ci90", drawing.level90, drawing.ci90, 12.0, 0.75)):
        if pair is not None:
            x0, x1 = x(pair[0]), x(pair[1])
            # a zero-width interval (every run the same) is still seen: the stroke outlines it
            parts.append(f'<rect class="{cls}" x="{_num(x0)}" y="{_num(TRACK_Y - height / 2)}" '
                         f'width="{_num(x1 - x0)}" height="{_num(height)}" fill="{fill}" fill-opacity="{opacity}" '
                         f'stroke="{fill}" stroke-width="1"><title>{escape(level)} interval {pair[0]:.4g} to '
                         f'{pair[1]:.4g}{escape(" " + drawing.unit if drawing.unit else "")}</title></rect>')
    if drawing.estimate is not None:
        xe = _num(x(drawing.estimate))
        parts.append(f'<line class="bb-estimate" x1="{xe}" x2="{xe}" y1="{_num(TRACK_Y - 10)}" '
                     f'y2="{_num(TRACK_Y + 10)}" stroke="#000" stroke-width="2.5"/>')
    for i, (v, what) in enumerate(drawing.points):
        parts.append(f'<circle class="bb-run" cx="{_num(x(v))}" cy="{_num(RUN_Y[i % 2])}" r="3.2" fill="#fff" '
                     f'fill-opacity="0.6" stroke="#333" stroke-width="1"><title>{escape(what)}</title></circle>')
    if drawing.ci95 is None and drawing.note:
        parts.append(f'<text class="bb-nointerval" x="{_num(PLOT_X0 + 2)}" y="{_num(TRACK_Y + 4)}" '
                     f'font-size="11" fill="#57606a">{escape(drawing.note)}</text>')
    parts.append('<g class="bb-axis" font-size="10" fill="#444">'
                 f'<line x1="{_num(PLOT_X0)}" x2="{_num(PLOT_X1)}" y1="{_num(AXIS_Y)}" y2="{_num(AXIS_Y)}" '
                 'stroke="#444" stroke-width="1"/>')
    ticks = nice_ticks(lo, hi)
    for t in ticks:
        xt = _num(x(t))
        parts.append(f'<line x1="{xt}" x2="{xt}" y1="{_num(AXIS_Y)}" y2="{_num(AXIS_Y + 4)}" stroke="#444"/>'
                     f'<text class="bb-tick" x="{xt}" y="{_num(AXIS_Y + 15)}" text-anchor="middle" '
                     f'data-value="{t!r}">{escape(tick_text(t, ticks))}</text>')
    if drawing.unit:
        parts.append(f'<text class="bb-unit" x="{_num(WIDTH - 2)}" y="{_num(AXIS_Y + 4)}" text-anchor="end">'
                     f'{escape(drawing.unit)}</text>')
    parts.append("</g></svg>")
    return "".join(parts)


__all__ = ["Drawing", "domain_of", "nice_ticks", "render", "tick_text"]
