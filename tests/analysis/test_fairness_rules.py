"""The rules of analysis/fairness.py written out against plain reference computations (issue 23, round 2):
convergence time by a plain loop, RTT fairness and the per-flow Jain's index by hand, the Flent reader on files
written here with every bit-rate unit (and the version-1 file netperf-wrapper wrote), intervals.parquet's bulk
share at exactly 1 % and its interval length from summary.json, and combine() of series of different lengths and
start times. Each case is one a mutation of the module survived."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchbook.analysis.fairness import (
    FairnessError,
    FlowSeries,
    combine,
    convergence_time_s,
    flent_series,
    intervals_parquet_series,
    jain_of_means,
    rtt_fairness,
    summarize,
)

MS = 1_000_000
S = 1_000_000_000
FLENT = Path(__file__).resolve().parents[1] / "data" / "flent"
NAN = math.nan


def jain(xs) -> float:
    """Jain's index by its definition, in plain Python."""
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


# -- convergence time ------------------------------------------------------------------------------------------

def reference_convergence(starts, rows, threshold, hold):
    """A plain loop: the counted intervals (every flow has a value, not all zero), the last one below the
    threshold, and the run after it."""
    counted = [(t, jain(r)) for t, r in zip(starts, rows, strict=True)
               if not any(math.isnan(v) for v in r) and any(r)]
    if not counted or len(counted) < hold:
        return None
    last_bad = -1
    for k, (_, j) in enumerate(counted):
        if j < threshold:
            last_bad = k
    first = last_bad + 1
    if first == len(counted) or len(counted) - first < hold:
        return None
    return (counted[first][0] - counted[0][0]) / 1e9


CONVERGENCE = [  # rows of flows a, b; threshold; hold; expected seconds (300 ms intervals from 5 s)
    ([[1, 0], [1, 0.6]], None, None, 0.3),           # defaults 0.9 and 1: index 0.5 then 2.56/2.72 = 0.941
    ([[1, 1]], 0.9, 1, 0.0),                          # one counted interval, already fair
    ([[1, 1]], 0.9, 2, None),                         # fewer counted intervals than the hold
    ([[1, 1], [1, 1], [1, 1]], 0.9, 1, 0.0),          # never below: from the first interval
    ([[1, 0], [1, 1]], 1.0, 1, 0.3),                  # exactly at the threshold counts; a run of exactly `hold`
    ([[1, 0], [1, 1]], 1.0, 2, None),
    ([[1, 0], [1, 0], [1, 0], [1, 1]], 0.9, 1, 0.9),  # after the last of three bad intervals
    ([[1, 0], [1, 1], [1, 0], [1, 1], [1, 1]], 0.9, 2, 0.9),
    ([[1, 1], [1, 0]], 0.9, 1, None),                 # ends below the threshold: never converged
    ([[1, NAN], [1, NAN], [1, 0], [1, 1]], 0.9, 1, 0.3),  # b starts late: from the first counted interval
    ([[1, NAN], [0, 0], [1, 0], [1, 1]], 0.9, 1, 0.3),    # an all-zero interval does not count either
    ([[1, NAN], [0, 0]], 0.9, 0, None),               # nothing counted, even with hold 0
    ([[1, NAN], [0, 0]], 0.9, 1, None),
]


@pytest.mark.parametrize("rows,threshold,hold,want", CONVERGENCE)
def test_convergence_time_against_a_plain_loop(rows, threshold, hold, want):
    starts = [5 * S + k * 300 * MS for k in range(len(rows))]
    s = FlowSeries(flows=["a", "b"], start_ns=starts, bps=rows, interval_ns=300 * MS)
    kw = {} if threshold is None else {"threshold": threshold, "hold_intervals": hold}
    got = convergence_time_s(s, **kw)
    ref = reference_convergence(starts, rows, 0.9 if threshold is None else threshold, 1 if hold is None else hold)
    assert got == ref
    assert got == (None if want is None else pytest.approx(want, abs=1e-12))


# -- RTT fairness, Jain's index of means, summary notes ------------------------------------------------------------

