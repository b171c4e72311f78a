"""EVT at its edges: the GPD likelihood at and outside its support, the observed information against an analytic
gradient, return levels and their gradient at xi = 0, the delta method's degenerate variances, Wald intervals and
the upper end point by hand, the exceedance count at the threshold and at the fitting minimum. Oracles: scipy's
genpareto, closed forms written out in the test, central differences of closed forms."""

from __future__ import annotations

import dataclasses
import math
import warnings
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy.optimize import root
from scipy.stats import chi2, genpareto, norm

from benchbook.analysis import evt


def test_nll_at_and_outside_the_support():
    y = np.array([0.5, 1.0, 2.0])
    for sigma, xi in ((0.5, 0.2), (1.0, -0.1), (3.0, 0.0)):
        assert evt.gpd_nll(sigma, xi, y) == pytest.approx(-genpareto.logpdf(y, xi, scale=sigma).sum(), rel=1e-12)
    for sigma in (0.0, -1.0, math.inf, math.nan):
        assert evt.gpd_nll(sigma, 0.1, np.array([0.5])) == math.inf, sigma
    assert evt.gpd_nll(1.0, math.nan, y) == math.inf and evt.gpd_nll(1.0, math.inf, y) == math.inf
    # xi = -2, sigma = 1: the support ends at y = 0.5; at the end point itself the density is not positive
    assert evt.gpd_nll(1.0, -2.0, np.array([0.5])) == math.inf
    assert evt.gpd_nll(1.0, -2.0, np.array([0.4999])) < math.inf
    assert evt.gpd_nll(2.0, 0.0, np.array([])) == 0.0


def _gpd_gradient(sigma: float, xi: float, y: np.ndarray) -> np.ndarray:
    """Analytic gradient of the GPD negative log-likelihood (xi != 0)."""
    z = 1.0 + xi * y / sigma
    d_sigma = y.size / sigma - (1.0 + xi) / sigma**2 * float(np.sum(y / z))
    d_xi = -float(np.sum(np.log(z))) / xi**2 + (1.0 + 1.0 / xi) * float(np.sum(y / (sigma * z)))
    return np.array([d_sigma, d_xi])


@pytest.mark.parametrize("xi,sigma,seed,k", [(0.25, 4.0, 1, 2_000), (-0.2, 10.0, 2, 2_000), (0.1, 500.0, 3, 2_000),
                                           (0.2, 3.0, 5, 20_000)])
def test_fit_is_the_maximum_and_its_covariance_the_inverse_hessian(xi, sigma, seed, k):
    y = genpareto.rvs(xi, scale=sigma, size=k, random_state=np.random.default_rng(seed))
    fit = evt.fit_gpd(y + 50.0, 50.0)
    assert fit.cov_method == "observed information" and fit.method == "mle"
    p = np.array([fit.sigma, fit.xi])
    # the maximum itself: the root of the analytic score, started from scipy's own fit (1e-5 off on its own)
    c, _, scale = genpareto.fit(y, floc=0.0)
    mle = root(lambda q: _gpd_gradient(q[0], q[1], y), [scale, c], tol=1e-12).x
    assert np.abs(_gpd_gradient(*mle, y)).max() < 1e-6 * k and p == pytest.approx(mle, rel=1e-6)
    h = 1e-6 * np.abs(p)
    H = np.array([(_gpd_gradient(*(p + dp), y) - _gpd_gradient(*(p - dp), y)) / (2 * dp[i])
                  for i, dp in enumerate(np.diag(h))])
    np.testing.assert_allclose(fit.cov, np.linalg.inv(0.5 * (H + H.T)), rtol=2e-3)
    assert fit.loglik == pytest.approx(genpareto.logpdf(y, fit.xi, scale=fit.sigma).sum(), rel=1e-12)


