"""HdrHistogram recording, statistics, percentiles and merging against plain references and the
`hdrhistogram` package (import hdrh)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram as HdrhHistogram

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram, java_fixed, percentile_iteration
from benchbook.analysis.hdr_layout import HdrLayout
from benchbook.analysis.hlog import Interval, write_hlog
from benchbook.analysis.percentiles import discrete_rank
from java_oracle import histogram_log_processor, java_format

LAYOUTS = [
    (1, 3_600_000_000_000, 3),
    (1, 10_000_000, 2),
    (1000, 3_600_000_000_000, 3),
    (20000, 3_600_000_000_000, 2),
    (1, 1 << 40, 5),
    (3, 100_000, 1),
]


def plain_counts_index(value: int, lowest: int, highest: int, sig: int) -> tuple[int, int]:
    """Independent per-value reference of HdrHistogram's index math (from the published algorithm,
    written with Python integers and no shared code). Returns (index, counts_len)."""
    unit_mag = int(math.floor(math.log2(lowest)))
    while (1 << (unit_mag + 1)) <= lowest:  # guard float log2 rounding
        unit_mag += 1
    sub_count_mag = max(1, int(math.ceil(math.log2(2 * 10**sig))))
    half_mag = sub_count_mag - 1
    sub_count = 2 ** (half_mag + 1)
    half = sub_count // 2
    smallest_untrackable = sub_count * 2**unit_mag
    buckets = 1
    while smallest_untrackable <= highest:
        smallest_untrackable *= 2
        buckets += 1
    counts_len = (buckets + 1) * half
    mask = (sub_count - 1) * 2**unit_mag
    bucket = len(bin(value | mask)) - 2 - unit_mag - (half_mag + 1)
    sub = value // 2 ** (bucket + unit_mag)
    return (bucket + 1) * half + (sub - half), counts_len


def random_values(rng: np.random.Generator, n: int, top: int) -> np.ndarray:
    # log-uniform over the whole range plus exact bucket edges and small values
    logs = rng.uniform(0, math.log(top), n)
    v = np.exp(logs).astype(np.int64)
    v[: n // 20] = rng.integers(0, 4096, n // 20)
    return np.clip(v, 0, top)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_vectorised_record_equals_plain_reference(layout):
    lowest, highest, sig = layout
    rng = np.random.default_rng(sum(layout))
    h = HdrHistogram(*layout)
    values = random_values(rng, 20_000, highest)
    h.record(values)
    ref = None
    for v in values.tolist():
        idx, n = plain_counts_index(v, lowest, highest, sig)
        if ref is None:
            ref = np.zeros(n, dtype=np.int64)
        ref[idx] += 1
    assert len(h.counts) == len(ref)
    np.testing.assert_array_equal(h.counts, ref)


# hdrh's pure-Python percentile loops walk the whole counts array: keep its layouts small
HDRH_LAYOUTS = [lay for lay in LAYOUTS if 1 <= lay[2] <= 3] + [(1, 1 << 34, 4)]


@pytest.mark.parametrize("layout", HDRH_LAYOUTS)
def test_record_equals_hdrh_record_value(layout):
    lowest, highest, sig = layout
    rng = np.random.default_rng(7 + sig)
    values = random_values(rng, 30_000, highest)
    ours = HdrHistogram(*layout)
    ours.record(values)
    theirs = HdrhHistogram(lowest, highest, sig)
    for v in values.tolist():
        assert theirs.record_value(v)
    assert theirs.counts_len == len(ours.counts)
    np.testing.assert_array_equal(np.asarray(theirs.counts[: theirs.counts_len]), ours.counts)
    assert ours.total_count == theirs.get_total_count()
    # HdrHistogram-semantics statistics equal hdrh's
    assert ours.hdr_max() == theirs.get_max_value()
    assert ours.hdr_min() == theirs.get_min_value() or theirs.counts[0] > 0
    assert ours.hdr_mean() == pytest.approx(theirs.get_mean_value(), rel=1e-12)
    assert ours.hdr_stddev() == pytest.approx(theirs.get_stddev(), rel=1e-9)
    # hdrh rounds the target rank to nearest; rank="nearest" reproduces it value for value
    ps = [0.0, 1.0, 10.0, 25.0, 33.3, 50.0, 66.7, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0]
    assert ours.percentiles(ps, rank="nearest") == theirs.get_percentile_to_value_dict(ps)
    for p in (0.0, 50.0, 99.9, 100.0):
        assert ours.value_at_percentile(p, rank="nearest") == theirs.get_value_at_percentile(p)


def test_exact_statistics_alongside_buckets():
    rng = np.random.default_rng(3)
    values = rng.integers(1_000, 5_000_000_000, 200_001)
    h = HdrHistogram()
    for chunk in np.array_split(values, 7):  # several calls exercise the moment merging
        h.record(chunk)
    assert h.exact_stats
    assert h.total_count == values.size
    assert h.min == int(values.min()) and h.max == int(values.max())
    assert h.mean == pytest.approx(sum(values.tolist()) / values.size, rel=1e-15)
    assert h.stddev == pytest.approx(float(np.std(values.astype(np.float64))), rel=1e-10)
    # exact max lies inside the bucket HdrHistogram reports
    assert h.layout.lowest_equivalent_value(h.max) <= h.max <= h.hdr_max()


def test_exact_sum_survives_int64_overflow():
    h = HdrHistogram(1, 1 << 62, 2)
    big = np.full(8, (1 << 61) + 12345, dtype=np.int64)  # sum exceeds 2**63
    h.record(big)
    assert h.mean == float((1 << 61) + 12345)
    assert h.stddev == 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_percentile_is_bucket_of_exact_discrete_percentile(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    values = rng.integers(0, 10**9, n)
    h = HdrHistogram()
    h.record(values)
    exact = ExactDistribution.from_samples(values)
    ps = [0, 0.1, 1, 5, 10, 25, 40, 50, 60, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100]
    hp = h.percentiles(ps)
    for p in ps:
        e = exact.percentile(p)
        want = h.layout.lowest_equivalent_value(e) if p == 0 else h.layout.highest_equivalent_value(e)
        assert hp[p] == want, (p, e)


def test_discrete_rank_is_exact_for_decimal_percentiles():
    assert discrete_rank(99.9, 1000) == 999  # 99.9/100*1000 is 999.0000000000001 in floats
    assert discrete_rank(50, 4) == 2
    assert discrete_rank(50, 3) == 2
    assert discrete_rank(0, 10) == 1
    assert discrete_rank(100, 10) == 10
    assert discrete_rank(10, 3) == 1
    assert discrete_rank(40, 3) == 2


def test_out_of_range_values_rejected_and_nothing_recorded():
    h = HdrHistogram(1, 1_000_000, 3)
    h.record(np.array([5, 6, 7]))
    before = h.counts.copy()
    with pytest.raises(ValueError, match=r"values\[2\] = -4 .*negative"):
        h.record(np.array([10, 11, -4, 12]))
    with pytest.raises(ValueError, match=r"values\[1\] = 5000000000 .*highest trackable"):
        h.record(np.array([10, 5_000_000_000, 12]))
    np.testing.assert_array_equal(h.counts, before)
    assert h.total_count == 3 and h.max == 7 and h.mean == 6.0
    with pytest.raises(ValueError, match="not an integer"):
        h.record(np.array([1.5]))


def test_weighted_record_equals_repeated_values():
    rng = np.random.default_rng(11)
    vals = rng.integers(0, 10**7, 500)
    cnts = rng.integers(0, 50, 500)
    a = HdrHistogram()
    a.record(vals, cnts)
    b = HdrHistogram()
    b.record(np.repeat(vals, cnts))
    np.testing.assert_array_equal(a.counts, b.counts)
    assert (a.total_count, a.min, a.max) == (b.total_count, b.min, b.max)
    assert a.mean == pytest.approx(b.mean, rel=1e-15)
    assert a.stddev == pytest.approx(b.stddev, rel=1e-9)


def test_merge_same_layout_equals_recording_all():
    rng = np.random.default_rng(5)
    x, y = rng.integers(0, 10**8, 10_000), rng.integers(10**6, 10**10, 3_000)
    a, b, both = HdrHistogram(), HdrHistogram(), HdrHistogram()
    a.record(x)
    b.record(y)
    both.record(np.concatenate([x, y]))
    a.merge(b)
    np.testing.assert_array_equal(a.counts, both.counts)
    assert a.exact_stats
    assert (a.min, a.max, a.total_count) == (both.min, both.max, both.total_count)
    assert a.mean == pytest.approx(both.mean, rel=1e-15)
    assert a.stddev == pytest.approx(both.stddev, rel=1e-9)


def test_merge_different_layout_lands_at_lowest_equivalent_value():
    src = HdrHistogram(20000, 3_600_000_000_000, 2)
    src.record(np.array([25_000, 1_234_567, 99_999_999]))
    dst = HdrHistogram(1, 3_600_000_000_000, 3)
    dst.merge(HdrHistogram.decode(src.encode()))
    assert not dst.exact_stats
    vals, counts = dst.recorded("lowest")
    want = sorted(src.layout.lowest_equivalent_value(v) for v in (25_000, 1_234_567, 99_999_999))
    assert [dst.layout.lowest_equivalent_value(v) for v in want] == vals.tolist()
    assert counts.tolist() == [1, 1, 1]
    too_small = HdrHistogram(1, 1000, 3)
    with pytest.raises(ValueError, match="highest trackable"):
        too_small.merge(src)


def test_empty_histogram():
    h = HdrHistogram()
    assert h.total_count == 0 and h.min == 0 and h.max == 0 and h.mean == 0.0
    assert h.value_at_percentile(99) == 0
    assert len(h.percentile_ladder()) == 0
    back = HdrHistogram.decode(h.encode())
    assert back.total_count == 0


def test_layout_matches_hdrh_parameters():
    for lowest, highest, sig in LAYOUTS:
        lay = HdrLayout(lowest, highest, sig)
        ref = HdrhHistogram(lowest, highest, sig)
        assert (lay.unit_magnitude, lay.sub_bucket_count, lay.bucket_count, lay.counts_len) == (
            ref.unit_magnitude, ref.sub_bucket_count, ref.bucket_count, ref.counts_len)
        idx = np.arange(lay.counts_len)
        lows = lay.lowest_values(idx)
        highs = lay.highest_values(idx)
        for i in range(0, lay.counts_len, max(1, lay.counts_len // 500)):
            assert lows[i] == ref.get_value_from_index(i)
            assert highs[i] == ref.get_highest_equivalent_value(ref.get_value_from_index(i))
    with pytest.raises(ValueError, match="significant_figures"):
        HdrLayout(1, 1000, 6)
    with pytest.raises(ValueError, match="highest_trackable_value"):
        HdrLayout(100, 150, 2)


def plain_percentile_iteration(values_hi, counts, ticks):
    """Reference: HdrHistogram's PercentileIterator as published (Java), bucket by bucket."""
    total = sum(counts)
    rows = []
    level = 0.0
    cum = 0
    i = 0
    fresh = True
    while cum < total:
        # advance to next reporting level
        while True:
            if fresh:
                cum += counts[i]
                fresh = False
            if counts[i] and 100.0 * cum / total >= level:
                rows.append((level, values_hi[i], cum))
                ticks_now = ticks * int(2 ** (int(math.log(100.0 / (100.0 - level)) / math.log(2)) + 1))
                level += 100.0 / ticks_now
                break
            i += 1
            fresh = True
    rows.append((100.0, values_hi[i], cum))
    return rows


