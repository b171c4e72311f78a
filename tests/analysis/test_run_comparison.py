"""analysis.run_comparison, what `benchbook compare` computes and prints, on runs generated with known truth (run i
of a set holds the latencies f_i x 1..N, so its p50 is 500 f_i at N = 1000, its maximum N f_i, its minimum f_i) and
on tests/data's iperf3 report: each statistic's fields (--json) against an independent computation (Delta from the
medians, both intervals from scipy.stats.bootstrap with the same seed, the verdict from the TOST rule, the runs
needed from the normal approximation, the p-values from the bootstrap distribution); the run minimum (6 per set:
exactly there intervals, one below none), runs a statistic cannot resolve (named with their N, the others counted),
the maximum and the minimum reported as observed, Jain's index as a difference, values <= 0 on a log ratio; the
printed table character by character; the HDR plot's grid and run-level bands against order statistics computed
here from exact binomial sums, and where the sign of Delta flips (mutation testing found these untested)."""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from benchbook.analysis import run_comparison as rc
from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.run_sets import Run, load_run, parse_statistics
from benchbook.tools.iperf3 import read_report
from benchbook.tools.moongen_histogram import read_moongen_histogram

DATA = Path(__file__).resolve().parents[1] / "data"
IPERF3 = DATA / "tcp" / "iperf3-cubic-2streams.json"
D5 = math.log(1.05)  # --margin 5% on a log ratio
DOC_KEYS = ["stat", "verdict", "runs_a", "runs_b", "values_a", "values_b", "delta", "ci90", "ci95", "margin", "method",
            "scale", "margin_declared", "unit", "samples_a", "samples_b", "runs_needed", "reason", "seed", "resamples",
            "p_equivalent", "p_different"]  # docs/statistics.md, "benchbook compare": these, in this order
HEADER = "stat        verdict              Delta  90 % interval            95 % interval            margin"
FIRST = ("Delta is B against A: the ratio of medians as a change in percent (a difference for bounded "
         "statistics).")
TOO_FEW = ("a bootstrap over fewer than 6 runs per arm looks decisive and is not (its few distinct resampled medians "
           "under-cover); no interval")
NO_VALUE = "none: a statistic a run cannot resolve is not compared"
EXTREMES = "none: extremes are reported as observed"


# ---- runs with known truth ------------------------------------------------------------------------------------------
def latency_run(name: str, latencies) -> Run:
    x = np.asarray(latencies, dtype=np.float64)
    return Run(Path(name), "latency", "generated", int(x.size), "exact", ExactDistribution.from_samples(x))


def scaled_runs(prefix: str, factors, n: int | list[int] = 1000) -> list[Run]:
    """Run i: the latencies f_i, 2 f_i, ..., N_i f_i ns (p50 = f_i ceil(N_i / 2), max N_i f_i, min f_i)."""
    ns = n if isinstance(n, list) else [n] * len(factors)
    return [latency_run(f"{prefix}{i + 1}.hlog", f * np.arange(1, k + 1))
            for i, (f, k) in enumerate(zip(factors, ns, strict=True))]


def jain_of(rates) -> float:
    x = np.asarray(rates, dtype=np.float64)
    return float(x.sum() ** 2 / (x.size * np.sum(x * x)))


def throughput_run(name: str, rates_bps) -> Run:
    """As an iperf3 report's run: the per-stream rates, Jain's index of them from two streams on."""
    x = np.asarray(rates_bps, dtype=np.float64)
    return Run(Path(name), "throughput", "iperf3", int(x.size), "iperf3 -J", flows_bps=x,
               jain=jain_of(x) if x.size >= 2 else None)


def stat(name: str):
    (st,) = parse_statistics(name)
    return st


# ---- independent computations ---------------------------------------------------------------------------------------
def scipy_bootstrap(a, b, scale: str, seed: int, resamples: int = 10_000):
    """Delta, its 90 % and 95 % percentile intervals and bootstrap distribution straight from scipy.stats.bootstrap
    (runs resampled within each set, the seeded generator)."""
    def delta(x, y, axis=-1):
        mx, my = np.median(x, axis=axis), np.median(y, axis=axis)
        return np.log(my / mx) if scale == "log-ratio" else my - mx

    out = {}
    for level in (0.90, 0.95):
        res = stats.bootstrap((np.asarray(a, float), np.asarray(b, float)), delta, n_resamples=resamples,
                              paired=False, vectorized=True, method="percentile", confidence_level=level,
                              rng=np.random.default_rng(seed))
        out[level] = (float(res.confidence_interval.low), float(res.confidence_interval.high))
        dist = res.bootstrap_distribution
    return float(delta(np.asarray(a, float), np.asarray(b, float))), out[0.90], out[0.95], dist