def test_numerical_hessian_of_a_known_function():
    def f(v):
        x, y = v
        return x**2 * y + 3 * y**3 + math.sin(x)

    x, y = 0.7, 1.3
    exact = np.array([[2 * y - math.sin(x), 2 * x], [2 * x, 18 * y]])
    np.testing.assert_allclose(evt._numerical_hessian(f, np.array([x, y]), np.array([1e-2, 1e-2])), exact,
                               rtol=1e-6)
    one = evt._numerical_hessian(lambda v: 5.0 * v[0] ** 2, np.array([0.0]), np.array([1e-2]))  # floor at 0
    np.testing.assert_allclose(one, [[10.0]], rtol=1e-9)


def test_fit_needs_ten_exceedances_strictly_above_the_threshold():
    rng = np.random.default_rng(4)
    tail = 100.0 + genpareto.rvs(0.1, scale=5.0, size=10, random_state=rng)
    data = np.concatenate([rng.uniform(0, 99, 50), [100.0, 100.0, 100.0], tail])  # at the threshold: not above
    fit = evt.fit_gpd(data, 100.0)
    assert fit.n_exceed == 10 and fit.n_total == 63
    assert evt.exceedances(data, 100.0).tolist() == pytest.approx(sorted(tail - 100.0, key=list(tail - 100.0).index))
    with pytest.raises(ValueError, match=r"^only 9 exceedances of threshold 100\.0: too few to fit a GPD \(need >= 10"):
        evt.fit_gpd(data[:-1], 100.0)
    assert evt.fit_gpd(data, 100.0, n_total=10_000).n_total == 10_000


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


def _model(sigma=2.0, xi=0.1, k=100, n=1000, cov=None) -> evt.PotModel:
    cov = np.array([[0.04, -0.002], [-0.002, 0.01]]) if cov is None else cov
    return evt.PotModel(threshold=10.0, sigma=sigma, xi=xi, n_exceed=k, n_total=n, cov=cov)


def test_delta_interval_by_hand_and_its_degenerate_variances():
    m = _model()
    rl = m.return_level_delta(5_000)
    assert rl == m.return_level_delta(5_000, 0.05)
    g = evt.return_level_gradient(2.0, 0.1, 0.1, 5_000)
    var = g[0] ** 2 * 0.1 * 0.9 / 1000 + g[1:] @ m.cov @ g[1:]
    z = norm.ppf(0.975)
    assert rl.se == pytest.approx(math.sqrt(var), rel=1e-12)
    assert (rl.low, rl.high) == pytest.approx((rl.level - z * rl.se, rl.level + z * rl.se), rel=1e-12)
    assert rl.method == "delta method (observed information)"
    zero = _model(k=1000, n=1000, cov=np.zeros((2, 2))).return_level_delta(5_000)  # zeta 1: no variance at all
    assert zero.se == 0.0 and zero.low == zero.high == zero.level
    tiny = _model(cov=np.diag([1e-8, 1e-8])).return_level_delta(5_000)
    assert 0 < tiny.se < 1 and tiny.low < tiny.level < tiny.high
    bad = _model(cov=np.array([[-1.0, 0.0], [0.0, -1.0]])).return_level_delta(5_000)
    assert bad.level == pytest.approx(rl.level) and math.isnan(bad.low) and math.isnan(bad.high) and bad.se is None
    assert bad.method.startswith("delta method not applicable (variance -") and "observed information" in bad.method
    inf = _model(cov=np.array([[np.inf, 0.0], [0.0, 1.0]])).return_level_delta(5_000)
    assert inf.se is None and math.isnan(inf.low)


def test_wald_intervals_upper_end_point_and_immutability():
    m = _model()
    z = norm.ppf(0.95)
    ci = m.wald_ci(0.1)
    assert ci["sigma"] == pytest.approx((2.0 - z * 0.2, 2.0 + z * 0.2), rel=1e-12)
    assert ci["xi"] == pytest.approx((0.1 - z * 0.1, 0.1 + z * 0.1), rel=1e-12)
    assert _model(xi=-0.25).upper_endpoint == 10.0 + 2.0 / 0.25
    assert _model(xi=0.0).upper_endpoint == math.inf and _model(xi=0.5).upper_endpoint == math.inf
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.sigma = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.return_level_delta(100).level = 0.0


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


