"""A published value's tolerance band: with both tolerances set the larger allowed deviation wins, and the band is
two-sided (a computed value far below or far above the published one does not match)."""

from __future__ import annotations

import math

import pytest

from benchbook.reproduce.registry import PublishedValue


def pv(value: float, tolerance_abs: float | None = None, tolerance_rel: float | None = None) -> PublishedValue:
    return PublishedValue(name="x", value=value, unit="us", tolerance_abs=tolerance_abs, tolerance_rel=tolerance_rel)


def test_absolute_wider_than_relative_wins():
    v = pv(100.0, tolerance_abs=0.5, tolerance_rel=0.001)  # 0.5 against 0.1
    assert v.allowed_deviation() == 0.5
    assert v.matches(100.4) and v.matches(99.6)
    assert not v.matches(100.6) and not v.matches(99.4)


def test_relative_wider_than_absolute_wins():
    v = pv(100.0, tolerance_abs=0.01, tolerance_rel=0.02)  # 0.01 against 2.0
    assert math.isclose(v.allowed_deviation(), 2.0)
    assert v.matches(101.9) and v.matches(98.1)
    assert not v.matches(102.1) and not v.matches(97.9)


def test_the_order_of_the_tolerances_does_not_matter():
    for a, r in ((0.5, 0.001), (0.01, 0.02), (3.0, 0.03)):
        both = pv(100.0, a, r).allowed_deviation()
        assert both == max(pv(100.0, a).allowed_deviation(), pv(100.0, None, r).allowed_deviation())


@pytest.mark.parametrize("computed", [-1e6, -100.0, 0.0, 1.0, 99.0, 101.0, 200.0, 1e6])
def test_band_is_two_sided_far_below_and_far_above(computed):
    """Published far above the computed value (computed far below) and far below it (computed far above)."""
    for v in (pv(100.0, tolerance_abs=0.5), pv(100.0, tolerance_rel=0.005), pv(100.0, 0.5, 0.005)):
        assert not v.matches(computed), (v, computed)


def test_negative_published_value_with_relative_tolerance():
    v = pv(-50.0, tolerance_rel=0.1)  # +-5
    assert v.allowed_deviation() == 5.0
    assert v.matches(-54.0) and v.matches(-46.0)
    assert not v.matches(-56.0) and not v.matches(-44.0) and not v.matches(50.0)


def test_exact_when_no_tolerance_and_non_finite_never_matches():
    v = pv(9969.08)
    assert v.allowed_deviation() == 0.0
    assert v.matches(9969.08) and not v.matches(9969.09) and not v.matches(9969.07)
    for bad in (None, math.nan, math.inf, -math.inf):
        assert not pv(1.0, tolerance_abs=1e9).matches(bad)


def test_rounding_boundary_of_a_printed_value():
    """100.19 printed to two decimals with +-0.005: 100.185 matches although binary floats put it a hair off."""
    v = pv(100.19, tolerance_abs=0.005)
    assert v.matches(100.185) and v.matches(100.195)
    assert not v.matches(100.1849) and not v.matches(100.1951)
