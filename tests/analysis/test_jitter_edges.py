"""benchbook.analysis.jitter at its edges: interval boundaries exactly at and one before a limit, packets before
the origin, the first and last interval, empty and one-element inputs, ties, and calls refused whole. The
expectations are computed by hand or by plain Python in the test."""

from __future__ import annotations

import math

import numpy as np
import pytest

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

S = 1_000_000_000


def counts(intervals) -> list[tuple[float, int]]:
    return [(iv.start_s, iv.histogram.total_count) for iv in intervals]


def test_a_refused_latency_records_nothing_of_the_call_and_names_its_position():
    rec = IntervalRecorder(origin_ns=0, highest_trackable_value=1_000_000)
    top = rec.total().layout.max_trackable_value
    with pytest.raises(ValueError, match=rf"^latency_ns\[2\] = 5000000000 cannot be recorded: above the highest "
                                         rf"trackable value {top} \(1 such values in this call; nothing of this "
                                         rf"call was recorded\)$"):
        rec.record(np.array([0, S, 2 * S + 5]), np.array([10, 20, 5_000_000_000]))
    with pytest.raises(ValueError, match=r"^latency_ns\[1\] = -3 cannot be recorded: negative \(2 such"):
        rec.record(np.array([0, S, 2 * S]), np.array([10, -3, -4]))
    assert rec.intervals() == [] and rec.total().total_count == 0
    rec.record(np.array([0, S]), np.array([top, 0]))  # both ends of the range are kept
    assert counts(rec.intervals()) == [(0.0, 1), (1.0, 1)]


def test_interval_boundaries_belong_to_the_interval_they_start():
    origin = 1_700_000_000 * S
    t = np.array([origin, origin + S - 1, origin + S, origin + 3 * S - 1, origin + 3 * S])
    ivs = interval_histograms(t, np.array([1, 2, 3, 4, 5]), origin_ns=origin)
    assert counts(ivs) == [(0.0, 2), (1.0, 1), (2.0, 1), (3.0, 1)]
    assert ivs[0].histogram.max == 2 and ivs[3].histogram.min == 5 and ivs[1].length_s == 1.0
    assert counts(interval_histograms(t, np.arange(1, 6), origin_ns=origin, include_empty=False)) == \
        [(0.0, 2), (1.0, 1), (2.0, 1), (3.0, 1)]
    gap = interval_histograms(np.array([origin, origin + 3 * S]), np.array([1, 2]), origin_ns=origin,
                              include_empty=False)
    assert counts(gap) == [(0.0, 1), (3.0, 1)]