def tost(ci90, ci95, d: float) -> str:
    """Lakens' TOST: equivalent when the 90 % interval lies inside (-d, d), different when the 95 % interval lies
    wholly outside [-d, d]."""
    if -d < ci90[0] and ci90[1] < d:
        return "equivalent"
    if ci95[0] > d or ci95[1] < -d:
        return "different"
    return "inconclusive"


def planned_runs(estimate: float, se: float, runs: float, d: float) -> int:
    """Runs per set for a decisive verdict with probability 0.8 (normal approximation, width ~ 1/sqrt(r))."""
    gap = d - abs(estimate)
    z = stats.norm.ppf(0.95 if gap > 0 else 0.975) + stats.norm.ppf(0.80)
    return max(math.ceil(runs * (z * se / abs(gap)) ** 2 - 1e-9), 6, math.floor(runs) + 1)


def spread_se(a, b) -> float:
    """se of a median's log ratio from the spread of the runs alone: sqrt(pi/2) sqrt(s_A^2/r_A + s_B^2/r_B)."""
    la, lb = np.log(a), np.log(b)
    return math.sqrt(math.pi / 2) * math.sqrt(np.var(la, ddof=1) / la.size + np.var(lb, ddof=1) / lb.size)


def pct(x: float) -> str:
    """A log ratio as the change in percent the table prints."""
    return f"{(math.exp(x) - 1) * 100:+.2f} %"


def shortest_ranks(r: int, confidence: Fraction = Fraction(95, 100)) -> tuple[int, int]:
    """[X(j), X(k)] for the median of r values: the fewest ranks apart whose exact coverage P(j <= K <= k - 1),
    K ~ Bin(r, 1/2), reaches the level; among those the highest coverage, then the lower ranks."""
    pmf = [Fraction(math.comb(r, i), 2 ** r) for i in range(r + 1)]
    for width in range(1, r):
        good = [(sum(pmf[j:j + width]), -j) for j in range(1, r - width + 1) if sum(pmf[j:j + width]) >= confidence]
        if good:
            j = -max(good)[1]
            return j, j + width
    raise AssertionError(f"{r} runs: no interval")


def discrete(sorted_values: np.ndarray, p: float) -> float:
    """The discrete p-th percentile: the value at rank ceil(p N / 100), at least 1 (p exact as printed)."""
    rank = max(1, math.ceil(Decimal(repr(float(p))) * len(sorted_values) / 100))
    return float(sorted_values[rank - 1])


# ---- verdicts against an independent bootstrap -------------------------------------------------------------------
A_F = [18, 19, 20, 20, 21, 22]   # p50 9000 ... 11000 ns, median 10000
B_F = [22, 23, 24, 24, 25, 26]   # median 12000: B is 20 % slower


def test_a_20_percent_slower_set_is_different_with_scipys_intervals_and_every_documented_field() -> None:
    a, b = scaled_runs("a", A_F), scaled_runs("b", B_F)
    res = rc.compare_statistic(a, b, stat("p50"), "5%", seed=7)
    va, vb = [500.0 * f for f in A_F], [500.0 * f for f in B_F]
    est, ci90, ci95, dist = scipy_bootstrap(va, vb, "log-ratio", seed=7)
    doc = res.as_dict()
    assert list(doc) == DOC_KEYS
    assert doc["values_a"] == va and doc["values_b"] == vb
    assert doc["delta"] == pytest.approx(math.log(1.2), abs=1e-12) == pytest.approx(est, abs=1e-12)
    assert doc["ci90"] == pytest.approx(list(ci90), abs=1e-12) and doc["ci95"] == pytest.approx(list(ci95), abs=1e-12)
    assert doc["ci95"][0] > D5 and tost(ci90, ci95, D5) == doc["verdict"] == "different"
    assert doc["p_equivalent"] == pytest.approx(max(np.mean(dist <= -D5), np.mean(dist >= D5)))
    assert doc["p_different"] == pytest.approx(min(1.0, 2 * min(np.mean(dist <= D5), np.mean(dist >= -D5))))
    assert {k: doc[k] for k in DOC_KEYS if k not in ("values_a", "values_b", "delta", "ci90", "ci95", "p_equivalent",
                                                     "p_different")} == {
        "stat": "p50", "verdict": "different", "runs_a": 6, "runs_b": 6, "margin": pytest.approx(D5),
        "method": "bootstrap over runs (6 vs 6; percentile intervals, 10000 resamples, seed 7) of Delta = "
                  "ln(median B / median A)",
        "scale": "log-ratio", "margin_declared": "5%", "unit": "ns", "samples_a": [1000] * 6,
        "samples_b": [1000] * 6, "runs_needed": None, "reason": None, "seed": 7, "resamples": 10_000}
    assert rc.document([res]) == {"statistics": [doc]}
    assert json.loads(json.dumps(rc.document([res]), allow_nan=False)) == {"statistics": [doc]}


