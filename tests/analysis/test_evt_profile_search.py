"""The profile-likelihood interval's search and the fit's covariance fallback (analysis/evt.py), where earlier tests
did not reach: intervals narrower than the GPD scale (a return level a few exceedance periods out, or thousands of
exceedances), data in seconds as well as in microseconds, a level within one scale of the threshold, shape bounds
that end just past the shapes the interval needs, that run through xi = 0, or that leave some levels without any
GPD, an astronomically long return period, the cost of a search, and a fit whose Hessian steps leave the support.

Oracle: the profile negative log-likelihood computed independently (all shapes of an 801-point grid at once, the
GPD written with log1p and expm1, then a bounded search with a 1e-13 tolerance around the grid's best), and the
interval's ends checked as crossings of the critical value: the profile is above it a hair outside each end, below
it a hair inside and everywhere between."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import chi2, genpareto

from benchbook.analysis import evt
from evt_reference import counting_profile, nll_at_shapes

CRIT = 0.5 * float(chi2.ppf(0.95, 1))
DEFAULT_BOUNDS = (-0.95, 1.5)


def _profile_ref(level: float, u: float, mz: float, y: np.ndarray, bounds: tuple[float, float]) -> tuple[float, float]:
    """(min over xi in bounds of the nll at this return level, the xi where it is reached)."""
    d, log_mz = level - u, math.log(mz)
    if d <= 0:
        return math.inf, math.nan
    xs = np.linspace(bounds[0], bounds[1], 801)
    vals = np.concatenate([nll_at_shapes(d, log_mz, xs[s:s + 100], y) for s in range(0, xs.size, 100)])
    if not np.any(np.isfinite(vals)):
        return math.inf, math.nan
    j = int(np.argmin(vals))
    res = minimize_scalar(lambda x: float(nll_at_shapes(d, log_mz, np.array([x]), y)[0]),
                          bounds=(xs[max(j - 1, 0)], xs[min(j + 1, xs.size - 1)]), method="bounded",
                          options={"xatol": 1e-13})
    return (float(res.fun), float(res.x)) if res.fun < vals[j] else (float(vals[j]), float(xs[j]))


def _excess(fit: evt.PotModel, y: np.ndarray, m: float, bounds: tuple[float, float]):
    """The profile nll above the critical value at a level (> 0: outside the interval)."""
    return lambda level: _profile_ref(level, fit.threshold, m * fit.zeta, y, bounds)[0] + fit.loglik - CRIT


def _assert_ends_are_the_crossings(data, u, m, p, bounds=DEFAULT_BOUNDS, rel=1e-7, scan=12):
    """Each end is, to rel * sigma, where the profile crosses the critical value, and the profile stays below it
    everywhere between the ends (so each end is the crossing nearest the estimate on its side)."""
    fit = evt.fit_gpd(data, u)
    h = _excess(fit, evt.exceedances(data, u), m, bounds)
    eps = rel * fit.sigma
    assert p.method == "profile likelihood" and u < p.low < p.level < p.high < math.inf
    assert h(p.low - eps) > 0 > h(p.low + eps), (p.low, h(p.low - eps), h(p.low + eps))
    assert h(p.high - eps) < 0 < h(p.high + eps), (p.high, h(p.high - eps), h(p.high + eps))
    assert all(h(v) < 0 for v in np.linspace(p.low + eps, p.high - eps, scan))


def _sample(xi: float, sigma: float, u: float, k: int, n_body: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    tail = u + genpareto.rvs(xi, scale=sigma, size=k, random_state=rng)
    return np.concatenate([rng.uniform(0.0, u, n_body), tail])


@pytest.mark.parametrize(("xi", "k", "mz"), [(0.1, 600, 2.0), (0.1, 600, 10.0), (-0.2, 3_000, 30.0)])
def test_an_interval_narrower_than_the_scale_has_both_crossings_as_ends(xi, k, mz):
    """A return level a few exceedance periods out (m zeta = 2 or 10), or thousands of exceedances: the interval's
    upper half is narrower than sigma, so the first step of sigma above the estimate is already past the upper
    crossing (a search that probed there first took that crossing for the lower end); at m zeta = 2 the first
    step down from the estimate is below the threshold, where no return level lies."""
    n_body = 9 * k
    data = _sample(xi, 5.0, 100.0, k, n_body, 21)
    m = mz * (k + n_body) / k
    p = evt.return_level_profile_ci(data, 100.0, m)
    fit = evt.fit_gpd(data, 100.0)
    assert p.high - p.level < fit.sigma  # the case this test is about
    if mz == 2.0:
        assert p.level - fit.sigma < 100.0
    _assert_ends_are_the_crossings(data, 100.0, m, p)


@pytest.mark.parametrize("mz", [2.0, 40.0])
def test_the_interval_does_not_depend_on_the_unit_of_the_data(mz):
    """Latencies in microseconds (sigma 20) and the same latencies in seconds (sigma 2e-5): the same interval, in
    the other unit; in seconds too each end is the crossing to 1e-7 sigma (step, clamp at the threshold and root
    tolerance all scale with sigma)."""
    k, n_body = 400, 3_600
    data_us = _sample(0.15, 20.0, 100.0, k, n_body, 5)
    m = mz * (k + n_body) / k
    p_us = evt.return_level_profile_ci(data_us, 100.0, m)
    p_s = evt.return_level_profile_ci(data_us * 1e-6, 100e-6, m)
    sigma_us = evt.fit_gpd(data_us, 100.0).sigma
    for a, b in ((p_s.low, p_us.low), (p_s.level, p_us.level), (p_s.high, p_us.high)):
        assert a * 1e6 == pytest.approx(b, abs=1e-6 * sigma_us)
    _assert_ends_are_the_crossings(data_us * 1e-6, 100e-6, m, p_s)


def test_shape_bounds_just_past_the_shapes_at_the_ends_give_the_same_interval():
    """The profile at the lower end is reached at some shape xi_L, at the upper end at xi_U. Bounds that put xi_L a
    quarter of a grid cell inside the lower bound and xi_U a quarter cell inside the upper one leave the profile
    at every level between the ends as it was: the same interval, with its minimum over the shape in the first
    and in the last cell of the 61-point grid (and at the last grid point just above the upper end)."""
    data = _sample(0.2, 3.0, 50.0, 300, 2_700, 33)
    m = 1_000.0
    fit = evt.fit_gpd(data, 50.0)
    y = evt.exceedances(data, 50.0)
    wide = evt.return_level_profile_ci(data, 50.0, m)
    xi_low = _profile_ref(wide.low, 50.0, m * fit.zeta, y, DEFAULT_BOUNDS)[1]
    xi_high = _profile_ref(wide.high, 50.0, m * fit.zeta, y, DEFAULT_BOUNDS)[1]
    assert DEFAULT_BOUNDS[0] + 0.1 < xi_low < fit.xi < xi_high < DEFAULT_BOUNDS[1] - 0.1
    cell = (xi_high - xi_low) / 59.5
    bounds = (xi_low - 0.25 * cell, xi_high + 0.25 * cell)
    narrow = evt.return_level_profile_ci(data, 50.0, m, xi_bounds=bounds)
    assert (narrow.low, narrow.level, narrow.high) == pytest.approx((wide.low, wide.level, wide.high),
                                                                    rel=0, abs=1e-7 * fit.sigma)
    _assert_ends_are_the_crossings(data, 50.0, m, narrow, bounds)
    # just above the upper end the best shape lies beyond the upper bound: the minimum is the bound's
    above = wide.high + 0.05 * fit.sigma
    assert _profile_ref(above, 50.0, m * fit.zeta, y, DEFAULT_BOUNDS)[1] > bounds[1]
    assert evt._profile_nll_at(above, 50.0, fit.zeta, m, y, bounds) == pytest.approx(
        _profile_ref(above, 50.0, m * fit.zeta, y, bounds)[0], rel=1e-12)


@pytest.mark.parametrize("mz", [2.0, 5.0])
def test_shape_bounds_symmetric_about_zero_put_a_grid_point_on_the_exponential(mz):
    """xi_bounds (-0.5, 0.5): the shape grid's middle point is xi = 0 exactly, where sigma = d / log(m zeta) (the
    exponential); an exponential tail's profile passes through it, and the ends are the crossings."""
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.uniform(0.0, 10.0, 540), 10.0 + rng.exponential(2.0, 60)])
    assert np.linspace(-0.5, 0.5, 61)[30] == 0.0
    m = mz * 10.0
    p = evt.return_level_profile_ci(data, 10.0, m, xi_bounds=(-0.5, 0.5))
    _assert_ends_are_the_crossings(data, 10.0, m, p, (-0.5, 0.5))