def test_the_origin_defaults_to_the_first_time_and_early_packets_are_kept_before_it():
    rec = IntervalRecorder(interval_ns=S // 2)
    rec.record(np.array([10 * S + 7, 10 * S + 7 + S // 2]), np.array([1, 2]))
    assert rec.origin_ns == 10 * S + 7
    rec.record(np.array([10 * S + 6]), np.array([3]))  # an early packet: the interval before the origin
    assert counts(rec.intervals()) == [(-0.5, 1), (0.0, 1), (0.5, 1)]
    assert rec.total().total_count == 3


def test_pop_completed_takes_intervals_ending_at_or_before_the_time():
    rec2 = IntervalRecorder(origin_ns=0)
    rec2.record(np.array([0, S, 2 * S, 4 * S]), np.array([1, 2, 3, 4]))
    assert counts(rec2.pop_completed(S - 1)) == []  # interval 0 ends at S: not yet
    assert counts(rec2.pop_completed(S)) == [(0.0, 1)]
    # empty intervals come out with the next held one (interval 3 with 4): none is lost or repeated
    assert counts(rec2.pop_completed(4 * S)) == [(1.0, 1), (2.0, 1)]
    assert counts(rec2.pop_completed(5 * S)) == [(3.0, 0), (4.0, 1)]
    assert rec2.intervals() == [] and rec2.pop_completed(100 * S) == []
    quiet = IntervalRecorder(origin_ns=0)
    quiet.record(np.array([0, 3 * S]), np.array([1, 2]))
    assert counts(quiet.pop_completed(4 * S, include_empty=False)) == [(0.0, 1), (3.0, 1)]
    with pytest.raises(ValueError, match=r"t_ns\[0\] = 4999999999 falls into an interval already popped"):
        rec2.record(np.array([5 * S - 1, 5 * S]), np.array([1, 1]))
    rec2.record(np.array([5 * S]), np.array([9]))  # the first interval not popped yet
    assert counts(rec2.intervals()) == [(5.0, 1)]
    assert IntervalRecorder().pop_completed(S) == []


def test_empty_and_bad_inputs():
    rec = IntervalRecorder()
    rec.record(np.array([], np.int64), np.array([], np.int64))
    assert rec.origin_ns is None and rec.intervals() == []
    with pytest.raises(ValueError, match=r"t_ns \(2\) and latency_ns \(1\) differ in length"):
        rec.record(np.array([1, 2]), np.array([1]))
    with pytest.raises(ValueError, match="interval_ns must be > 0"):
        IntervalRecorder(interval_ns=0)
    with pytest.raises(TypeError, match=r"t_ns must hold integers \(nanoseconds\), got dtype float64"):
        rec.record(np.array([1.5]), np.array([1]))
    with pytest.raises(ValueError, match=r"latency_ns must be a 1-D array, got shape \(1, 1\)"):
        rec.record(np.array([1]), np.array([[1]]))
    summary = interval_summary([])
    assert len(summary) == 0


def test_interval_summary_columns_for_full_and_empty_intervals():
    ivs = interval_histograms(np.array([0, 2 * S]), np.array([1000, 3000]), origin_ns=0)
    df = interval_summary(ivs, percentiles=(50, 99.9))
    assert list(df.columns) == ["start_s", "length_s", "count", "min", "max", "mean", "p50", "p99.9"]
    assert df["count"].tolist() == [1, 0, 1]
    assert df.loc[0, "min"] == df.loc[0, "max"] == df.loc[0, "mean"] == 1000
    one = HdrHistogram()
    one.record(np.array([1000]))
    assert df.loc[0, "p50"] == one.value_at_percentile(50)
    assert all(math.isnan(df.loc[1, c]) for c in ("min", "max", "mean", "p50", "p99.9"))


def test_rfc3550_on_none_one_and_two_packets():
    assert rfc3550_jitter(np.array([], np.int64), np.array([], np.int64)).tolist() == []
    assert math.isnan(rfc3550_jitter_final(np.array([], np.int64), np.array([], np.int64)))
    assert rfc3550_jitter(np.array([5]), np.array([9])).tolist() == [0.0]
    # D = (R1 - R0) - (S1 - S0) = 160 - 0: J = 160 / 16 = 10; a negative D counts by its magnitude
    assert rfc3550_jitter(np.array([0, 100]), np.array([10, 270])).tolist() == [0.0, 10.0]
    assert rfc3550_jitter(np.array([0, 100]), np.array([170, 110])).tolist() == [0.0, 10.0]
    assert rfc3550_jitter_final(np.array([0, 100, 200]), np.array([10, 270, 370])) == pytest.approx(10 * 15 / 16)
    with pytest.raises(ValueError, match=r"t_pre_ns \(2\) and t_post_ns \(1\) differ in length"):
        rfc3550_jitter(np.array([1, 2]), np.array([3]))


def test_latency_stddev_is_the_population_one():
    assert math.isnan(latency_stddev(np.array([], np.int64)))
    assert latency_stddev(np.array([7])) == 0.0
    assert latency_stddev(np.array([1, 3])) == 1.0  # population, not sample (which would be sqrt(2))
    assert latency_stddev(np.array([3_600 * S, 3_600 * S + 2])) == 1.0  # an hour in ns: still exact


def test_worst_n_ties_zero_and_bad_columns():
    lat = np.array([5, 9, 9, 1, 9, 5])
    t = np.arange(6) * 10
    assert worst_n(lat, t, 2)["t_ns"].tolist() == [10, 20]  # of three tied 9s the earliest two
    assert worst_n(lat, t, 4)["latency_ns"].tolist() == [9, 9, 9, 5]
    assert worst_n(lat, t, 4)["t_ns"].tolist() == [10, 20, 40, 0]
    assert worst_n(lat, t, 0).empty and worst_n(lat[:0], t[:0], 5).empty
    assert worst_n(lat[:1], t[:1], 1)["latency_ns"].tolist() == [5]
    w = WorstN(2)
    w.update(np.array([9]), np.array([100]))
    w.update(np.array([9, 9]), np.array([200, 300]))  # ties with a kept packet: the earlier-fed one stays
    assert w.result()["t_ns"].tolist() == [100, 200]
    with pytest.raises(ValueError, match="n must be >= 0"):
        WorstN(-1)
    with pytest.raises(ValueError, match=r"extra columns \['b'\] differ from \['a'\]"):
        WorstN(2, ("a",)).update(lat, t, b=t)
    with pytest.raises(ValueError, match=r"extra column a \(1\) and latency_ns \(6\) differ in length"):
        WorstN(2, ("a",)).update(lat, t, a=t[:1])
    with pytest.raises(ValueError, match=r"latency_ns \(6\) and t_ns \(5\) differ in length"):
        WorstN(2).update(lat, t[:5])


def test_every_input_array_is_named_in_its_error():
    with pytest.raises(ValueError, match=r"^t_pre_ns must be a 1-D array, got shape \(1, 2\)$"):
        rfc3550_jitter(np.array([[1, 2]]), np.array([1, 2]))
    with pytest.raises(TypeError, match=r"^t_post_ns must hold integers \(nanoseconds\), got dtype float64$"):
        rfc3550_jitter(np.array([1, 2]), np.array([1.0, 2.0]))
    w = WorstN(3)
    with pytest.raises(TypeError, match=r"^latency_ns must hold integers"):
        w.update(np.array([1.5]), np.array([1]))
    with pytest.raises(ValueError, match=r"^t_ns must be a 1-D array"):
        w.update(np.array([1]), np.array([[1]]))
    # an empty float array is no data, not a wrong type
    assert rfc3550_jitter(np.array([], np.float64), np.array([], np.float64)).tolist() == []


def test_worst_n_keeps_5000_by_default_as_the_pos_evaluator():
    assert WorstN().n == 5000
    lat = np.arange(6000, dtype=np.int64)
    got = worst_n(lat, lat)
    assert len(got) == 5000 and got["latency_ns"].iloc[0] == 5999 and got["latency_ns"].iloc[-1] == 1000


def test_interval_recorder_defaults_and_a_one_nanosecond_interval():
    rec = IntervalRecorder()
    rec.record(np.array([5 * S]), np.array([7]))
    (iv,) = rec.intervals()
    h = iv.histogram
    assert (h.lowest_discernible_value, h.highest_trackable_value, h.significant_figures) == (1, 3_600_000_000_000, 3)
    assert iv.length_s == 1.0 and rec.origin_ns == 5 * S
    ns = IntervalRecorder(interval_ns=1, origin_ns=0)
    ns.record(np.array([0, 2, 2]), np.array([10, 20, 30]))
    assert [(i.start_s, i.histogram.total_count) for i in ns.intervals()] == [(0.0, 1), (1e-9, 0), (2e-9, 2)]


def test_pop_completed_counts_from_the_origin_in_intervals_of_any_length():
    rec = IntervalRecorder(interval_ns=2 * S, origin_ns=1000 * S)
    rec.record(np.array([1000 * S, 1003 * S, 1007 * S]), np.array([1, 2, 3]))
    # intervals [1000, 1002), [1002, 1004), [1004, 1006), [1006, 1008) s: the first two end by 1004 s
    assert counts(rec.pop_completed(1004 * S)) == [(0.0, 1), (2.0, 1)]
    assert counts(rec.pop_completed(1008 * S - 1)) == []
    assert counts(rec.pop_completed(1008 * S)) == [(4.0, 0), (6.0, 1)]
    # integer arithmetic to the last nanosecond: 2^60 ns after the origin, the interval ending one
    # nanosecond later is not complete (a float division would round 2^60 - 1 up and pop it)
    far = IntervalRecorder(interval_ns=1, origin_ns=0)
    far.record(np.array([0, 2**60 - 1]), np.array([1, 2]))
    assert [i.histogram.total_count for i in far.pop_completed(2**60 - 1, include_empty=False)] == [1]


def test_interval_summary_reports_the_median_99th_and_99_9th_by_default():
    ivs = interval_histograms(np.array([0, S // 2]), np.array([1000, 3000]), origin_ns=0)
    assert list(interval_summary(ivs).columns) == ["start_s", "length_s", "count", "min", "max", "mean", "p50",
                                                   "p99", "p99.9"]
