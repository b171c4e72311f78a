"""Edges of the fit's covariance and of the profile-likelihood interval's search (analysis/evt.py) that the other
EVT tests do not reach: the documented Hessian steps on a bounded tail, a return period just beyond the threshold
(the interval reaches down to the threshold itself), and the horizon of the upward search (a profile that stays
within the critical value up to some 10^17 times as far above the estimate as the estimate lies above the
threshold).

Oracles, computed independently of evt.py: the GPD observed information in closed form; a central-difference
Hessian with the steps docs/statistics.md documents, on a negative log-likelihood written with log1p; and the
profile negative log-likelihood over an 801-point shape grid (all shapes at once, sigma through expm1) refined by a
bounded search to 1e-13."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import chi2, genpareto

from benchbook.analysis import evt
from evt_reference import counting_profile, nll_at_shapes

CRIT = 0.5 * float(chi2.ppf(0.95, 1))
DEFAULT_BOUNDS = (-0.95, 1.5)


# -- oracles ----------------------------------------------------------------------------------------

def _nll(sigma: float, xi: float, y: np.ndarray) -> float:
    """GPD negative log-likelihood (xi != 0) with log1p."""
    return y.size * math.log(sigma) + (1.0 + 1.0 / xi) * float(np.log1p(xi * y / sigma).sum())


def _analytic_hessian(sigma: float, xi: float, y: np.ndarray) -> np.ndarray:
    """Second derivatives of the GPD nll in (sigma, xi), w = y / sigma, z = 1 + xi w (Coles §4.3.2 differentiated
    twice by hand; checked against central differences of the analytic score to 2e-9)."""
    w = y / sigma
    z = 1.0 + xi * w
    k = y.size
    h_ss = (-k + (1.0 + xi) * np.sum(w * (2.0 + xi * w) / z**2)) / sigma**2
    h_sx = (-np.sum(w / z) + (1.0 + xi) * np.sum(w**2 / z**2)) / sigma
    h_xx = (2.0 / xi**3 * np.sum(np.log1p(xi * w)) - 2.0 / xi**2 * np.sum(w / z)
            - (1.0 + 1.0 / xi) * np.sum(w**2 / z**2))
    return np.array([[h_ss, h_sx], [h_sx, h_xx]])


def _documented_step_hessian(sigma: float, xi: float, y: np.ndarray) -> np.ndarray:
    """Central second differences with the steps of docs/statistics.md: 1e-4 |sigma| and 1e-4 max(|xi|, 0.01)."""
    h = np.array([1e-4 * abs(sigma), 1e-4 * max(abs(xi), 0.01)])
    x = np.array([sigma, xi])

    def f(p):
        return _nll(p[0], p[1], y)

    e0, e1 = np.array([h[0], 0.0]), np.array([0.0, h[1]])
    f0 = f(x)
    h00 = (f(x + e0) - 2 * f0 + f(x - e0)) / h[0] ** 2
    h11 = (f(x + e1) - 2 * f0 + f(x - e1)) / h[1] ** 2
    h01 = (f(x + e0 + e1) - f(x + e0 - e1) - f(x - e0 + e1) + f(x - e0 - e1)) / (4 * h[0] * h[1])
    return np.array([[h00, h01], [h01, h11]])


def _profile_ref(level: float, u: float, mz: float, y: np.ndarray, bounds: tuple[float, float]) -> float:
    """min over xi in bounds of the nll with sigma expressed through the return level."""
    d, log_mz = level - u, math.log(mz)
    if d <= 0:
        return math.inf
    xs = np.linspace(bounds[0], bounds[1], 801)
    vals = np.concatenate([nll_at_shapes(d, log_mz, xs[s:s + 100], y) for s in range(0, xs.size, 100)])
    if not np.any(np.isfinite(vals)):
        return math.inf
    j = int(np.argmin(vals))
    res = minimize_scalar(lambda x: float(nll_at_shapes(d, log_mz, np.array([x]), y)[0]),
                          bounds=(xs[max(j - 1, 0)], xs[min(j + 1, xs.size - 1)]), method="bounded",
                          options={"xatol": 1e-13})
    return float(min(res.fun, vals[j]))


def _nll_60_digits(sigma: Decimal, xi: Decimal, y: list[Decimal]) -> Decimal:
    """The GPD nll in 60-digit decimal arithmetic (the exponential's at xi = 0)."""
    if xi == 0:
        return len(y) * sigma.ln() + sum(y) / sigma
    return len(y) * sigma.ln() + (1 + 1 / xi) * sum((1 + xi * v / sigma).ln() for v in y)


def _hessian_60_digits(sigma: float, xi: float, y: np.ndarray) -> np.ndarray:
    """The nll's Hessian in (sigma, xi) by central differences with steps 1e-12 (sigma relative), in 60 digits:
    truncation ~1e-24 and rounding ~1e-36 relative, exact in float64."""
    with localcontext() as ctx:
        ctx.prec = 60
        ys = [Decimal(float(v)) for v in y]
        s, x = Decimal(sigma), Decimal(xi)
        hs, hx = s * Decimal("1e-12"), Decimal("1e-12")

        def f(ds, dx):
            return _nll_60_digits(s + ds, x + dx, ys)

        f0 = f(0, 0)
        h00 = (f(hs, 0) - 2 * f0 + f(-hs, 0)) / hs**2
        h11 = (f(0, hx) - 2 * f0 + f(0, -hx)) / hx**2
        h01 = (f(hs, hx) - f(hs, -hx) - f(-hs, hx) + f(-hs, -hx)) / (4 * hs * hx)
        return np.array([[float(h00), float(h01)], [float(h01), float(h11)]])


# -- the fit's covariance -------------------------------------------------------------------------

def test_the_covariance_of_a_bounded_tail_is_the_hessian_with_the_documented_steps():
    """A bounded tail (xi = -0.45, 1000 exceedances; the largest lies 1.6 % of the support's length below its
    fitted end, so the nll's curvature in xi changes fast there): the covariance is the inverse of the central-
    difference Hessian with the steps docs/statistics.md gives, 1e-4 sigma and 1e-4 max(|xi|, 0.01), and its
    standard errors are those of the closed-form observed information to 1e-3 (the truncation error of those
    steps here: 3.8e-4). A step of 1e-4 in xi regardless of |xi| (a floor of 1 instead of 0.01) has 5 times that
    truncation error: a covariance 1.5e-3 away from the documented one."""
    y = genpareto.rvs(-0.45, scale=1.0, size=1000, random_state=np.random.default_rng(2012))
    fit = evt.fit_gpd(y, 0.0)
    assert fit.cov_method == "observed information"
    assert -0.5 < fit.xi < -0.4 and 1.0 + fit.xi * y.max() / fit.sigma < 0.02
    documented = np.linalg.inv(_documented_step_hessian(fit.sigma, fit.xi, y))
    # the two nll implementations (np.log against log1p) differ by rounding, ~1e-13 in an nll of 549; over a squared
    # step of 2e-9 that is ~5e-5 in Hessian entries of 8e3 to 3e4, amplified ~50 times by the inversion: < 1e-6
    np.testing.assert_allclose(fit.cov, documented, rtol=1e-6)
    analytic_se = np.sqrt(np.diag(np.linalg.inv(_analytic_hessian(fit.sigma, fit.xi, y))))
    np.testing.assert_allclose([fit.se_sigma, fit.se_xi], analytic_se, rtol=1e-3)


@pytest.mark.parametrize("seed", [638, 1287])
def test_the_covariance_of_a_shape_near_zero_is_the_observed_information(seed):
    """Exponential data (xi = 0, sigma = 3, 500 exceedances; these seeds fit xi = 1.8e-5 and -2.2e-5): the standard
    errors are those of the observed information computed in 60 digits, to 1e-3 (measured: 2.5e-4). With log(1 +
    xi w) in place of log1p the nll kept only ~11 of its digits for such shapes, then multiplied by 1/xi, and the
    second differences in xi (step 1e-6) made the xi standard error 15-17 % low and the covariance 27-32 % off."""
    y = np.random.default_rng(seed).exponential(3.0, 500)
    fit = evt.fit_gpd(y, 0.0)
    assert fit.cov_method == "observed information" and 0 < abs(fit.xi) < 1e-4
    exact = np.linalg.inv(_hessian_60_digits(fit.sigma, fit.xi, y))
    np.testing.assert_allclose([fit.se_sigma, fit.se_xi], np.sqrt(np.diag(exact)), rtol=1e-3)
    np.testing.assert_allclose(fit.cov, exact, rtol=2e-3)


@pytest.mark.parametrize("xi", [0.0, 4e-10, -9e-10, 1e-9, 3e-8, -1e-6])
def test_the_nll_near_shape_zero_keeps_its_digits_and_its_curvature(xi):
    """Inside the band |xi| < 1e-9 the nll is the exponential's plus its first term in xi; outside it the general
    form with log1p. Both agree with the 60-digit nll to 1e-13 relative (exceedances up to 20 scales), and the
    second difference in xi with the fit's step (1e-6, reaching across the band) is the 60-digit curvature to 1e-3.
    With the exponential's nll alone inside the band, that difference would be off by xi sum(w - w^2/2) / 1e-12,
    ~60 % of it at xi = 4e-10."""
    y = np.random.default_rng(7).exponential(2.0, 400)
    y[:3] = (10.0, 25.0, 40.0)
    with localcontext() as ctx:
        ctx.prec = 60
        exact = float(_nll_60_digits(Decimal(2.0), Decimal(xi), [Decimal(float(v)) for v in y]))
    assert evt.gpd_nll(2.0, xi, y) == pytest.approx(exact, rel=1e-13)
    h = 1e-6
    second = (evt.gpd_nll(2.0, xi + h, y) - 2 * evt.gpd_nll(2.0, xi, y) + evt.gpd_nll(2.0, xi - h, y)) / h**2
    assert second == pytest.approx(_hessian_60_digits(2.0, xi, y)[1, 1], rel=1e-3)


# -- the profile interval's search --------------------------------------------------------------------

def test_a_return_period_just_beyond_the_threshold_has_the_threshold_as_lower_end(monkeypatch):
    """m zeta = 1 + 1.5e-9: the return level lies 1.5e-9 sigma above the threshold, and the profile at the lowest
    level the search probes, u + 1e-9 sigma (a GPD with sigma about 2/3 of the fitted one), is still within the
    critical value: the interval reaches down to the threshold, to the documented 1e-9 sigma. The lower end is a
    number (not None), the upper end is the oracle's crossing to 1e-9 sigma, and the search stops once it has the
    lower end (a dozen profile evaluations, not one for every remaining step)."""
    rng = np.random.default_rng(7)
    data = np.concatenate([rng.uniform(0.0, 10.0, 360), 10.0 + genpareto.rvs(0.1, scale=2.0, size=40,
                                                                            random_state=rng)])
    fit = evt.fit_gpd(data, 10.0)
    y = evt.exceedances(data, 10.0)
    mz = 1.0 + 1.5e-9
    m = mz / fit.zeta
    calls = counting_profile(monkeypatch)
    p = evt.return_level_profile_ci(data, 10.0, m)
    assert calls[0] <= 30
    monkeypatch.undo()
    s = fit.sigma

    def h(level):
        return _profile_ref(level, 10.0, mz, y, DEFAULT_BOUNDS) + fit.loglik - CRIT

    assert p.level == pytest.approx(fit.return_level(m), rel=1e-15)
    assert isinstance(p.low, float) and 10.0 < p.low <= 10.0 + 1e-9 * s * (1 + 1e-9)
    assert h(p.low) < 0  # within the critical value at the lowest level probed: no crossing above the threshold
    crossing = brentq(h, p.level, p.level + s, xtol=1e-15 * s)
    assert h(crossing - 0.5e-9 * s) < 0 < h(crossing + 0.5e-9 * s)  # a crossing the oracle resolves to < 1e-9 s
    assert p.high == pytest.approx(crossing, rel=0, abs=1e-9 * s)
    assert p.low < p.level < p.high


def _heavy_tail(xi: float, k: int, seed: int, u: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    tail = u + genpareto.rvs(xi, scale=5.0, size=k, random_state=rng)
    return np.concatenate([u - rng.uniform(0.0, u, 9 * k), tail])


# (xi of the sample, k, seed, threshold, return period as m zeta or as (x_m - u) / sigma, upper shape bound); the
# names give the fitted xi
HORIZON_CASES = {
    # 12 exceedances of a very heavy tail, a level 100 exceedance periods out, shapes up to 20: the profile rises by
    # 3.4 from the estimate to 1.05 * 2^60 (x_m - u) above it (alpha near 0.01)
    "xi 5, m zeta = 100": (3.0, 12, 0, 1000.0, ("mz", 100.0), 20.0),
    # a level 0.7 sigma above the threshold (the first step up is already larger than x_m - u), shapes up to 1000:
    # the profile rises by 18 from the estimate to 0.74 * 2^60 sigma above it (alpha near 2e-9)
    "xi 22, x_m - u = 0.7 sigma": (20.0, 10, 1, 100.0, ("r", 0.7), 1000.0),
}


@pytest.mark.parametrize("case", list(HORIZON_CASES))
def test_the_upward_search_reaches_its_horizon_and_no_further(case):
    """The steps up double from sigma, J' + 60 of them (2^J' sigma the first step at least x_m - u above the
    estimate): the upward search reaches 2^(J'+59) sigma above the estimate, between 2^59 and 2^60 (x_m - u), or
    2^59 sigma when x_m - u < sigma, and says +inf beyond (an upper end that far out bounds nothing). With alpha set
    so that the profile crosses the critical value at a chosen level (alpha = the chi-square tail of twice the
    oracle's profile there): a crossing 2^57 (x_m - u) above the estimate is the upper end, and one 1.05 * 2^60
    (x_m - u) above it, beyond that horizon (and beyond the 2^60 (x_m - u) of evt.py's comment), gives +inf, a
    float."""
    xi, k, seed, u, (kind, value), top = HORIZON_CASES[case]
    bounds = (-0.5, top)
    data = _heavy_tail(xi, k, seed, u)
    fit = evt.fit_gpd(data, u)
    y = evt.exceedances(data, u)
    mz = value if kind == "mz" else (1.0 + value * fit.xi) ** (1.0 / fit.xi)
    m = mz / fit.zeta
    best = fit.return_level(m)
    if kind == "r":
        assert best - u == pytest.approx(value * fit.sigma, rel=1e-9)
    reach = (2.0**59 * (best - u), max(2.0**60 * (best - u), 2.0**59 * fit.sigma))  # bounds on 2^(J'+59) sigma
    for factor, found in ((2.0**57, True), (1.05 * 2.0**60, False)):
        target = best + factor * (best - u)
        assert (target - best < reach[0]) if found else (target - best > reach[1])
        excess = _profile_ref(target, u, mz, y, bounds) + fit.loglik
        alpha = float(chi2.sf(2.0 * excess, 1))
        assert 1e-9 < alpha < 0.05
        # the profile rises all the way from the estimate to the target: the target is the first crossing
        steps = best + np.geomspace(1e-3, factor, 25) * (best - u)
        assert np.all(np.diff([_profile_ref(v, u, mz, y, bounds) for v in steps]) > 0)
        p = evt.return_level_profile_ci(data, u, m, alpha=alpha, xi_bounds=bounds)
        assert p.low < p.level == pytest.approx(best, rel=1e-12)
        if found:
            # to 1e-6: the two profiles agree to 1e-13 in the nll, but evt derives the critical value from 1 - alpha
            # (1e-16 absolute: 6e-8 of alpha = 2e-9), which at a rise of ~0.15 per doubling of the level moves the
            # crossing by < 3e-7 of the level
            assert p.high == pytest.approx(target, rel=1e-6)
        else:
            assert isinstance(p.high, float) and p.high == math.inf
