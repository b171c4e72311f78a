"""The one discrete-percentile rule (benchbook.analysis.percentiles) at its exact-rank edges, against an
independent definition in exact rational arithmetic, and every exact percentile in the library agreeing with it.

The definition: the discrete p-th percentile of N samples is the smallest sample v with at least p % of the
samples at or below it, i.e. count(x <= v) * 100 >= p * N, where p is the decimal it is written as (99.9 is
999/1000). Floating point gets this wrong exactly where p * N / 100 is an integer (99.9 / 100 * 1000 is
999.0000000000001), so the edges below are those integers.

hypothesis is not in the lock; the property checks use seeded numpy generators instead.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.latency_report import exact_from_buckets
from benchbook.analysis.percentiles import (
    REPORTED_PERCENTILES,
    discrete_percentiles,
    discrete_rank,
    exact_ladder,
    ladder_value,
    nearest_rank,
)

EDGE_PERCENTILES = ("0", "0.1", "1", "10", "12.5", "25", "33.3", "50", "66.7", "75", "90", "95", "99", "99.5",
                    "99.9", "99.95", "99.99", "99.999", "99.9999", "100")


def rank_by_definition(p: str, n: int) -> int:
    """1-based rank of the smallest of n distinct samples with count(x <= v) * 100 >= p * n (p exact)."""
    need = Fraction(p) * n / 100
    for r in range(1, n + 1):
        if r >= need:
            return r
    raise AssertionError("unreachable: r = n satisfies any p <= 100")


def rank_by_fraction(p: str, n: int) -> int:
    """The same rank in closed form: max(1, ceil(p * n / 100)) in exact rational arithmetic."""
    return max(1, math.ceil(Fraction(p) * n / 100))


def test_rank_at_n_1000_p_99_9_is_999():
    assert rank_by_fraction("99.9", 1000) == rank_by_definition("99.9", 1000) == 999
    assert 99.9 / 100 * 1000 > 999, "the float product this test guards against is above the integer"
    assert discrete_rank(99.9, 1000) == 999
    assert discrete_rank(99.99, 10_000) == 9999
    assert discrete_rank(99.999, 100_000) == 99_999
    assert discrete_rank(99.9999, 1_000_000) == 999_999


def test_every_tenth_of_a_percent_at_n_1000_is_its_own_rank():
    """At N = 1000 every p = k/10 lands exactly on rank k: each one is an exact-rank edge."""
    for k in range(0, 1001):
        p = f"{k / 10:g}"
        assert discrete_rank(float(p), 1000) == max(1, k) == rank_by_fraction(p, 1000), p


def test_ranks_equal_the_definition_for_every_small_n():
    for n in range(1, 401):
        for p in EDGE_PERCENTILES:
            assert discrete_rank(float(p), n) == rank_by_definition(p, n), (p, n)


@pytest.mark.parametrize("n", [1000, 2000, 10_000, 100_000, 1_000_000, 10_000_000, 123_456_789])
def test_ranks_equal_the_exact_rational_rank_for_large_n(n):
    for p in EDGE_PERCENTILES:
        assert discrete_rank(float(p), n) == rank_by_fraction(p, n), (p, n)


def test_random_decimal_percentiles_against_fractions():
    rng = np.random.default_rng(20240914)
    for _ in range(20_000):
        digits = int(rng.integers(0, 7))
        p = f"{rng.integers(0, 100 * 10**digits + 1) / 10**digits:.{digits}f}"
        n = int(rng.choice([rng.integers(1, 50), rng.integers(1, 10**7), 10 ** int(rng.integers(1, 8))]))
        assert discrete_rank(float(p), n) == rank_by_fraction(p, n), (p, n)


def test_rank_bounds_and_bad_input():
    assert discrete_rank(0, 7) == 1 and discrete_rank(100, 7) == 7
    assert discrete_rank(-5, 7) == 1 and discrete_rank(250, 7) == 7  # clamped to [0, 100]
    assert discrete_rank(50, 0) == 0 and discrete_rank(50, -1) == 0
    assert discrete_rank(1e-300, 10**9) == 1
    with pytest.raises(ValueError, match="NaN"):
        discrete_rank(float("nan"), 10)


def test_discrete_percentiles_with_ties_against_the_definition():
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 10, 397, 1000):
        vals = np.sort(rng.integers(1, 40, n))  # many ties
        got = discrete_percentiles(vals, [float(p) for p in EDGE_PERCENTILES])
        for p in EDGE_PERCENTILES:
            want = next(v for v in vals.tolist() if sum(1 for x in vals.tolist() if x <= v) * 100 >= Fraction(p) * n)
            assert got[float(p)] == want, (p, n)
    assert discrete_percentiles(np.array([], np.int64), [50.0]) == {50.0: None}


def test_exact_ladder_points_are_discrete_percentiles():
    rng = np.random.default_rng(3)
    vals = rng.integers(1000, 100_000, 2000)
    srt = np.sort(vals)
    pct, v = exact_ladder(vals)
    assert np.all(np.diff(pct) > 0) and np.all(np.diff(v) >= 0)
    assert pct[0] == 0.0 and pct[-1] < 100.0 and v[-1] == srt[-2]  # the last resolved percentile: (N-1)/N
    for p, x in zip(pct.tolist(), v.tolist(), strict=True):
        assert x == srt[rank_by_fraction(repr(p), len(srt)) - 1], p
    # a ladder lookup is the value at the first ladder point at or above p: never below the exact percentile
    at = next(k for k, q in enumerate(pct.tolist()) if q >= 99.9)
    assert ladder_value(pct, v, 99.9) == v[at] >= srt[rank_by_fraction("99.9", 2000) - 1]
    assert ladder_value(pct, v, float(pct[5])) == v[5]
    assert ladder_value(pct, v, 100.0) == v[-1]


def test_nearest_rank_rounds_half_up_is_at_least_one_and_clamps_above_100():
    """HdrHistogram_c's and hdrh's target count: int(p/100 * N + 0.5), at least 1, p above 100 read as 100."""
    assert nearest_rank(15, 10) == 2 and nearest_rank(14, 10) == 1  # 1.5 rounds up, 1.4 down
    assert nearest_rank(0, 10) == 1 and nearest_rank(1, 10) == 1  # 0 and 0.1 samples: the first
    assert nearest_rank(100, 1000) == 1000
    assert nearest_rank(150, 1000) == 1000  # never past the last sample


def test_exact_ladder_spacing_and_its_smallest_samples():
    """30 points per decade of 1/(1-p) from p = 0 to (N-1)/N: 91 at N = 1000; a sample under ten counts as one
    decade; one sample is one point (p = 0); none is none."""
    v = np.arange(1, 1001)
    pct, _ = exact_ladder(v)
    assert len(pct) == 91 and np.array_equal(pct, exact_ladder(v, 30)[0])
    assert len(exact_ladder(v, 10)[0]) == 31
    assert len(exact_ladder(np.arange(1, 11))[0]) == 31
    assert len(exact_ladder(np.arange(1, 4))[0]) == 31
    one = exact_ladder(np.array([5]))
    assert one[0].tolist() == [0.0] and one[1].tolist() == [5]
    none = exact_ladder(np.array([], np.int64))
    assert len(none[0]) == 0 and len(none[1]) == 0


def test_ladder_value_float_tolerance_and_beyond_the_ladder():
    """A ladder percent within 1e-12 below p is p (float noise of 100 * (1 - 1/x)); one further below is not;
    p above the ladder's last point reads its last value; an empty ladder is an error."""
    vals = np.array([1, 2, 3])
    assert ladder_value(np.array([0.0, 50.0 - 0.5e-12, 90.0]), vals, 50.0) == 2
    assert ladder_value(np.array([0.0, 50.0 - 1.5e-12, 90.0]), vals, 50.0) == 3
    assert ladder_value(np.array([0.0, 50.0, 90.0]), vals, 95.0) == 3
    assert ladder_value(np.array([0.0, 50.0, 90.0]), vals, 0.0) == 1
    with pytest.raises(ValueError, match="^empty percentile ladder$"):
        ladder_value(np.array([]), np.array([], np.int64), 50.0)


