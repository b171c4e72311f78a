"""analysis.run_sets, what `benchbook compare` reads: the statistic each --stat name stands for (kind, scale,
unit; p0/p100 refused, min/max/mean), each loader's run (kind, source, samples, the method text users see) on
real files and on runs generated with known truth (`benchbook latency` and `benchbook tcp` directories of
synthetic captures, the tests/data hlog/MoonGen/iperf3 files, tcpdump's and the tcp corpus's captures), the
EXACT_LIMIT boundary between latencies.parquet and latency.hlog, the values of a run (no latencies, one flow),
and the inputs refused with a RunInputError naming the file (mutation testing found these untested)."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from benchbook.analysis import latency_report
from benchbook.analysis import run_sets as rs
from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hist_report import load_histograms, summary_json
from benchbook.analysis.hlog_merge import write_merged
from benchbook.analysis.intervals import RATE
from benchbook.analysis.latency import IdKey
from benchbook.analysis.latency_report import analyze_captures
from benchbook.analysis.run_sets import RunInputError, RunValue, Statistic, load_run, parse_statistics, run_value
from benchbook.analysis.tcp_report import analyze_tcp
from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.tools.iperf3 import read_report
from benchbook.tools.moongen_histogram import read_moongen_histogram

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
IPERF3 = DATA / "tcp" / "iperf3-cubic-2streams.json"
MOONGEN = DATA / "moongen" / "histogram.csv"
PY_HLOG = DATA / "hlog" / "python-hdrh.hlog"        # python-hdrh.json: the implementation's own numbers
GO_HLOG = DATA / "hlog" / "go-hdrhistogram.hlog"    # the same values, plus an interval tagged "udp"
CORPUS = DATA / "tcp-corpus"
PACKETS = 1000

EXACT_METHOD = "exact discrete percentile over the run's latencies (latencies.parquet)"
HLOG_DIR_METHOD = ("HdrHistogram (3 significant digits, latency.hlog): highest value equivalent to the bucket holding "
                   "the discrete percentile")
MOONGEN_METHOD = "exact discrete percentile (MoonGen histogram)"
IPERF3_METHOD = ("iperf3 -J: receiver bit rate per stream (sender's when the receiver's is missing); Jain's index of "
                 "those rates")
TCP_METHOD = ("benchbook tcp: per-flow goodput (bytes seen for the first time x 8 / duration); Jain's index of "
              "per-flow mean goodput of the bulk flows (summary.json)")


def hlog_method(digits: int) -> str:
    return (f"HdrHistogram ({digits} significant digits): highest value equivalent to the bucket holding the "
            f"discrete percentile")


def load(path: Path) -> rs.Run:
    return load_run(path, read_moongen_histogram, read_report)


def value(run: rs.Run, name: str) -> RunValue:
    (st,) = parse_statistics(name)
    return run_value(run, st)


def discrete(sorted_values: np.ndarray, p: float) -> float:
    """The smallest value with at least p % of the samples at or below it."""
    return float(sorted_values[math.ceil(p * len(sorted_values) / 100) - 1])


def latency_run(root: Path, name: str, n_packets: int, seed: int, loss: float = 0.0) -> tuple[Path, np.ndarray]:
    """A `benchbook latency` directory of a synthetic capture pair, and the true latencies (sorted). Latencies
    600 ns + Exp(3 us): a third of them below 2048 ns (HdrHistogram buckets one ns wide), the rest wider."""
    gt = make_capture_pair(root / f"{name}-pre.pcap", root / f"{name}-post.pcap", n_packets, rate_pps=10_000,
                           latency=LatencyModel(base_ns=600, tail_mean_ns=3000, spike_prob=0), loss=loss, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero matched packets warn; that is the case tested
        summary = analyze_captures(root / f"{name}-pre.pcap", root / f"{name}-post.pcap", root / name,
                                   IdKey(offset=42), html=False)
    truth = np.sort(gt.latency_ns[gt.latency_ns >= 0])
    assert summary["matched"] == truth.size
    return root / name, truth


@pytest.fixture(scope="module")
def lat(tmp_path_factory):
    root = tmp_path_factory.mktemp("latency")
    d, truth = latency_run(root, "run", PACKETS, seed=3)
    other, other_truth = latency_run(root, "other", 700, seed=4)
    return {"root": root, "dir": d, "truth": truth, "other": other, "other_truth": other_truth}


def copy_dir(src: Path, dst: Path, *, without: tuple[str, ...] = ()) -> Path:
    shutil.copytree(src, dst)
    for name in without:
        (dst / name).unlink()
    return dst


def tcp_dir(out: Path, *captures: Path) -> tuple[Path, dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summary, _flows, _msgs = analyze_tcp([str(c) for c in captures], out, html=False)
    return out, summary


# ---- statistics ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "expected"), [
    ("p50", ("p50", "latency", "log-ratio", "ns", 50.0)),
    ("P99.9", ("p99.9", "latency", "log-ratio", "ns", 99.9)),
    (" p99.999 ", ("p99.999", "latency", "log-ratio", "ns", 99.999)),
    ("p0.001", ("p0.001", "latency", "log-ratio", "ns", 0.001)),
    ("p0.5", ("p0.5", "latency", "log-ratio", "ns", 0.5)),
    ("p1", ("p1", "latency", "log-ratio", "ns", 1.0)),
    ("max", ("max", "latency", "log-ratio", "ns", None)),
    ("MIN", ("min", "latency", "log-ratio", "ns", None)),
    ("mean", ("mean", "latency", "log-ratio", "ns", None)),
    ("throughput", ("throughput", "throughput", "log-ratio", "bit/s", None)),
    ("goodput", ("throughput", "throughput", "log-ratio", "bit/s", None)),
    ("Jain", ("jain", "throughput", "difference", "", None)),
])
def test_each_statistic_name_gives_its_kind_scale_and_unit(text, expected) -> None:
    (st,) = parse_statistics(text)
    assert (st.name, st.kind, st.scale, st.unit, st.percent) == expected
    assert st == Statistic(*expected)


@pytest.mark.parametrize("text", ["p0", "p0.0", "p100", "p100.0", "p100.5", "p250"])
def test_p0_and_p100_and_beyond_are_refused_pointing_to_min_and_max(text) -> None:
    with pytest.raises(ValueError, match=rf"^--stat '{text}': a percentile between p0 and p100 \(exclusive\); "
                                         rf"use min/max for the extremes$"):
        parse_statistics(f"p50,{text}")


@pytest.mark.parametrize("text", ["median", "p99x", "p.5", "p-1", "p", "99"])
def test_an_unknown_statistic_is_refused_with_the_names_there_are(text) -> None:
    with pytest.raises(ValueError, match=r"expected pP \(p50, p99.9\), max, min, mean \(latency runs\), throughput "
                                         r"or jain \(throughput runs\)$"):
        parse_statistics(text)


def test_a_list_keeps_its_order_skips_empty_items_and_drops_duplicates() -> None:
    names = [s.name for s in parse_statistics(" p99 , ,P99,max,,p50,min,  MAX ,")]
    assert names == ["p99", "max", "p50", "min"]
    assert [s.name for s in parse_statistics(",mean")] == ["mean"]
    assert [s.name for s in parse_statistics("goodput,throughput,jain,,jain")] == ["throughput", "jain"]
    # one name per percentile, so that another spelling of one is a duplicate too
    assert [(s.name, s.percent) for s in parse_statistics("p99.9,p99.90,p050,p50,p010.500,p0.001")] == [
        ("p99.9", 99.9), ("p50", 50.0), ("p10.5", 10.5), ("p0.001", 0.001)]
    for empty in ("", ",", " , ,"):
        with pytest.raises(ValueError, match=r"^--stat: no statistics given$"):
            parse_statistics(empty)


def test_the_default_statistics_are_the_documented_ones() -> None:
    docs = " ".join((REPO / "docs" / "statistics.md").read_text(encoding="utf-8").split())
    assert [s.name for s in parse_statistics(rs.LATENCY_DEFAULT)] == ["p50", "p99", "p99.9", "max", "mean"]
    assert [s.name for s in parse_statistics(rs.THROUGHPUT_DEFAULT)] == ["throughput", "jain"]
    assert f"(default `{rs.LATENCY_DEFAULT}`)" in docs and f"(default `{rs.THROUGHPUT_DEFAULT}`)" in docs


def test_statistics_and_run_values_are_frozen() -> None:
    (st,) = parse_statistics("p99")
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.percent = 50.0  # type: ignore[misc]
    v = RunValue(1.0, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.value = 2.0  # type: ignore[misc]
    assert v.reason is None


# ---- MoonGen CSV and .hlog ----------------------------------------------------------------------------------------
def test_a_moongen_histogram_is_an_exact_latency_run() -> None:
    rows = [line.split(",") for line in MOONGEN.read_text().split()]
    values = np.repeat([float(v) for v, _c in rows], [int(c) for _v, c in rows])  # the file's buckets, ascending
    run = load(MOONGEN)
    assert (run.kind, run.source, run.samples, run.estimator) == ("latency", "moongen-csv", values.size,
                                                                  MOONGEN_METHOD)
    assert run.path == MOONGEN and run.notes == [] and isinstance(run.distribution, ExactDistribution)
    assert run.flows_bps is None and run.jain is None  # a latency run carries no flows
    assert value(run, "p50") == RunValue(discrete(values, 50), values.size) == RunValue(2227.2, 1214)
    assert value(run, "p90").value == discrete(values, 90)
    assert value(run, "min") == RunValue(values.min(), values.size) == RunValue(1984.0, 1214)
    assert value(run, "max") == RunValue(values.max(), values.size)
    assert value(run, "mean").value == pytest.approx(values.mean(), rel=1e-12)
    assert len({value(run, s).value for s in ("min", "mean", "max")}) == 3


def test_an_hlog_is_a_latency_run_of_its_untagged_intervals() -> None:
    """python-hdrh.json and go-hdrhistogram.json: the writers' own count, min, max and percentiles."""
    for path in (PY_HLOG, GO_HLOG):
        own = json.loads(path.with_suffix(".json").read_text())
        pct = {float(k): v for k, v in own["percentiles"].items()}
        run = load(path)
        assert (run.kind, run.source, run.samples, run.estimator) == ("latency", "hlog", own["count"],
                                                                      hlog_method(3))
        assert isinstance(run.distribution, HdrHistogram) and run.flows_bps is None and run.jain is None
        for p in (50.0, 90.0, 99.0, 99.9):
            assert value(run, f"p{p:g}") == RunValue(pct[p], own["count"])
        assert value(run, "max").value == own["max"] and value(run, "min").value == own["min"]
        assert own["min"] < value(run, "mean").value < own["max"]
    assert load(PY_HLOG).notes == []
    assert load(GO_HLOG).notes == [f"{GO_HLOG}: interval histograms tagged udp not included (--tag NAME or "
                                   f"--all-tags to include them)"]


