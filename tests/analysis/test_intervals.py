"""Intervals across runs: the order-statistic rule against exact rational binomial sums and the table of
statistics-rules.md (V3), its coverage by simulation with known truth, the guarded t-interval, and the
interval for k of n against the Beta quantiles that define Clopper-Pearson."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis import intervals as iv
from benchbook.analysis.equivalence import Margin, compare_to_reference
from benchbook.analysis.intervals import (
    MIN_RUNS,
    RATE,
    Interval,
    NoInterval,
    RangeError,
    jain_range,
    order_statistic_ranks,
    proportion_interval,
    quantile_interval,
    runs_needed_for_quantile,
    t_interval,
)


def exact_coverage(r: int, q: Fraction, j: int, k: int) -> Fraction:
    """P(j <= K <= k - 1), K ~ Bin(r, q), in rational arithmetic."""
    return sum((math.comb(r, i) * q**i * (1 - q) ** (r - i) for i in range(j, k)), Fraction(0))


def brute_force(r: int, q: Fraction, level: Fraction) -> tuple[int, Fraction] | None:
    """(shortest width k - j, best coverage at that width) over every pair of ranks."""
    cum = [Fraction(0)]  # cum[i] = P(K <= i - 1)
    for i in range(r + 1):
        cum.append(cum[-1] + math.comb(r, i) * q**i * (1 - q) ** (r - i))
    for width in range(1, r):
        covs = [cum[j + width] - cum[j] for j in range(1, r - width + 1)]
        good = [c for c in covs if c >= level]
        if good:
            return width, max(good)
    return None


def test_median_ranks_match_the_rules_table() -> None:
    # statistics-rules.md V3: r=5 only 93.75 %; r=6 [1,6] 96.9 %; r=10 [2,9] 97.9 %; r=20 [6,15] 95.9 %
    assert order_statistic_ranks(5) is None
    assert 1 - 2 * 0.5**5 == 0.9375
    assert order_statistic_ranks(6) == (1, 6, pytest.approx(0.96875))
    j, k, cov = order_statistic_ranks(10)
    assert (j, k) == (2, 9) and round(cov, 3) == 0.979
    j, k, cov = order_statistic_ranks(20)
    assert (j, k) == (6, 15) and round(cov, 3) == 0.959
    assert MIN_RUNS == 6 == runs_needed_for_quantile(0.5, 0.95)


@pytest.mark.parametrize("q", [Fraction(1, 2), Fraction(1, 10), Fraction(9, 10), Fraction(3, 4)])
@pytest.mark.parametrize("level", [Fraction(9, 10), Fraction(95, 100), Fraction(99, 100)])
def test_ranks_are_the_shortest_with_exact_coverage(q: Fraction, level: Fraction) -> None:
    for r in range(2, 41):
        got = order_statistic_ranks(r, float(q), float(level))
        want = brute_force(r, q, level)
        if want is None:
            assert got is None, (r, got)
            continue
        assert got is not None, r
        j, k, cov = got
        assert k - j == want[0], r
        assert cov == pytest.approx(float(want[1]), abs=1e-12), r
        assert cov == pytest.approx(float(exact_coverage(r, q, j, k)), abs=1e-12)


@pytest.mark.parametrize("q,level", [(0.5, 0.95), (0.9, 0.95), (0.1, 0.9)])
def test_runs_needed_is_the_first_run_count_with_an_interval(q: float, level: float) -> None:
    need = runs_needed_for_quantile(q, level)
    assert order_statistic_ranks(need, q, level) is not None
    assert all(order_statistic_ranks(r, q, level) is None for r in range(2, need))
    lq = Fraction(q).limit_denominator(1000)
    assert 1 - lq**need - (1 - lq) ** need >= Fraction(level).limit_denominator(1000)
    assert 1 - lq ** (need - 1) - (1 - lq) ** (need - 1) < Fraction(level).limit_denominator(1000)


def test_large_r_uses_le_boudec_ranks_checked_against_the_exact_coverage(monkeypatch) -> None:
    r = 1500
    z = stats.norm.ppf(0.975)
    j, k, cov = order_statistic_ranks(r)
    # Le Boudec: floor((r - z sqrt(r))/2) and ceil(1 + (r + z sqrt(r))/2) for the median, widened if short
    assert j <= math.floor((r - z * math.sqrt(r)) / 2) and k >= math.ceil(1 + (r + z * math.sqrt(r)) / 2)
    assert cov >= 0.95 and cov == pytest.approx(stats.binom.cdf(k - 1, r, 0.5) - stats.binom.cdf(j - 1, r, 0.5))
    monkeypatch.setattr(iv, "EXACT_RANKS_LIMIT", 10**6)
    ej, ek, _ = order_statistic_ranks(r)
    assert (ek - ej) <= (k - j) <= (ek - ej) + 3  # the approximation costs at most a few ranks


def test_too_few_runs_give_no_interval_but_the_runs_needed() -> None:
    got = quantile_interval([1.0, 2.0, 3.0])
    assert isinstance(got, NoInterval) and not got.ok
    assert got.runs == 3 and got.runs_needed == 6 and "needs at least 6 runs" in got.reason
    got = quantile_interval(np.arange(10.0), q=0.9)
    assert isinstance(got, NoInterval) and got.runs_needed == 29


@pytest.mark.parametrize("r,q", [(6, 0.5), (10, 0.5), (30, 0.9)])
def test_order_statistic_coverage_by_simulation(r: int, q: float) -> None:
    """Continuous data of known quantile: the share of intervals holding it is the exact binomial coverage."""
    rng = np.random.default_rng(20 + r)
    sets = 4000
    dists = {"lognormal": (stats.lognorm(0.5), lambda n: rng.lognormal(0, 0.5, n)),
             "exponential": (stats.expon(), lambda n: rng.exponential(1.0, n))}
    j, k, cov = order_statistic_ranks(r, q)
    for name, (dist, draw) in dists.items():
        truth = float(dist.ppf(q))
        x = np.sort(draw((sets, r)), axis=1)
        hit = np.mean((x[:, j - 1] <= truth) & (truth <= x[:, k - 1]))
        se = math.sqrt(cov * (1 - cov) / sets)
        assert abs(hit - cov) <= 4 * se, (name, hit, cov)
    # the function itself on a few of those sets
    x = rng.lognormal(0, 0.5, r)
    got = quantile_interval(x, q)
    assert isinstance(got, Interval) and got.low == np.sort(x)[j - 1] and got.high == np.sort(x)[k - 1]
    assert got.coverage == pytest.approx(cov) and got.confidence == 0.95


def test_ranges_refuse_values_outside_and_clip() -> None:
    with pytest.raises(RangeError, match=r"run 2 of 3 is -1.0.*>= 0"):
        quantile_interval([1.0, -1.0, 2.0], value_range=RATE)
    j = jain_range(2)
    assert (j.low, j.high) == (0.5, 1.0)
    with pytest.raises(RangeError, match=r"Jain's index of 2 flows"):
        j.check([0.7, 0.4])
    assert j.clip(0.3, 1.2) == (0.5, 1.0) and j.holds(0.6, 0.9) and not j.holds(0.4, 0.9)


def test_t_interval_refused_on_three_skewed_runs() -> None:
    # issue 21: "95 % CI [-0.26, 17.64] ms" from 3 skewed values with a negative RTT bound
    rtt = [1.1, 2.3, 12.0]
    naive = stats.t.interval(0.95, 2, loc=np.mean(rtt), scale=stats.sem(rtt))
    assert naive[0] < 0
    got = t_interval(rtt, value_range=RATE)
    assert isinstance(got, NoInterval) and got.runs_needed == MIN_RUNS


def test_t_interval_refused_when_it_leaves_the_range() -> None:
    x = [0.05, 0.9, 1.8, 2.6, 3.5, 4.4]  # passes Shapiro-Wilk, but mean - t*s/sqrt(6) < 0 is not a rate
    assert stats.shapiro(x).pvalue >= 0.05
    mean, half = np.mean(x), stats.t.ppf(0.975, 5) * np.std(x, ddof=1) / math.sqrt(6)
    assert mean - half > 0  # this one stays inside ...
    x = [0.01, 0.02, 0.5, 1.0, 1.5, 2.0]
    assert stats.shapiro(x).pvalue >= 0.05
    got = t_interval(x, confidence=0.999, value_range=RATE)  # ... a 99.9 % one does not
    assert isinstance(got, NoInterval) and "leaves the range" in got.reason
    ok = t_interval(x, confidence=0.999)  # on the real line it is an interval
    assert isinstance(ok, Interval) and ok.low < 0


def test_t_interval_only_after_normality_and_its_coverage() -> None:
    rng = np.random.default_rng(7)
    sets, r = 1500, 10
    x = rng.normal(10.0, 2.0, (sets, r))
    hits = used = 0
    for row in x:
        got = t_interval(row)
        if got.ok:
            used += 1
            hits += got.contains(10.0)
    assert used >= 0.9 * sets  # Shapiro-Wilk at 5 % rejects about 5 % of normal sets
    cov = hits / used
    assert abs(cov - 0.95) <= 4 * math.sqrt(0.95 * 0.05 / used), cov
    skewed = rng.lognormal(0, 1.5, (200, 20))
    refused = sum(not t_interval(row).ok for row in skewed)
    assert refused >= 0.8 * 200
    assert "Shapiro-Wilk rejects" in t_interval(skewed[np.argmin([stats.shapiro(s).pvalue for s in skewed])]).reason


def test_proportion_interval_4_of_6_is_clopper_pearson() -> None:
    got = proportion_interval(4, 6)
    # Clopper-Pearson: the alpha/2 quantile of Beta(k, n-k+1) and the 1-alpha/2 quantile of Beta(k+1, n-k)
    assert got.low == pytest.approx(stats.beta.ppf(0.025, 4, 3), abs=1e-9)
    assert got.high == pytest.approx(stats.beta.ppf(0.975, 5, 2), abs=1e-9)
    assert (round(got.low, 2), round(got.high, 2)) == (0.22, 0.96)  # "roughly 0.22-0.96" (issue 21)
    assert got.estimate == pytest.approx(4 / 6)
    assert proportion_interval(0, 6).low == 0.0 and proportion_interval(6, 6).high == 1.0
    w = proportion_interval(4, 6, method="wilson")
    z = stats.norm.ppf(0.975)
    centre = (4 + z * z / 2) / (6 + z * z)
    half = z / (6 + z * z) * math.sqrt(4 * 2 / 6 + z * z / 4)
    assert (w.low, w.high) == (pytest.approx(centre - half), pytest.approx(centre + half))


def test_clopper_pearson_coverage_is_at_least_nominal_everywhere() -> None:
    n = 12
    cis = [proportion_interval(k, n) for k in range(n + 1)]
    for p in np.linspace(0.01, 0.99, 99):
        cov = sum(stats.binom.pmf(k, n, p) for k, ci in enumerate(cis) if ci.low <= p <= ci.high)
        assert cov >= 0.95 - 1e-9, p


@pytest.mark.parametrize("level", [0.90, 0.95])
@pytest.mark.parametrize("q", [0.5, 0.1, 0.9])
def test_equal_tailed_ranks_put_at_most_half_of_alpha_on_each_side(q: float, level: float) -> None:
    # exact binomial tails: P(X(j) > x_q) = P(K <= j - 1), P(X(k) < x_q) = P(K >= k), K ~ Bin(r, q);
    # j is the largest and k the smallest rank whose tail stays within (1 - level) / 2
    tail = (1 - level) / 2
    decided = 0
    for r in range(2, 80):
        got = iv.equal_tailed_ranks(r, q, level)
        if got is None:
            assert stats.binom.cdf(0, r, q) > tail or stats.binom.sf(r - 1, r, q) > tail
            continue
        j, k, cov = got
        decided += 1
        low_miss, high_miss = stats.binom.cdf(j - 1, r, q), stats.binom.sf(k - 1, r, q)
        assert low_miss <= tail + 1e-12 and high_miss <= tail + 1e-12
        assert j == r or stats.binom.cdf(j, r, q) > tail          # one rank further in would miss more
        assert k == 1 or stats.binom.sf(k - 2, r, q) > tail
        assert cov == pytest.approx(1 - low_miss - high_miss)
    assert decided > 40


def test_shortest_interval_can_take_more_than_half_of_alpha_on_one_side_and_equal_tails_cannot() -> None:
    # 7 runs at 90 %: the shortest interval [X(1), X(6)] misses above with P(K >= 6) = 8/128 = 6.25 % > 5 %,
    # which a one-sided test (TOST, a directional claim) would read as 5 %; equal tails give [X(1), X(7)]
    assert order_statistic_ranks(7, 0.5, 0.90)[:2] == (1, 6)
    assert iv.equal_tailed_ranks(7, 0.5, 0.90)[:2] == (1, 7)
    x = np.arange(1.0, 8.0)
    shortest = quantile_interval(x, 0.5, 0.90)
    equal = quantile_interval(x, 0.5, 0.90, tails="equal")
    assert (shortest.low, shortest.high) == (1.0, 6.0)
    assert (equal.low, equal.high) == (1.0, 7.0) and "equal tails" in equal.method


def test_reference_comparison_reads_equal_tailed_intervals() -> None:
    # 7 runs against a reference: the 90 % interval TOST reads must be [X(1), X(7)], not the shortest [X(1), X(6)]
    x = np.array([90.0, 95.0, 98.0, 100.0, 102.0, 105.0, 130.0])
    c = compare_to_reference(x, 100.0, Margin.relative(0.5))
    assert c.ci90 == pytest.approx((math.log(0.90), math.log(1.30)))
