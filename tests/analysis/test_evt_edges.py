"""EVT at its edges: the GPD likelihood at and outside its support, the observed information against an analytic
gradient, return levels and their gradient at xi = 0, the delta method's degenerate variances, Wald intervals and
the upper end point by hand, the exceedance count at the threshold and at the fitting minimum. Oracles: scipy's
genpareto, closed forms written out in the test, central differences of closed forms."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from benchbook.analysis import evt


def test_return_level_shapes_and_its_gradient_at_xi_zero():
    u, sigma, zeta = 10.0, 2.0, 0.05
    lvl = evt.return_level(u, sigma, 0.0, zeta, 1000)
    assert type(lvl) is float and lvl == pytest.approx(u + sigma * math.log(1000 * zeta), rel=1e-15)
    vec = evt.return_level(u, sigma, 0.2, zeta, np.array([100.0, 1000.0]))
    assert isinstance(vec, np.ndarray) and vec.shape == (2,)
    assert vec[1] == pytest.approx(u + sigma / 0.2 * ((1000 * zeta) ** 0.2 - 1), rel=1e-15)
    g = evt.return_level_gradient(sigma, 0.0, zeta, 1000)

    def rl(s: float, x: float, z: float) -> float:
        return evt.return_level(u, s, x, z, 1000)

    h = 1e-6
    num = [(rl(sigma, 0.0, zeta + h) - rl(sigma, 0.0, zeta - h)) / (2 * h),
           (rl(sigma + h, 0.0, zeta) - rl(sigma - h, 0.0, zeta)) / (2 * h),
           (rl(sigma, 1e-4, zeta) - rl(sigma, -1e-4, zeta)) / 2e-4]
    assert g == pytest.approx(num, rel=1e-5)
    # the xi = 0 limit of sigma/xi ((m zeta)^xi - 1) is sigma L + sigma xi L^2 / 2 + ...: d/dxi = +sigma L^2 / 2
    assert g[2] == pytest.approx(0.5 * sigma * math.log(1000 * zeta) ** 2, rel=1e-12)


def _return_level_decimal(u: float, sigma: float, xi: float, zeta: float, m: float) -> Decimal:
    """u + sigma/xi ((m zeta)^xi - 1) in 60-digit decimal arithmetic (xi != 0)."""
    with localcontext() as ctx:
        ctx.prec = 60
        x = Decimal(xi)
        return Decimal(u) + Decimal(sigma) / x * ((x * (Decimal(m) * Decimal(zeta)).ln()).exp() - 1)


@pytest.mark.parametrize("xi", [2e-9, -3e-9, 1e-7, 1e-5, -1e-5, 2e-3, 0.3])
def test_return_level_and_gradient_near_xi_zero_keep_their_digits(xi):
    """(m zeta)^xi - 1 and its derivative in xi cancel for small xi: both against 60-digit arithmetic."""
    u, sigma, zeta, m = 370.0, 27.813, 42 / 1264, 10_000
    assert evt.return_level(u, sigma, xi, zeta, m) == pytest.approx(
        float(_return_level_decimal(u, sigma, xi, zeta, m)), rel=1e-14)
    h = abs(xi) * 1e-6
    with localcontext() as ctx:
        ctx.prec = 60
        d_xi = (_return_level_decimal(u, sigma, xi + h, zeta, m) - _return_level_decimal(u, sigma, xi - h, zeta, m)) \
            / (2 * Decimal(h))
    g = evt.return_level_gradient(sigma, xi, zeta, m)
    assert g[2] == pytest.approx(float(d_xi), rel=1e-9)
    assert g[1] == pytest.approx(float((_return_level_decimal(u, sigma, xi, zeta, m) - Decimal(u)) / Decimal(sigma)),
                                 rel=1e-13)


def test_delta_interval_is_continuous_through_xi_zero():
    at_zero = evt.from_printed(370, 27.813, 0.0, 42, 1264).return_level_delta(10_000)
    for xi in (5e-10, 2e-9, -2e-9, 1e-7):
        near = evt.from_printed(370, 27.813, xi, 42, 1264).return_level_delta(10_000)
        assert (near.low, near.level, near.high) == pytest.approx((at_zero.low, at_zero.level, at_zero.high), rel=1e-6)