def test_the_hlog_method_names_the_logs_own_significant_digits(shared_datasets) -> None:
    """jHiccup's logs hold 2-digit histograms: 48,761 values in all (HdrHistogram's own tests)."""
    run = load(shared_datasets / "hdrhistogram-interop" / "jHiccup-2.0.7S.logV2.hlog")
    assert (run.source, run.samples, run.estimator) == ("hlog", 48761, hlog_method(2))


# ---- iperf3 -J and `benchbook tcp` directories ----------------------------------------------------------------------
def test_an_iperf3_report_is_a_throughput_run_of_receiver_rates() -> None:
    doc = json.loads(IPERF3.read_text())
    rates = [s["receiver"]["bits_per_second"] for s in doc["end"]["streams"]]
    run = load(IPERF3)
    assert (run.kind, run.source, run.samples, run.estimator) == ("throughput", "iperf3", 2, IPERF3_METHOD)
    assert run.distribution is None and run.notes == []  # a throughput run carries no latency distribution
    assert run.flows_bps.tolist() == rates
    assert run.jain == pytest.approx(sum(rates) ** 2 / (2 * sum(x * x for x in rates)))
    assert value(run, "throughput") == RunValue(pytest.approx(sum(rates)), 2)
    assert value(run, "jain") == RunValue(run.jain, 2) and value(run, "jain").reason is None
    with pytest.raises(RunInputError, match=r"iperf3-cubic-2streams.json: a throughput run has no p99 "
                                            r"\(a latency statistic\)$"):
        value(run, "p99")