def test_a_result_cannot_be_altered_after_the_fact() -> None:
    res = rc.compare_statistic(scaled_runs("a", A_F[:2]), scaled_runs("b", B_F[:2]), stat("p50"), "5%")
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.values_a = []  # type: ignore[misc]
    assert [v.value for v in res.values_a] == [9000.0, 9500.0]


def test_a_one_percent_change_with_little_spread_is_equivalent_at_another_seed_and_resample_count() -> None:
    fa = [20.0, 20.04, 19.97, 20.02, 19.99, 20.01, 20.03]
    fb = [f * 1.01 for f in fa[:6]]
    res = rc.compare_statistic(scaled_runs("a", fa), scaled_runs("b", fb), stat("p99"), "5%", seed=3, resamples=2000)
    va, vb = [990.0 * f for f in fa], [990.0 * f for f in fb]
    est, ci90, ci95, _ = scipy_bootstrap(va, vb, "log-ratio", seed=3, resamples=2000)
    c = res.comparison
    assert [v.value for v in res.values_a] == pytest.approx(va) and c.estimate == pytest.approx(est)
    assert c.ci90 == pytest.approx(ci90, abs=1e-12) and c.ci95 == pytest.approx(ci95, abs=1e-12)
    assert tost(ci90, ci95, D5) == c.verdict == "equivalent"
    assert (c.runs_a, c.runs_b, c.seed, c.resamples, c.runs_needed, c.reason) == (7, 6, 3, 2000, None, None)
    assert c.method == ("bootstrap over runs (7 vs 6; percentile intervals, 2000 resamples, seed 3) of Delta = "
                        "ln(median B / median A)")


def test_a_wide_spread_at_six_runs_is_inconclusive_with_the_runs_needed_from_the_bootstrap() -> None:
    fa = [10, 13, 16, 20, 25, 31]
    fb = [11, 14, 17, 21, 27, 33]
    res = rc.compare_statistic(scaled_runs("a", fa), scaled_runs("b", fb), stat("mean"), "5%", seed=1)
    va, vb = [500.5 * f for f in fa], [500.5 * f for f in fb]
    est, ci90, ci95, dist = scipy_bootstrap(va, vb, "log-ratio", seed=1)
    c = res.comparison
    assert c.estimate == pytest.approx(math.log(19 / 18)) == pytest.approx(est)
    assert tost(ci90, ci95, D5) == c.verdict == "inconclusive"
    need = planned_runs(est, float(np.std(dist, ddof=1)), 6, D5)
    assert c.runs_needed == need > 6
    assert c.reason == (f"the 90 % interval reaches past the margin ±5% and the 95 % interval overlaps it; about "
                        f"{need} runs per arm would likely decide (bootstrap standard error, normal approximation)")


@pytest.mark.parametrize(("ra", "rb"), [(5, 6), (6, 5), (5, 5)])
def test_one_run_below_the_minimum_in_either_set_gives_no_interval_and_the_runs_that_would_decide(ra, rb) -> None:
    fa, fb = [20, 21, 19, 22, 18, 20][:ra], [24, 25, 23, 26, 22, 24][:rb]
    res = rc.compare_statistic(scaled_runs("a", fa), scaled_runs("b", fb), stat("p50"), "5%", seed=7)
    c = res.comparison
    va, vb = np.array(fa) * 500.0, np.array(fb) * 500.0
    est = math.log(np.median(vb) / np.median(va))
    need = planned_runs(est, spread_se(va, vb), 2 / (1 / ra + 1 / rb), D5)
    assert (c.verdict, c.ci90, c.ci95, c.seed, c.resamples) == ("inconclusive", None, None, None, None)
    assert c.estimate == pytest.approx(est) and c.runs_needed == need >= 6
    assert c.method == "bootstrap over runs, refused below 6 runs per arm"
    assert c.reason == (f"{ra} vs {rb} runs: {TOO_FEW}; about {need} runs per arm would likely decide (from the "
                        f"spread of these runs, normal approximation)")
    assert not any(ln.startswith("bootstrap over runs:") for ln in rc.text([res], ["x"] * ra, ["y"] * rb).split("\n"))


