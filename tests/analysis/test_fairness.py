"""Fairness indices against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchbook.analysis.fairness import (
    FairnessError,
    FlowSeries,
    convergence_time_s,
    jain_index,
    jain_of_means,
    per_interval_jain,
    rtt_fairness,
    sorted_unique,
    summarize,
)

MS = 1_000_000


def test_jain_index_hand_cases() -> None:
    assert jain_index([5.0, 5.0]) == 1.0
    assert jain_index([1.0, 0.0]) == 0.5
    assert jain_index([3.0, 1.0]) == pytest.approx(16 / 20, abs=1e-15)
    assert jain_index([1.0, 0.0, 0.0, 0.0]) == 0.25
    # Turkovic Table 5.1 Cubic/BBR averages: (85.05 + 7.89)^2 / (2 (85.05^2 + 7.89^2))
    assert jain_index([85.05, 7.89]) == pytest.approx(8637.8436 / 14591.5092, abs=1e-12)
    assert math.isnan(jain_index([0.0, 0.0]))


def test_jain_index_rejects_bad_input() -> None:
    with pytest.raises(FairnessError, match="negative"):
        jain_index([1.0, -1.0])
    with pytest.raises(FairnessError, match="non-empty"):
        jain_index([])
    with pytest.raises(FairnessError, match="NaN"):
        jain_index([1.0, math.nan])


def _two_flows() -> FlowSeries:
    # a: 2, 2, 4   b: 2, 0, 0   (Mbit/s as bps, 300 ms intervals)
    return FlowSeries(flows=["a", "b"], start_ns=np.array([0, 300, 600]) * MS,
                      bps=np.array([[2e6, 2e6], [2e6, 0.0], [4e6, 0.0]]), interval_ns=300 * MS)


def test_two_variants_differ_as_computed_by_hand() -> None:
    s = _two_flows()
    assert per_interval_jain(s).tolist() == [1.0, 0.5, 0.5]
    # means 8/3 and 2/3 Mbit/s: (10/3)^2 / (2 (64/9 + 4/9)) = 100/136
    assert jain_of_means(s) == pytest.approx(100 / 136, abs=1e-12)
    out = summarize(s)
    assert out["jain_mean_of_intervals"] == pytest.approx(2 / 3, abs=1e-12)
    assert out["jain_min_interval"] == 0.5
    assert out["jain_of_means"] == pytest.approx(100 / 136, abs=1e-12)
    assert [f["mean_bps"] for f in out["flows"]] == pytest.approx([8e6 / 3, 2e6 / 3])
    assert out["intervals_counted"] == 3
    assert set(out["variants"]) == {"jain_of_means", "jain_mean_of_intervals", "jain_min_interval"}


def test_long_rows_fill_gaps_inside_a_flow_and_leave_outside_empty() -> None:
    # flow 2 has no row at 100 ms (sent nothing: 0); flow 10 starts at 100 ms (no value at 0)
    s = FlowSeries.from_columns(["2", "10", "2", "10", "2"], [0, 100 * MS, 200 * MS, 200 * MS, 0],
                                [1.0, 3.0, 2.0, 2.0, 1.0], source="rows")
    assert s.flows == ["2", "10"]            # natural order, not string order
    assert s.interval_ns == 100 * MS
    assert s.bps[0, 0] == 2.0                # two rows of the same interval add up
    assert math.isnan(s.bps[0, 1])
    assert s.bps[1].tolist() == [0.0, 3.0]
    per = per_interval_jain(s)
    assert math.isnan(per[0])                # flow 10 has no value there: not counted
    assert per[1] == 0.5 and per[2] == 1.0
    assert summarize(s)["intervals_counted"] == 2


def test_all_zero_interval_is_not_counted() -> None:
    s = FlowSeries(flows=["a", "b"], start_ns=[0, 1, 2], bps=[[1.0, 1.0], [0.0, 0.0], [1.0, 0.0]], interval_ns=1)
    out = summarize(s)
    assert out["intervals_counted"] == 2
    assert out["jain_mean_of_intervals"] == 0.75


def test_off_grid_rows_are_an_error() -> None:
    with pytest.raises(FairnessError, match="grid"):
        FlowSeries.from_columns(["a", "a", "a"], [0, 100, 250], [1, 1, 1], source="x.parquet")


def test_convergence_time() -> None:
    rows = [[1.0, 1.0], [1.0, 0.0], [1.0, 0.2], [1.0, 0.8], [1.0, 0.9]]
    s = FlowSeries(flows=["a", "b"], start_ns=np.arange(5) * 300 * MS, bps=rows, interval_ns=300 * MS)
    per = per_interval_jain(s)   # 1, 0.5, 0.72, 0.988, 0.997
    assert per[2] == pytest.approx(1.44 / 2.08)
    assert convergence_time_s(s, threshold=0.95) == pytest.approx(0.9)
    assert convergence_time_s(s, threshold=0.95, hold_intervals=3) is None
    assert convergence_time_s(s, threshold=0.999) is None


def test_rtt_fairness_ratio() -> None:
    r = rtt_fairness({"near": 67.88, "far": 22.92}, {"near": 0.001, "far": 0.201})
    assert r["short_rtt_flow"] == "near" and r["long_rtt_flow"] == "far"
    assert r["ratio_short_over_long"] == pytest.approx(67.88 / 22.92)
    with pytest.raises(FairnessError, match="different base RTT"):
        rtt_fairness({"a": 1.0, "b": 2.0}, {"a": 0.01, "b": 0.01})


@given(st.lists(st.integers(-2**62, 2**62), max_size=60))
def test_sorted_unique_equals_numpy_unique(values):
    a = np.array(values, np.int64)
    assert np.array_equal(sorted_unique(a), np.unique(a))
