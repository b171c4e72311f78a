"""Edges of the equivalence verdicts (issue 23): the words written into verdict.json, the margins at their bounds,
the TOST and difference rules exactly on the margin, the runs-needed arithmetic, the spread-based standard error
against its formula, and the one-arm comparison's sign-test p-values counted by hand at thresholds the data
touch. Each case is one a mutation of analysis/equivalence.py survived before this file."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis.bootstrap import bootstrap_delta
from benchbook.analysis.equivalence import (
    DIFFERENT,
    EQUIVALENT,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    NOT_RESOLVABLE,
    VERDICTS,
    Comparison,
    Margin,
    compare_samples,
    compare_to_reference,
    directional_verdict,
    interval_verdict,
    levels,
    not_resolvable,
    parse_margin,
    runs_needed,
    spread_standard_error,
    tost_verdict,
)
from benchbook.analysis.intervals import MIN_RUNS, RATE, RangeError

Z975 = float(stats.norm.ppf(0.975))


def test_the_verdict_words_are_the_ones_verdict_json_and_the_docs_use() -> None:
    assert VERDICTS == ("equivalent", "different", "inconclusive", "not resolvable")
    assert (EQUIVALENT, DIFFERENT, INCONCLUSIVE, NOT_RESOLVABLE) == VERDICTS
    assert (HOLDS, FAILS) == ("holds", "fails")


def test_margin_at_its_bounds_and_as_recorded() -> None:
    for bad in (0.0, -0.01, math.inf, math.nan):
        with pytest.raises(ValueError, match="positive finite margin"):
            Margin(bad, "difference", "x")
    m = Margin(0.05, "difference", "0.05")
    assert m.source == "" and m.as_dict() == {"delta": 0.05, "scale": "difference", "declared": "0.05", "source": ""}
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.delta = 0.5  # type: ignore[misc]  # a declared margin cannot change after the runs
    rel = Margin.relative(0.125)
    assert (rel.delta, rel.scale, rel.text, rel.source) == (pytest.approx(math.log(1.125)), "log-ratio", "12.5%", "")
    assert Margin.absolute(0.25).source == ""
    ab = Margin.absolute(0.25, "thesis, Table 5")
    assert (ab.delta, ab.scale, ab.text, ab.source) == (0.25, "difference", "0.25", "thesis, Table 5")


def test_parse_margin_reads_every_digit_and_refuses_what_is_not_a_positive_number() -> None:
    assert parse_margin("12.5%", "log-ratio").delta == pytest.approx(math.log(1.125))
    assert parse_margin(" 12.5% ", "difference").delta == pytest.approx(0.125)
    assert parse_margin("5%", "log-ratio").source == ""
    for bad in ("0", "0%", "-3%", "inf", "nan"):
        with pytest.raises(ValueError, match=r"expected a positive margin$"):
            parse_margin(bad, "log-ratio")


@pytest.mark.parametrize("ci90,ci95,want", [
    ((-0.03, 0.05), (-0.04, 0.06), INCONCLUSIVE),   # the 90 % interval's upper end on +delta: not inside
    ((-0.05, 0.03), (-0.06, 0.04), INCONCLUSIVE),   # its lower end on -delta
    ((0.06, 0.08), (0.05, 0.09), INCONCLUSIVE),     # the 95 % interval starting on +delta: not wholly outside
    ((-0.08, -0.06), (-0.09, -0.05), INCONCLUSIVE),  # ending on -delta
    ((0.06, 0.08), (0.0500001, 0.09), DIFFERENT),   # just past it
    ((-0.0499999, 0.0499999), (-0.06, 0.06), EQUIVALENT),
])
def test_tost_exactly_on_the_margin(ci90, ci95, want) -> None:
    assert tost_verdict(ci90, ci95, 0.05) == want


def test_interval_verdict_on_its_range_ends_and_directional_claims_touching_zero() -> None:
    assert interval_verdict((0.1, 0.3), (0.05, 0.35), 0.1, 0.4) == INCONCLUSIVE
    assert interval_verdict((0.2, 0.4), (0.15, 0.45), 0.1, 0.4) == INCONCLUSIVE
    assert interval_verdict((0.45, 0.5), (0.4, 0.55), 0.1, 0.4) == INCONCLUSIVE
    assert interval_verdict((0.0, 0.05), (-0.01, 0.1), 0.1, 0.4) == INCONCLUSIVE
    assert directional_verdict((-0.2, 0.0)) == INCONCLUSIVE and directional_verdict((0.0, 0.2)) == INCONCLUSIVE
    assert directional_verdict((-0.2, -1e-12), greater=True) == FAILS


def test_levels_at_their_bounds() -> None:
    assert levels() == pytest.approx((0.90, 0.95)) and levels(0.0125) == pytest.approx((0.975, 0.9875))
    for bad in (0.0, 0.5, -0.1, 0.7):
        with pytest.raises(ValueError, match="alpha"):
            levels(bad)
    assert levels(0.4999) == pytest.approx((0.0002, 0.5001))


def test_runs_needed_arithmetic() -> None:
    # no spread: one run more than now, never fewer than the minimum
    assert runs_needed(0.0, 0.0, 10, 0.05) == 11 and runs_needed(0.0, 0.0, 10.7, 0.05) == 11
    assert runs_needed(0.0, 0.0, 2, 0.05, min_runs=4) == 4
    assert runs_needed(0.0, math.nan, 6, 0.05) is None and runs_needed(0.0, math.inf, 6, 0.05) is None
    assert runs_needed(-0.05, 0.01, 6, 0.05) is None  # |Delta| on the margin from below zero
    # the plan grows with the square of the spread and the inverse square of the gap
    z_eq, z_diff, z_pow = (float(stats.norm.ppf(p)) for p in (0.95, 0.975, 0.8))
    assert runs_needed(-0.03, 0.02, 6, 0.05) == math.ceil(6 * ((z_eq + z_pow) * 0.02 / 0.02) ** 2)
    assert runs_needed(-0.09, 0.02, 6, 0.05) == math.ceil(6 * ((z_diff + z_pow) * 0.02 / 0.04) ** 2)
    z_eq1 = float(stats.norm.ppf(0.99))
    assert runs_needed(0.0, 0.03, 6, 0.05, power=0.8, alpha=0.01) == math.ceil(6 * ((z_eq1 + z_pow) * 0.6) ** 2)
    assert runs_needed(0.0, 0.03, 6, 0.05, power=0.9) == math.ceil(6 * ((z_eq + stats.norm.ppf(0.9)) * 0.6) ** 2)


def test_spread_standard_error_is_its_formula() -> None:
    a, b = [1.0, 2.0, 4.0, 7.0], [2.0, 3.0, 9.0]
    k = math.sqrt(math.pi / 2)
    want = k * math.sqrt(np.var(a, ddof=1) / 4 + np.var(b, ddof=1) / 3)
    assert spread_standard_error(a, b, "difference") == pytest.approx(want, rel=1e-12)
    assert spread_standard_error(a, None, "difference") == pytest.approx(k * math.sqrt(np.var(a, ddof=1) / 4))
    la = np.log(a)
    assert spread_standard_error(a, None, "log-ratio") == pytest.approx(k * math.sqrt(np.var(la, ddof=1) / 4))
    assert spread_standard_error([3.0, 5.0], None, "difference") == pytest.approx(k * math.sqrt(2.0 / 2))
    assert math.isnan(spread_standard_error([3.0], None, "difference"))
    assert math.isnan(spread_standard_error(a, [3.0], "difference"))


def test_not_resolvable_and_the_recorded_dict() -> None:
    m = Margin.relative(0.05, "the paper's own spread")
    got = not_resolvable("99.99th percentile: 1,000 samples per run", m, 6, 7, "order statistics", estimate=0.1)
    assert got.as_dict() == {
        "verdict": "not resolvable", "delta": 0.1, "ci90": None, "ci95": None, "margin": m.delta,
        "margin_declared": "5%", "margin_source": "the paper's own spread", "scale": "log-ratio", "runs_a": 6,
        "runs_b": 7, "runs_needed": None, "reason": "99.99th percentile: 1,000 samples per run",
        "method": "order statistics", "seed": None, "resamples": None, "p_equivalent": None, "p_different": None,
        "reference": None, "alpha": 0.05}
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.verdict = EQUIVALENT  # type: ignore[misc]  # a recorded verdict is not edited


def test_a_comparison_leaves_what_it_was_not_given_as_none() -> None:
    got = Comparison(EQUIVALENT, 0.0, (-0.01, 0.01), (-0.02, 0.02), Margin.absolute(0.05), 6, 6, "m")
    assert (got.runs_needed, got.reason, got.seed, got.resamples, got.p_equivalent, got.p_different,
            got.reference, got.alpha) == (None, None, None, None, None, None, None, 0.05)


def _lognormal(seed: int, n: int, shift: float, sigma: float) -> np.ndarray:
    return np.exp(np.random.default_rng(seed).normal(shift, sigma, n))


def test_compare_samples_records_its_intervals_p_values_and_plan_as_the_bootstrap_gives_them() -> None:
    m = Margin.relative(0.05)
    d = m.delta
    # equivalent: 12 runs each, 1 % spread, the same truth
    a, b = _lognormal(1, 12, 0.0, 0.01), _lognormal(2, 12, 0.0, 0.01)
    got = compare_samples(a, b, m, seed=3, resamples=4000)
    boot = bootstrap_delta(a, b, "log-ratio", (0.9, 0.95), 4000, 3)
    assert got.verdict == EQUIVALENT and got.runs_needed is None and got.reason is None
    assert got.ci90 == boot.interval(0.9) and got.ci95 == boot.interval(0.95)
    assert got.as_dict()["ci90"] == [got.ci90[0], got.ci90[1]] and got.as_dict()["ci95"][1] == got.ci95[1]
    assert got.p_equivalent == max(boot.share_below(-d), boot.share_above(d)) < 0.05
    assert got.p_different == 1.0  # both one-sided shares above one half: capped, never above 1
    assert (got.seed, got.resamples, got.runs_a, got.runs_b) == (3, 4000, 12, 12)
    # different: a 20 % shift
    far = compare_samples(a, b * 1.2, m, seed=3, resamples=4000)
    boot = bootstrap_delta(a, b * 1.2, "log-ratio", (0.9, 0.95), 4000, 3)
    assert far.verdict == DIFFERENT and far.runs_needed is None and far.reason is None
    assert far.p_different == min(1.0, 2 * min(boot.share_below(d), boot.share_above(-d))) < 0.05
    assert far.p_equivalent == max(boot.share_below(-d), boot.share_above(d)) > 0.5


def test_compare_samples_inconclusive_with_unequal_arms_plans_from_their_harmonic_mean() -> None:
    m = Margin.relative(0.05)
    a, b = _lognormal(5, 6, 0.0, 0.05), _lognormal(6, 18, 0.02, 0.05)
    got = compare_samples(a, b, m, seed=1, resamples=4000)
    boot = bootstrap_delta(a, b, "log-ratio", (0.9, 0.95), 4000, 1)
    assert got.verdict == INCONCLUSIVE
    want = runs_needed(got.estimate, boot.standard_error, 2 / (1 / 6 + 1 / 18), m.delta)
    assert got.runs_needed == want and want > 18
    d = m.delta
    assert got.p_different == 2 * min(boot.share_below(d), boot.share_above(-d)) and 0.05 < got.p_different < 1
    assert got.p_equivalent == max(boot.share_below(-d), boot.share_above(d)) > 0.05
    assert got.reason == (f"the 90 % interval reaches past the margin ±5% and the 95 % interval overlaps it; about "
                          f"{want} runs per arm would likely decide (bootstrap standard error, normal approximation)")


def test_compare_samples_with_delta_exactly_on_the_margin_says_more_runs_will_not_decide() -> None:
    a = np.array([-0.4, -0.2, -0.1, 0.0, 0.0, 0.1, 0.25, 0.5])   # median 0
    b = a[::-1] + 1.0                                              # median 1: Delta = 1 = delta exactly
    got = compare_samples(a, b, Margin.absolute(1.0), resamples=2000)
    assert got.estimate == 1.0 and got.verdict == INCONCLUSIVE and got.runs_needed is None
    assert got.reason.endswith("interval overlaps it; Delta lies on the margin: more runs are unlikely to decide")


def test_compare_samples_with_too_few_runs_plans_from_the_spread() -> None:
    m = Margin.relative(0.05)
    a, b = _lognormal(7, 3, 0.0, 0.04), _lognormal(8, 5, 0.0, 0.04)
    got = compare_samples(a, b, m)
    se = spread_standard_error(a, b, "log-ratio")
    want = max(runs_needed(got.estimate, se, 2 / (1 / 3 + 1 / 5), m.delta) or MIN_RUNS, MIN_RUNS)
    assert got.verdict == INCONCLUSIVE and got.runs_needed == want and want > MIN_RUNS
    assert got.reason.endswith(f"; about {want} runs per arm would likely decide (from the spread of these runs, "
                               "normal approximation)")
    # no spread at all: the plan is the minimum, not a crash and not None
    flat = compare_samples([1.0, 1.0, 1.0], [1.0, 1.0], m)
    assert flat.verdict == INCONCLUSIVE and flat.runs_needed == MIN_RUNS


def test_arms_are_named_in_the_errors() -> None:
    m = Margin.relative(0.05)
    with pytest.raises(RangeError, match=r"run of B 2 of 3"):
        compare_samples([1.0, 2.0, 3.0], [1.0, -2.0, 3.0], m, RATE)
    with pytest.raises(RangeError, match=r"run of A 1 of 3"):
        compare_samples([-1.0, 2.0, 3.0], [1.0, 2.0, 3.0], m, RATE)
    with pytest.raises(ValueError, match=r"^arm B: a log ratio"):
        compare_samples([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], m)
    with pytest.raises(ValueError, match=r"^arm A: a log ratio"):
        compare_samples([0.0, 2.0, 3.0], [1.0, 2.0, 3.0], m)
    with pytest.raises(RangeError, match=r"^run 3 of 3"):
        compare_to_reference([1.0, 2.0, -3.0], 1.0, Margin.absolute(1.0), RATE)
    with pytest.raises(ValueError, match=r"^runs: a log ratio"):
        compare_to_reference([1.0, 2.0, 0.0], 1.0, m)


def _sign(count: int, n: int) -> float:
    return sum(math.comb(n, k) for k in range(count, n + 1)) / 2**n


def test_compare_to_reference_sign_test_counts_values_on_the_thresholds_as_outside() -> None:
    """Reference 10, margin 2 on the difference scale: the thresholds are exactly 8 and 12. A run exactly on a
    threshold is not inside the margin (strict inequalities), so it does not count for equivalence."""
    m = Margin.absolute(2.0)
    x = np.array([8.0, 9.5, 9.8, 10.0, 10.1, 10.2, 10.4, 12.0])
    got = compare_to_reference(x, 10.0, m)
    # runs above 8: 7 of 8; below 12: 7 of 8
    assert got.p_equivalent == pytest.approx(_sign(7, 8)) and _sign(7, 8) == pytest.approx(9 / 256)
    # runs above 12: 0, below 8: 0 -> one-sided p 1 each, capped at 1
    assert got.p_different == 1.0
    assert got.method == "order-statistic intervals of the median over runs against the reference median - 10"
    # only the upper threshold touched: runs above 8: 8 of 8 (p 1/256), below 12: 7 of 8 (p 9/256)
    upper = compare_to_reference(np.array([8.5, 9.5, 9.8, 10.0, 10.1, 10.2, 10.4, 12.0]), 10.0, m)
    assert upper.p_equivalent == pytest.approx(9 / 256)
    lower = compare_to_reference(np.array([8.0, 9.5, 9.8, 10.0, 10.1, 10.2, 10.4, 11.5]), 10.0, m)
    assert lower.p_equivalent == pytest.approx(9 / 256)
    high = compare_to_reference(x + 4.0, 10.0, m)  # 12 .. 16: above 12: 7 of 8 (12.0 itself is not above)
    assert high.p_different == pytest.approx(2 * _sign(7, 8)) and high.p_equivalent == pytest.approx(1.0)
    low = compare_to_reference(x - 4.0, 10.0, m)  # 4 .. 8: below 8: 7 of 8 (8.0 itself is not below)
    assert low.p_different == pytest.approx(2 * _sign(7, 8)) and low.p_equivalent == pytest.approx(1.0)
    inside = compare_to_reference(np.array([9.5, 9.8, 10.0, 10.1, 10.2, 10.4, 9.9, 10.3]), 10.0, m)
    assert inside.verdict == EQUIVALENT and inside.runs_needed is None and inside.reason is None


def test_compare_to_reference_on_a_log_ratio_names_its_method_and_accepts_small_references() -> None:
    m = Margin.relative(0.05)
    x = 0.5 * _lognormal(3, 8, 0.0, 0.01)
    got = compare_to_reference(x, 0.5, m)
    assert got.verdict == EQUIVALENT and got.reference == 0.5
    assert got.method == "order-statistic intervals of the median over runs against the reference ln(median / 0.5)"
    with pytest.raises(ValueError, match="reference 0"):
        compare_to_reference(x, 0.0, m)
    assert compare_to_reference(x - 0.5, 0.0, Margin.absolute(0.05)).verdict == EQUIVALENT  # a difference may be 0


def test_compare_to_reference_inconclusive_plans_from_the_95_interval_width() -> None:
    m = Margin.absolute(1.0)
    x = np.array([8.0, 9.2, 9.7, 10.3, 10.9, 11.5, 12.0, 9.9])
    got = compare_to_reference(x, 10.0, m)
    assert got.verdict == INCONCLUSIVE and got.ci95 is not None
    se = (got.ci95[1] - got.ci95[0]) / (2 * Z975)
    want = runs_needed(got.estimate, se, 8, 1.0)
    assert got.runs_needed == want and want > 8
    assert got.reason == f"the intervals overlap the margin ±1; about {want} runs would likely decide"
    # the median exactly on the margin: no run count decides, and the reason says so
    on = compare_to_reference(x + 1.0 - float(np.median(x)) + 10.0, 10.0, m)
    assert on.estimate == 1.0 and on.verdict == INCONCLUSIVE and on.runs_needed is None
    assert on.reason == "the intervals overlap the margin ±1; Delta lies on the margin"


def test_compare_to_reference_with_few_runs_on_the_margin_plans_the_minimum() -> None:
    got = compare_to_reference([10.5, 11.0, 11.5], 10.0, Margin.absolute(1.0))
    assert got.estimate == 1.0 and got.verdict == INCONCLUSIVE and got.runs_needed == MIN_RUNS


def test_compare_to_reference_where_only_the_narrower_interval_exists() -> None:
    """alpha 0.0125 and 7 runs: the 97.5 % order-statistic interval of the median exists (7 runs), the 98.75 % one
    needs 8. The verdict is inconclusive naming 8 runs, never judged from one interval."""
    x = 100 * _lognormal(4, 7, 0.0, 0.01)
    got = compare_to_reference(x, 100.0, Margin.relative(0.10), alpha=0.0125)
    assert got.verdict == INCONCLUSIVE and got.ci90 is None and got.runs_needed == 8
    assert got.reason.startswith("7 run(s): the order-statistic interval of a median at 98.75 % needs at least 8 "
                                 "runs; about 8 runs would likely decide")