def test_one_run_per_set_from_tests_data_plans_the_minimum() -> None:
    """tests/data's iperf3 report on each side: Delta 0, no spread to plan from: 6 runs per set."""
    run = load_run(IPERF3, read_moongen_histogram, read_report)
    rates = [s["receiver"]["bits_per_second"] for s in json.loads(IPERF3.read_text())["end"]["streams"]]
    for name, value in (("throughput", sum(rates)), ("jain", jain_of(rates))):
        c = rc.compare_statistic([run], [run], stat(name), "5%").comparison
        assert (c.verdict, c.estimate, c.runs_needed, c.runs_a, c.runs_b) == ("inconclusive", 0.0, 6, 1, 1)
        assert c.reason == (f"1 vs 1 runs: {TOO_FEW}; about 6 runs per arm would likely decide (from the spread of "
                            f"these runs, normal approximation)")
        assert rc.compare_statistic([run], [run], stat(name), "5%").values_a[0].value == pytest.approx(value)


def test_an_empty_set_is_refused_and_no_statistics_give_an_empty_document() -> None:
    with pytest.raises(ValueError, match="^arm A: no runs$"):
        rc.compare_statistic([], scaled_runs("b", B_F), stat("p50"), "5%")
    assert rc.compare_run_sets(scaled_runs("a", A_F), scaled_runs("b", B_F), [], "5%") == []
    assert rc.document([]) == {"statistics": []}


def test_a_zero_median_on_a_log_ratio_is_refused_not_turned_into_infinity() -> None:
    """Latencies of 0 ns (below a clock's resolution): no log ratio, so no Delta and no verdict on it; the reason
    names the first such run (the command crashed with a ValueError)."""
    zero = [latency_run(f"z{i}", np.r_[np.zeros(600), np.arange(1, 401)]) for i in range(6)]
    c = rc.compare_statistic(zero, scaled_runs("b", B_F), stat("p50"), "5%").comparison
    assert (c.verdict, c.estimate, c.ci90, c.ci95) == ("not resolvable", None, None, None)
    assert c.method == "none: a log ratio needs per-run values > 0"
    assert c.reason == ("run 1 of A (z0): p50 = 0 ns, and Delta is a log ratio of medians, which needs per-run "
                        "values > 0 (and 5 more run(s))")
    c = rc.compare_statistic(scaled_runs("a", A_F), zero[:1], stat("p60"), "5%").comparison
    assert c.verdict == "not resolvable" and c.reason.startswith("run 1 of B (z0): p60 = 0 ns, ")
    assert c.reason.endswith("needs per-run values > 0")
    assert rc.compare_statistic(scaled_runs("a", A_F), zero[:1], stat("p61"), "5%").comparison.verdict != \
        "not resolvable"   # the 610th of the 1000 latencies is 10 ns


def test_the_reason_counts_the_other_runs_with_a_zero_and_a_value_of_one_is_no_zero() -> None:
    zero = [latency_run(f"z{i}", np.r_[np.zeros(600), np.arange(1, 401)]) for i in range(2)]
    c = rc.compare_statistic(zero, scaled_runs("b", B_F), stat("p50"), "5%").comparison
    assert c.reason.endswith("needs per-run values > 0 (and 1 more run(s))")
    c = rc.compare_statistic(zero[:1], scaled_runs("b", B_F), stat("p50"), "5%").comparison
    assert c.reason.endswith("needs per-run values > 0")
    ones = [latency_run(f"o{i}", np.arange(1, 1001)) for i in range(6)]   # minimum 1 ns: a ratio exists
    c = rc.compare_statistic(ones, ones, stat("min"), "5%").comparison
    assert (c.verdict, c.method, c.estimate) == ("not resolvable", "none: extremes are reported as observed", 0.0)


def test_either_empty_set_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="^arm B: no runs$"):
        rc.compare_statistic(scaled_runs("a", A_F), [], stat("max"), "5%")
    with pytest.raises(ValueError, match="^arm A: no runs$"):
        rc.compare_statistic([], [], stat("min"), "5%")


