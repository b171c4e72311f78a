"""analysis.bootstrap at its edges: what an arm may hold (no runs, a scalar, non-finite values, zero and
negative values on each scale), the minimum run count exactly at and one below it in either arm, the number of
resamples, the result's method text, standard error and shares at an atom of the distribution, the percentile
interval against numpy's definition, and batched data sets (mutation testing found these untested)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis.bootstrap import (
    DeltaIntervals,
    bootstrap_delta,
    bootstrap_distribution,
    check_arm,
    delta_of_medians,
    percentile_interval,
)
from benchbook.analysis.intervals import NoInterval

SIX = [1.0, 1.2, 0.9, 1.1, 1.05, 0.95]


@pytest.mark.parametrize("values,message", [
    ([], r"^arm A: no runs$"),
    (3.0, r"^arm A: no runs$"),
    (np.zeros((2, 0)), r"^arm A: no runs$"),
    ([1.0, math.nan], r"^arm A: a per-run value is not finite$"),
    ([1.0, math.inf], r"^arm A: a per-run value is not finite$"),
    ([1.0, -math.inf], r"^arm A: a per-run value is not finite$"),
])
def test_an_arm_without_runs_or_with_non_finite_values_is_refused(values, message):
    for scale in ("log-ratio", "difference"):
        with pytest.raises(ValueError, match=message):
            check_arm(values, scale, "arm A")


def test_zero_and_negative_values_only_on_the_difference_scale():
    for bad in (0.0, -2.0):
        with pytest.raises(ValueError, match=rf"^arm B: a log ratio of medians needs per-run values > 0 \(got "
                                             rf"{bad!r}\); compare such a statistic as a difference$"):
            check_arm([1.0, bad], "log-ratio", "arm B")
        assert check_arm([1.0, bad], "difference", "arm B").tolist() == [1.0, bad]
    assert check_arm([5e-324, 1.0], "log-ratio", "arm B").dtype == np.float64  # the smallest positive float
    assert check_arm([[1, 2], [3, 4]], "difference", "x").shape == (2, 2)  # batch first, runs last



@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy's standard error of a single resample
def test_unknown_scale_and_resample_count():
    with pytest.raises(ValueError, match=r"^scale 'ratio': expected one of log-ratio, difference$"):
        delta_of_medians(np.ones(3), np.ones(3), "ratio")  # type: ignore[arg-type]
    for n in (0, -1):
        with pytest.raises(ValueError, match=rf"^resamples {n}: expected >= 1$"):
            bootstrap_distribution(SIX, SIX, "log-ratio", resamples=n)
    est, dist = bootstrap_distribution(SIX, SIX, "difference", resamples=1, seed=3)
    assert est == 0.0 and dist.shape == (1,)


@pytest.mark.parametrize("runs_a,runs_b", [(5, 6), (6, 5), (5, 5)])
def test_one_run_below_the_minimum_in_either_arm(runs_a, runs_b):
    got = bootstrap_delta(SIX[:runs_a], SIX[:runs_b], resamples=50)
    assert isinstance(got, NoInterval) and not got.ok
    assert (got.runs, got.runs_needed, got.confidence) == (5, 6, 0.95)
    assert got.reason.startswith(f"{runs_a} vs {runs_b} runs: a bootstrap over fewer than 6 runs per arm")
    assert got.method == "bootstrap over runs, refused below 6 runs per arm"


def test_exactly_the_minimum_and_a_lower_minimum():
    got = bootstrap_delta(SIX, SIX[::-1], resamples=200, seed=5)
    assert isinstance(got, DeltaIntervals) and got.ok and (got.runs_a, got.runs_b) == (6, 6)
    low = bootstrap_delta(SIX[:3], SIX[:4], scale="difference", levels=(0.8,), resamples=200, seed=5, min_runs=3)
    assert isinstance(low, DeltaIntervals) and list(low.intervals) == [0.8]
    refused = bootstrap_delta(SIX[:3], SIX, min_runs=4, levels=(0.9, 0.99))
    assert isinstance(refused, NoInterval) and refused.runs_needed == 4 and refused.confidence == 0.99


def test_the_result_its_method_error_and_shares():
    a = [10.0, 11.0, 12.0, 10.5, 11.5, 10.0, 12.5]
    b = [12.0, 13.0, 12.5, 14.0, 13.5, 12.0]
    got = bootstrap_delta(a, b, scale="difference", resamples=400, seed=11)
    assert got.method == ("bootstrap over runs (7 vs 6; percentile intervals, 400 resamples, seed 11) of "
                          "Delta = median B - median A")
    assert bootstrap_delta(a, b, resamples=400).method.endswith("of Delta = ln(median B / median A)")
    assert got.estimate == float(np.median(b) - np.median(a)) == 1.75
    d = got.distribution
    assert d.shape == (400,)
    assert got.standard_error == float(np.std(d, ddof=1)) != float(np.std(d))
    atom = float(np.median(d))
    assert (d == atom).any()  # medians of few runs: the distribution has atoms
    assert got.share_below(atom) == float(np.mean(d <= atom)) > got.share_below(atom, inclusive=False)
    assert got.share_above(atom) == float(np.mean(d >= atom)) > got.share_above(atom, inclusive=False)
    assert got.share_below(atom, inclusive=False) == float(np.mean(d < atom))
    assert got.share_above(atom, inclusive=False) == float(np.mean(d > atom))
    for level in (0.9, 0.95):
        assert got.interval(level) == tuple(float(v) for v in np.percentile(d, [50 * (1 - level),
                                                                               100 - 50 * (1 - level)]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.estimate = 0.0  # type: ignore[misc]


def test_percentile_interval_is_equal_tailed():
    d = np.arange(1001, dtype=np.float64)
    assert percentile_interval(d, 0.9) == (pytest.approx(50.0, abs=1e-9), pytest.approx(950.0, abs=1e-9))
    assert percentile_interval(d, 0.5) == (250.0, 750.0)
    lo, hi = percentile_interval(np.stack([d, 2 * d]), 0.8)
    assert np.allclose(lo, [100.0, 200.0]) and np.allclose(hi, [900.0, 1800.0])


def test_batched_data_sets_each_get_their_own_bootstrap():
    rng = np.random.default_rng(2)
    a = rng.lognormal(0, 0.1, (3, 6))
    b = rng.lognormal(0.2, 0.1, (3, 7))
    est, dist = bootstrap_distribution(a, b, "log-ratio", resamples=300, seed=1)
    assert dist.shape == (3, 300)
    assert np.allclose(est, np.log(np.median(b, axis=-1) / np.median(a, axis=-1)))
    assert not np.array_equal(dist[0], dist[1])


def test_the_documented_defaults_ten_thousand_resamples_and_seed_zero():
    a, b = SIX, [1.3, 1.1, 1.2, 1.25, 1.15, 1.4]
    got = bootstrap_delta(a, b)
    assert (got.resamples, got.seed, got.distribution.size) == (10_000, 0, 10_000)
    assert got.intervals == bootstrap_delta(a, b, resamples=10_000, seed=0).intervals
    assert list(got.intervals) == [0.90, 0.95]


@pytest.mark.parametrize("shape,resamples,batch", [((7,), 2000, 2000), ((600, 7), 2000, 998),
                                                   ((20, 30, 7), 2000, 998), ((500,), 10_000, 8388)])
def test_resamples_are_drawn_in_batches_of_at_most_2_to_the_22_values(shape, resamples, batch):
    """scipy draws a batch's resamples of arm A, then of arm B: how many resamples a batch holds decides which
    draws each resample gets, so a recorded seed rebuilds its distribution only with the same batches. They hold
    at most 2^22 resampled values: 2000 resamples of one 7-run data set in one batch; of 600 data sets (as a
    600 x 7 or a 20 x 30 x 7 stack) 2^22 // (600 * 7) = 998 at a time; 10,000 of one 500-run data set 8388 at a
    time. Oracle: scipy's bootstrap with that batch."""
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(0, 0.2, shape), rng.lognormal(0.1, 0.2, shape)

    def stat(xa, xb, axis=-1):
        return np.log(np.median(xb, axis=axis) / np.median(xa, axis=axis))

    want = stats.bootstrap((a, b), stat, n_resamples=resamples, batch=batch, vectorized=True, axis=-1, paired=False,
                           method="percentile", rng=np.random.default_rng(3)).bootstrap_distribution
    _, got = bootstrap_distribution(a, b, "log-ratio", resamples=resamples, seed=3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_the_default_scale_is_the_log_ratio_and_a_refusal_names_its_arm():
    a, b = [1.0, 2.0, 3.0], [2.0, 4.0, 6.0]
    est, dist = bootstrap_distribution(a, b, resamples=50)
    assert est == pytest.approx(math.log(2.0)) and dist.shape == (50,)
    with pytest.raises(ValueError, match=r"^arm A: no runs$"):
        bootstrap_distribution([], b)
    with pytest.raises(ValueError, match=r"^arm B: a per-run value is not finite$"):
        bootstrap_distribution(a, [1.0, math.nan])


def test_delta_intervals_compare_and_print_without_their_distribution():
    """Two results of the same runs and seed are equal (the 10,000-value distribution is not compared, an array
    would make == raise) and the repr a notebook shows leaves it out; refusals name the arm."""
    a, b = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5], [1.2, 1.3, 1.4, 1.5, 1.6, 1.7]
    one, two = bootstrap_delta(a, b, resamples=200), bootstrap_delta(a, b, resamples=200)
    assert one == two and "distribution" not in repr(one) and one.distribution.shape == (200,)
    with pytest.raises(ValueError, match=r"^arm A: no runs$"):
        bootstrap_delta([], b)
    with pytest.raises(ValueError, match=r"^arm B: a per-run value is not finite$"):
        bootstrap_delta(a, [math.inf] * 6)
