"""Edges of the fairness indices (issue 23): the --json shape written out whole for a flow that starts late and
one that ends early, the interval grid at 1 ns, flows sorted by number, errors naming their source, and Jain's
index refusing exactly the negative values. Each case is one a mutation of analysis/fairness.py survived."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchbook.analysis.fairness import (
    FairnessError,
    FlowSeries,
    jain_index,
    summarize,
)

S = 1_000_000_000


def test_summary_of_a_late_and_an_early_flow_written_out_whole():
    # flow 10 sends in intervals 1-3, flow 2 in 0-1 only (then no value: it ended, not 0 bit/s)
    s = FlowSeries.from_columns(["flow 10", "flow 10", "flow 10", "flow 2", "flow 2"],
                                [1 * S, 2 * S, 3 * S, 0, 1 * S], [4e6, 2e6, 2e6, 1e6, 4e6], source="run.json")
    assert s.flows == ["flow 2", "flow 10"]  # by number, not "flow 10" < "flow 2"
    assert math.isnan(s.bps[2, 0]) and math.isnan(s.bps[0, 1])
    got = summarize(s)
    assert got == {
        "source": "run.json",
        "interval_ns": S,
        "flows": [
            {"flow": "flow 2", "intervals": 2, "mean_bps": 2.5e6, "min_bps": 1e6, "max_bps": 4e6, "first_start_ns": 0},
            {"flow": "flow 10", "intervals": 3, "mean_bps": pytest.approx(8e6 / 3), "min_bps": 2e6, "max_bps": 4e6,
             "first_start_ns": 1 * S},
        ],
        "intervals": [
            {"start_ns": 0, "bps": [1e6, None], "jain": None},
            {"start_ns": S, "bps": [4e6, 4e6], "jain": 1.0},
            {"start_ns": 2 * S, "bps": [None, 2e6], "jain": None},
            {"start_ns": 3 * S, "bps": [None, 2e6], "jain": None},
        ],
        "intervals_counted": 1,
        "jain_of_means": pytest.approx(jain_index([2.5e6, 8e6 / 3])),
        "jain_mean_of_intervals": 1.0,
        "jain_min_interval": 1.0,
        "variants": {"jain_of_means": "Jain's index of per-flow mean throughputs",
                     "jain_mean_of_intervals": "mean of per-interval Jain's indices",
                     "jain_min_interval": "minimum of per-interval Jain's indices"},
        "left_out": [],
        "notes": [],
    }


def test_defaults_and_a_single_row():
    one = FlowSeries.from_columns(["a"], [5], [3.0])
    assert one.start_ns.tolist() == [5] and one.interval_ns is None
    got = summarize(one)
    assert got["source"] == "" and got["interval_ns"] is None and got["intervals_counted"] == 1
    plain = FlowSeries(flows=["a", "b"], start_ns=[0], bps=[[1.0, 1.0]])
    assert (plain.interval_ns, plain.source) == (None, "")


def test_a_one_nanosecond_grid_ends_at_the_last_start():
    s = FlowSeries.from_columns(["a", "a", "b"], [0, 2, 1], [1.0, 2.0, 3.0], interval_ns=1)
    assert s.start_ns.tolist() == [0, 1, 2]
    assert s.bps.tolist()[0][0] == 1.0 and s.bps[1, 0] == 0.0 and s.bps[1, 1] == 3.0
    assert math.isnan(s.bps[0, 1]) and math.isnan(s.bps[2, 1])


@pytest.mark.parametrize("source,prefix", [("", "flow series"), ("x.csv", "x.csv")])
def test_errors_name_the_source_or_say_flow_series(source, prefix):
    with pytest.raises(FairnessError, match=rf"^{prefix}: no rows$"):
        FlowSeries.from_columns([], [], [], source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: columns of different lengths$"):
        FlowSeries.from_columns(["a"], [0, 1], [1.0], source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: no flows$"):
        FlowSeries(flows=[], start_ns=[], bps=np.zeros((0, 0)), source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: negative throughput$"):
        FlowSeries(flows=["a"], start_ns=[0], bps=[[-1.0]], source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: throughput matrix of shape \(1, 2\), expected "
                                            r"\(1 intervals, 3 flows\)$"):
        FlowSeries(flows=["a", "b", "c"], start_ns=[0], bps=[[1.0, 2.0]], source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: interval starts are not on one grid of 2 ns$"):
        FlowSeries.from_columns(["a", "a"], [0, 3], [1.0, 1.0], interval_ns=2, source=source)


def test_jain_index_names_only_the_negative_values():
    with pytest.raises(FairnessError, match=r"negative throughputs: \[-1\.0\]$"):
        jain_index([3.0, 0.0, 0.5, -1.0])
    assert jain_index([0.0, 0.0, 4.0, 4.0]) == 0.5 and math.isnan(jain_index([0.0, 0.0]))