def test_rtt_fairness_written_out_whole():
    got = rtt_fairness({"near": 30.0, "far": 10.0, "mid": 20.0, "no rtt": 5.0}, {"near": 0.01, "mid": 0.05, "far": 0.1})
    assert got == {"short_rtt_flow": "near", "long_rtt_flow": "far", "short_rtt_s": 0.01, "long_rtt_s": 0.1,
                   "ratio_short_over_long": 3.0, "jain_of_means": pytest.approx(jain([30.0, 10.0, 20.0]), abs=1e-15)}


def test_rtt_fairness_ratio_when_the_long_rtt_flow_gets_little_or_nothing():
    assert rtt_fairness({"a": 2.0, "b": 0.5}, {"a": 0.01, "b": 0.2})["ratio_short_over_long"] == 4.0
    assert rtt_fairness({"a": 4.0, "b": 0.0}, {"a": 0.01, "b": 0.2})["ratio_short_over_long"] == math.inf
    assert rtt_fairness({"a": 0.5, "b": 0.0}, {"a": 0.01, "b": 0.2})["ratio_short_over_long"] == math.inf
    # neither flow got anything: 0/0 is undefined, not a win of the short-RTT flow
    assert math.isnan(rtt_fairness({"a": 0.0, "b": 0.0}, {"a": 0.01, "b": 0.2})["ratio_short_over_long"])


@pytest.mark.parametrize("source,prefix", [("", "flow series"), ("run.json", "run.json")])
def test_jain_of_means_of_a_flow_without_values_names_the_source(source, prefix):
    s = FlowSeries(flows=["a", "b"], start_ns=[0, 1], bps=[[1.0, NAN], [2.0, NAN]], source=source)
    with pytest.raises(FairnessError, match=rf"^{prefix}: a flow has no values$"):
        jain_of_means(s)


def test_summary_carries_the_notes_of_the_series():
    s = FlowSeries(flows=["a"], start_ns=[0], bps=[[1.0]], meta={"notes": ["upgraded on load"]})
    assert summarize(s)["notes"] == ["upgraded on load"]


# -- Flent data files --------------------------------------------------------------------------------------------

def write_flent(path: Path, results: dict, units: dict, x=(0.0, 0.2, 0.4), step=0.2) -> Path:
    meta = {"NAME": "tcp_4up", "STEP_SIZE": step, "TOTAL_LENGTH": 0.4,
            "SERIES_META": {k: {"UNITS": u} for k, u in units.items()}}
    with gzip.open(path, "wt") as fh:
        json.dump({"version": 4, "metadata": meta, "x_values": list(x), "results": results, "raw_values": {}}, fh)
    return path


UNITS = {"TCP upload::1": "Kbits/s", "TCP upload::2": "Gbits/s", "TCP upload::3": "Mbits/s", "TCP upload::10": "bits/s",
         "TCP upload sum": "Mbits/s", "Ping (ms) ICMP": "ms", "TCP upload::1::tcp_cwnd": None}
RESULTS = {"TCP upload::1": [1, 2, None], "TCP upload::2": [0.5, 0.25, 1], "TCP upload::3": [3, 0, 1],
           "TCP upload::10": [7, 8, 9], "TCP upload sum": [1, 2, 3], "Ping (ms) ICMP": [1.5, 2.5, 3.5],
           "TCP upload::1::tcp_cwnd": [10, 20, 30], "UDP rtt": [1, 2, 3]}


def test_flent_every_bit_rate_unit_scaled_and_every_other_series_named(tmp_path):
    p = write_flent(tmp_path / "run.flent.gz", RESULTS, UNITS)
    s = flent_series(p)
    assert s.flows == ["TCP upload::1", "TCP upload::2", "TCP upload::3", "TCP upload::10"]  # by number
    assert s.bps.dtype == np.float64 and s.start_ns.dtype == np.int64
    np.testing.assert_array_equal(s.bps, np.array([[1e3, 5e8, 3e6, 7.0], [2e3, 2.5e8, 0.0, 8.0],
                                                   [NAN, 1e9, 1e6, 9.0]]))
    assert s.start_ns.tolist() == [0, 200 * MS, 400 * MS] and s.interval_ns == 200 * MS
    assert s.source == str(p)
    assert s.meta == {"format": "flent", "name": "tcp_4up", "version": 4, "notes": []}
    assert s.left_out == [
        {"flow": "Ping (ms) ICMP", "reason": "unit 'ms', not one of bits/s, Kbits/s, Mbits/s, Gbits/s"},
        {"flow": "TCP upload sum", "reason": "a Flent aggregate of other series (sum, avg, fairness), not a flow"},
        {"flow": "TCP upload::1::tcp_cwnd", "reason": "a per-flow statistic of another series (name::n::stat)"},
        {"flow": "UDP rtt", "reason": "no unit in the file (SERIES_META), not known as a bit rate"},
    ]


