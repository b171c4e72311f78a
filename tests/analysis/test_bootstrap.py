"""The seeded bootstrap over runs: scipy's own percentile interval, the seed, the refusal below the minimum
run count, and coverage of the true Delta by simulation (1000 data sets with known truth)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis.bootstrap import (
    RESAMPLES,
    DeltaIntervals,
    bootstrap_delta,
    bootstrap_distribution,
    delta_of_medians,
    median,
    percentile_interval,
)
from benchbook.analysis.intervals import MIN_RUNS, NoInterval

SETS = 1000


def test_same_interval_as_scipy_percentile_bootstrap_and_seeded() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.lognormal(0, 0.1, 8), rng.lognormal(0.05, 0.1, 9)
    got = bootstrap_delta(a, b, seed=42)
    assert isinstance(got, DeltaIntervals) and got.resamples == RESAMPLES >= 10_000 and got.seed == 42
    ref = stats.bootstrap((a, b), lambda x, y, axis=-1: np.log(np.median(y, axis=axis) / np.median(x, axis=axis)),
                          n_resamples=10_000, method="percentile", rng=np.random.default_rng(42))
    ci = ref.confidence_interval
    assert got.interval(0.95) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert got.estimate == pytest.approx(math.log(np.median(b) / np.median(a)))
    lo90, hi90 = got.interval(0.90)
    assert got.interval(0.95)[0] <= lo90 <= got.estimate <= hi90 <= got.interval(0.95)[1]
    again = bootstrap_delta(a, b, seed=42)
    assert again.intervals == got.intervals
    assert bootstrap_delta(a, b, seed=43).intervals != got.intervals
    d = bootstrap_delta(a, b, scale="difference")
    assert d.estimate == pytest.approx(np.median(b) - np.median(a))


def test_refused_below_the_minimum_runs() -> None:
    got = bootstrap_delta([1.0, 1.1, 0.9], [1.2, 1.0, 1.1, 1.3, 1.2, 1.1])
    assert isinstance(got, NoInterval) and got.runs_needed == MIN_RUNS == 6 and "looks decisive" in got.reason
    with pytest.raises(ValueError, match="log ratio of medians needs per-run values > 0"):
        bootstrap_delta([1.0] * 6, [0.0] + [1.0] * 5)


def _coverage(a: np.ndarray, b: np.ndarray, truth: float, scale: str, seed: int) -> dict[float, float]:
    _est, dist = bootstrap_distribution(a, b, scale, RESAMPLES, seed)
    out = {}
    for level in (0.90, 0.95):
        lo, hi = percentile_interval(dist, level)
        out[level] = float(np.mean((lo <= truth) & (truth <= hi)))
    return out


def _within(cov: float, level: float, n: int = SETS) -> bool:
    return cov >= level - 3 * math.sqrt(level * (1 - level) / n)


def test_log_ratio_coverage_at_the_minimum_run_count() -> None:
    """Lognormal runs, B 10 % slower: true Delta = ln 1.1. At r = 6 runs per arm both intervals reach nominal."""
    rng = np.random.default_rng(6)
    a = rng.lognormal(0.0, 0.2, (SETS, MIN_RUNS))
    b = rng.lognormal(math.log(1.1), 0.2, (SETS, MIN_RUNS))
    cov = _coverage(a, b, math.log(1.1), "log-ratio", seed=6)
    assert _within(cov[0.90], 0.90) and _within(cov[0.95], 0.95), cov


def test_difference_coverage_for_a_bounded_statistic() -> None:
    """Jain-like values in [0.5, 1] (0.5 + Beta/2), arms with different medians: the true difference of medians."""
    rng = np.random.default_rng(8)
    da, db = stats.beta(8, 2), stats.beta(6, 3)
    a = 0.5 + da.rvs((SETS, MIN_RUNS), random_state=rng) / 2
    b = 0.5 + db.rvs((SETS, MIN_RUNS), random_state=rng) / 2
    truth = (db.median() - da.median()) / 2
    cov = _coverage(a, b, truth, "difference", seed=8)
    assert _within(cov[0.90], 0.90) and _within(cov[0.95], 0.95), cov


def test_three_runs_per_arm_look_decisive_and_are_not() -> None:
    """With 3 runs per arm the resampled median takes 3 values (7/27, 13/27, 7/27), so the 2.5 % and 5 % quantiles
    of Delta* both fall on ln(b(1)/a(3)): the "95 %" interval is [ln b(1)/a(3), ln b(3)/a(1)], which under A/A
    covers 0 with probability 1 - 2/C(6,3) = 0.90, not 0.95. That is why the bootstrap refuses r < 6."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(0, 0.2, (SETS, 3))
    b = rng.lognormal(0, 0.2, (SETS, 3))
    cov = _coverage(a, b, 0.0, "log-ratio", seed=3)
    se = math.sqrt(0.9 * 0.1 / SETS)
    assert abs(cov[0.95] - 0.90) <= 3 * se and cov[0.95] < 0.95 - 3 * se, cov
    _est, dist = bootstrap_distribution(a[:5], b[:5], "log-ratio", RESAMPLES, 3)
    lo, hi = percentile_interval(dist, 0.95)
    sa, sb = np.sort(a[:5], axis=1), np.sort(b[:5], axis=1)
    assert np.allclose(lo, np.log(sb[:, 0] / sa[:, 2])) and np.allclose(hi, np.log(sb[:, 2] / sa[:, 0]))


def test_delta_of_medians_batches() -> None:
    a = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]])
    b = np.array([[2.0, 4.0, 6.0], [1.0, 1.0, 1.0]])
    assert np.allclose(delta_of_medians(a, b, "log-ratio"), [math.log(2), math.log(0.5)])
    assert np.allclose(delta_of_medians(a, b, "difference"), [2.0, -1.0])


def test_median_is_numpys() -> None:
    rng = np.random.default_rng(0)
    for r in range(1, 12):
        x = rng.normal(size=(7, 5, r))
        assert np.array_equal(median(x), np.median(x, axis=-1))
        assert np.array_equal(median(x, axis=1), np.median(x, axis=1))