@pytest.mark.parametrize("ticks", [1, 5, 6, 9])  # 6 and 9: levels summed to just below 75 and 87.5
def test_percentile_ladder_follows_hdrhistogram_iteration(ticks):
    rng = np.random.default_rng(ticks)
    h = HdrHistogram()
    h.record(rng.integers(1, 10**6, 5_000))
    h.record(np.array([10**9, 2 * 10**9]))
    ladder = h.percentile_ladder(ticks)
    vals, counts = h.recorded()
    ref = plain_percentile_iteration(vals.tolist(), counts.tolist(), ticks)
    assert list(zip(ladder["percentile"], ladder["value"], ladder["count"], strict=True)) == ref
    assert ladder["percentile"].iloc[0] == 0.0 and ladder["percentile"].iloc[-1] == 100.0
    if ticks == 5:  # the familiar HistogramLogProcessor levels
        np.testing.assert_allclose(ladder["percentile"].iloc[:12],
                                   [0, 10, 20, 30, 40, 50, 55, 60, 65, 70, 75, 77.5])
    # the HDR plot's points (benchbook latency's hdr.html) are the same iteration, without the table
    percent, values = h.ladder_points(ticks)
    assert list(zip(percent, values, strict=True)) == [(p, v) for p, v, _ in ref]
    assert [len(a) for a in HdrHistogram().ladder_points()] == [0, 0]
    # without an argument both take HistogramLogProcessor's default, 5 ticks per half distance
    five = [p for p, *_ in plain_percentile_iteration(vals.tolist(), counts.tolist(), 5)]
    assert list(h.ladder_points()[0]) == list(h.percentile_ladder()["percentile"]) == five


