"""cca_pairs' per-run statistics (what the Turković verdicts are judged from) on recorded iperf3 output, and its
set summaries: the median over runs with an order-statistic interval kept inside the statistic's range, none
from fewer than 6 runs (issue 21: no t-interval from 3 skewed values with a negative RTT bound)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis.intervals import MIN_RUNS, RATE, SHARE, jain_range
from benchbook.experiment import cca_pairs
from benchbook.testbed.dumbbell import FlowResult
from benchbook.tools.iperf3 import read_report

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def _flow(index: int, cca: str) -> FlowResult:
    return FlowResult(index, cca, cca, 0.0, read_report(DATA / "iperf3-cubic-2streams.json"))


def test_one_runs_statistics_of_two_identical_flows() -> None:
    """The same recorded report (two streams of one client, -P 2) as both flows: equal throughputs, shares of one
    half, the highest and lowest flow the same; Jain's index over the four streams' interval rates (two pairs of
    equal streams, the two streams of the recording nearly equal) is within 1e-3 of 1 and never above it; each
    statistic names its unit and definition."""
    flows = [_flow(1, "cubic"), _flow(2, "cubic")]
    stats = {s.name: s for s in cca_pairs.pair_statistics(flows, ["cubic", "cubic"], 0.3)}
    mbps = flows[0].receiver_bps / 1e6
    assert mbps > 0
    assert stats["flow1_throughput_mbps"].value == pytest.approx(mbps) == stats["flow2_throughput_mbps"].value
    assert stats["flow1_throughput_mbps"].unit == "Mbit/s" and "receiver" in stats["flow1_throughput_mbps"].definition
    assert stats["flow1_share"].value == pytest.approx(0.5) == stats["flow2_share"].value
    assert stats["highest_flow_throughput_mbps"].value == pytest.approx(stats["lowest_flow_throughput_mbps"].value)
    for k in cca_pairs.JAIN_STATISTICS:
        assert stats[k].value == pytest.approx(1.0, abs=1e-3) and stats[k].value <= 1.0 and stats[k].n >= 2, stats[k]
        assert "300 ms" in stats[k].definition


def test_a_flow_without_receiver_bytes_has_no_share_and_no_extremes() -> None:
    flows = [_flow(1, "cubic"), _flow(2, "bbr")]
    for s in flows[1].report.streams:
        s.bytes_received = None
    stats = {s.name: s for s in cca_pairs.pair_statistics(flows, ["cubic", "bbr"], 0.3)}
    assert stats["flow2_throughput_mbps"].value is None
    assert stats["flow1_share"].value is None and stats["flow2_share"].value is None
    assert "highest_flow_throughput_mbps" not in stats and "lowest_flow_throughput_mbps" not in stats


def test_median_summary_keeps_bounds_in_range_and_needs_six_runs() -> None:
    """Table 5.1's old note: the BBR-vs-BBR RTT of 3 skewed runs gave the t-interval [-0.26, 17.64] ms. The
    order-statistic summary gives no interval from 3 runs (and says 6 are needed); from 6 runs its bounds are
    runs' values, so never below 0 for an RTT, never outside [1/n, 1] for Jain's index."""
    rtt_ms = [0.9, 1.1, 15.2]  # a Student-t interval of these: 5.73 +- 4.30 x 8.20 / sqrt(3), below 0
    three = cca_pairs.median_summary(rtt_ms, RATE)
    assert three["low"] is None and three["high"] is None and three["runs_needed"] == MIN_RUNS == 6
    assert three["median"] == pytest.approx(1.1) and "6 runs" in three["reason"]
    six = cca_pairs.median_summary([0.9, 1.1, 15.2, 1.0, 0.95, 14.0], RATE)
    assert 0 <= six["low"] <= six["median"] <= six["high"] and six["coverage"] >= 0.95
    assert (six["low"], six["high"]) == (0.9, 15.2)
    jain = cca_pairs.median_summary([0.51, 0.55, 0.62, 0.97, 1.0, 0.99], jain_range(2))
    assert 0.5 <= jain["low"] and jain["high"] <= 1.0
    share = cca_pairs.median_summary([0.02, 0.04, 0.03, 0.08, 0.05, 0.04], SHARE)
    assert 0 <= share["low"] <= share["median"] <= share["high"] <= 1
    assert cca_pairs.median_summary([], RATE) is None


def test_set_summary_is_the_median_over_a_sets_runs() -> None:
    """Six runs of one set: per flow the median throughput with its interval, Jain's index inside [1/2, 1],
    the shares from each run's two throughputs; runs of other sets are not mixed in."""
    def run(name: str, a_bps: float, b_bps: float, jain: float) -> dict:
        flows = [{"receiver_bps": a_bps, "mean_rtt_ms": 2.0}, {"receiver_bps": b_bps, "mean_rtt_ms": 3.0}]
        return {"set": name, "dir": f"{name}-{a_bps:g}", "ccas": ["cubic", "bbr"], "flows": flows,
                "jain_of_means": jain, "jain_mean_of_intervals": jain, "jain_min_interval": jain / 2 + 0.25}

    runs = [run("cubic-bbr", 90e6 + i * 1e6, 4e6 + i * 1e6, 0.55 + i / 100) for i in range(6)]
    result = {"runs": [*runs, run("other", 1e6, 1e6, 1.0)]}
    s = cca_pairs.set_summary(result, "cubic-bbr")
    assert s["repetitions"] == 6 and "other" not in s["runs"]
    cubic = s["flows"][0]["throughput_mbps"]
    assert cubic["median"] == pytest.approx(92.5) and (cubic["low"], cubic["high"]) == (90.0, 95.0)
    assert 0.5 <= s["jain_mean_of_intervals"]["low"] <= s["jain_mean_of_intervals"]["high"] <= 1.0
    bbr_share = s["shares"][1]
    assert bbr_share["median"] == pytest.approx((6 / 98 + 7 / 100) / 2)  # shares (4 + i) / (94 + 2 i) rise with i
    assert 0 < bbr_share["low"] <= bbr_share["high"] < 0.1
    assert cca_pairs.set_summary(result, "absent") is None
