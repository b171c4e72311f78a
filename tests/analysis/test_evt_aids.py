"""Edges of the threshold-choice aids and of declustering (analysis/evt.py): every row of the mean residual
life plot, of the parameter-stability table and of the clusters against a plain computation, at the limits of
each rule (exactly `min_exceed` exceedances, a value exactly at the threshold, two exceedances exactly `gap`
apart, a threshold that cannot be fitted between two that can)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.stats import genpareto, norm

from benchbook.analysis import evt


def _mean_excess_row(x: np.ndarray, u: float, alpha: float) -> tuple[float, float, float, int]:
    exc = [float(v) - u for v in x if v > u]
    k = len(exc)
    mean = sum(exc) / k
    var = sum((e - mean) ** 2 for e in exc) / (k - 1) if k > 1 else 0.0
    half = float(norm.ppf(1 - alpha / 2)) * math.sqrt(var / k)
    return mean, mean - half, mean + half, k


def test_mean_excess_default_thresholds_and_both_interval_ends_at_another_level():
    x = np.random.default_rng(8).exponential(2.0, 400)
    df = evt.mean_excess(x, alpha=0.1)
    grid = np.linspace(x.min(), x.max(), 200)
    kept = [u for u in grid if np.count_nonzero(x > u) >= 5]
    assert df.threshold.to_numpy() == pytest.approx(kept, rel=0, abs=0)
    assert list(df.columns) == ["threshold", "mean_excess", "ci_low", "ci_high", "n_exceed"]
    for row in df.itertuples():
        mean, low, high, k = _mean_excess_row(x, row.threshold, 0.1)
        assert row.n_exceed == k
        assert (row.mean_excess, row.ci_low, row.ci_high) == pytest.approx((mean, low, high), rel=1e-9, abs=1e-12)


def test_mean_excess_keeps_exactly_min_exceed_and_goes_on_after_a_threshold_it_skips():
    x = np.arange(1.0, 11.0)  # 1 .. 10
    # 7.0 leaves 3 exceedances (skipped at min_exceed 4); 6.0 after it leaves exactly 4; 8.5 leaves 2
    df = evt.mean_excess(x, [7.0, 6.0, 8.5, 2.0], min_exceed=4)
    assert df.threshold.tolist() == [6.0, 2.0]
    assert df.n_exceed.tolist() == [4, 8]
    mean, low, high, _ = _mean_excess_row(x, 6.0, 0.05)
    assert (df.mean_excess[0], df.ci_low[0], df.ci_high[0]) == pytest.approx((mean, low, high), rel=1e-12)


def test_mean_excess_with_one_and_two_exceedances():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    df = evt.mean_excess(x, [5.0, 3.0], min_exceed=1)
    # one exceedance: no spread to estimate, the interval is the point
    assert (df.mean_excess[0], df.ci_low[0], df.ci_high[0], df.n_exceed[0]) == (2.0, 2.0, 2.0, 1)
    # two: the sample variance with k - 1
    mean, low, high, k = _mean_excess_row(x, 3.0, 0.05)
    assert k == 2 and low < mean < high
    assert (df.mean_excess[1], df.ci_low[1], df.ci_high[1]) == pytest.approx((mean, low, high), rel=1e-12)


def test_mean_excess_refuses_fewer_than_one_exceedance_and_no_data():
    with pytest.raises(ValueError, match="min_exceed must be at least 1"):
        evt.mean_excess(np.arange(5.0), [1.0], min_exceed=0)
    with pytest.raises(ValueError, match="no data"):
        evt.mean_excess(np.array([]))


def test_parameter_stability_rows_are_the_fits_at_each_threshold():
    data = genpareto.rvs(0.1, loc=0.0, scale=0.05, size=3_000, random_state=np.random.default_rng(12))
    # 0.9 is above every value (no fit): the thresholds after it still count
    thresholds = [0.02, 0.9, 0.05, 0.1]
    stab = evt.parameter_stability(data, thresholds, alpha=0.1)
    assert stab.threshold.tolist() == [0.02, 0.05, 0.1]
    z = float(norm.ppf(0.95))
    for row in stab.itertuples():
        fit = evt.fit_gpd(data, row.threshold)
        grad = np.array([1.0, -row.threshold])
        se_star = math.sqrt(grad @ fit.cov @ grad)
        s_star = fit.sigma - fit.xi * row.threshold
        assert row.n_exceed == fit.n_exceed
        assert (row.xi, row.xi_low, row.xi_high) == pytest.approx(
            (fit.xi, fit.xi - z * fit.se_xi, fit.xi + z * fit.se_xi), rel=1e-12)
        assert (row.sigma_star, row.sigma_star_low, row.sigma_star_high) == pytest.approx(
            (s_star, s_star - z * se_star, s_star + z * se_star), rel=1e-12)
        assert se_star < 0.05  # small against 1: a floor of 1 on the variance would show


def test_decluster_edges_gap_tie_threshold_tie_and_max_tie():
    t = np.array([0.0, 1.0, 2.0, 2.5, 10.0, 10.5, 11.0, 30.0])
    x = np.array([5.0, 3.0, 5.0, 1.0, 4.0, 9.0, 9.0, 3.0])
    df = evt.decluster_by_gap(t, x, 3.0, 1.0)
    # the 3.0s equal the threshold: not exceedances (else 0, 1, 2 would be one cluster, steps of exactly `gap`);
    # 0 and 2 are 2.0 apart: two clusters; 10, 10.5, 11 in steps of 0.5: one cluster whose maximum is tied (9 at
    # 10.5 and at 11): its time is the first
    assert df.to_dict("list") == {"start": [0.0, 2.0, 10.0], "end": [0.0, 2.0, 11.0], "size": [1, 1, 3],
                                  "max": [5.0, 5.0, 9.0], "t_max": [0.0, 2.0, 10.5]}
    # two exceedances exactly `gap` apart are one cluster; a hair more apart, two
    assert len(evt.decluster_by_gap(np.array([0.0, 2.0]), np.array([5.0, 6.0]), 3.0, 2.0)) == 1
    assert len(evt.decluster_by_gap(np.array([0.0, 2.0 + 1e-9]), np.array([5.0, 6.0]), 3.0, 2.0)) == 2


def test_decluster_with_nothing_above_the_threshold_has_the_columns():
    df = evt.decluster_by_gap(np.array([0.0, 1.0]), np.array([1.0, 2.0]), 2.0, 1.0)
    assert df.empty and list(df.columns) == ["start", "end", "size", "max", "t_max"]


def test_decluster_shapes_must_agree():
    with pytest.raises(ValueError, match=r"t has shape \(2,\), x has shape \(3,\)"):
        evt.decluster_by_gap(np.zeros(2), np.zeros(3), 0.0, 1.0)


def test_profile_interval_refuses_a_fit_outside_the_shape_bounds_by_name():
    # a short tail (xi below -1 in this sample, which the fit warns of): the profile over xi in (-0.95, 1.5)
    # never reaches the maximum; this was scipy's "f(a) and f(b) must have different signs" from deep inside the
    # root search
    data = genpareto.rvs(-0.6, scale=1.0, size=50, random_state=np.random.default_rng(4))
    with pytest.warns(UserWarning, match="< -1, where the likelihood is unbounded"):
        fit = evt.fit_gpd(data, 0.0)
    assert fit.xi < -0.95
    with pytest.raises(ValueError, match=rf"fitted shape xi = {fit.xi:.4g} lies outside xi_bounds \(-0.95, 1.5\)"), \
            pytest.warns(UserWarning, match="< -1"):
        evt.return_level_profile_ci(data, 0.0, 50.0)
    with pytest.raises(ValueError, match=r"lies outside xi_bounds \(-0.5, 0.5\)"), pytest.warns(UserWarning):
        evt.return_level_profile_ci(data, 0.0, 50.0, xi_bounds=(-0.5, 0.5))


def _profile_nll_reference(level: float, u: float, zeta: float, m: float, y: np.ndarray,
                           bounds: tuple[float, float]) -> float:
    """min over xi in bounds of the GPD nll with sigma = (level - u) xi / ((m zeta)^xi - 1) (Coles 4.13 solved
    for sigma): a grid of 20,001 points, then a bounded search around the best with a tight tolerance."""
    d, mz = level - u, m * zeta

    def nll(xi: float) -> float:
        sigma = d / math.log(mz) if xi == 0 else d * xi / (mz**xi - 1.0)
        return evt.gpd_nll(sigma, xi, y)

    xs = np.linspace(bounds[0], bounds[1], 20_001)
    vals = np.array([nll(x) for x in xs])
    j = int(np.argmin(vals))
    res = minimize_scalar(nll, bounds=(xs[max(j - 1, 0)], xs[min(j + 1, xs.size - 1)]), method="bounded",
                          options={"xatol": 1e-12})
    return float(min(res.fun, vals[j]))


@pytest.mark.parametrize(("xi", "scale"), [(0.2, 0.05), (-0.2, 3.0)])
def test_profile_nll_is_the_minimum_over_the_shape(xi, scale):
    # small and ordinary scales: a level within one unit of the threshold is a level like any other
    y = genpareto.rvs(xi, scale=scale, size=300, random_state=np.random.default_rng(9))
    fit = evt.fit_gpd(y, 0.0)
    bounds, m = (-0.95, 1.5), 200.0
    best = fit.return_level(m)
    for level in (0.7 * best, best, 1.4 * best):
        got = evt._profile_nll_at(level, 0.0, fit.zeta, m, y, bounds)
        assert got == pytest.approx(_profile_nll_reference(level, 0.0, fit.zeta, m, y, bounds), rel=1e-9)
    assert evt._profile_nll_at(0.0, 0.0, fit.zeta, m, y, bounds) == math.inf  # the level at the threshold
    # the interval's ends are the likelihood-ratio crossings at this scale too
    p = evt.return_level_profile_ci(y, 0.0, m)
    crit = 0.5 * 3.841458820694124
    for end in (p.low, p.high):
        assert _profile_nll_reference(end, 0.0, fit.zeta, m, y, bounds) + fit.loglik == pytest.approx(crit, abs=1e-6)


def test_mean_excess_of_latencies_in_seconds_and_of_equal_exceedances():
    """The unit of the data is the user's: excesses of microseconds written in seconds (variance ~1e-12) get
    their own interval, and equal exceedances (variance 0, which the suffix sums may leave a rounding error
    below 0) an interval that is the point."""
    x = np.random.default_rng(11).exponential(2e-6, 300) + 1e-5
    u = float(np.quantile(x, 0.8))
    df = evt.mean_excess(x, [u])
    mean, low, high, k = _mean_excess_row(x, u, 0.05)
    assert df.n_exceed[0] == k == 60
    assert (df.mean_excess[0], df.ci_low[0], df.ci_high[0]) == pytest.approx((mean, low, high), rel=1e-6, abs=0)
    assert 0 < df.ci_high[0] - df.ci_low[0] < 2e-6
    same = evt.mean_excess(np.array([0.1, 0.2, 0.7, 0.7, 0.7, 0.7]), [0.3], min_exceed=2)
    assert (same.mean_excess[0], same.ci_low[0], same.ci_high[0]) == pytest.approx((0.4, 0.4, 0.4), rel=1e-12)