def _f_exact(t: float) -> Decimal:
    """t e^t - (e^t - 1) for the float t, in 60-digit arithmetic."""
    with localcontext() as ctx:
        ctx.prec = 60
        d = Decimal(t)
        e = d.exp()
        return d * e - (e - 1)


@pytest.mark.parametrize("t", [9.9e-4, -9.9e-4, 5e-4, 1e-5, 2e-3, 0.01, 0.1, 0.5, 0.9, -0.5])
def test_the_xi_derivative_to_the_last_digits_on_both_sides_of_its_series(t):
    """d x_m / d xi = sigma (t e^t - e^t + 1) / xi^2 with t = xi ln(m zeta): below |t| = 1e-3 a Taylor series to
    t^7 (each term (n-1)/n! t^n), above it the closed form. Against 60-digit arithmetic from the same t: 2e-15
    below the switch (the t^6 term is 1.4e-14 of the value at t = 1e-3), 1e-11 above it (the closed form loses
    about 2e-16 / |t| to cancellation)."""
    sigma, zeta, m = 27.813, 42 / 1264, 10_000
    log_mz = math.log(m * zeta)
    xi = t / log_mz
    t_code = xi * log_mz  # the t the code computes
    want = float(Decimal(sigma) * _f_exact(t_code) / (Decimal(xi) ** 2))
    got = evt.return_level_gradient(sigma, xi, zeta, m)[2]
    assert got == pytest.approx(want, rel=2e-15 if abs(t_code) < 1e-3 else 1e-11)


def test_delta_interval_defaults_to_95_percent():
    m = evt.from_printed(370, 27.813, 0.1, 42, 1264)
    a, b = evt.return_level_delta_ci(m, 10_000), evt.return_level_delta_ci(m, 10_000, 0.05)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.high - a.level == pytest.approx(norm.ppf(0.975) * a.se, rel=1e-12)


def test_printed_parameters_name_their_covariance_and_need_both_intervals():
    full = evt.from_printed(370, 27.813, -0.064, 42, 1264, ci_sigma=(16.141, 39.485), ci_xi=(-0.356, 0.227))
    z = norm.ppf(0.975)
    assert (full.method, full.cov_method) == ("printed parameters",
                                              "printed Wald intervals, expected-information correlation")
    assert full.se_xi == pytest.approx((0.227 + 0.356) / (2 * z), rel=1e-12)
    assert full.se_sigma == pytest.approx((39.485 - 16.141) / (2 * z), rel=1e-12)
    only_sigma = evt.from_printed(370, 27.813, -0.064, 42, 1264, ci_sigma=(16.141, 39.485))
    assert only_sigma.cov_method == "expected information"
    np.testing.assert_array_equal(only_sigma.cov, evt.expected_information_cov(27.813, -0.064, 42))
    assert evt.from_printed(370, 27.813, -0.064, 42, 1264, ci_xi=(-0.356, 0.227)).cov_method == "expected information"


