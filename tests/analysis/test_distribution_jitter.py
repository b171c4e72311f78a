"""ExactDistribution, RFC 3550 jitter, worst-N and per-interval histograms against plain
references."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.jitter import (
    IntervalRecorder,
    WorstN,
    interval_histograms,
    interval_summary,
    latency_stddev,
    rfc3550_jitter,
    rfc3550_jitter_final,
    worst_n,
)


def plain_discrete_percentile(samples: list, p: float):
    """Smallest sample with at least p percent of samples at or below it (brute force)."""
    s = sorted(samples)
    n = len(s)
    for v in s:
        at_or_below = sum(1 for x in s if x <= v)
        if at_or_below * 100 >= Fraction(str(p)) * n:
            return v
    return s[-1]


@pytest.mark.parametrize("seed", range(4))
def test_exact_percentiles_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    samples = rng.integers(0, 50, n).tolist()  # many ties
    d = ExactDistribution.from_samples(samples)
    for p in (0, 1, 10, 25, 33.3, 50, 66.6, 75, 90, 99, 99.9, 100):
        assert d.percentile(p) == plain_discrete_percentile(samples, p), (n, p)
    assert d.count == n
    assert d.min == min(samples) and d.max == max(samples)
    assert d.mean == pytest.approx(sum(samples) / n, rel=1e-15)
    assert d.stddev == pytest.approx(float(np.std(samples)), rel=1e-12)  # population


def test_exact_distribution_construction_and_merge():
    d = ExactDistribution([5, 1, 5, 3, 7], [1, 2, 3, 0, 4])  # unsorted, duplicate 5, zero count
    assert d.values.tolist() == [1, 5, 7] and d.counts.tolist() == [2, 4, 4]
    e = ExactDistribution.from_samples([1, 1, 2])
    m = d.merge(e)
    assert m.values.tolist() == [1, 2, 5, 7] and m.counts.tolist() == [4, 1, 4, 4]
    assert m == ExactDistribution.from_samples([1] * 4 + [2] + [5] * 4 + [7] * 4)
    f = ExactDistribution([6.4, 12.8], [3, 1])  # MoonGen-style decimal values
    assert f.mean == pytest.approx((6.4 * 3 + 12.8) / 4)
    assert f.percentile(75) == 6.4 and f.percentile(76) == 12.8
    assert m.merge(f).count == m.count + 4
    with pytest.raises(ValueError, match=r"counts\[1\] = -2 is negative"):
        ExactDistribution([1, 2], [1, -2])
    with pytest.raises(ValueError, match="equal length"):
        ExactDistribution([1, 2], [1])
    empty = ExactDistribution.from_samples([])
    assert empty.count == 0 and math.isnan(empty.mean) and math.isnan(empty.percentile(50))


def test_exact_sum_of_large_integers():
    d = ExactDistribution([2**62, 2**62 + 1], [4, 4])
    assert d.sum == 8 * 2**62 + 4  # beyond int64: computed exactly
    assert d.mean == 2**62 + 0.5


def test_exact_ladder_and_hdr_agree_on_bucket_resolution():
    rng = np.random.default_rng(2)
    samples = rng.integers(1, 10**6, 10_000)
    d = ExactDistribution.from_samples(samples)
    h = d.to_hdr()
    ladder = d.percentile_ladder()
    for p, v in zip(ladder["percentile"], ladder["value"], strict=True):
        # the exact ladder's value is inside the bucket HdrHistogram reports for that level
        hv = h.value_at_percentile(p)
        assert h.layout.lowest_equivalent_value(hv) <= v <= hv or p == 0
    text = d.percentile_distribution(value_scale=1000.0)
    max_scaled = samples.max() / 1000.0
    assert text.splitlines()[-1] == f"#[Max     = {max_scaled:12.3f}, Total count    = {10_000:12d}]"


def plain_rfc3550(s: list[int], r: list[int]) -> list[float]:
    j = 0.0
    out = [0.0]
    for i in range(1, len(s)):
        d = (r[i] - r[i - 1]) - (s[i] - s[i - 1])
        j += (abs(d) - j) / 16.0
        out.append(j)
    return out


def test_rfc3550_jitter_equals_running_estimator():
    rng = np.random.default_rng(0)
    n = 20_000
    s = np.cumsum(rng.integers(500, 1500, n))
    lat = rng.integers(10_000, 20_000, n)
    lat[5000:5010] += 1_000_000  # a burst
    r = s + lat
    got = rfc3550_jitter(s, r)
    ref = plain_rfc3550(s.tolist(), r.tolist())
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-9)
    assert rfc3550_jitter_final(s, r) == pytest.approx(ref[-1], rel=1e-11)
    # constant latency: zero jitter
    assert not rfc3550_jitter(s, s + 777).any()
    assert latency_stddev(lat) == pytest.approx(float(np.std(lat)), rel=1e-12)


def test_worst_n_equals_sort_and_streaming_equals_batch():
    rng = np.random.default_rng(1)
    n = 100_000
    lat = rng.integers(0, 5_000, n)  # many ties at the top
    t = np.arange(n) * 10
    w = worst_n(lat, t, 500)
    order = np.lexsort((np.arange(n), -lat))[:500]  # latency desc, earlier first
    assert w["latency_ns"].tolist() == lat[order].tolist()
    assert w["t_ns"].tolist() == t[order].tolist()
    stream = WorstN(500, extra_columns=("t_pre_ns",))
    for a in range(0, n, 7_777):
        stream.update(lat[a : a + 7_777], t[a : a + 7_777], t_pre_ns=t[a : a + 7_777] - 5)
    res = stream.result()
    assert res["latency_ns"].tolist() == w["latency_ns"].tolist()
    assert res["t_ns"].tolist() == w["t_ns"].tolist()
    assert (res["t_ns"] - res["t_pre_ns"]).eq(5).all()
    assert len(worst_n(lat[:10], t[:10], 50)) == 10


def test_interval_histograms_equal_masks():
    rng = np.random.default_rng(3)
    n = 50_000
    t = rng.integers(0, 5_500_000_000, n) + 1_700_000_000_000_000_000  # unsorted, 5.5 s
    lat = rng.integers(1_000, 10_000_000, n)
    origin = 1_700_000_000_000_000_000
    ivs = interval_histograms(t, lat, origin_ns=origin)
    assert [iv.start_s for iv in ivs] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    for k, iv in enumerate(ivs):
        mask = (t - origin) // 1_000_000_000 == k
        ref = HdrHistogram()
        ref.record(lat[mask])
        np.testing.assert_array_equal(iv.histogram.counts, ref.counts)
        assert iv.histogram.max == lat[mask].max()
    # chunked feeding gives the same intervals; a gap second is kept as an empty interval
    rec = IntervalRecorder(origin_ns=origin)
    keep = (t - origin) // 1_000_000_000 != 2
    for a in range(0, n, 9_999):
        rec.record(t[a : a + 9_999][keep[a : a + 9_999]], lat[a : a + 9_999][keep[a : a + 9_999]])
    chunked = rec.intervals()
    assert len(chunked) == 6 and chunked[2].histogram.total_count == 0
    np.testing.assert_array_equal(chunked[3].histogram.counts, ivs[3].histogram.counts)
    assert rec.total().total_count == int(keep.sum())
    summary = interval_summary(chunked)
    assert summary["count"].tolist() == [iv.histogram.total_count for iv in chunked]
    assert math.isnan(summary["p99"][2])


def test_interval_recorder_streams_completed_intervals():
    rng = np.random.default_rng(4)
    n = 30_000
    t = np.sort(rng.integers(0, 8_000_000_000, n))
    lat = rng.integers(1_000, 1_000_000, n)
    t[(t >= 3_000_000_000) & (t < 4_000_000_000)] += 1_000_000_000  # second 3 stays empty
    t.sort()
    batch = interval_histograms(t, lat, origin_ns=0)
    rec = IntervalRecorder(origin_ns=0)
    popped = []
    for a in range(0, n, 2_000):
        rec.record(t[a : a + 2_000], lat[a : a + 2_000])
        popped += rec.pop_completed(int(t[a : a + 2_000].min()))  # nothing later can be earlier
    popped += rec.intervals()
    assert [iv.start_s for iv in popped] == [iv.start_s for iv in batch] == [float(k) for k in range(8)]
    for a, b in zip(popped, batch, strict=True):
        np.testing.assert_array_equal(a.histogram.counts, b.histogram.counts)
    assert popped[3].histogram.total_count == 0
    with pytest.raises(ValueError, match="already popped"):
        rec.record(np.array([5]), np.array([10]))