def test_a_zero_minimum_gives_no_delta_and_json_can_hold_it() -> None:
    a = [latency_run(f"a{i}", np.r_[0, np.arange(1000, 2000)]) for i in range(3)]
    res = rc.compare_statistic(a, scaled_runs("b", B_F[:3]), stat("min"), "5%")
    assert res.comparison.verdict == "not resolvable" and res.comparison.estimate is None
    assert res.comparison.reason.startswith("run 1 of A (a0): min = 0 ns, and Delta is a log ratio")
    json.dumps(rc.document([res]), allow_nan=False)


# ---- Jain's index: a difference --------------------------------------------------------------------------------------
def jain_sets() -> tuple[list[Run], list[Run]]:
    ra = [(60e6, 40e6), (55e6, 45e6), (62e6, 38e6), (58e6, 42e6), (57e6, 43e6), (61e6, 39e6)]
    rb = [(80e6, 20e6), (78e6, 22e6), (82e6, 18e6), (79e6, 21e6), (81e6, 19e6), (77e6, 23e6)]
    return ([throughput_run(f"a{i + 1}.json", r) for i, r in enumerate(ra)],
            [throughput_run(f"b{i + 1}.json", r) for i, r in enumerate(rb)])


def test_jains_index_is_compared_as_a_difference_against_an_absolute_margin() -> None:
    a, b = jain_sets()
    ja, jb = [jain_of(r.flows_bps) for r in a], [jain_of(r.flows_bps) for r in b]
    res = rc.compare_statistic(a, b, stat("jain"), "5%", seed=2)
    est, ci90, ci95, _ = scipy_bootstrap(ja, jb, "difference", seed=2)
    doc = res.as_dict()
    assert doc["values_a"] == pytest.approx(ja) and doc["values_b"] == pytest.approx(jb)
    assert doc["delta"] == pytest.approx(np.median(jb) - np.median(ja)) == pytest.approx(est)
    assert doc["ci90"] == pytest.approx(list(ci90), abs=1e-12) and doc["ci95"] == pytest.approx(list(ci95), abs=1e-12)
    assert (doc["scale"], doc["margin"], doc["margin_declared"], doc["unit"]) == ("difference", 0.05, "5%", "")
    assert doc["verdict"] == tost(ci90, ci95, 0.05) == "different"
    assert doc["samples_a"] == doc["samples_b"] == [2] * 6
    assert doc["method"] == ("bootstrap over runs (6 vs 6; percentile intervals, 10000 resamples, seed 2) of Delta = "
                             "median B - median A")
    tp = rc.compare_statistic(a, b, stat("throughput"), "5%").as_dict()
    assert tp["values_a"] == [100e6] * 6 and (tp["scale"], tp["unit"], tp["delta"]) == ("log-ratio", "bit/s", 0.0)
    assert tp["verdict"] == "equivalent"


def test_a_single_flow_run_has_no_jains_index_and_is_named() -> None:
    a, b = jain_sets()
    b[3] = throughput_run("b4-one-flow.json", [90e6])
    res = rc.compare_statistic(a, b, stat("jain"), "0.05")
    c = res.comparison
    assert [v.value for v in res.values_b][3] is None and res.values_b[3].samples == 1
    assert c.reason == "run 4 of B (b4-one-flow.json): Jain's index needs at least two flows (1 here)"
    assert (c.verdict, c.method, c.estimate, c.ci90, c.ci95, c.runs_needed) == ("not resolvable", NO_VALUE, None,
                                                                                None, None, None)
    assert c.margin.plus_minus == "±0.05"


# ---- runs that cannot resolve a statistic -------------------------------------------------------------------------
def p999_reason(n: int) -> str:
    need = next(k for k in range(1, 10**6) if 0.999 ** k <= 0.025)  # the upper bound: p^N <= alpha/2
    return f"not resolvable at N = {n}: p99.9 needs N >= {need} for a 95 % interval"


