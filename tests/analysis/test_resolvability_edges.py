"""analysis.resolvability at its edges: percentiles exactly at 0 and 100 and just outside, NaN; alpha exactly at
0 and 1 and just inside; N exactly at the samples needed and one below, N = 0 and negative; the reasons' texts
and resolved_percentiles keeping a value nobody measured (mutation testing found these untested)."""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal, localcontext

import pytest

from benchbook.analysis.resolvability import (
    RULE_TEXT,
    Resolution,
    highest_resolvable_percent,
    resolvable,
    resolve,
    resolved_percentiles,
    samples_needed,
)


@pytest.mark.parametrize("percent", [-0.001, 100.001, -1, 1e9, math.nan, math.inf, -math.inf])
def test_a_percentile_outside_0_100_is_refused(percent):
    with pytest.raises(ValueError, match=rf"^percentile {percent!r}: expected 0 <= p <= 100$"):
        samples_needed(percent)
    with pytest.raises(ValueError, match=r"expected 0 <= p <= 100$"):
        resolve(percent, 100)


def test_the_extremes_are_accepted_and_never_resolvable():
    assert samples_needed(0) is None and samples_needed(100) is None
    assert samples_needed(0.001) == samples_needed(99.999) == 368_887
    assert not resolvable(100, 10**9) and not resolvable(0, 10**9)
    assert resolve(100, 7).reason == ("not resolvable at N = 7: the maximum has no confidence interval at any N "
                                      "(report it as the observed extreme)")
    assert resolve(0, 7).reason == ("not resolvable at N = 7: the minimum has no confidence interval at any N "
                                    "(report it as the observed extreme)")


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.05, 1.5])
def test_alpha_outside_0_1_is_refused(alpha):
    with pytest.raises(ValueError, match=rf"^alpha {alpha!r}: expected 0 < alpha < 1$"):
        samples_needed(99, alpha)


def test_alpha_just_inside_its_range():
    assert samples_needed(50, 0.999) == 2  # 0.5^1 > 0.4995 >= 0.5^2
    assert samples_needed(60, 0.9) == 2  # 0.4^1 <= 0.45 (lower tail), 0.6^1 > 0.45 >= 0.6^2 (upper)
    assert samples_needed(50, 1e-9) == math.ceil(math.log(0.5e-9) / math.log(0.5))
    assert samples_needed(99, 0.1) == math.ceil(math.log(0.05) / math.log(0.99)) < samples_needed(99)


@pytest.mark.parametrize("percent", [50, 90, 99, 99.9, 10, 1])
def test_exactly_at_the_samples_needed_and_one_below(percent):
    n = samples_needed(percent)
    assert resolvable(percent, n) and not resolvable(percent, n - 1)
    r = resolve(percent, n - 1)
    assert (r.percent, r.samples, r.needed, r.alpha) == (float(percent), n - 1, n, 0.05)
    assert r.reason == f"not resolvable at N = {n - 1}: p{percent:g} needs N >= {n} for a 95 % interval"
    assert resolve(percent, n).reason is None
    assert resolve(percent, 0, alpha=0.1).reason.endswith("for a 90 % interval")


def test_sample_counts_zero_and_negative():
    assert not resolvable(50, 0) and resolve(50, 0).samples == 0
    with pytest.raises(ValueError, match=r"^samples -1: expected a count >= 0$"):
        resolve(50, -1)
    assert highest_resolvable_percent(0) is None and highest_resolvable_percent(-3) is None
    assert highest_resolvable_percent(1) == pytest.approx(2.5)
    assert highest_resolvable_percent(367) < 99 <= highest_resolvable_percent(368)
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolve(50, 6).samples = 7  # type: ignore[misc]


def test_resolved_percentiles_keeps_what_was_not_measured_and_names_what_it_hides():
    shown, why = resolved_percentiles({"50": 10, "99": 20, "99.9": None, "100": 30}, 367)
    assert shown == {"50": 10, "99": None, "99.9": None, "100": None}
    assert set(why) == {"99", "100"}  # a value nobody measured (None) needs no reason
    assert why["99"] == "not resolvable at N = 367: p99 needs N >= 368 for a 95 % interval"
    assert resolved_percentiles({}, 5) == ({}, {})
    assert resolved_percentiles({"99": 1.5}, 368) == ({"99": 1.5}, {})


@pytest.mark.parametrize("percent,k", [(50, 29), (50, 31)])
def test_tail_exactly_at_alpha_half_where_the_float_ceiling_is_one_too_high(percent, k):
    """alpha = 2 * 0.5^k, exact in binary: 0.5^k <= alpha/2 holds at N = k, while
    ceil(ln(alpha/2) / ln(tail)) in floats gives k + 1: the guard must step back to k."""
    tail = percent / 100
    alpha = 2 * tail**k
    assert math.ceil(math.log(alpha / 2) / math.log1p(-(1 - tail))) == k + 1
    assert samples_needed(percent, alpha) == k


@pytest.mark.parametrize("percent,alpha,low", [(60, 0.15551999999999996, 5), (40, 0.15551999999999996, 5),
                                               (75, 0.1126270294189453, 10)])
def test_alpha_half_just_below_a_tail_power_where_the_float_ceiling_is_one_too_low(percent, alpha, low):
    """0.6^5 = 0.07776 lies a hair above alpha/2 here, so N = 6 is needed, while the float ceiling gives 5: the
    second guard must step up. The truth in 200-digit decimals (percent as its decimal, alpha as its binary)."""
    tail = max(Decimal(percent) / 100, 1 - Decimal(percent) / 100)
    with localcontext() as ctx:
        ctx.prec = 200
        truth = next(n for n in range(1, 1000) if tail**n <= Decimal(alpha) / 2)
    assert math.ceil(math.log(alpha / 2) / math.log1p(-float(1 - tail))) == low == truth - 1
    assert samples_needed(percent, alpha) == truth


def test_a_resolution_made_without_alpha_is_at_five_percent():
    r = Resolution(99.0, 368, samples_needed(99.0))
    assert r.alpha == 0.05 and r.ok and r.needed == 368


def test_the_rule_text_a_summary_carries_states_the_rule_the_code_applies():
    """percentile_method in summary.json ends with RULE_TEXT: its formulas at its alpha give samples_needed."""
    assert RULE_TEXT == ("a percentile is printed only when the run's N resolves it: N >= ln(alpha/2)/ln(p) (and N >= "
                         "ln(alpha/2)/ln(1-p) below the median), alpha = 0.05; see docs/statistics.md")
    for percent in (99.0, 99.9, 99.99):
        p = percent / 100
        assert samples_needed(percent) == math.ceil(math.log(0.05 / 2) / math.log(p))
    assert samples_needed(0.1) == math.ceil(math.log(0.05 / 2) / math.log(1 - 0.001))