def test_flent_version_1_file_notes_its_upgrade_and_the_assumed_unit():
    p = FLENT / "netperf-wrapper-0.9.1-udp_flood.json.gz"
    s = flent_series(p)
    assert s.flows == ["UDP upload"] and s.interval_ns == S and s.start_ns[:3].tolist() == [0, S, 2 * S]
    assert s.meta == {"format": "flent", "name": "udp_flood", "version": 1, "notes": [
        "Flent data-format version 1 upgraded on load: no raw values stored: made from the results (FAKE_RAW_VALUES)",
        "Flent data-format version 1 upgraded on load: NETPERF_WRAPPER_VERSION renamed FLENT_VERSION",
        "a version-1 file names no units: netperf-wrapper's test definitions give UDP upload (bits/s) "
        "(Jain's indices do not depend on the unit)"]}
    assert s.left_out == [{"flow": "Ping (ms) ICMP", "reason": "no unit in the file (SERIES_META), not known as a "
                                                               "bit rate"}]


def test_flent_version_1_notes_name_every_series_of_an_assumed_unit(tmp_path):
    doc = {"metadata": {"NAME": "tcp_2up", "STEP_SIZE": 0.2, "TIME": "2015-01-01T00:00:00Z"}, "x_values": [0.0, 0.2],
           "results": {"TCP upload::2": [1, 3], "TCP upload::1": [2, 2]}}  # no version, no units: version 1
    p = tmp_path / "old.json.gz"
    with gzip.open(p, "wt") as fh:
        json.dump(doc, fh)
    s = flent_series(p)
    assert s.flows == ["TCP upload::1", "TCP upload::2"] and s.bps.tolist() == [[2e6, 1e6], [2e6, 3e6]]
    assert s.meta["notes"] == [
        "Flent data-format version 1 upgraded on load: no raw values stored: made from the results (FAKE_RAW_VALUES)",
        "a version-1 file names no units: netperf-wrapper's test definitions give TCP upload::1 (Mbits/s), "
        "TCP upload::2 (Mbits/s) (Jain's indices do not depend on the unit)"]


@pytest.mark.parametrize("x,results,message", [
    ((0.0, None, 0.4), {"a": [1, 2, 3]}, "x_values must be a list of finite numbers"),
    (([0.0], [0.2], [0.4]), {"a": [1, 2, 3]}, "x_values must be a list of finite numbers"),
    ((0.0, 0.2, 0.4), {"a": [1, 2]}, "results['a'] has 2 values for 3 x_values"),
    ((0.0, 0.2, 0.4), {"a": "none"}, "results['a'] has no values for 3 x_values"),
])
def test_flent_odd_documents_name_the_file_and_what_is_wrong(tmp_path, x, results, message):
    p = write_flent(tmp_path / "odd.flent.gz", results, {"a": "Mbits/s"}, x=x)
    with pytest.raises(FairnessError, match="^" + re.escape(f"{p}: {message}") + "$"):
        flent_series(p)


# -- benchbook's intervals.parquet -------------------------------------------------------------------------------

def write_intervals(folder: Path, rows, columns=("flow", "start_time_ns", "goodput_bps"), summary=None,
                    categories=None) -> Path:
    df = pd.DataFrame(rows, columns=list(columns))
    if categories is not None:  # a dictionary-encoded column of flow labels: pandas reads it back as categorical
        df["flow"] = pd.Categorical(df["flow"].astype(str), categories=categories)
    p = folder / "intervals.parquet"
    df.to_parquet(p, index=False)
    if summary is not None:
        (folder / "summary.json").write_text(json.dumps(summary))
    return p