def _tie_and_ladder_values() -> list[float]:
    """Doubles whose shortest decimal ends in a 5 just past 0, 2, 3 or 12 decimals (where Java and C round
    differently), the same times 1000, random ones from 1e-6 to 1e15, and the ladder's own levels / 100 and
    1/(1 - level/100) up to 10^6 samples."""
    rng = np.random.default_rng(7)
    vals: list[float] = [0.0, 1.0, 0.5, 2.5, 1e-13, 999.9995, 9.2e18, 1e25, 1.7976931348623157e308, -2.5, -0.0,
                         math.inf, -math.inf, math.nan]  # 1e25 and the largest double: more digits than 28
    for d in (0, 2, 3, 12):
        k = rng.integers(0, 10 ** (d + 1) // 10, 200) * 10 + 5
        vals += [float(x) / 10 ** (d + 1) for x in k] + [float(x) / 10 ** (d + 1) * 1000 for x in k[:50]]
    vals += list(rng.uniform(0, 1, 300)) + list(10 ** rng.uniform(-6, 15, 300))
    levels = [lv / 100 for lv, _ in percentile_iteration(np.arange(1, 10**6 + 1), 10**6, 5)]
    return vals + levels + [1 / (1 - lv) for lv in levels if lv < 1]


def test_java_fixed_is_javas_string_format():
    """HistogramLogProcessor's text is Java's String.format: the shortest decimal of the double rounded half up
    (0.9997802734375 -> 0.999780273438), where Python's % rounds the binary value (-> ...437)."""
    vals = _tie_and_ladder_values()
    forms = [("%.12f", 12, 0), ("%.3f", 3, 0), ("%.2f", 2, 0), ("%.0f", 0, 0), ("%12.3f", 3, 12), ("%14.2f", 2, 14)]
    java = java_format([f for f, _, _ in forms], vals)
    for i, (pattern, dec, width) in enumerate(forms):
        ours = [java_fixed(v, dec, width) for v in vals]
        wrong = [(v, row[i], o) for v, row, o in zip(vals, java, ours, strict=True) if row[i] != o]
        assert wrong == [], pattern
        assert sum(row[i] != pattern % v for v, row in zip(vals, java, strict=True)) > 100  # the cases C rounds apart
    assert java_fixed(0.9997802734375, 12) == "0.999780273438" and f"{0.9997802734375:.12f}" == "0.999780273437"


@pytest.mark.parametrize("seed", [0, 3])
def test_percentile_text_is_histogramlogprocessors(tmp_path, seed):
    """Heavy-tailed histograms of 20,000 and 45,000 values written as a one-interval .hlog: HistogramLogProcessor's
    text in ns and ms and CSV in us, byte for byte (a ladder that goes on past 99.978 % prints level 0.9997802734375,
    a tie Java rounds up and Python down)."""
    rng = np.random.default_rng(seed)
    v = np.clip((rng.pareto(1.2, 20_000 + 25_000 * seed) * rng.integers(10, 10**5) + 1), 1, 10**12).astype(np.int64)
    h = HdrHistogram()
    h.record(v)
    log = write_hlog(tmp_path / "one.hlog", [Interval(0.0, 1.0, None, None, histogram=h)], start_time=0.0,
                     base_time=0.0)
    for ratio, csv in ((1.0, False), (1000.0, True), (1e6, False)):  # in ms every value fits its 12 columns
        java = histogram_log_processor("-i", str(log), "-outputValueUnitRatio", str(ratio), *(["-csv"] if csv else []))
        assert h.percentile_distribution(value_scale=ratio, csv=csv) == java
        assert ("0.999780273438" in java) and len(java.splitlines()) > 70


def test_percentile_distribution_text():
    h = HdrHistogram()
    h.record(np.arange(1, 10_001))
    text = h.percentile_distribution(value_scale=1000.0)
    lines = text.splitlines()
    assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    assert lines[1] == ""
    first = lines[2].split()
    assert first == ["0.001", "0.000000000000", "1", "1.00"]
    last_row = [ln for ln in lines if not ln.startswith("#")][-1].split()
    assert last_row == ["10.007", "1.000000000000", "10000"]  # highest equivalent of 10000, /1000
    ref = HdrhHistogram(1, 3_600_000_000_000, 3)
    for v in range(1, 10_001):
        ref.record_value(v)
    # Mean/StdDeviation from bucket mid-points, as HdrHistogram prints them (5.001, not 5.0005)
    ref_mean, ref_stddev = ref.get_mean_value() / 1000.0, ref.get_stddev() / 1000.0
    assert lines[-3] == f"#[Mean    = {ref_mean:12.3f}, StdDeviation   = {ref_stddev:12.3f}]"
    assert lines[-3] == "#[Mean    =        5.001, StdDeviation   =        2.887]"
    assert lines[-2] == "#[Max     =       10.007, Total count    =        10000]"
    assert lines[-1] == f"#[Buckets = {h.layout.bucket_count:12d}, SubBuckets     = {2048:12d}]"
    csv = h.percentile_distribution(csv=True).splitlines()
    assert csv[0] == '"Value","Percentile","TotalCount","1/(1-Percentile)"'
    assert csv[-1].endswith(",Infinity")