def test_an_iperf3_stream_without_receiver_totals_counts_its_sender_rate(tmp_path: Path) -> None:
    doc = json.loads(IPERF3.read_text())
    del doc["end"]["streams"][0]["receiver"]["bits_per_second"]
    (p := tmp_path / "no-receiver.json").write_text(json.dumps(doc, indent=2))
    run = load(p)
    assert run.flows_bps.tolist() == [doc["end"]["streams"][0]["sender"]["bits_per_second"],
                                      doc["end"]["streams"][1]["receiver"]["bits_per_second"]]


def test_a_report_after_leading_whitespace_is_still_an_iperf3_report(tmp_path: Path) -> None:
    body = IPERF3.read_bytes()
    for pad in (b"\n", b" " * 4095, b"\r\n" * 2047 + b"\t"):  # up to 4,095 bytes before the "{"
        (p := tmp_path / "padded.json").write_bytes(pad + body)
        assert (load(p).source, load(p).samples) == ("iperf3", 2)


@pytest.mark.parametrize("spaces", [4095, 4096, 4097, 3 * 4096 + 5])
def test_a_report_after_4096_bytes_of_whitespace_is_an_iperf3_report(tmp_path: Path, spaces: int) -> None:
    """json.loads takes any amount of leading white space, so does the sniffing (it read only the first 4096 bytes
    and took such a report for a MoonGen CSV)."""
    (p := tmp_path / "padded.json").write_bytes(b"\n" * spaces + IPERF3.read_bytes())
    assert (load(p).source, load(p).samples) == ("iperf3", 2)