@pytest.mark.parametrize(("na", "nb", "reason"), [
    # one run without a value: named, nothing more
    ([4000] * 6, [4000, 300, 4000, 4000, 4000, 4000], f"run 2 of B (b2.hlog): {p999_reason(300)}"),
    # the first in argument order (A before B) is named, the others counted
    ([4000, 4000, 300, 4000, 4000, 4000], [200, 4000, 4000, 4000, 4000, 4000],
     f"run 3 of A (a3.hlog): {p999_reason(300)} (and 1 more run(s))"),
    ([250, 4000, 4000], [4000, 300, 3000], f"run 1 of A (a1.hlog): {p999_reason(250)} (and 2 more run(s))"),
])
def test_a_percentile_a_run_cannot_resolve_is_not_compared_naming_the_run_and_its_n(na, nb, reason) -> None:
    fa, fb = [20 + i for i in range(len(na))], [24 + i for i in range(len(nb))]
    res = rc.compare_statistic(scaled_runs("a", fa, na), scaled_runs("b", fb, nb), stat("p99.9"), "5%", seed=7)
    doc = res.as_dict()
    assert doc["reason"] == reason
    for key, ns, fs in (("a", na, fa), ("b", nb, fb)):
        assert doc[f"values_{key}"] == [None if n < 3688 else f * math.ceil(0.999 * n)
                                        for n, f in zip(ns, fs, strict=True)]
        assert doc[f"samples_{key}"] == ns and doc[f"runs_{key}"] == len(ns)
    assert [v.reason is None for v in res.values_a + res.values_b] == [n >= 3688 for n in na + nb]
    assert (doc["verdict"], doc["method"], doc["delta"], doc["ci90"], doc["ci95"]) == ("not resolvable", NO_VALUE,
                                                                                      None, None, None)
    assert (doc["runs_needed"], doc["seed"], doc["resamples"], doc["p_equivalent"]) == (None, None, None, None)


def test_a_run_without_latencies_has_no_value_even_for_the_maximum() -> None:
    a = [latency_run("empty.hlog", [])] + scaled_runs("a", A_F[1:])
    for name in ("p50", "max"):
        c = rc.compare_statistic(a, scaled_runs("b", B_F), stat(name), "5%").comparison
        assert (c.verdict, c.reason, c.method) == ("not resolvable", "run 1 of A (empty.hlog): no latencies", NO_VALUE)


# ---- the extremes ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "word", "a_seen", "b_seen", "delta"), [
    # maxima A: 20 x 900, 25 x 1000, 30 x 700 = 18000, 25000, 21000; B: 26000, 30000, 22000, 36 x 500 = 18000
    ("max", "maximum", 25000, 30000, math.log(24000 / 21000)),
    # minima A: 20, 25, 30; B: 26, 30, 22, 36
    ("min", "minimum", 20, 22, math.log(28 / 25)),
])
def test_the_extremes_are_reported_as_observed_without_an_interval(name, word, a_seen, b_seen, delta) -> None:
    a = scaled_runs("a", [20, 25, 30], [900, 1000, 700])
    b = scaled_runs("b", [26, 30, 22, 36], [1000, 1000, 1000, 500])
    res = rc.compare_statistic(a, b, stat(name), "5%", seed=7)
    c = res.comparison
    assert c.reason == (f"the {word} has no confidence interval at any N (V11); observed {name} A {a_seen} ns over 3 "
                        f"runs, 2600 samples in all, B {b_seen} ns over 4 runs, 3500 samples in all")
    assert (c.verdict, c.method, c.ci90, c.ci95, c.runs_needed, c.seed) == ("not resolvable", EXTREMES, None,
                                                                            None, None, None)
    assert c.estimate == pytest.approx(delta, abs=1e-12)
    assert [v.samples for v in res.values_a] == [900, 1000, 700]


# ---- the table -------------------------------------------------------------------------------------------------
def test_the_table_prints_verdicts_deltas_intervals_margins_reasons_and_every_runs_value() -> None:
    a, b = scaled_runs("a", A_F, [4000] * 5 + [300]), scaled_runs("b", B_F, 4000)
    results = rc.compare_run_sets(a, b, parse_statistics("p50,p99.9,max"), "5%", seed=7)
    _, ci90, ci95, _ = scipy_bootstrap([2000.0 * f for f in A_F[:5]] + [150.0 * A_F[5]], [2000.0 * f for f in B_F],
                                       "log-ratio", seed=7)
    max_reason = ("the maximum has no confidence interval at any N (V11); observed max A 84000 ns over 6 runs, 20300 "
                  "samples in all, B 104000 ns over 6 runs, 24000 samples in all")
    med_max = math.log(np.median([4000 * f for f in B_F]) / np.median([4000 * f for f in A_F[:5]] + [300 * 22]))
    i90, i95 = (f"[{pct(lo)}, {pct(hi)}]" for lo, hi in (ci90, ci95))
    got = rc.text(results, [str(r.path) for r in a], [str(r.path) for r in b]).split("\n")
    assert got == [
        f"A: 6 run(s); B: 6 run(s). {FIRST}",
        "",
        HEADER,
        f"p50         different         {pct(math.log(48000 / 39000)):>8}  {i90:<24} {i95:<24} ±5%",
        "p99.9       not resolvable           -  -                        -                        ±5%",
        f"            run 6 of A (a6.hlog): {p999_reason(300)}",
        f"max         not resolvable    {pct(med_max):>8}  -                        -                        ±5%",
        f"            {max_reason}",
        "",
        "p50 per run (us):",
        "  A: 36.000 38.000 40.000 40.000 42.000 3.300",
        "  B: 44.000 46.000 48.000 48.000 50.000 52.000",
        "p99.9 per run (us):",
        "  A: 71.928 75.924 79.920 79.920 83.916 -",
        "  B: 87.912 91.908 95.904 95.904 99.900 103.896",
        "max per run (us):",
        "  A: 72.000 76.000 80.000 80.000 84.000 6.600",
        "  B: 88.000 92.000 96.000 96.000 100.000 104.000",
        "bootstrap over runs: 10000 resamples, percentile intervals, seed 7",
    ]
    assert pct(math.log(48000 / 39000)) == "+23.08 %"


