"""Edges of the intervals across runs (issue 23): ranges at their exact bounds, the ranks' tie-break and the
first run counts with an interval, the switch to Le Boudec's ranks at its documented run count, the equal-tailed
ranks against a plain reference, the estimate's rank rule where q r is a float a rounding error off an integer,
the guarded t-interval at its minimum run count, and the proportion interval's input checks. Each case is one a
mutation of analysis/intervals.py survived before this file."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis import intervals as iv
from benchbook.analysis.intervals import (
    CONFIDENCE,
    EXACT_RANKS_LIMIT,
    MIN_RUNS,
    RATE,
    REAL,
    SHARE,
    Interval,
    NoInterval,
    Range,
    RangeError,
    jain_range,
    level_text,
    median_interval,
    normality_check,
    order_statistic_ranks,
    proportion_interval,
    quantile_interval,
    rank_coverage,
    runs_needed_for_quantile,
    t_interval,
)


def _cdf_table(r: int, q: float) -> list[float]:
    """cum[i] = P(K <= i - 1), K ~ Bin(r, q), summed term by term."""
    cum = [0.0]
    for i in range(r + 1):
        cum.append(cum[-1] + math.comb(r, i) * q**i * (1 - q) ** (r - i))
    return cum


def shortest_reference(r: int, q: float, level: float) -> tuple[int, int] | None:
    """The documented rule, pair by pair: the narrowest ranks whose coverage reaches the level; among those the
    highest coverage, then the lower ranks (asv's next criterion, the midpoint nearest q (r + 1), is kept here to
    show that it never decides)."""
    cum = _cdf_table(r, q)
    for width in range(1, r):
        cands = [(j, j + width, cum[j + width] - cum[j]) for j in range(1, r - width + 1)]
        good = [c for c in cands if c[2] >= level - 1e-9]
        if good:
            best = max(c[2] for c in good)
            top = [c for c in good if c[2] >= best - 1e-12]
            top.sort(key=lambda c: (abs((c[0] + c[1]) / 2 - q * (r + 1)), c[0]))
            return top[0][0], top[0][1]
    return None


def equal_tails_reference(r: int, q: float, level: float) -> tuple[int, int] | None:
    """The largest j with P(K <= j - 1) <= (1 - level)/2 and the smallest k with P(K >= k) <= (1 - level)/2."""
    cum = _cdf_table(r, q)
    tail = (1 - level) / 2 + 1e-12
    js = [j for j in range(1, r + 1) if cum[j] <= tail]
    ks = [k for k in range(1, r + 1) if 1 - cum[k] <= tail]
    if not js or not ks or js[-1] >= ks[0]:
        return None
    return js[-1], ks[0]


def test_ranges_accept_their_exact_bounds_and_name_themselves() -> None:
    assert RATE.check([0.0, 5.0]).tolist() == [0.0, 5.0]
    assert SHARE.check([0.0, 1.0]).tolist() == [0.0, 1.0]
    assert Range(-2.0, 3.0).check([[-2.0, 3.0]]).tolist() == [-2.0, 3.0]  # any shape, flattened
    with pytest.raises(RangeError, match=r"^value 1 of 1 is nan, outside the range of the statistic "
                                         r"\(any real number\)$"):
        REAL.check([math.nan])
    with pytest.raises(RangeError, match=r"^run 2 of 2 is 1\.5, .*\(shares are in \[0, 1\]\)$"):
        SHARE.check([1.0, 1.5], "run")
    with pytest.raises(RangeError, match=r"\(rates and latencies are >= 0\)$"):
        RATE.check([-1e-300])
    assert RATE.holds(0.0, 7.0) and SHARE.holds(0.0, 1.0) and not SHARE.holds(-1e-9, 1.0)
    assert not SHARE.holds(0.0, 1.0 + 1e-9)
    assert SHARE.clip(-0.2, 1.3) == (0.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        SHARE.high = 2.0  # type: ignore[misc]  # a statistic's range is fixed


def test_jain_range_from_one_flow() -> None:
    one = jain_range(1)
    assert (one.low, one.high) == (1.0, 1.0) and one.check([1.0]).tolist() == [1.0]
    three = jain_range(3)
    assert three.low == pytest.approx(1 / 3) and three.name == "Jain's index of 3 flows is in [1/3, 1]"
    for bad in (0, -1):
        with pytest.raises(ValueError, match="at least one flow"):
            jain_range(bad)


def test_interval_and_no_interval_records() -> None:
    i = Interval(1.0, 2.0, 1.5, 0.95, 0.96875, 6, "m")
    assert i.contains(1.0) and i.contains(2.0) and not i.contains(2.0000001) and not i.contains(0.9999999)
    assert i.ok is True
    assert i.as_dict() == {"low": 1.0, "high": 2.0, "estimate": 1.5, "confidence": 0.95, "coverage": 0.96875,
                           "runs": 6, "method": "m"}
    n = NoInterval("why", 3, 6, 0.95, "m")
    assert n.ok is False
    assert n.as_dict() == {"low": None, "high": None, "reason": "why", "runs": 3, "runs_needed": 6,
                           "confidence": 0.95, "method": "m"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        i.low = 0.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        n.runs = 7  # type: ignore[misc]


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.5, 1.5])
def test_levels_and_quantiles_outside_zero_to_one_are_refused(bad: float) -> None:
    with pytest.raises(ValueError, match="expected a level between 0 and 1"):
        order_statistic_ranks(10, 0.5, bad)
    with pytest.raises(ValueError, match="expected a level between 0 and 1"):
        iv.equal_tailed_ranks(10, 0.5, bad)
    with pytest.raises(ValueError, match="expected a level between 0 and 1"):
        runs_needed_for_quantile(0.5, bad)
    with pytest.raises(ValueError, match="expected a level between 0 and 1"):
        t_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], bad)
    with pytest.raises(ValueError, match="expected a level between 0 and 1"):
        proportion_interval(1, 2, bad)
    with pytest.raises(ValueError, match=r"expected 0 < q < 1"):
        order_statistic_ranks(10, bad)
    with pytest.raises(ValueError, match=r"expected 0 < q < 1"):
        iv.equal_tailed_ranks(10, bad)
    with pytest.raises(ValueError, match=r"expected 0 < q < 1"):
        runs_needed_for_quantile(bad)


def test_two_runs_are_the_fewest_with_an_interval() -> None:
    """[X(1), X(2)] covers the median of 2 runs with probability 1/2: the interval exists at a 50 % level."""
    assert order_statistic_ranks(2, 0.5, 0.5) == (1, 2, pytest.approx(0.5))
    assert iv.equal_tailed_ranks(2, 0.5, 0.5) == (1, 2, pytest.approx(0.5))
    assert order_statistic_ranks(2, 0.5, 0.51) is None and order_statistic_ranks(1, 0.5, 0.1) is None
    assert iv.equal_tailed_ranks(1, 0.5, 0.1) is None
    assert runs_needed_for_quantile(0.5, 0.5) == 2 and runs_needed_for_quantile(0.5, 0.75) == 3
    assert runs_needed_for_quantile(0.9, 0.95) == 29 and MIN_RUNS == 6 == runs_needed_for_quantile()
    got = quantile_interval([3.0, 1.0], 0.5, 0.5)
    assert (got.low, got.high, got.estimate, got.coverage) == (1.0, 3.0, 2.0, 0.5)


@pytest.mark.parametrize("q", [0.05, 0.1, 0.25, 0.5, 0.7, 0.9, 0.99])
@pytest.mark.parametrize("level", [0.3, 0.5, 0.8, 0.9, 0.95, 0.99])
def test_shortest_ranks_are_the_documented_tie_break(q: float, level: float) -> None:
    for r in range(1, 48):
        got = order_statistic_ranks(r, q, level)
        want = shortest_reference(r, q, level)
        assert (got[:2] if got else None) == want, (r, got, want)
        if got:
            assert got[2] == pytest.approx(rank_coverage(r, q, got[0], got[1]), abs=1e-12)


@pytest.mark.parametrize("q", [0.05, 0.25, 0.5, 0.9, 0.99])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.975, 0.99])
def test_equal_tailed_ranks_against_the_reference(q: float, level: float) -> None:
    for r in range(1, 48):
        got = iv.equal_tailed_ranks(r, q, level)
        want = equal_tails_reference(r, q, level)
        assert (got[:2] if got else None) == want, (r, got, want)
        if got:
            assert got[2] == pytest.approx(rank_coverage(r, q, got[0], got[1]), abs=1e-12)


def le_boudec_reference(r: int, q: float, level: float) -> tuple[int, int]:
    z = stats.norm.ppf(0.5 + level / 2)
    half = z * math.sqrt(r * q * (1 - q))
    j, k = max(1, math.floor(r * q - half)), min(r, math.ceil(1 + r * q + half))
    while rank_coverage(r, q, j, k) < level:
        j, k = max(1, j - 1), min(r, k + 1)
    return j, k


def test_equal_tails_default_to_the_median_at_95_and_never_return_an_empty_interval() -> None:
    assert iv.equal_tailed_ranks(7) == iv.equal_tailed_ranks(7, 0.5, 0.95) == (1, 7, pytest.approx(126 / 128))
    # at a level of almost 0 with 3 runs both tails allow rank 2: j = k = 2 would be an interval of no width
    assert iv.equal_tailed_ranks(3, 0.5, 1e-13) is None
    assert iv.equal_tailed_ranks(3, 0.5, 0.2) == (1, 3, pytest.approx(0.75))


def test_le_boudec_ranks_start_above_the_exact_limit() -> None:
    """Up to EXACT_RANKS_LIMIT (1000) runs the exact shortest ranks, above it Le Boudec's (they differ at 1001:
    [X(469), X(533)] against the exact [X(470), X(532)])."""
    assert EXACT_RANKS_LIMIT == 1000
    assert order_statistic_ranks(1000)[:2] == shortest_reference(1000, 0.5, CONFIDENCE)
    assert order_statistic_ranks(1001)[:2] == le_boudec_reference(1001, 0.5, CONFIDENCE) == (469, 533)
    assert shortest_reference(1001, 0.5, CONFIDENCE) == (470, 532)
    # widening on one side when the other is already at X(1) or X(r): (1001, 0.001, 0.6) ends at [X(1), X(4)],
    # (1001, 0.999, 0.6) at [X(998), X(1001)]
    for r, q, level in [(1001, 0.99, 0.95), (1500, 0.9, 0.99), (4000, 0.999, 0.95), (2000, 0.01, 0.9),
                        (1001, 0.001, 0.6), (1001, 0.999, 0.6), (1001, 0.003, 0.95), (1001, 0.005, 0.99),
                        (1001, 0.002, 0.5)]:  # starts at X(1): r q - z sqrt(r q (1-q)) < 1
        j, k, cov = order_statistic_ranks(r, q, level)
        assert (j, k) == le_boudec_reference(r, q, level), (r, q, level)
        assert cov == pytest.approx(rank_coverage(r, q, j, k)) and cov >= level
    # the widening stops at [X(1), X(r)]: a level even that cannot reach gives no interval
    assert iv._le_boudec_ranks(1100, 0.9999, 0.99) is None


def test_the_estimate_takes_rank_ceil_q_r_even_where_q_r_is_a_rounding_error_off() -> None:
    x = np.arange(1.0, 31.0)[::-1].copy()  # 30 runs, 30 .. 1
    # 0.1 * 30 = 3.0000000000000004 in floats: rank 3, not 4
    assert quantile_interval(x, 0.1, 0.5).estimate == 3.0
    assert quantile_interval(x, 0.9, 0.5).estimate == 27.0
    # q r below 1: the smallest value (rank 1)
    assert quantile_interval([5.0, 4.0, 6.0, 7.0, 8.0, 9.0], 0.1, 0.4).estimate == 4.0
    assert median_interval([4.0, 1.0, 2.0, 9.0, 3.0, 8.0]).estimate == 3.5  # the mean of the middle two


def test_quantile_interval_records_its_ranks_method_and_clips_to_the_range() -> None:
    x = [0.02, 0.5, 0.9, 0.4, 0.7, 0.1, 0.3]
    got = median_interval(x, 0.9, SHARE, tails="equal")
    assert got.method == "order statistics (binomial rule, equal tails), q = 0.5: [X(1), X(7)] of 7"
    assert (got.low, got.high) == (0.02, 0.9)
    short = median_interval(x, 0.9, SHARE)
    assert short.method == "order statistics (binomial rule), q = 0.5: [X(1), X(6)] of 7"
    assert (short.low, short.high, short.coverage) == (0.02, 0.7, pytest.approx(119 / 128))
    few = quantile_interval([1.0, 2.0], 0.9)
    assert isinstance(few, NoInterval) and few.runs == 2 and few.runs_needed == 29
    assert few.reason == "2 run(s): an order-statistic interval for the 0.9-quantile at 95 % needs at least 29 runs"
    assert few.method == "order statistics (binomial rule), q = 0.9" and few.confidence == 0.95
    with pytest.raises(ValueError, match="tails 'both'"):
        quantile_interval(x, 0.5, 0.9, tails="both")  # type: ignore[arg-type]
    assert level_text(0.9875) == "98.75 %"


def test_normality_check_at_its_minimum_and_on_constant_runs() -> None:
    with pytest.raises(ValueError, match="at least 3 runs, got 2"):
        normality_check([1.0, 2.0])
    three = normality_check([1.0, 2.0, 4.0])
    res = stats.shapiro([1.0, 2.0, 4.0])
    assert (three.statistic, three.pvalue, three.alpha) == (pytest.approx(res.statistic), pytest.approx(res.pvalue),
                                                            0.05)
    flat = normality_check([2.0, 2.0, 2.0, 2.0])
    assert (flat.statistic, flat.pvalue) == (1.0, 1.0) and flat.ok
    assert iv.NormalityCheck(0.9, 0.05, 0.05).ok and not iv.NormalityCheck(0.9, 0.0499, 0.05).ok


def test_t_interval_at_its_minimum_run_count_is_the_textbook_formula() -> None:
    x = np.array([10.1, 9.8, 10.4, 10.0, 9.7, 10.2])
    five = t_interval(x[:5])
    assert isinstance(five, NoInterval) and five.runs_needed == MIN_RUNS and five.runs == 5
    assert five.reason.startswith("5 run(s): a t-interval needs at least 6 runs")
    got = t_interval(x)
    half = stats.t.ppf(0.975, 5) * x.std(ddof=1) / math.sqrt(6)
    assert got.low == pytest.approx(x.mean() - half, rel=1e-12) and got.high == pytest.approx(x.mean() + half)
    assert got.estimate == pytest.approx(x.mean()) and got.coverage is None and got.runs == 6
    assert got.method.startswith("Student t of the mean after Shapiro-Wilk (p >= 0.05): p = ")
    ninety = t_interval(x, 0.9)
    assert ninety.high - ninety.low == pytest.approx(2 * stats.t.ppf(0.95, 5) * x.std(ddof=1) / math.sqrt(6))
    assert isinstance(t_interval(x, min_runs=7), NoInterval)
    # an interval ending exactly on the range's bound stays inside it (at 99 % the lower end is below every run)
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    h = stats.t.ppf(0.995, 5) * y.std(ddof=1) / math.sqrt(6)
    assert isinstance(t_interval(y, 0.99, value_range=Range(float(y.mean() - h), math.inf, "test")), Interval)
    assert isinstance(t_interval(y, 0.99, value_range=Range(-math.inf, float(y.mean() + h), "test")), Interval)
    assert isinstance(t_interval(y, 0.99, value_range=Range(float(y.mean() - h) + 1e-9, math.inf, "t")), NoInterval)
    skewed = t_interval([1.0, 1.0, 1.1, 1.0, 1.05, 9.0])
    assert isinstance(skewed, NoInterval) and skewed.runs_needed is None and "Shapiro-Wilk rejects" in skewed.reason


def test_proportion_interval_input_checks_and_both_methods() -> None:
    for k, n in [(0, 0), (1, 0), (-1, 3), (4, 3)]:
        with pytest.raises(ValueError, match=rf"^{k} of {n}: expected 0 <= k <= n and n >= 1$"):
            proportion_interval(k, n)
    with pytest.raises(ValueError, match="method 'jeffreys'"):
        proportion_interval(1, 2, method="jeffreys")  # type: ignore[arg-type]
    for k, n in [(0, 1), (1, 1), (0, 6), (6, 6), (4, 6)]:
        for method, name in (("exact", "Clopper-Pearson (exact)"), ("wilson", "Wilson score")):
            got = proportion_interval(k, n, 0.9, method)
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method=method)
            assert got.low == pytest.approx(max(0.0, ci.low)) and got.high == pytest.approx(min(1.0, ci.high))
            assert 0.0 <= got.low <= got.high <= 1.0
            assert got.estimate == k / n and got.runs == n and got.method == f"{name} interval for {k} of {n}"


# -- the t-interval's refusals, as users read them (each text survived a mutation wrapping it in XX) ----------------

def test_every_t_interval_refusal_says_why_and_what_to_use():
    few = iv.t_interval([1.0, 2.0, 3.0])
    assert (few.reason, few.runs, few.runs_needed) == (
        "3 run(s): a t-interval needs at least 6 runs (with fewer, Shapiro-Wilk rejects almost nothing, so normality "
        "cannot be checked)", 3, 6)
    assert few.method == "Student t of the mean after Shapiro-Wilk (p >= 0.05)"
    skewed = iv.t_interval([1.0] * 9 + [30.0])
    check = iv.normality_check([1.0] * 9 + [30.0])
    assert skewed.reason == (f"Shapiro-Wilk rejects normality of the 10 runs (W = {check.statistic:.3f}, p = "
                             f"{check.pvalue:.3g} < 0.05): no t-interval; use the order-statistic interval of the "
                             "median") and skewed.runs_needed is None
    leaves = iv.t_interval([0.0, 0.05, 0.1, 0.2, 0.6, 0.9], value_range=iv.RATE)
    assert leaves.reason == ("the t-interval [-0.070652, 0.687319] leaves the range of the statistic (rates and "
                             "latencies are >= 0): the normal model does not fit these 6 runs; use the order-statistic "
                             "interval of the median") and leaves.runs_needed is None
    with pytest.raises(iv.RangeError) as exc:
        iv.t_interval([1.0, 2.0, -3.0, 4.0, 5.0, 6.0], value_range=iv.RATE)
    assert str(exc.value) == "run 3 of 6 is -3.0, outside the range of the statistic (rates and latencies are >= 0)"


def test_normality_of_runs_one_unit_apart_is_checked_and_of_equal_runs_not_rejected():
    """Only equal runs (no spread: Shapiro-Wilk is undefined) are taken as normal without the test."""
    lopsided = iv.normality_check([0.0] * 9 + [1.0])
    assert not lopsided.ok and lopsided.pvalue < 1e-5 and lopsided.statistic < 0.5
    same = iv.normality_check([5.0] * 6)
    assert (same.statistic, same.pvalue, same.ok) == (1.0, 1.0, True)


def test_the_results_cannot_be_changed_by_whoever_holds_them():
    """Intervals, ranges and normality checks are shared by the verdict rows that quote them: frozen."""
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    for obj, name in ((iv.median_interval(x), "low"), (iv.median_interval(x[:2]), "reason"),
                      (iv.REAL, "low"), (iv.normality_check(x), "pvalue")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, name, 0.0)