@pytest.mark.parametrize("capture", ["bbgen-vlan.pcap", "bbgen-ipv6-sack.pcapng"])
def test_a_capture_given_as_a_run_is_refused_naming_it(capture) -> None:
    """Binary files (a pcap's first byte, a pcapng's first after its \\n\\r\\r\\n, not ASCII): a RunInputError
    naming the file, never a crash."""
    with pytest.raises(RunInputError, match=rf"{re.escape(capture)}: .*non-ASCII bytes; expected 'value,count'"):
        load(CORPUS / capture)


@pytest.fixture(scope="module")
def tcp(tmp_path_factory):
    root = tmp_path_factory.mktemp("tcp")
    return {"one": tcp_dir(root / "one", CORPUS / "bbgen-zero-window.pcap"),
            "two": tcp_dir(root / "two", CORPUS / "bbgen-syn-retransmissions.pcapng"),
            "vlan": tcp_dir(root / "vlan", CORPUS / "bbgen-vlan.pcap")}


def test_a_tcp_directory_is_a_throughput_run_of_flow_goodputs(tcp) -> None:
    d, summary = tcp["two"]
    goodputs = [f["goodput_bps"] for f in summary["flows"]]
    assert len(goodputs) == 2 and None not in goodputs
    run = load(d)
    assert (run.kind, run.source, run.samples, run.estimator) == ("throughput", "tcp-dir", 2, TCP_METHOD)
    assert run.flows_bps.tolist() == goodputs and run.distribution is None
    assert run.jain == summary["jain_of_means"] and 0.5 < run.jain < 1
    assert value(run, "throughput") == RunValue(pytest.approx(sum(goodputs)), 2)
    assert value(run, "jain") == RunValue(summary["jain_of_means"], 2)


def test_flows_without_a_goodput_are_left_out(tmp_path: Path, shared_datasets) -> None:
    """tcpdump's tcp_rst_data.pcap holds one flow of one packet: no duration, goodput null in summary.json."""
    rst = shared_datasets / "tcpdump-tcp-tests" / "tcp_rst_data.pcap"
    d, summary = tcp_dir(tmp_path / "with-rst", CORPUS / "bbgen-syn-retransmissions.pcapng", rst)
    goodputs = [f["goodput_bps"] for f in summary["flows"]]
    assert len(goodputs) == 3 and goodputs.count(None) == 1
    run = load(d)
    assert run.samples == 2 and run.flows_bps.tolist() == [g for g in goodputs if g is not None]
    d, _ = tcp_dir(tmp_path / "rst-only", rst)
    with pytest.raises(RunInputError, match=r"rst-only/summary.json: no flow with a goodput$"):
        load(d)