def test_levels_with_no_gpd_in_the_shape_bounds_end_the_lower_search_by_bisection(monkeypatch):
    """A bounded tail (xi = -0.3) with the shape held at or below -0.1: below u + y_max (1 - (m zeta)^-0.1) no GPD
    in the bounds reaches the largest exceedance, so the first step down lands where the profile is +inf and
    the lower end is found by bisection towards the estimate, in 100 halvings (not 100 per remaining step)."""
    data = _sample(-0.3, 4.0, 20.0, 200, 800, 0)
    bounds, m = (-0.9, -0.1), 25.0
    fit = evt.fit_gpd(data, 20.0)
    y = evt.exceedances(data, 20.0)
    edge = 20.0 + y.max() * (1.0 - (m * fit.zeta) ** -0.1)
    assert _profile_ref(edge - 1e-9, 20.0, m * fit.zeta, y, bounds)[0] == math.inf
    assert fit.return_level(m) - fit.sigma < edge  # the first step down has no GPD
    calls = counting_profile(monkeypatch)
    p = evt.return_level_profile_ci(data, 20.0, m, xi_bounds=bounds)
    assert calls[0] <= 150
    monkeypatch.undo()
    _assert_ends_are_the_crossings(data, 20.0, m, p, bounds)


@pytest.mark.parametrize("m", [1_000.0, 20.0])
def test_an_interval_costs_a_few_dozen_profile_evaluations(monkeypatch, m):
    """Each end: a few steps out from the estimate and one root search (20 to 30 profiles in all, each a 61-point
    grid and a bounded search over the shape), not a root search repeated for every remaining step. At m zeta = 2
    the first step down passes the threshold: the root search then starts just above the threshold (where the
    profile is finite), not a 100-step bisection from a level with no GPD at all."""
    data = _sample(0.1, 5.0, 100.0, 300, 2_700, 4)
    calls = counting_profile(monkeypatch)
    p = evt.return_level_profile_ci(data, 100.0, m)
    assert calls[0] <= 60
    if m == 20.0:
        assert p.level - evt.fit_gpd(data, 100.0).sigma < 100.0 < p.low


