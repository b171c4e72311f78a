"""Peaks over threshold: GPD fits on seeded GPD samples, return levels and their intervals, the
Scheerer et al. §4 numbers, and plain reference implementations of the threshold aids."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import genpareto

from benchbook.analysis import evt


def gpd_sample(xi, sigma, u, k, n_body, seed):
    rng = np.random.default_rng(seed)
    tail = u + genpareto.rvs(xi, scale=sigma, size=k, random_state=rng)
    body = rng.uniform(0.0, u, size=n_body)
    return np.concatenate([body, tail])


def test_nll_equals_scipy_logpdf_sum():
    y = genpareto.rvs(0.2, scale=3.0, size=500, random_state=np.random.default_rng(1))
    for sigma, xi in [(3.0, 0.2), (2.5, -0.1), (4.0, 1e-12)]:
        ref = -genpareto.logpdf(y, xi, loc=0, scale=sigma).sum()
        assert evt.gpd_nll(sigma, xi, y) == pytest.approx(ref, rel=1e-9)
    assert evt.gpd_nll(1.0, -0.5, np.array([3.0])) == math.inf  # outside the support
    assert evt.gpd_nll(-1.0, 0.1, y) == math.inf


@pytest.mark.parametrize("xi,sigma,seed", [(-0.2, 30.0, 11), (0.0, 10.0, 12), (0.3, 5.0, 13)])
def test_fit_recovers_known_parameters(xi, sigma, seed):
    k, u = 20_000, 100.0
    data = gpd_sample(xi, sigma, u, k, 30_000, seed)
    fit = evt.fit_gpd(data, u)
    assert fit.n_exceed == k and fit.n_total == 50_000 and fit.zeta == pytest.approx(0.4)
    # within 4 standard errors; the standard errors agree with the expected information
    assert abs(fit.xi - xi) < 4 * fit.se_xi and abs(fit.sigma - sigma) < 4 * fit.se_sigma
    exp_cov = evt.expected_information_cov(fit.sigma, fit.xi, k)
    assert fit.se_xi == pytest.approx(math.sqrt(exp_cov[1, 1]), rel=0.15)
    assert fit.se_sigma == pytest.approx(math.sqrt(exp_cov[0, 0]), rel=0.15)
    # the MLE is a maximum: scipy's own fit is not better
    c, _, scale = genpareto.fit(data[data > u] - u, floc=0)
    assert -fit.loglik <= evt.gpd_nll(scale, c, data[data > u] - u) + 1e-6


def test_return_level_formula_and_xi_zero_limit():
    # Coles eq. 4.13 against a direct quantile: x_m is the (1 - 1/(m zeta)) quantile of the GPD above u
    u, sigma, xi, zeta, m = 370.0, 27.813, -0.064, 42 / 1264, 10_000
    direct = u + genpareto.ppf(1 - 1 / (m * zeta), xi, scale=sigma)
    assert evt.return_level(u, sigma, xi, zeta, m) == pytest.approx(direct, rel=1e-12)
    assert evt.return_level(u, sigma, 1e-7, zeta, m) == pytest.approx(
        evt.return_level(u, sigma, 0.0, zeta, m), rel=1e-5)
    # gradient against central differences
    g = evt.return_level_gradient(sigma, xi, zeta, m)
    h = 1e-6
    num = [
        (evt.return_level(u, sigma, xi, zeta + h, m) - evt.return_level(u, sigma, xi, zeta - h, m)) / (2 * h),
        (evt.return_level(u, sigma + h, xi, zeta, m) - evt.return_level(u, sigma - h, xi, zeta, m)) / (2 * h),
        (evt.return_level(u, sigma, xi + h, zeta, m) - evt.return_level(u, sigma, xi - h, zeta, m)) / (2 * h),
    ]
    assert g == pytest.approx(num, rel=1e-5)


def test_scheerer_section4_from_printed_parameters():
    """u = 370 µs, 42 of 1264, (27.813, -0.064): x_10000 ~ 505 µs, delta CI ~ [429, 580] µs."""
    printed = evt.from_printed(370, 27.813, -0.064, 42, 1264, ci_sigma=(16.141, 39.485), ci_xi=(-0.356, 0.227))
    rl = printed.return_level_delta(10_000)
    assert rl.level == pytest.approx(504.87, abs=0.01)
    assert rl.low == pytest.approx(429, abs=2) and rl.high == pytest.approx(580, abs=2)
    # the printed Wald intervals are symmetric: their SEs are recovered exactly
    assert printed.se_sigma == pytest.approx((39.485 - 16.141) / (2 * 1.959964), rel=1e-6)
    expected = evt.from_printed(370, 27.813, -0.064, 42, 1264)
    rl2 = expected.return_level_delta(10_000)
    assert rl2.low == pytest.approx(430.9, abs=0.1) and rl2.high == pytest.approx(578.9, abs=0.1)
    assert expected.upper_endpoint == pytest.approx(370 + 27.813 / 0.064)
    ci = expected.wald_ci()
    assert ci["sigma"][0] == pytest.approx(16.141, abs=0.25) and ci["xi"][1] == pytest.approx(0.227, abs=0.015)


def test_delta_and_profile_intervals_cover_the_truth():
    """Seeded simulation: both 95 % intervals cover the true return level in most replications,
    and the profile interval is asymmetric (longer upwards) for a heavy tail."""
    xi, sigma, u, m = 0.1, 10.0, 50.0, 5_000
    n_body, k = 1_800, 200
    truth = evt.return_level(u, sigma, xi, k / (k + n_body), m)
    cover_delta = cover_prof = 0
    reps = 40
    for seed in range(reps):
        data = gpd_sample(xi, sigma, u, k, n_body, 1000 + seed)
        fit = evt.fit_gpd(data, u)
        d = fit.return_level_delta(m)
        p = evt.return_level_profile_ci(data, u, m)
        assert p.low < p.level < p.high and p.level == pytest.approx(d.level)
        cover_delta += d.low <= truth <= d.high
        cover_prof += p.low <= truth <= p.high
        if seed == 0:
            assert (p.high - p.level) > (p.level - p.low)
    assert cover_delta >= 0.8 * reps and cover_prof >= 0.8 * reps


def test_profile_interval_matches_likelihood_ratio_definition():
    data = gpd_sample(-0.1, 20.0, 100.0, 300, 3_000, 7)
    m = 10_000
    p = evt.return_level_profile_ci(data, 100.0, m)
    fit = evt.fit_gpd(data, 100.0)
    y = evt.exceedances(data, 100.0)
    crit = 0.5 * 3.841458820694124
    for end in (p.low, p.high):
        val = evt._profile_nll_at(end, 100.0, fit.zeta, m, y, (-0.95, 1.5)) + fit.loglik
        assert val == pytest.approx(crit, abs=1e-3)


def test_mean_excess_matches_plain_loop():
    rng = np.random.default_rng(5)
    x = rng.exponential(10.0, size=2_000)
    th = [0.0, 5.0, 12.5, 30.0, 60.0]
    df = evt.mean_excess(x, th, min_exceed=5)
    for row in df.itertuples():
        exc = [v - row.threshold for v in x if v > row.threshold]
        mean = sum(exc) / len(exc)
        sd = (sum((e - mean) ** 2 for e in exc) / (len(exc) - 1)) ** 0.5
        assert row.n_exceed == len(exc)
        assert row.mean_excess == pytest.approx(mean, rel=1e-9)
        assert row.ci_high - row.mean_excess == pytest.approx(1.959964 * sd / len(exc) ** 0.5, rel=1e-5)
    # exponential data: mean excess is flat at the scale
    assert df.mean_excess.iloc[:4].to_numpy() == pytest.approx(10.0, rel=0.2)


def test_parameter_stability_is_flat_for_gpd_data():
    data = gpd_sample(0.2, 10.0, 0.0, 20_000, 0, 21)
    stab = evt.parameter_stability(data, [0.0, 5.0, 10.0, 20.0])
    assert len(stab) == 4
    assert stab.xi.to_numpy() == pytest.approx(0.2, abs=0.08)
    # modified scale sigma* = sigma - xi u stays at sigma for a GPD above every threshold
    assert stab.sigma_star.to_numpy() == pytest.approx(10.0, rel=0.1)
    assert (stab.xi_low < stab.xi).all() and (stab.xi < stab.xi_high).all()


def test_too_few_exceedances():
    with pytest.raises(ValueError, match="only 3 exceedances"):
        evt.fit_gpd(np.array([1.0, 2.0, 3.0, 10.0, 11.0, 12.0]), 5.0)


def _decluster_reference(t, x, u, gap):
    ex = sorted((ti, xi) for ti, xi in zip(t, x, strict=True) if xi > u)
    clusters = []
    for ti, xi in ex:
        if clusters and ti - clusters[-1]["end"] <= gap:
            c = clusters[-1]
            c["end"], c["size"] = ti, c["size"] + 1
            if xi > c["max"]:
                c["max"], c["t_max"] = xi, ti
        else:
            clusters.append({"start": ti, "end": ti, "size": 1, "max": xi, "t_max": ti})
    return clusters


def test_decluster_by_gap_matches_plain_loop():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0, 100, 3_000))
    x = rng.exponential(1.0, 3_000)
    x[(t > 40) & (t < 40.5)] += 10  # a burst: one cluster of large values
    df = evt.decluster_by_gap(t[::-1], x[::-1], 2.0, 0.3)  # input order does not matter
    ref = _decluster_reference(t, x, 2.0, 0.3)
    assert len(df) == len(ref)
    for row, r in zip(df.itertuples(), ref, strict=True):
        assert (row.start, row.end, row.size, row.max, row.t_max) == pytest.approx(
            (r["start"], r["end"], r["size"], r["max"], r["t_max"]))
    burst = df[(df.start <= 40.5) & (df.end >= 40)]
    assert len(burst) == 1 and burst["size"].iloc[0] >= 10
    assert evt.decluster_by_gap(t, x, 1e9, 0.3).empty