def test_the_table_of_throughput_runs_in_mbit_per_s_and_jains_index_as_a_difference() -> None:
    a, b = jain_sets()
    a[0] = throughput_run("a1.json", [60.5e6, 40.75e6])
    results = rc.compare_run_sets(a, b, parse_statistics("throughput,jain"), "5%", seed=2, resamples=1000)
    ja, jb = [jain_of(r.flows_bps) for r in a], [jain_of(r.flows_bps) for r in b]
    _, ci90, ci95, _ = scipy_bootstrap(ja, jb, "difference", seed=2, resamples=1000)
    assert results[1].comparison.verdict == tost(ci90, ci95, 0.05) == "different"
    got = rc.text(results, ["a"] * 6, ["b"] * 6).split("\n")
    assert got[4] == (f"jain        different          {np.median(jb) - np.median(ja):+.4f}  "
                      f"{f'[{ci90[0]:+.4f}, {ci90[1]:+.4f}]':<24} {f'[{ci95[0]:+.4f}, {ci95[1]:+.4f}]':<24} ±5%")
    assert got[4].split()[2].startswith("-0.")  # two flows split 80/20 are less fair than 60/40
    assert got[-7:] == [
        "throughput per run (Mbit/s):",
        "  A: 101.250 100.000 100.000 100.000 100.000 100.000",
        "  B: 100.000 100.000 100.000 100.000 100.000 100.000",
        "jain per run:",
        "  A: 0.9633 0.9901 0.9455 0.9750 0.9808 0.9538",
        "  B: 0.7353 0.7613 0.7094 0.7483 0.7223 0.7742",
        "bootstrap over runs: 1000 resamples, percentile intervals, seed 2",
    ]


def test_a_table_of_nothing_resampled_names_no_bootstrap() -> None:
    a, b = scaled_runs("a", A_F), scaled_runs("b", B_F)
    got = rc.text(rc.compare_run_sets(a, b, parse_statistics("max,min"), "5%", seed=7), ["a"] * 6, ["b"] * 6)
    assert got.split("\n")[-1] == "  B: 0.022 0.023 0.024 0.024 0.025 0.026"
    assert "bootstrap" not in got and got.count("not resolvable") == 2


# ---- the HDR plot's grid and bands ---------------------------------------------------------------------------------
def hdr_grid(limit: float, per_decade: int = 20) -> list[float]:
    """0 % and then ``per_decade`` steps per decade of 1/(1 - p) up to the limit, and the limit itself unless a
    step already falls on it."""
    top = math.log10(100 / (100 - limit))
    ps = [100 * (1 - 10 ** (-j / per_decade)) for j in range(int(top * per_decade + 1e-9) + 1)]
    return ps if abs(ps[-1] - limit) < 1e-9 else ps + [limit]


@pytest.mark.parametrize("limit", [99.0, 99.6318, 90.0, 50.0, 99.99])
def test_the_percentile_grid_is_twenty_steps_per_decade_on_the_hdr_axis_up_to_the_limit(limit) -> None:
    grid = rc.percentile_grid(limit)
    want = hdr_grid(limit)
    assert grid.size == len(want) and grid[0] == 0.0 and grid[-1] == pytest.approx(limit, abs=1e-9)
    assert grid == pytest.approx(want, abs=1e-9)
    assert np.all(np.diff(grid) > 1e-6)
    assert rc.percentile_grid(limit, 10) == pytest.approx(hdr_grid(limit, 10), abs=1e-9)