def test_intervals_bulk_share_exactly_one_percent_counts(tmp_path):
    t0, t1, t2 = S, S + 100 * MS, S + 200 * MS
    # totals: flow 0 588, flow 1 400, flow 10 exactly 10 of 1000 (1 %: a competitor), flow 2 2 (0.2 %: not)
    rows = [(0, "orig", t0, 190.0), (0, "resp", t0, 10.0), (0, "orig", t1, 200.0), (0, "orig", t2, 188.0),
            (1, "orig", t0, 200.0), (1, "orig", t2, 200.0), (10, "orig", t1, 5.0), (10, "resp", t2, 5.0),
            (2, "orig", t0, 2.0)]
    # the flow column as a dictionary (categorical), with a category that has no rows at all: no flow "99"
    p = write_intervals(tmp_path, rows, ("flow", "direction", "start_time_ns", "goodput_bps"), {"bin_ms": 100},
                        categories=["0", "1", "2", "10", "99"])
    s = intervals_parquet_series(p)
    assert s.flows == ["flow 0", "flow 1", "flow 10"]
    np.testing.assert_array_equal(s.bps, np.array([[200.0, 200.0, NAN], [200.0, 0.0, 5.0], [188.0, 200.0, 5.0]]))
    assert s.start_ns.tolist() == [t0, t1, t2] and s.interval_ns == 100 * MS and s.source == str(p)
    assert s.meta == {"format": "benchbook-intervals", "metric": "goodput_bps"}
    assert s.left_out == [{"flow": "flow 2", "reason": "0.2 % of all goodput_bps (summed over intervals), below the "
                                                       "1 % bulk share"}]


def test_intervals_of_a_small_whole_and_a_file_of_exactly_the_needed_columns(tmp_path):
    p = write_intervals(tmp_path, [(0, 0, 0.5), (0, 100 * MS, 0.4), (1, 0, 0.004)])
    s = intervals_parquet_series(p)  # whole 0.904: flow 1 has 0.44 %, below the bulk share
    assert s.flows == ["flow 0"] and s.bps[:, 0].tolist() == [0.5, 0.4]
    assert s.left_out == [{"flow": "flow 1", "reason": f"{100 * 0.004 / 0.904:.3g} % of all goodput_bps (summed over "
                                                       "intervals), below the 1 % bulk share"}]
    assert s.left_out[0]["reason"].startswith("0.442 % ")


def test_intervals_negative_values_are_refused_even_when_the_totals_cancel(tmp_path):
    p = write_intervals(tmp_path, [(0, 0, -1.0), (1, 0, 1.0)])
    with pytest.raises(FairnessError, match="^" + re.escape(f"{p}: negative throughput") + "$"):
        intervals_parquet_series(p)


def test_intervals_length_from_summary_json_not_from_the_rows(tmp_path):
    p = write_intervals(tmp_path, [(0, 0, 1.0), (0, 100 * MS, 2.0), (0, 200 * MS, 3.0), (1, 0, 4.0),
                                   (1, 200 * MS, 5.0)], summary={"bin_ms": 50})
    s = intervals_parquet_series(p)
    assert s.interval_ns == 50 * MS and s.start_ns.tolist() == [0, 50 * MS, 100 * MS, 150 * MS, 200 * MS]
    assert s.bps.tolist() == [[1.0, 4.0], [0.0, 0.0], [2.0, 0.0], [0.0, 0.0], [3.0, 5.0]]


@pytest.mark.parametrize("summary", [None, {"bin_ms": "fast"}, {"bin_ms": None}, {"jain_of_means": 1.0}])
def test_intervals_length_from_the_rows_when_summary_json_gives_none(tmp_path, summary):
    p = write_intervals(tmp_path, [(3, 0, 1.0), (3, 100 * MS, 2.0), (3, 300 * MS, 3.0)], summary=summary)
    s = intervals_parquet_series(p, metric="goodput_bps")
    assert s.interval_ns == 100 * MS and s.start_ns.tolist() == [0, 100 * MS, 200 * MS, 300 * MS]
    assert s.flows == ["flow 3"] and s.bps[:, 0].tolist() == [1.0, 2.0, 0.0, 3.0]