# --- every exact percentile in the library goes through the one rule ------------------------------
def test_exact_distribution_at_the_edges():
    for n in (1000, 10_000):
        d = ExactDistribution(np.arange(1, n + 1), np.ones(n, np.int64))
        for p in EDGE_PERCENTILES:
            assert d.percentile(float(p)) == rank_by_fraction(p, n), (p, n)
    # counts instead of repeated values: 999 samples of 1 and one of 2 -> 99.9 % is 1, above it 2
    d = ExactDistribution([1, 2], [999, 1])
    assert d.percentile(99.9) == 1 and d.percentile(99.91) == 2


def test_hdr_histogram_at_the_edges():
    """Values below 2048 are exact buckets at 3 significant digits, so HdrHistogram's value is the sample."""
    h = HdrHistogram(1, 3_600_000_000_000, 3)
    h.record(np.arange(1, 1001))
    for p in EDGE_PERCENTILES:
        assert h.value_at_percentile(float(p)) == rank_by_fraction(p, 1000), p
    h2 = HdrHistogram(1, 3_600_000_000_000, 3)
    h2.record(np.array([1, 2]), np.array([999, 1]))
    assert h2.value_at_percentile(99.9) == 1 and h2.value_at_percentile(99.91) == 2


def test_latency_report_exact_path_at_the_edges(tmp_path):
    """The latency command's in-memory exact path and its two-pass path agree with the definition."""
    n = 1000
    lat = np.arange(1, n + 1, dtype=np.int64) * 1000  # several values per HDR bucket at this magnitude
    h = HdrHistogram(1, 3_600_000_000_000, 3)
    h.record(lat)
    pq.write_table(pa.table({"latency_ns": lat}), tmp_path / "l.parquet")
    got = exact_from_buckets(h, tmp_path / "l.parquet", [float(p) for p in REPORTED_PERCENTILES])
    for p in REPORTED_PERCENTILES:
        assert got[float(p)] == lat[rank_by_fraction(p, n) - 1], p
