"""The interval drawing's axis and marks (publish/interval_svg): round ticks inside the axis, every number of the
drawing on the axis, and marks at the x the axis maps their values to (the browser test reads the same back)."""

from __future__ import annotations

import math
import re

from hypothesis import assume, given
from hypothesis import strategies as st

from benchbook.publish.interval_svg import PLOT_X0, PLOT_X1, Drawing, domain_of, nice_ticks, render, tick_text

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@given(finite, st.floats(min_value=1e-6, max_value=1e9))
def test_ticks_are_round_and_inside_the_axis(lo, span):
    assume(span >= 1e-6 * abs(lo))   # beyond, a double cannot hold the ticks' steps to 1e-6 (5e8 in steps of 0.05)
    hi = lo + span
    ticks = nice_ticks(lo, hi)
    assert 2 <= len(ticks) <= 11
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1.0, 2.0, 2.5, 5.0, 10.0)), step
    assert all(lo - 1e-9 * span <= t <= hi + 1e-9 * span for t in ticks)
    assert all(math.isclose(b - a, step, rel_tol=1e-6, abs_tol=1e-9 * span) for a, b in zip(ticks, ticks[1:],
                                                                                              strict=False))


def test_tick_text_has_the_decimals_of_the_step():
    assert [tick_text(t, [0.95, 0.975, 1.0]) for t in (0.95, 0.975)] == ["0.950", "0.975"]
    assert tick_text(20.0, [10.0, 20.0]) == "20"
    assert tick_text(0.5, [0.0, 0.5]) == "0.5"


def test_every_number_is_on_the_axis_and_each_mark_where_its_value_maps():
    d = Drawing(label="a <b>", status="mismatch", unit="ms", band=(95.0, 105.0), reference=100.0, ci90=(78.0, 80.0),
                ci95=(77.0, 81.0), estimate=79.0, points=[(76.5, "run 1"), (82.0, "run 2")])
    lo, hi = domain_of(d)
    assert lo < 76.5 and hi > 105.0
    svg = render(d, "row-1-drawing")

    def x(v: float) -> float:
        return PLOT_X0 + (v - lo) / (hi - lo) * (PLOT_X1 - PLOT_X0)

    band = re.search(r'class="bb-band" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)
    assert abs(float(band[1]) - x(95.0)) < 0.01 and abs(float(band[2]) - (x(105.0) - x(95.0))) < 0.02
    ci95 = re.search(r'class="bb-ci95" x="([\d.]+)"', svg)
    assert abs(float(ci95[1]) - x(77.0)) < 0.01
    assert [abs(float(cx) - x(v)) < 0.01 for cx, v in zip(re.findall(r'class="bb-run" cx="([\d.]+)"', svg),
                                                           (76.5, 82.0), strict=True)] == [True, True]
    assert 'aria-label="a &lt;b&gt;"' in svg and 'id="row-1-drawing"' in svg and "95 % interval 77 to 81 ms" in svg


def test_a_drawing_without_an_interval_says_why_and_an_open_band_reaches_the_edge():
    svg = render(Drawing(label="claim", status="not derivable", band=(0.0, None), reference=0.0,
                         note="not derivable"))
    assert "bb-ci95" not in svg and ">not derivable</text>" in svg
    band = re.search(r'class="bb-band" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)
    assert abs(float(band[1]) + float(band[2]) - PLOT_X1) < 0.02   # one side open: to the axis' end