def test_a_limit_within_1e_10_of_a_grid_point_adds_no_second_point() -> None:
    g = 100 * (1 - 10 ** -1.5)  # 96.83772233983...: the 31st point
    grid = rc.percentile_grid(g + 1e-11)
    assert grid.size == 31 and grid[-1] == pytest.approx(g, abs=1e-10)
    assert rc.percentile_grid(99.0).size == 41 and rc.percentile_grid(99.0)[-1] == 99.0


def test_bands_hold_each_runs_percentiles_their_median_and_order_statistic_or_range_bands() -> None:
    """A: 5 runs (one below the minimum: the range of the runs); B: 8 runs (the 95 % order-statistic interval
    of their median, ranks (1, 7) of 8 by the exact binomial sums)."""
    rng = np.random.default_rng(11)
    lat = {"A": [np.rint(20_000 * rng.lognormal(0, 0.3, 800)) for _ in range(5)],
           "B": [np.rint(21_000 * rng.lognormal(0, 0.3, 900 + 50 * i)) for i in range(8)]}
    bands = rc.percentile_bands([latency_run(f"a{i}", x) for i, x in enumerate(lat["A"])],
                                [latency_run(f"b{i}", x) for i, x in enumerate(lat["B"])])
    limit = 100 * 0.025 ** (1 / 800)  # the highest percentile the smallest run (800 latencies) resolves
    assert bands.limit_percent == pytest.approx(limit) and bands.percent == pytest.approx(hdr_grid(limit), abs=1e-9)
    assert bands.band_label == {"A": "range of 5 runs (too few for an interval)",
                                "B": "95 % interval of the median of 8 runs"}
    j, k = shortest_ranks(8)
    assert (j, k) == (1, 7)
    for name, runs in lat.items():
        vals = np.array([[discrete(np.sort(x), p) for p in bands.percent] for x in runs])
        assert bands.per_run[name].shape == (len(runs), bands.percent.size)
        np.testing.assert_array_equal(bands.per_run[name], vals)
        np.testing.assert_array_equal(bands.median[name], np.median(vals, axis=0))
        s = np.sort(vals, axis=0)
        lo, hi = (s[0], s[-1]) if name == "A" else (s[j - 1], s[k - 1])
        np.testing.assert_array_equal(bands.low[name], lo)
        np.testing.assert_array_equal(bands.high[name], hi)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bands.flips = []  # type: ignore[misc]


def test_six_runs_are_enough_for_the_interval_band_and_names_label_the_sets() -> None:
    a, b = scaled_runs("a", A_F), scaled_runs("b", B_F)
    bands = rc.percentile_bands(a, b, names=("before", "after"))
    assert bands.band_label == {"before": "95 % interval of the median of 6 runs",
                                "after": "95 % interval of the median of 6 runs"}
    assert set(bands.per_run) == set(bands.median) == {"before", "after"}
    with pytest.raises(ValueError):
        rc.percentile_bands(a, b, names=("A", "B", "C"))  # one name per set


def test_a_flip_after_percentiles_where_the_medians_tie_is_found() -> None:
    """B faster than A up to rank 300 of 1000, equal up to rank 700, slower above: one flip, at the first grid
    percentile whose rank passes 700."""
    r = np.arange(1, 1001)
    a_lat = 10.0 * r
    b_lat = np.where(r <= 300, 10.0 * r - 5, np.where(r <= 700, 10.0 * r, 10.0 * r + 5))
    bands = rc.percentile_bands([latency_run(f"a{i}", a_lat) for i in range(2)],
                                [latency_run(f"b{i}", b_lat) for i in range(3)])
    ranks = [max(1, math.ceil(Decimal(repr(float(p))) * 10)) for p in bands.percent]  # of 1000 latencies
    assert any(300 < k <= 700 for k in ranks) and ranks[0] == 1
    assert bands.flips == [next(float(p) for p, k in zip(bands.percent, ranks, strict=True) if k > 700)]
    opposite = rc.percentile_bands([latency_run("b", b_lat)], [latency_run("a", a_lat)])
    assert opposite.flips == bands.flips


def test_bands_need_latency_runs_with_latencies() -> None:
    a, b = jain_sets()
    with pytest.raises(ValueError, match="^an HDR percentile plot needs latency runs$"):
        rc.percentile_bands(scaled_runs("a", A_F), b)
    with pytest.raises(ValueError, match="^an HDR percentile plot needs latencies in every run$"):
        rc.percentile_bands(scaled_runs("a", A_F), [latency_run("empty", [])])
