"""HdrHistogram's exact statistics and refusals at their edges: zeros, one value, values near 2^63 whose sum
carries past 2^64 twice, large values with a small spread (the shifted second moment), several refused values in
one call. Expectations are exact integer or hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchbook.analysis.hdr import HdrHistogram, format_percentile_distribution, ladder_frame, percentile_iteration
from benchbook.analysis.hdr_layout import INT64_MAX, HdrLayout


def slot_of(layout: HdrLayout, value: int) -> int:
    """Slot of a non-negative value in the counts array, from the layout's published index rule with Python
    integers (what HdrLayout.counts_index computed before it went as dead code)."""
    b = layout.bucket_index(value)
    sub = int(value) >> (b + layout.unit_magnitude)
    return ((b + 1) << layout.sub_bucket_half_count_magnitude) + (sub - layout.sub_bucket_half_count)


def test_zeros_are_values():
    h = HdrHistogram()
    h.record(np.array([0, 0]))
    assert (h.min, h.max, h.mean, h.stddev, h.total_count) == (0, 0, 0.0, 0.0, 2)
    h.record(np.array([5]))
    assert h.mean == pytest.approx(5 / 3, rel=1e-15) and h.max == 5 and h.min == 0
    one = HdrHistogram()
    one.record(np.array([0]))
    assert one.max == 0 and one.counts[0] == 1


def test_the_exact_sum_carries_past_2_to_the_64_more_than_once():
    h = HdrHistogram(1, INT64_MAX, 2)
    h.record(np.full(5, INT64_MAX))  # 5 (2^63 - 1) = 2^65 + 2^63 - 5: two carries out of the low word
    assert h.mean == INT64_MAX / 1 and h.max == INT64_MAX
    h.record(np.array([0, 0, 0, 0, 0]))
    assert h.mean == pytest.approx(INT64_MAX / 2, rel=1e-15)


def test_second_moment_of_large_values_with_a_small_spread():
    base = 2**50
    h = HdrHistogram(1, 2**52, 3)
    h.record(np.array([base, base + 1, base + 2, base + 3]))
    assert h.mean == base + 1.5
    assert h.stddev == pytest.approx(math.sqrt(1.25), rel=1e-12)  # float sums of v^2 would lose it all
    h.record(np.array([base + 3, base + 3]))  # a second call merges its moments
    vals = [0, 1, 2, 3, 3, 3]
    mean = sum(vals) / 6
    assert h.stddev == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in vals) / 6), rel=1e-12)
    small = HdrHistogram()
    small.record(np.array([0, 1, 2, 3]))
    assert small.stddev == pytest.approx(math.sqrt(1.25), rel=1e-15)


@pytest.mark.parametrize("values,pos,why,n", [
    ([-1, 5, -2], 0, "negative", 2),
    ([5, -1, 6, -7, -8], 1, "negative", 3),
    ([10**13, 5, 10**14], 0, "above", 2),
    ([5, 10**13, -1], 1, "above", 2),
])
def test_a_refused_call_names_its_first_bad_value_and_counts_them_all(values, pos, why, n):
    h = HdrHistogram(1, 10**12, 3)
    h.record(np.array([3]))
    with pytest.raises(ValueError, match=rf"^values\[{pos}\] = {values[pos]} cannot be recorded: {why}.* "
                                         rf"\({n} such values in this call; nothing of the call was recorded\)$"):
        h.record(np.array(values))
    assert h.total_count == 1 and int(h.counts.sum()) == 1 and (h.min, h.max) == (3, 3)


@pytest.mark.parametrize("layout", [(1, 10**6, 3), (1000, 10**12, 2)])
def test_counts_indices_follow_the_layout_and_mark_negatives(layout):
    h = HdrHistogram(*layout)
    values = [5, -3, 0, 7_777, -1, 123_456, 999_999]
    want = [-1 if v < 0 else slot_of(h.layout, v) for v in values]
    assert h.counts_indices(np.array(values)).tolist() == want


def test_what_record_takes_as_values():
    h = HdrHistogram(1, INT64_MAX, 2)
    h.record(np.array([[1, 2], [3, 4]]))  # any shape, read flat
    h.record(np.array([5.0, 6.0]))  # integral floats
    h.record(np.array([7, INT64_MAX], np.uint64))
    h.record(np.array([8], np.uint8))
    h.record(np.array([True]))
    for empty in (np.array([], np.float64), np.array([], np.uint64), np.array([], dtype=object), []):
        h.record(empty)
    assert h.total_count == 10 and h.max == INT64_MAX and h.min == 1
    assert h.counts[slot_of(h.layout, INT64_MAX)] == 1
    h.record(np.array([2.0**63 - 1024]))  # the largest float below 2^63
    assert h.total_count == 11


@pytest.mark.parametrize("values,message", [
    (np.array([1.0, 2.5]), r"^values\[1\] = 2\.5 is not an integer \(HdrHistogram records integers\)$"),
    (np.array([1.0, np.nan]), r"^values\[1\] = nan is not an integer"),
    (np.array([np.inf]), r"^values\[0\] = inf is not an integer"),
    (np.array([1.0, 2.0**63]), r"^values\[1\] = 9\.223372036854776e\+18 exceeds the int64 range$"),
    (np.array([1e19, 1.0]), r"^values\[0\] = 1e\+19 exceeds the int64 range$"),
    (np.array([1, 2**63], np.uint64), r"^values\[1\] = 9223372036854775808 exceeds the int64 range$"),
    (np.array(["1"]), r"^values must be integers, got dtype <U1$"),
    (np.array([1 + 0j]), r"^values must be integers, got dtype complex128$"),
])
def test_values_that_are_no_int64_are_refused_by_position(values, message):
    h = HdrHistogram(1, INT64_MAX, 2)
    with pytest.raises((ValueError, TypeError), match=message):
        h.record(values)
    assert h.total_count == 0 and not h.counts.any()
    with pytest.raises(ValueError, match=r"^counts\[0\] = 1\.5 is not an integer"):
        h.record(np.array([1]), np.array([1.5]))


def test_copy_and_empty_like_keep_layout_and_ratio_and_share_nothing():
    h = HdrHistogram(1000, 10**10, 2)
    h.conversion_ratio = 0.001
    h.record(np.array([5_000, 70_000, 70_000]))
    c = h.copy()
    assert c.layout == h.layout and c.conversion_ratio == 0.001
    assert (c.total_count, c.min, c.max, c.mean, c.stddev, c.exact_stats) == \
        (h.total_count, h.min, h.max, h.mean, h.stddev, True)
    assert c.counts.tolist() == h.counts.tolist()
    c.record(np.array([9_000_000]))
    assert h.total_count == 3 and h.max == 70_000 and c.max == 9_000_000  # the copy has its own counts
    e = h.empty_like()
    assert e.layout == h.layout and e.conversion_ratio == 0.001 and e.total_count == 0 and not e.counts.any()
    assert HdrHistogram.decode(e.encode()).conversion_ratio == 0.001
    d = HdrHistogram.decode(h.encode()).copy()  # decoded: bucket statistics, copied as such
    assert not d.exact_stats and d.total_count == 3 and d.max == h.hdr_max()


def test_weighted_record_refusals():
    h = HdrHistogram()
    with pytest.raises(ValueError, match=r"^values \(3\) and counts \(2\) differ in length$"):
        h.record(np.array([1, 2, 3]), np.array([1, 1]))
    with pytest.raises(ValueError, match=r"^counts\[1\] = -2 is negative$"):
        h.record(np.array([1, 2]), np.array([3, -2]))
    h.record(np.array([1, 2]), np.array([0, 0]))  # nothing to count
    assert h.total_count == 0


def test_weighted_recording_edges():
    h = HdrHistogram(1, 10**6, 3)
    h.record(np.array([1, 500, 0]), np.array([0, 2, 3]))  # a value with count 0 is not recorded
    assert (h.total_count, h.min, h.max) == (5, 0, 500) and h.mean == 200.0
    one = HdrHistogram()
    one.record(np.array([42]), np.array([3]))
    assert (one.total_count, one.min, one.max, one.mean) == (3, 42, 42, 42.0)
    top = h.layout.max_trackable_value
    with pytest.raises(ValueError, match=rf"^values\[2\] = {top + 1} cannot be recorded \(negative or above the "
                                         rf"highest trackable value {top}\); nothing of the call was recorded$"):
        h.record(np.array([7, 3, top + 1, top + 2]), np.array([0, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"^values\[1\] = -4 cannot be recorded"):
        h.record(np.array([7, -4]), np.array([1, 1]))
    h.record(np.array([99, top + 1]), np.array([1, 0]))  # refused values with count 0 are not looked at
    assert h.total_count == 6 and h.max == 500


def test_counts_add_up_to_the_int64_limit_and_not_beyond():
    h = HdrHistogram()
    h.record(np.array([10, 20]), np.array([INT64_MAX - 5, 5]))  # exactly the limit
    assert h.total_count == INT64_MAX
    limit = rf"^counts add up beyond the signed 64-bit limit {INT64_MAX} a histogram counts in$"
    with pytest.raises(ValueError, match=limit):
        h.record(np.array([10]), np.array([1]))
    g = HdrHistogram()
    g.record(np.array([3]))  # one counted already
    with pytest.raises(ValueError, match=limit):
        g.record(np.array([3]), np.array([INT64_MAX]))
    big = HdrHistogram()
    big.record(np.array([3]), np.array([2**62]))
    with pytest.raises(ValueError, match=limit):
        big.record(np.array([4]), np.array([2**62]))
    assert g.total_count == 1 and big.total_count == 2**62


@pytest.mark.parametrize("value,count", [(2**62, 2), (2**62, 4), (2**61 + 1, 3)])
def test_weighted_sums_beyond_int64_stay_exact(value, count):
    h = HdrHistogram(1, INT64_MAX, 2)
    h.record(np.array([value]), np.array([count]))  # value * count >= 2^63: an int64 dot product would wrap
    assert h.mean == pytest.approx(value, rel=1e-15)
    h.record(np.array([value, 1]), np.array([count, 1]))
    assert h.mean == pytest.approx((2 * value * count + 1) / (2 * count + 1), rel=1e-15)


def test_record_value_counts():
    h = HdrHistogram()
    h.record_value(5)
    h.record_value(7, 2)
    h.record_value(9, 3)
    assert h.total_count == 6 and [h.counts[slot_of(h.layout, v)] for v in (5, 7, 9)] == [1, 2, 3]


def test_reset_forgets_everything_also_decoded_statistics():
    h = HdrHistogram()
    h.record(np.array([10, 20, 30]))
    d = HdrHistogram.decode(h.encode())
    assert not d.exact_stats
    for x in (h, d):
        x.reset()
        assert (x.total_count, x.min, x.max, x.mean, x.stddev, x.exact_stats) == (0, 0, 0, 0.0, 0.0, True)
        assert not x.counts.any()
        x.record(np.array([4, 6]))
        assert (x.total_count, x.min, x.max, x.mean, x.stddev) == (2, 4, 6, 5.0, 1.0)


def test_empty_and_bucket_statistics():
    e = HdrHistogram()
    assert (e.mean, e.stddev, e.hdr_mean(), e.hdr_stddev(), e.hdr_max(), e.hdr_min()) == (0.0, 0.0, 0.0, 0.0, 0, 0)
    d = HdrHistogram.decode(e.encode())
    assert (d.mean, d.stddev, d.max, d.min, d.total_count) == (0.0, 0.0, 0, 0, 0)
    # HdrHistogram's bucket statistics of one value in the first bucket of a coarse layout (unit 2^9 = 512)
    h = HdrHistogram(1000, 10**9, 2)
    h.record(np.array([5]))
    assert (h.hdr_min(), h.hdr_max()) == (0, 511) and h.hdr_mean() == 256.0 and h.hdr_stddev() == 0.0
    dec = HdrHistogram.decode(h.encode())
    assert (dec.min, dec.max, dec.mean, dec.stddev) == (0, 511, 256.0, 0.0)


def test_percentiles_of_one_value_and_out_of_range_requests():
    h = HdrHistogram(1, 10**9, 2)
    h.record(np.array([123_456]))
    top = h.layout.highest_equivalent_value(123_456)
    assert h.percentiles([0, 50, 100]) == {0: h.layout.lowest_equivalent_value(123_456), 50: top, 100: top}
    assert HdrHistogram().percentiles([50, 99.9]) == {50: 0, 99.9: 0}
    for p in (100.5, -0.1, 101):
        with pytest.raises(ValueError, match=rf"^percentile {p} is outside 0\.\.100$"):
            h.value_at_percentile(p)


def test_recorded_values_default_ladder_and_text_parameters():
    h = HdrHistogram(1000, 10**9, 2)
    h.record(np.array([5_000, 5_000, 70_000]))
    idx = [slot_of(h.layout, 5_000), slot_of(h.layout, 70_000)]
    for which, fn in (("highest", h.layout.highest_values), ("lowest", h.layout.lowest_values),
                      ("median", h.layout.median_values)):
        vals, counts = h.recorded(which)
        assert vals.tolist() == fn(np.array(idx)).tolist() and counts.tolist() == [2, 1]
    assert h.recorded()[0].tolist() == h.recorded("highest")[0].tolist()
    assert h.percentile_ladder().equals(h.percentile_ladder(5))
    assert h.percentile_distribution() == h.percentile_distribution(5, 1.0, False)
    assert h.percentile_distribution(value_scale=1000.0) != h.percentile_distribution()


def test_merging_one_value_the_count_limit_and_the_range_edge():
    a = HdrHistogram(1, 10**6, 3)
    b = HdrHistogram(1, 10**6, 3)
    b.record(np.array([77]))
    a.merge(b)
    assert a.total_count == 1 and a.max == 77 and a.exact_stats is True
    big = HdrHistogram(1, 10**6, 3)
    big.record(np.array([5]), np.array([INT64_MAX - 1]))
    a.merge(big)  # exactly 2^63 - 1 counts
    assert a.total_count == INT64_MAX
    with pytest.raises(ValueError, match=r"^cannot merge: the total count 9223372036854775807 \+ 1 is beyond"):
        a.merge(b)
    # another layout: values up to this one's highest trackable value merge, one bucket more does not
    top = a.layout.max_trackable_value
    wide = HdrHistogram(1, 10**7, 3)
    wide.record(np.array([top]))
    small = HdrHistogram(1, 10**6, 3)
    small.merge(wide)
    assert small.total_count == 1 and small.counts[small.layout.counts_len - 1] == 1
    wider = HdrHistogram(1, 10**7, 3)
    wider.record(np.array([top + 1]))
    with pytest.raises(ValueError, match=rf"^cannot merge: the other histogram holds values up to "
                                         rf"{wider.hdr_max()}, above this histogram's highest trackable value {top}$"):
        small.merge(wider)
    decoded = HdrHistogram.decode(b.encode())
    small.merge(decoded)
    assert small.exact_stats is False and decoded.exact_stats is False
    assert HdrHistogram.decode(HdrHistogram().encode()).exact_stats is True


def test_weighted_counts_and_repr():
    h = HdrHistogram(1, 1000, 2)
    h.record(np.array([3, 9]), np.array([2, 1]))
    assert (h.total_count, h.min, h.max, h.highest_trackable_value) == (3, 3, 9, 1000)
    assert repr(h) == "HdrHistogram(lowest=1, highest=1000, sig=2, total=3, exact_stats=True)"


def test_percentile_iteration_of_nothing_and_of_one_bin():
    assert percentile_iteration(np.array([], np.int64), 0) == []
    assert percentile_iteration(np.array([0]), 0) == []
    assert percentile_iteration(np.array([1]), 1) == [(0.0, 0), (100.0, 0)]
    assert percentile_iteration(np.array([1, 2]), 2) == percentile_iteration(np.array([1, 2]), 2, 5)
    with pytest.raises(ValueError, match="^ticks_per_half must be >= 1$"):
        percentile_iteration(np.array([1]), 1, 0)


@pytest.mark.timeout(30)  # a mutant that never leaves the loop fails here instead of hanging the run
@pytest.mark.parametrize(("ticks", "rows"), [(1, 54), (5, 257)])
def test_percentile_iteration_ends_where_float_levels_stop_advancing(ticks, rows):
    """2^62 values in the first bin and one in the second: the first bin's percentage is 100.0 in binary floating
    point, so every level below 100 is reported at it. The levels close in on 100 until the next one rounds to 100
    (1 tick per half distance) or to the level itself (5 ticks); then the last bin at 100 ends the ladder."""
    big = 2**62
    got = percentile_iteration(np.array([big, big + 1]), big + 1, ticks)
    assert len(got) == rows and got[-1] == (100.0, 1)
    levels = [lv for lv, _ in got[:-1]]
    assert all(pos == 0 for _, pos in got[:-1]) and levels[0] == 0.0
    assert np.all(np.diff(levels) > 0) and 100 - 1e-13 < levels[-1] < 100.0


def test_ladder_frame_columns_and_the_inverse_tail():
    empty = ladder_frame([], np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert list(empty.columns) == ["percentile", "value", "count", "inv_one_minus_p"] and len(empty) == 0
    frame = ladder_frame([(0.0, 0), (50.0, 1), (87.5, 1), (100.0, 2)], np.array([7, 8, 9]), np.array([1, 2, 4]))
    assert list(frame.columns) == ["percentile", "value", "count", "inv_one_minus_p"]
    assert frame["value"].tolist() == [7, 8, 8, 9] and frame["count"].tolist() == [1, 2, 2, 4]
    assert frame["inv_one_minus_p"].tolist() == [1.0, 2.0, 8.0, math.inf]


def test_percentile_text_defaults_are_unscaled_text():
    h = HdrHistogram()
    h.record(np.arange(1, 5_001))
    assert h.percentile_distribution() == h.percentile_distribution(5, 1.0, False)
    kw = dict(significant_figures=3, mean=h.hdr_mean(), stddev=h.hdr_stddev(), max_value=h.hdr_max(),
              total=h.total_count, buckets=(h.layout.bucket_count, h.layout.sub_bucket_count))
    ladder = h.percentile_ladder()
    assert format_percentile_distribution(ladder, **kw) == format_percentile_distribution(
        ladder, value_scale=1.0, csv=False, **kw) == h.percentile_distribution()


def test_a_decoded_empty_histogram_then_recorded_has_exact_moments():
    h = HdrHistogram.decode(HdrHistogram().encode())
    assert h.total_count == 0 and h.exact_stats
    h.record(np.array([10, 20, 30]))
    assert (h.mean, h.stddev, h.min, h.max) == (20.0, math.sqrt(200 / 3), 10, 30)
