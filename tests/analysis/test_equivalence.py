"""TOST verdicts on hand-made intervals, directional claims, the runs-needed plan by simulation, one arm
against a printed value, and Holm's procedure against its definition and its family-wise error."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchbook.analysis.bootstrap import bootstrap_delta
from benchbook.analysis.equivalence import (
    DIFFERENT,
    EQUIVALENT,
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    Margin,
    compare_samples,
    compare_to_reference,
    directional_verdict,
    interval_verdict,
    parse_margin,
    runs_needed,
    tost_verdict,
)
from benchbook.analysis.intervals import MIN_RUNS, jain_range
from benchbook.analysis.multiplicity import bonferroni_level, holm, k_of_m

D = 0.05


@pytest.mark.parametrize("ci90,ci95,want", [
    ((-0.02, 0.03), (-0.03, 0.04), EQUIVALENT),
    ((-0.04, 0.045), (-0.06, 0.07), EQUIVALENT),     # the 90 % interval decides equivalence, not the 95 %
    ((-0.05, 0.03), (-0.06, 0.04), INCONCLUSIVE),    # touching the margin is not inside it
    ((-0.10, 0.10), (-0.12, 0.12), INCONCLUSIVE),    # "not significant" (holds 0) is never equivalent
    ((0.07, 0.09), (0.06, 0.10), DIFFERENT),
    ((0.055, 0.09), (0.045, 0.10), INCONCLUSIVE),    # the 95 % interval decides difference, not the 90 %
    ((-0.20, -0.08), (-0.22, -0.06), DIFFERENT),
    ((0.03, 0.08), (0.02, 0.09), INCONCLUSIVE),
])
def test_tost_verdicts(ci90, ci95, want) -> None:
    assert tost_verdict(ci90, ci95, D) == want


def test_interval_and_directional_verdicts() -> None:
    assert interval_verdict((0.2, 0.3), (0.15, 0.35), 0.1, 0.4) == EQUIVALENT
    assert interval_verdict((0.45, 0.6), (0.42, 0.65), 0.1, 0.4) == DIFFERENT
    assert directional_verdict((0.01, 0.2)) == HOLDS and directional_verdict((0.01, 0.2), greater=False) == FAILS
    assert directional_verdict((-0.3, -0.1)) == FAILS and directional_verdict((-0.3, -0.1), greater=False) == HOLDS
    assert directional_verdict((0.0, 0.2)) == INCONCLUSIVE and directional_verdict((-0.1, 0.2)) == INCONCLUSIVE


def test_margins() -> None:
    m = parse_margin("5%", "log-ratio")
    assert m.delta == pytest.approx(math.log(1.05)) and m.text == "5%"
    assert parse_margin("0.05", "log-ratio").delta == pytest.approx(math.log(1.05))
    assert parse_margin("5%", "difference").delta == pytest.approx(0.05)
    for bad in ("0", "-3%", "x", "nan"):
        with pytest.raises(ValueError):
            parse_margin(bad, "log-ratio")


def test_runs_needed_formula() -> None:
    # equivalence side: r = runs * ((1.645 + 0.8416) * se / (delta - |Delta|))^2
    assert runs_needed(0.0, 0.03, 6, 0.05) == math.ceil(6 * ((1.6449 + 0.8416) * 0.03 / 0.05) ** 2)
    assert runs_needed(0.10, 0.03, 6, 0.05) == math.ceil(6 * ((1.96 + 0.8416) * 0.03 / 0.05) ** 2)
    assert runs_needed(0.05, 0.03, 6, 0.05) is None  # on the margin
    assert runs_needed(0.0, 0.001, 6, 0.05) == 7  # always more than now
    assert runs_needed(0.0, 0.0, 3, 0.05) == MIN_RUNS


def _runs(rng, sets: int, runs: int, shift: float, sigma: float) -> np.ndarray:
    return np.exp(rng.normal(shift, sigma, (sets, runs)))


def test_three_runs_inconclusive_with_runs_needed() -> None:
    rng = np.random.default_rng(2)
    a, b = _runs(rng, 1, 3, 0.0, 0.03)[0], _runs(rng, 1, 3, 0.0, 0.03)[0]
    got = compare_samples(a, b, Margin.relative(0.05))
    assert got.verdict == INCONCLUSIVE and got.ci90 is None and got.ci95 is None
    assert got.runs_needed >= MIN_RUNS and f"about {got.runs_needed} runs per arm" in got.reason


@pytest.mark.parametrize("truth,want", [(0.01, EQUIVALENT), (0.09, DIFFERENT)])
def test_runs_needed_decides_when_things_stay_as_observed(truth: float, want: str) -> None:
    """The plan assumes Delta and the spread stay as observed. Simulated with exactly that truth (lognormal runs,
    sigma 0.04 on the log scale, +-5 %): at the named run count the verdict is decisive in most comparisons (the
    plan aims at 80 %), and the bootstrap standard error it starts from matches the theory."""
    rng = np.random.default_rng(11)
    m = Margin.relative(0.05)
    sigma = 0.04
    se6 = math.sqrt(math.pi / 2) * sigma * math.sqrt(2 / MIN_RUNS)  # se of a difference of medians, normal runs
    r = runs_needed(truth, se6, MIN_RUNS, m.delta)
    assert 15 <= r <= 40, r
    boot_se = []
    for _ in range(30):
        a, b = _runs(rng, 1, MIN_RUNS, 0.0, sigma)[0], _runs(rng, 1, MIN_RUNS, truth, sigma)[0]
        boot_se.append(bootstrap_delta(a, b).standard_error)
    assert 0.6 * se6 <= float(np.median(boot_se)) <= 1.4 * se6
    hits = sum(compare_samples(_runs(rng, 1, r, 0.0, sigma)[0], _runs(rng, 1, r, truth, sigma)[0], m).verdict == want
               for _ in range(60))
    assert hits >= 0.6 * 60, (r, hits)


def test_compare_to_reference() -> None:
    rng = np.random.default_rng(4)
    m = Margin.relative(0.05)
    x = np.exp(rng.normal(math.log(100.0), 0.01, 8))
    got = compare_to_reference(x, 100.0, m)
    assert got.verdict == EQUIVALENT and got.p_equivalent < 0.05 and got.runs_b is None and got.reference == 100.0
    assert got.estimate == pytest.approx(math.log(np.median(x) / 100.0))
    far = compare_to_reference(x * 1.2, 100.0, m)
    assert far.verdict == DIFFERENT and far.p_different < 0.05
    few = compare_to_reference(x[:4], 100.0, m)
    assert few.verdict == INCONCLUSIVE and few.runs_needed >= MIN_RUNS
    jain = compare_to_reference([0.97, 0.98, 0.99, 0.985, 0.975, 0.99], 0.98, Margin.absolute(0.05), jain_range(2))
    assert jain.verdict == EQUIVALENT and jain.ci95[1] <= 1.0 - 0.98


def test_holm_against_its_definition_and_family_wise_error() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.01, 0.02, 0.03, 0.04], alpha=0.1) == [True, True, True, True]
    assert holm([0.5]) == [False] and holm([0.05]) == [True]
    rng = np.random.default_rng(9)
    family = sum(any(holm(rng.random(10))) for _ in range(4000)) / 4000  # ten true nulls
    assert family <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert bonferroni_level(10) == pytest.approx(0.995)
    k = k_of_m(2, 12)
    assert k.expected == pytest.approx(0.6) and k.p_chance == pytest.approx(1 - 0.95**12 - 12 * 0.05 * 0.95**11)
    assert k.text().startswith("2 of 12 different; 0.6 expected by chance")


def test_margin_printed_with_one_plus_minus_sign() -> None:
    """A margin declared in a TOML carries its ± ("±5 %"), one given to compare --margin does not ("5%"): the reasons
    print one sign either way (they printed "+-±5 %")."""
    assert Margin(0.05, "difference", "±5 %").plus_minus == "±5 %"
    assert parse_margin("5%", "log-ratio").plus_minus == "±5%"