def test_an_interval_warns_about_nothing():
    """The search probes outside the support (RuntimeWarnings it silences); it passes the optimiser only options
    the optimiser knows, so a caller who turns warnings into errors still gets the interval."""
    data = _sample(0.1, 5.0, 100.0, 300, 2_700, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = evt.return_level_profile_ci(data, 100.0, 1_000.0)
    assert p.low < p.level < p.high


def test_a_fit_whose_hessian_steps_leave_the_support_falls_back_to_the_expected_information():
    """An interior maximum (the score is 0 there) at xi = -0.96, 1.8e-4 inside the support's edge (1 + xi y_max /
    sigma): the numerical Hessian's steps in sigma alone and in xi alone stay inside, the step down in both goes
    outside, so the mixed derivative is +inf and the inverse is the zero matrix, finite but with no positive
    eigenvalue. That is no covariance (standard errors of 0): the fit says "expected information" and uses it."""
    y = genpareto.rvs(-0.8, scale=1.0, size=300, random_state=np.random.default_rng(4))
    fit = evt.fit_gpd(y, 0.0)
    assert 1e-4 < 1.0 + fit.xi * y.max() / fit.sigma < 2e-4
    H = evt._numerical_hessian(lambda q: evt.gpd_nll(q[0], q[1], y), np.array([fit.sigma, fit.xi]),
                               np.array([0.0, 1e-2]))
    assert np.isfinite(H[0, 0]) and np.isfinite(H[1, 1]) and H[0, 1] == math.inf
    assert fit.cov_method == "expected information"
    np.testing.assert_allclose(fit.cov, evt.expected_information_cov(fit.sigma, fit.xi, 300), rtol=1e-12)
    assert fit.se_sigma > 0 and fit.se_xi > 0


def test_an_astronomical_return_period_still_gives_an_answer():
    """m zeta = 1e18 with a shape near 1.2: the estimate is more than 2^60 scales above the threshold, beyond the
    reach of 60 doubling steps down (the lower end came back as nan): the steps down go on to the threshold."""
    data = _sample(1.2, 5.0, 100.0, 200, 1_800, 1)
    fit = evt.fit_gpd(data, 100.0)
    m = 1e18 / fit.zeta
    p = evt.return_level_profile_ci(data, 100.0, m)
    assert (p.level - 100.0) / fit.sigma > 2.0**60
    assert p.level == pytest.approx(fit.return_level(m), rel=1e-12)
    assert 100.0 < p.low < p.level < p.high
    y = evt.exceedances(data, 100.0)
    for end, inside in ((p.low, p.low * (1 + 1e-6)), (p.high, p.high * (1 - 1e-6))):
        at = evt._profile_nll_at(end, 100.0, fit.zeta, m, y, DEFAULT_BOUNDS) + fit.loglik
        assert at == pytest.approx(CRIT, rel=1e-6)
        assert evt._profile_nll_at(inside, 100.0, fit.zeta, m, y, DEFAULT_BOUNDS) + fit.loglik < CRIT


def test_a_return_period_not_beyond_the_threshold_has_no_interval():
    """m zeta <= 1 (here 10 x 0.1 = 1.0 exactly, and 0.5): the return level is the threshold itself or below it,
    where the GPD of the exceedances says nothing: a ValueError, also with shape bounds whose grid has xi = 0,
    where sigma = d / log(m zeta) would divide 0 by 0."""
    data = _sample(0.1, 2.0, 10.0, 100, 900, 3)
    assert evt.fit_gpd(data, 10.0).zeta * 10.0 == 1.0
    for m in (10.0, 5.0):
        for bounds in (DEFAULT_BOUNDS, (-0.5, 0.5)):
            with pytest.raises(ValueError, match=rf"return period m = {m:g} is not beyond the threshold: m \* zeta "
                                                 rf"= {m / 10:g} <= 1 \(zeta = 100/1000 exceedances\)"):
                evt.return_level_profile_ci(data, 10.0, m, xi_bounds=bounds)


@pytest.mark.parametrize("bounds", [(-1.5, 1.5), (-1.0000001, 0.5), (0.5, 0.5), (0.5, -0.5)])
def test_shape_bounds_below_minus_one_or_empty_are_refused(bounds):
    """Below xi = -1 the likelihood is unbounded at the support's end (Coles §2.6.4): a profile minimum there is
    wherever the grid and the optimiser stop (upper ends between 12.66 and 12.75 for one data set as the grid
    changed), so such bounds are refused by name, as are empty ones; -1 itself is accepted."""
    data = _sample(-0.3, 2.0, 10.0, 30, 120, 0)
    with pytest.raises(ValueError, match=r"xi_bounds .*: expected -1 <= lower < upper"):
        evt.return_level_profile_ci(data, 10.0, 100.0, xi_bounds=bounds)
    p = evt.return_level_profile_ci(data, 10.0, 100.0, xi_bounds=(-1.0, 1.5))
    assert 10.0 < p.low < p.level < p.high


@pytest.mark.parametrize("unit", [1e-7, 1e-6, 1e-3, 1e3])
def test_standard_errors_do_not_depend_on_the_unit_of_the_data(unit):
    """The same exceedances in seconds instead of 100-ns ticks: sigma and its standard error scale with the unit,
    xi and its standard error do not (the Hessian's step in sigma had a floor of 1e-2 in the data's unit, 3.2 and
    3.9 times too large errors at sigma = 1.8e-6)."""
    y = genpareto.rvs(0.1, scale=20.0, size=400, random_state=np.random.default_rng(5))
    ref, fit = evt.fit_gpd(y, 0.0), evt.fit_gpd(y * unit, 0.0)
    assert ref.cov_method == fit.cov_method == "observed information"
    assert fit.sigma == pytest.approx(ref.sigma * unit, rel=1e-5) and fit.xi == pytest.approx(ref.xi, abs=1e-5)
    assert fit.se_sigma == pytest.approx(ref.se_sigma * unit, rel=1e-3)
    assert fit.se_xi == pytest.approx(ref.se_xi, rel=1e-3)
