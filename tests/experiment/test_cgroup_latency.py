"""Offline analysis of the latency-point experiment: exact percentiles against a plain-Python reference,
and a point's analysis on a generated capture pair with known truth (no root needed)."""

from __future__ import annotations

import bisect
import math
from fractions import Fraction

import numpy as np
import plotly.graph_objects as go
import pytest

from benchbook.analysis.percentiles import REPORTED_PERCENTILES, discrete_percentiles, exact_ladder
from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.experiment import cgroup_latency as cl
from benchbook.tools import loadgen


def ref_percentile(values: list[int], p: float) -> int:
    """Smallest value with at least p % of the values at or below it (plain Python, p as the exact decimal it
    is written as: 99.9 is 999/1000)."""
    s = sorted(values)
    need = Fraction(repr(float(p))) * len(s) / 100
    for v in s:
        if bisect.bisect_right(s, v) >= need:  # how many values are <= v
            return v
    return s[-1]


def test_discrete_percentiles_match_reference():
    rng = np.random.default_rng(7)
    vals = rng.integers(1, 50, 397).tolist()  # many ties
    got = discrete_percentiles(np.sort(np.array(vals)), [0.1, 25, 50, 90, 99, 99.9, 100])
    for p in (0.1, 25, 50, 90, 99, 99.9, 100):
        assert got[p] == ref_percentile(vals, p), p
    assert discrete_percentiles(np.array([], dtype=np.int64), [50.0, 99.99]) == {50.0: None, 99.99: None}
    # the exact-rank edge: 1000 distinct values, p = 99.9 is the 999th (floating point alone says the 1000th)
    thousand = np.arange(1, 1001)
    assert discrete_percentiles(thousand, [99.9])[99.9] == ref_percentile(thousand.tolist(), 99.9) == 999


def test_percentile_ladder_is_exact_and_monotone():
    rng = np.random.default_rng(3)
    vals = rng.integers(1000, 100000, 2000)
    pct, v = exact_ladder(vals)
    assert np.all(np.diff(v) >= 0) and pct[0] == 0.0 and pct[-1] < 100.0
    for p, x in list(zip(pct, v, strict=True))[:: max(1, len(pct) // 25)]:
        assert x == ref_percentile(vals.tolist(), p)


def test_analyse_point_on_generated_pair_with_known_truth(tmp_path):
    truth = make_capture_pair(tmp_path / "pre.pcap", tmp_path / "post.pcap", n_packets=20000, rate_pps=50000,
                              latency=LatencyModel(base_ns=6000, tail_mean_ns=800, spike_prob=1e-3),
                              loss=0.01, reorder=0.002, seed=11, id_offset=loadgen.ID_OFFSET)
    an = cl.analyse_point(tmp_path)
    c = an["counts"]
    assert (c["pre"], c["post"], c["matched"], c["lost"]) == (truth.pre, truth.post, truth.matched, truth.lost)
    kept = truth.latency_ns[truth.latency_ns >= 0]
    assert an["max_ns"] == kept.max() and an["min_ns"] == kept.min()
    ref = sorted(kept.tolist())
    for p in ("50", "99", "99.9"):
        assert an["percentiles_ns"][p] == ref_percentile(ref, float(p))
    # the summary's percentiles (analysis.percentiles.REPORTED_PERCENTILES): about 19,800 matched packets cannot
    # resolve p99.99 (36,887 needed) nor p99.999: null with the reason, never a number (V2)
    assert list(an["percentiles_ns"]) == list(REPORTED_PERCENTILES)
    assert an["percentiles_ns"]["99.99"] is None and an["percentiles_ns"]["99.999"] is None
    assert an["unresolved_percentiles"]["99.99"] == f"not resolvable at N = {c['matched']}: p99.99 needs N >= 36887 " \
                                                    "for a 95 % interval"
    assert set(an["unresolved_percentiles"]) == {"99.99", "99.999"}
    assert (tmp_path / "latencies.parquet").exists()


def _point(mode, rep, maxv, p999, counters):
    return {"mode": mode, "rate_pps": 1000.0, "repetition": rep, "status": "complete", "dir": f"raw/{mode}/{rep}",
            "analysis": {"max_ns": maxv, "percentiles_ns": {"99.9": p999}},
            "perf": {"status": "run", "counters": counters}}


def test_worst_repetition_and_perf_table_keep_missing_as_missing():
    ns = {"event": "instructions", "value": None, "unit": "", "status": "not supported"}
    tc = lambda v: {"event": "task-clock", "value": v, "unit": "msec", "status": "counted"}  # noqa: E731
    pts = [_point("v1", 0, 100, 50, [tc(10.0), ns]), _point("v1", 1, 300, 40, [tc(20.0), ns]),
           _point("v1", 2, 200, 60, [tc(30.0), ns])]
    assert cl.worst_repetition(pts)["repetition"] == 1
    assert cl.worst_repetition(pts, "99.9")["repetition"] == 2
    result = {"params": {"isolation_modes": ["v1", "v2"]}, "points": pts,
              "arms": {"v1": {"runnable": True, "reason": ""}, "v2": {"runnable": False, "reason": "no v2 cpuset"}}}
    t = cl.perf_table(result)
    row = t[(t["mode"] == "v1") & (t["event"] == "task-clock")].iloc[0]
    assert row["mean"] == pytest.approx(20.0) and row["runs"] == 3
    ins = t[(t["mode"] == "v1") & (t["event"] == "instructions")].iloc[0]
    assert ins["mean"] is None or math.isnan(ins["mean"])  # missing, never 0
    assert ins["status"] == "not supported"
    v2 = t[t["mode"] == "v2"]
    assert set(v2["status"]) == {"not run"} and set(v2["note"]) == {"no v2 cpuset"}


def test_capture_drops_count_unwritten_and_unseen_packets():
    assert cl._drops({"dropped_by_kernel": 2, "received_by_filter": 100, "captured": 95}, None) == 7
    assert cl._drops({"dropped_by_kernel": 0, "received_by_filter": 90, "captured": 90}, 100) == 10
    assert cl._drops({"dropped_by_kernel": None, "received_by_filter": 90, "captured": 90}, 100) is None


def test_params_reject_unknown_and_tiny_frames():
    with pytest.raises(ValueError, match="unknown experiment parameters"):
        cl.ExperimentParams.from_dict({"rate": 5})
    with pytest.raises(ValueError, match="at least 64"):
        cl.ExperimentParams.from_dict({"frame_size": 60})


def test_a_point_without_packets_before_the_dut_shows_its_loss_as_unknown_not_zero():
    cap = {"captured": 0, "dropped_by_kernel": 0, "received_by_filter": 0}
    p = {"mode": "v1", "rate_pps": 1000.0, "repetition": 1, "status": "complete",
         "loadgen": {"sent": 1000, "requested_pps": 1000.0, "achieved_pps": 1000.0, "frame_size": 64},
         "captures": {"pre": cap, "post": cap},
         "analysis": {"counts": {"pre": 0, "post": 0, "matched": 0, "lost": 0}, "max_ns": None,
                      "percentiles_ns": {"50": None, "99": None, "99.9": None}}}
    assert cl.point_metrics(p)["loss_fraction"] is None
    assert "loss unknown," in cl.point_label(p) and "0.00 %" not in cl.point_label(p)
    fig = cl.annotate_points(go.Figure(), {"params": {"isolation_modes": ["v1"]}, "arms": {}, "points": [p]}, 1000.0)
    text = fig.layout.annotations[0].text
    assert "loss unknown," in text and "0.00 %" not in text