def test_non_finite_goodputs_in_a_summary_are_left_out(tcp, tmp_path: Path) -> None:
    """A summary.json edited elsewhere (Python's json writes NaN and Infinity): only finite goodputs count."""
    d = copy_dir(tcp["vlan"][0], tmp_path / "edited")
    doc = json.loads((d / "summary.json").read_text())
    kept = [f["goodput_bps"] for f in doc["flows"]]
    doc["flows"] += [dict(doc["flows"][0], goodput_bps=x) for x in (math.nan, math.inf, -math.inf, None)]
    doc["flows"].append({k: v for k, v in doc["flows"][0].items() if k != "goodput_bps"})
    (d / "summary.json").write_text(json.dumps(doc))
    run = load(d)
    assert run.samples == 2 and run.flows_bps.tolist() == kept


def test_benchbooks_own_non_finite_texts_in_a_summary_are_left_out(tcp, tmp_path: Path) -> None:
    """benchbook writes a non-finite float as the string "NaN", "Infinity" or "-Infinity" (atomic_write.json_safe):
    such a goodput is left out and such a Jain's index is no index, not a crash in math.isfinite."""
    d = copy_dir(tcp["vlan"][0], tmp_path / "texts")
    doc = json.loads((d / "summary.json").read_text())
    kept = [f["goodput_bps"] for f in doc["flows"]]
    doc["flows"] += [dict(doc["flows"][0], goodput_bps=x) for x in ("NaN", "Infinity", "-Infinity")]
    doc["jain_of_means"] = "NaN"
    (d / "summary.json").write_text(json.dumps(doc))
    run = load(d)
    assert run.samples == 2 and run.flows_bps.tolist() == kept and run.jain is None