def test_a_singular_hessian_falls_back_to_the_expected_information(monkeypatch):
    """np.linalg.inv raises on an exactly singular matrix (a likelihood flat along one direction at the estimate);
    the numerical Hessian is replaced by one to reach that state, which real data reach too rarely to plant."""
    y = genpareto.rvs(0.1, scale=2.0, size=400, random_state=np.random.default_rng(3))
    monkeypatch.setattr(evt, "_numerical_hessian", lambda *a, **k: np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.inv(evt._numerical_hessian())
    m = evt.fit_gpd(y, 0.0)
    assert m.cov_method == "expected information"
    np.testing.assert_allclose(m.cov, evt.expected_information_cov(m.sigma, m.xi, 400), rtol=1e-12)


def test_a_fit_on_the_boundary_falls_back_to_the_expected_information():
    """GPD(-0.8) exceedances: outside the region (xi > -0.5) where the observed information is an asymptotic
    covariance, but above -1: the fit says so and uses the expected information at its estimate."""
    y = genpareto.rvs(-0.8, scale=1.0, size=1000, random_state=np.random.default_rng(0))
    m = evt.fit_gpd(y, 0.0)
    assert -1 < m.xi < -0.5 and m.cov_method == "expected information"
    np.testing.assert_allclose(m.cov, evt.expected_information_cov(m.sigma, m.xi, m.n_exceed), rtol=1e-12)
    ok = evt.fit_gpd(genpareto.rvs(0.1, scale=2.0, size=400, random_state=np.random.default_rng(3)), 0.0)
    assert ok.cov_method == "observed information"


def test_a_fit_below_xi_minus_one_warns_and_gives_no_covariance():
    """Uniform exceedances are a GPD with xi = -1; their fit lands below -1 (here -1.027), where the likelihood is
    unbounded at the support's end (Smith 1985): the fit warns, its upper endpoint is the largest exceedance, and
    standard errors, Wald and delta-method intervals are NaN with the reason instead of a math domain error (the
    expected information's variance of sigma is negative there). Bounded tails reach this often: 12 to 19 of 20
    uniform samples of 20 to 1,000 values did (seed 1)."""
    x = np.linspace(0.0, 1.0, 401)[1:]
    with pytest.warns(UserWarning, match=r"xi = -1\.027 < -1, where the likelihood is unbounded") as caught:
        m = evt.fit_gpd(x, 0.0)
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert m.xi < -1 and (m.method, m.cov_method) == (
        "mle", "none (xi < -1: the likelihood is unbounded at the support's end)")
    assert m.loglik == -evt.gpd_nll(m.sigma, m.xi, x)  # the log-likelihood at the estimate, as for any fit
    assert m.upper_endpoint == pytest.approx(1.0, rel=1e-12)
    assert math.isnan(m.se_sigma) and math.isnan(m.se_xi) and all(math.isnan(v) for v in m.wald_ci()["xi"])
    rl = m.return_level_delta(10_000)
    assert math.isnan(rl.low) and "unbounded" in rl.method and 0.99 < rl.level <= 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert evt.fit_gpd(genpareto.rvs(-0.8, scale=1.0, size=1000, random_state=np.random.default_rng(0)),
                           0.0).xi > -1  # no warning above -1


def test_profile_interval_ends_are_the_nearest_crossings_on_each_side_of_the_estimate():
    """The bracket search steps outwards from the estimate: each end is the crossing of the critical value
    nearest the estimate on its own side (a scan of the profile on a grid finds the same points), the profile is
    below the critical value just inside and above it just outside."""
    rng = np.random.default_rng(7)
    data = np.concatenate([rng.uniform(0.0, 100.0, 2_700), 100.0 + genpareto.rvs(-0.1, scale=20.0, size=300,
                                                                                   random_state=rng)])
    m = 10_000
    p = evt.return_level_profile_ci(data, 100.0, m)
    fit = evt.fit_gpd(data, 100.0)
    y = evt.exceedances(data, 100.0)
    crit = 0.5 * float(chi2.ppf(0.95, 1))

    def g(level: float) -> float:
        return evt._profile_nll_at(level, 100.0, fit.zeta, m, y, (-0.95, 1.5)) + fit.loglik - crit

    assert 100.0 < p.low < p.level < p.high < math.inf and p.method == "profile likelihood"
    eps = 1e-4 * fit.sigma
    assert g(p.low + eps) < 0 < g(p.low - eps) and g(p.high - eps) < 0 < g(p.high + eps)
    below = np.linspace(p.low + eps, p.level, 40)
    above = np.linspace(p.level, p.high - eps, 40)
    assert all(g(v) < 0 for v in below) and all(g(v) < 0 for v in above)
    assert abs(g(p.low)) < 1e-6 and abs(g(p.high)) < 1e-6