def test_intervals_missing_column_named(tmp_path):
    p = write_intervals(tmp_path, [(0, 1.0)], columns=("flow", "goodput_bps"))
    with pytest.raises(FairnessError, match="^" + re.escape(f"{p}: columns ['start_time_ns'] missing; expected "
                                                            "benchbook tcp's intervals.parquet") + "$"):
        intervals_parquet_series(p)
    with pytest.raises(FairnessError, match=re.escape("columns ['retrans_bps', 'start_time_ns'] missing")):
        intervals_parquet_series(p.parent / "intervals.parquet", metric="retrans_bps")


# -- combine -----------------------------------------------------------------------------------------------------

def _three():
    a = FlowSeries(flows=["cubic#5"], start_ns=[10 * S, 11 * S, 12 * S], bps=[[1.0], [2.0], [3.0]], interval_ns=S,
                   source="a.json", meta={"notes": ["note a"]}, left_out=[{"flow": "x", "reason": "r"}])
    b = FlowSeries(flows=["bbr#5", "bbr#7"], start_ns=np.arange(50, 55) * S, interval_ns=S, source="b.json",
                   bps=[[4.0, 5.0], [6.0, 7.0], [8.0, 9.0], [10.0, 11.0], [12.0, 13.0]])
    c = FlowSeries(flows=["reno#1"], start_ns=[0, S], bps=[[14.0], [15.0]], interval_ns=S, source="c.json",
                   meta={"notes": ["note c"]})
    return a, b, c


def test_combine_aligns_series_of_different_lengths_by_their_first_interval():
    a, b, c = _three()
    s = combine([a, b, c])
    assert s.flows == ["cubic#5", "bbr#5", "bbr#7", "reno#1"]
    assert s.start_ns.dtype == np.int64 and s.start_ns.tolist() == [0, S, 2 * S, 3 * S, 4 * S]
    np.testing.assert_array_equal(s.bps, np.array([[1.0, 4.0, 5.0, 14.0], [2.0, 6.0, 7.0, 15.0],
                                                   [3.0, 8.0, 9.0, NAN], [NAN, 10.0, 11.0, NAN],
                                                   [NAN, 12.0, 13.0, NAN]]))
    assert s.interval_ns == S and s.source == "a.json + b.json + c.json"
    assert s.meta == {"notes": ["note a", "note c"]} and s.left_out == [{"flow": "x", "reason": "r"}]
    assert combine([a, c], source="mine").source == "mine"


def test_combine_of_one_series_is_that_series():
    a, _, _ = _three()
    assert combine([a]) is a


def test_combine_refuses_different_or_unknown_interval_lengths():
    a, _, _ = _three()
    d = FlowSeries(flows=["d"], start_ns=[0], bps=[[1.0]], interval_ns=S // 2, source="d.json")
    with pytest.raises(FairnessError, match="^" + re.escape("series to combine have different or unknown interval "
                                                            f"lengths: a.json: {S} ns, d.json: {S // 2} ns") + "$"):
        combine([a, d])
    e = FlowSeries(flows=["e"], start_ns=[0], bps=[[1.0]], source="e.json")
    f = FlowSeries(flows=["f"], start_ns=[0], bps=[[1.0]], source="f.json")
    with pytest.raises(FairnessError, match=re.escape("lengths: e.json: None ns, f.json: None ns")):
        combine([e, f])
    with pytest.raises(FairnessError, match=re.escape("flow names repeat across inputs: ['cubic#5', 'cubic#5']")):
        combine([a, a])


def test_combine_counts_intervals_in_exact_integer_nanoseconds():
    # 12345 intervals of 1e12 + 1 ns: the span is 1.2345e16 ns, beyond float64's exact integers (2**53)
    step = 10**12 + 1
    long_ = FlowSeries(flows=["long"], start_ns=[0, 12345 * step], bps=[[1.0], [2.0]], interval_ns=step, source="l")
    short = FlowSeries(flows=["short"], start_ns=[0], bps=[[3.0]], interval_ns=step, source="s")
    s = combine([long_, short])
    assert s.start_ns.size == 12346 and int(s.start_ns[-1]) == 12345 * step
    assert s.bps[-1].tolist()[0] == 2.0 and np.isnan(s.bps[1:-1, 0]).all()