@pytest.mark.parametrize(("edit", "message"), [
    ({"flows": None}, r"'flows' is not a list of flow objects"),
    ({"flows": [1.0e9, 2.0e9]}, r"'flows' is not a list of flow objects"),
    ({"flows": [{"goodput_bps": "fast"}]}, r"flows\[0\].goodput_bps: expected a number or null, got 'fast'"),
    ({"flows": [{"goodput_bps": 1e9}, {"goodput_bps": True}]},
     r"flows\[1\].goodput_bps: expected a number or null, got True"),
    ({"jain_of_means": "high"}, r"jain_of_means: expected a number or null, got 'high'"),
])
def test_a_damaged_tcp_summary_is_an_input_error_naming_the_field(tcp, tmp_path: Path, edit, message) -> None:
    """`benchbook compare` reports a RunInputError as an error line (exit 1); anything else was a traceback."""
    d = copy_dir(tcp["vlan"][0], tmp_path / "damaged")
    doc = json.loads((d / "summary.json").read_text())
    doc.update(edit)
    (d / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(RunInputError, match=rf"^{re.escape(str(d))}/summary.json: {message}"):
        load(d)


@pytest.mark.parametrize("matched", [None, "12", 1.5, -1, True])
def test_a_latency_summary_whose_matched_is_no_count_is_an_input_error(lat, tmp_path: Path, matched) -> None:
    d = copy_dir(lat["dir"], tmp_path / "damaged")
    doc = json.loads((d / "summary.json").read_text())
    doc["matched"] = matched
    (d / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(RunInputError, match=rf"^{re.escape(str(d))}/summary.json: 'matched' is "
                                            rf"{re.escape(repr(matched))}, expected a count of matched packets"):
        load(d)


def test_one_flow_is_a_run_without_jains_index(tcp) -> None:
    d, summary = tcp["one"]
    assert len(summary["flows"]) == 1 and summary["jain_of_means"] is None
    run = load(d)
    assert (run.samples, run.jain) == (1, None) and run.flows_bps.tolist() == [summary["flows"][0]["goodput_bps"]]
    assert value(run, "throughput") == RunValue(summary["flows"][0]["goodput_bps"], 1)
    assert value(run, "jain") == RunValue(None, 1, "Jain's index needs at least two flows (1 here)")


def test_jains_range_is_that_of_the_most_flows_of_any_run(tcp, lat) -> None:
    one, two = load(tcp["one"][0]), load(tcp["two"][0])
    (jain,) = parse_statistics("jain")
    r = jain.value_range([one, one])
    assert (r.low, r.high, r.name) == (1.0, 1.0, "Jain's index of 1 flows is in [1/1, 1]")
    r = jain.value_range([one, two, one])
    assert (r.low, r.high) == (0.5, 1.0)
    assert jain.value_range([]).low == 1.0
    for name, runs in (("throughput", [one, two]), ("p50", [load(lat["dir"])]), ("max", [])):
        (st,) = parse_statistics(name)
        assert st.value_range(runs) == RATE


# ---- `benchbook latency` directories -------------------------------------------------------------------------------
def test_a_latency_directory_is_an_exact_run_of_its_latencies(lat) -> None:
    truth = lat["truth"]
    run = load(lat["dir"])
    assert (run.kind, run.source, run.samples, run.estimator) == ("latency", "latency-dir", PACKETS, EXACT_METHOD)
    assert isinstance(run.distribution, ExactDistribution) and run.flows_bps is None and run.jain is None
    for p in (1, 10, 50, 90, 99):
        assert value(run, f"p{p}") == RunValue(discrete(truth, p), PACKETS)
    assert value(run, "p99.9") == RunValue(None, PACKETS, "not resolvable at N = 1000: p99.9 needs N >= 3688 for "
                                                          "a 95 % interval")
    assert value(run, "min") == RunValue(truth[0], PACKETS) and value(run, "max") == RunValue(truth[-1], PACKETS)
    assert value(run, "mean").value == pytest.approx(truth.mean(), rel=1e-12)
    assert truth[0] < truth.mean() < truth[-1]


def test_the_exact_limit_is_the_documented_one_and_that_of_benchbook_latency() -> None:
    docs = " ".join((REPO / "docs" / "statistics.md").read_text(encoding="utf-8").split())
    assert rs.EXACT_LIMIT == 1 << 24 == 2**24 == latency_report.EXACT_LIMIT
    assert "`latency.hlog` above 2^24 packets" in docs


def assert_hlog_run(run: rs.Run, truth: np.ndarray) -> None:
    """The run holds latency.hlog merged at 3 significant digits: the values of an HdrHistogram(1, ..., 3) of the
    true latencies (each bucket's highest equivalent value; HdrHistogram's min and max)."""
    h = HdrHistogram(1, 10**9, 3)
    h.record(truth.astype(np.int64))
    assert (run.kind, run.source, run.samples, run.estimator) == ("latency", "latency-dir", truth.size,
                                                                  HLOG_DIR_METHOD)
    assert isinstance(run.distribution, HdrHistogram) and run.distribution.significant_figures == 3
    ps = [1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0]
    want = h.percentiles(ps)
    assert {p: value(run, f"p{p:g}").value for p in ps} == want
    assert want[10.0] < 2048 < want[90.0]  # buckets one ns wide and wider
    assert value(run, "min") == RunValue(h.hdr_min(), truth.size)
    assert value(run, "max") == RunValue(h.hdr_max(), truth.size)
    assert value(run, "mean").value == pytest.approx(h.hdr_mean(), rel=1e-12)


def test_exactly_exact_limit_latencies_are_read_exactly_one_more_from_the_hlog(lat, monkeypatch) -> None:
    truth = lat["truth"]
    monkeypatch.setattr(rs, "EXACT_LIMIT", PACKETS)
    run = load(lat["dir"])
    assert run.estimator == EXACT_METHOD and value(run, "p50").value == discrete(truth, 50)
    monkeypatch.setattr(rs, "EXACT_LIMIT", PACKETS - 1)
    assert_hlog_run(load(lat["dir"]), truth)


def test_a_latency_directory_without_its_parquet_table_is_read_from_its_hlog(lat, tmp_path: Path) -> None:
    d = copy_dir(lat["dir"], tmp_path / "no-parquet", without=("latencies.parquet",))
    assert_hlog_run(load(d), lat["truth"])


def test_a_latency_directory_above_the_limit_needs_its_hlog(lat, tmp_path: Path, monkeypatch) -> None:
    d = copy_dir(lat["dir"], tmp_path / "no-hlog", without=("latency.hlog",))
    monkeypatch.setattr(rs, "EXACT_LIMIT", PACKETS - 1)
    with pytest.raises(RunInputError, match=r"no-hlog: neither latencies.parquet \(up to 999 latencies\) nor "
                                            r"latency.hlog$"):
        load(d)
    d = copy_dir(lat["dir"], tmp_path / "neither", without=("latency.hlog", "latencies.parquet"))
    monkeypatch.setattr(rs, "EXACT_LIMIT", 1 << 24)
    with pytest.raises(RunInputError, match=r"neither: neither latencies.parquet \(up to 16777216 latencies\) nor "
                                            r"latency.hlog$"):
        load(d)


def test_an_hlog_of_another_run_is_refused(lat, tmp_path: Path, monkeypatch) -> None:
    """The directory's latency.hlog replaced by another run's (700 latencies): it disagrees with summary.json."""
    d = copy_dir(lat["dir"], tmp_path / "swapped", without=("latency.hlog",))
    shutil.copy(lat["other"] / "latency.hlog", d / "latency.hlog")
    monkeypatch.setattr(rs, "EXACT_LIMIT", PACKETS - 1)
    with pytest.raises(RunInputError, match=r"swapped/latency.hlog: 700 latencies, but summary.json counts 1000 "
                                            r"matched packets$"):
        load(d)
    d = copy_dir(lat["other"], tmp_path / "swapped2", without=("latencies.parquet",))
    shutil.copy(lat["dir"] / "latencies.parquet", d / "latencies.parquet")
    with pytest.raises(RunInputError, match=r"swapped2/latencies.parquet: 1000 latencies, but summary.json counts "
                                            r"700 matched packets$"):
        load(d)


def test_a_run_without_latencies_has_no_value_and_one_latency_has_its_own(lat) -> None:
    """Every packet lost: matched 0, no statistic. One packet: its latency is min, max and mean."""
    d, truth = latency_run(lat["root"], "lost", 50, seed=5, loss=1.0)
    assert truth.size == 0
    run = load(d)
    assert (run.source, run.samples) == ("latency-dir", 0)
    for name in ("p50", "p0.001", "max", "min", "mean"):
        assert value(run, name) == RunValue(None, 0, "no latencies")
    d, truth = latency_run(lat["root"], "single", 1, seed=6)
    run = load(d)
    assert run.samples == 1 and truth.size == 1
    for name in ("max", "min", "mean"):
        assert value(run, name) == RunValue(float(truth[0]), 1)
    assert value(run, "p50") == RunValue(None, 1, "not resolvable at N = 1: p50 needs N >= 6 for a 95 % interval")


def test_a_pairs_directory_asks_for_its_pair_folders(lat, tmp_path: Path) -> None:
    """`benchbook latency --pairs` writes DIR/<name>/ per pair and DIR/merged.hlog, DIR/merged.json."""
    top = tmp_path / "pairs"
    copy_dir(lat["dir"], top / "a")
    copy_dir(lat["other"], top / "b")
    write_merged(top, [("a", top / "a" / "latency.hlog"), ("b", top / "b" / "latency.hlog")], 10**9)
    assert (top / "merged.json").is_file() and not (top / "summary.json").exists()
    top_re = re.escape(str(top))
    with pytest.raises(RunInputError, match=rf"^{top_re}: a `benchbook latency --pairs` directory holds several "
                                            rf"pairs; give each pair's folder {top_re}/<name> as one run$"):
        load(top)
    assert load(top / "a").samples == PACKETS and load(top / "b").samples == 700
    with pytest.raises(RunInputError, match=rf"^{re.escape(str(tmp_path))}: a directory without summary.json"):
        load(tmp_path)


def test_a_summary_of_another_command_is_refused(tmp_path: Path) -> None:
    """`benchbook hist --json` saved as summary.json: neither a latency nor a tcp summary."""
    d = tmp_path / "hist"
    d.mkdir()
    doc = summary_json(load_histograms([PY_HLOG], read_moongen_histogram))
    assert doc["count"] == 30001 and "matched" not in doc and "flows" not in doc
    (d / "summary.json").write_text(json.dumps(doc))
    with pytest.raises(RunInputError, match=r"hist/summary.json: neither a `benchbook latency` summary \(no "
                                            r"'matched'\) nor a `benchbook tcp` summary"):
        load(d)
    (d / "summary.json").write_text(json.dumps([doc]))
    with pytest.raises(RunInputError, match=r"neither a `benchbook latency` summary"):
        load(d)
