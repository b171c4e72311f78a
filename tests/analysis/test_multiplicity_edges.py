"""analysis.multiplicity at its edges: which p-values Holm takes (0 and 1 are p-values, NaN, negatives, values
above 1 and tables are not), a p-value exactly at its step's level, Bonferroni for one row and for none, and
"k of m" at k = 0, k = m and outside 0..m (mutation testing found these untested)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from benchbook.analysis.multiplicity import bonferroni_level, holm, k_of_m

REFUSED = "^holm: expected a list of p-values in \\[0, 1\\]$"


def test_holm_takes_zero_one_and_nothing():
    assert holm([0.0, 1.0]) == [True, False]
    assert holm([1.0, 0.5], alpha=1.0) == [True, True]  # exactly at alpha / 2, then at alpha / 1
    assert holm([]) == []
    assert holm(np.array([0.2, 0.001])) == [False, True]


@pytest.mark.parametrize("bad", [[0.01, float("nan")], [-1e-12, 0.5], [0.5, 1.0 + 1e-12], [[0.01, 0.02]]])
def test_holm_refuses_what_is_not_a_list_of_p_values(bad):
    with pytest.raises(ValueError, match=REFUSED):
        holm(bad)


def test_holm_steps_exactly_at_each_level():
    # m = 4: levels alpha/4, alpha/3, alpha/2, alpha; each p exactly at its level is rejected, a hair above stops
    at = [0.0125, 0.05 / 3, 0.025, 0.05]
    assert holm(at) == [True, True, True, True]
    above = [0.0125, math.nextafter(0.05 / 3, 1.0), 0.025, 0.05]
    assert holm(above) == [True, False, False, False]  # the step-down stops at the first not rejected
    # the flags come back in the given order, tied p-values alike
    assert holm([0.03, 0.001, 0.03], alpha=0.09) == [True, True, True]
    assert holm([0.03, 0.001, 0.03]) == [False, True, False]


def test_bonferroni_level_for_one_row_and_none():
    assert bonferroni_level(1) == pytest.approx(0.95, abs=1e-15)
    assert bonferroni_level(2, confidence=0.9) == pytest.approx(0.95, abs=1e-15)
    for m in (0, -1):
        with pytest.raises(ValueError, match=rf"^m {m}: expected at least one row$"):
            bonferroni_level(m)


def test_k_of_m_at_its_bounds():
    none = k_of_m(0, 5)
    assert (none.k, none.m, none.alpha, none.p_chance) == (0, 5, 0.05, 1.0)
    assert none.expected == pytest.approx(0.25)
    every = k_of_m(3, 3, alpha=0.5)
    assert every.p_chance == pytest.approx(0.125) and every.expected == 1.5
    one = k_of_m(1, 1)
    assert one.p_chance == pytest.approx(0.05)
    assert one.text("held") == "1 of 1 held; 0.05 expected by chance at alpha = 0.05 (P(at least 1) = 0.05)"
    for k, m in ((-1, 3), (4, 3)):
        with pytest.raises(ValueError, match=rf"^{k} of {m}: expected 0 <= k <= m$"):
            k_of_m(k, m)


def test_a_k_of_m_result_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        k_of_m(1, 4).k = 0  # type: ignore[misc]
