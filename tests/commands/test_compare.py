"""`benchbook compare` on run sets generated with known truth: the error rates of its verdicts by simulation
(200 comparisons each), and end to end from the shell on .hlog files, a `benchbook latency` directory, MoonGen
CSVs, iperf3 reports and `benchbook tcp` directories."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter
from benchbook.analysis.intervals import MIN_RUNS
from benchbook.analysis.latency import IdKey
from benchbook.analysis.latency_report import analyze_captures
from benchbook.analysis.run_comparison import compare_statistic, percentile_bands
from benchbook.analysis.run_sets import Run, parse_statistics
from benchbook.analysis.tcp_report import analyze_tcp
from benchbook.capture.synth import LatencyModel, make_capture_pair
from benchbook.capture.tcp_synth import make_tcp_capture
from benchbook.cli import build_app

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
DATA = Path(__file__).resolve().parents[1] / "data"
MARGIN = math.log(1.05)
KEYS = ["stat", "verdict", "runs_a", "runs_b", "values_a", "values_b", "delta", "ci90", "ci95", "margin", "method"]


class Ran:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def compare(*args: str) -> Ran:
    """The command in this process (CliRunner; the first end-to-end test runs the real executable)."""
    r = CliRunner().invoke(build_app(("compare",)), ["compare", *args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return Ran(r.exit_code, r.stdout, r.stderr)


def compare_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*BENCHBOOK, "compare", *args], capture_output=True, text=True, timeout=300)


# ---- simulation: runs of N packets, a run-to-run effect on top, known truth ---------------------------------------
def simulated_runs(rng, sets: int, runs: int, packets: int, scale: float, run_sigma: float = 0.01) -> list[list[Run]]:
    """``sets`` sets of ``runs`` runs: each run's latencies lognormal around 20 us (sigma 0.3) times a run factor
    lognormal(0, run_sigma), times ``scale``: the true ratio of any percentile between two such sets is their
    scales' ratio."""
    factor = scale * np.exp(rng.normal(0.0, run_sigma, (sets, runs, 1)))
    lat = np.rint(20_000 * factor * rng.lognormal(0.0, 0.3, (sets, runs, packets))).astype(np.int64)
    return [[Run(Path(f"sim-{s}-{r}"), "latency", "simulated", packets, "exact", ExactDistribution.from_samples(row))
             for r, row in enumerate(rows)] for s, rows in enumerate(lat)]


@pytest.fixture(scope="module")
def sim():
    rng = np.random.default_rng(2121)
    n = 200
    return {"A": simulated_runs(rng, n, MIN_RUNS, 3000, 1.0), "A2": simulated_runs(rng, n, MIN_RUNS, 3000, 1.0),
            "B2d": simulated_runs(rng, n, MIN_RUNS, 3000, math.exp(2 * MARGIN))}


def test_aa_comparisons_at_the_documented_run_count_rarely_differ(sim) -> None:
    """200 A/A comparisons of p99 at 6 runs per arm (the documented minimum): "different" at most 5 %."""
    (p99,) = parse_statistics("p99")
    verdicts = [compare_statistic(a, b, p99, "5%", seed=i).comparison.verdict
                for i, (a, b) in enumerate(zip(sim["A"], sim["A2"], strict=True))]
    assert len(verdicts) == 200
    assert verdicts.count("different") <= 0.05 * 200, verdicts.count("different")
    assert verdicts.count("equivalent") >= 0.5 * 200  # and the procedure is not merely timid


def test_an_effect_of_twice_the_margin_is_rarely_equivalent(sim) -> None:
    """B's runs are slower by a factor exp(2 delta): "equivalent" at most 5 % of 200 comparisons."""
    (p99,) = parse_statistics("p99")
    verdicts = [compare_statistic(a, b, p99, "5%", seed=i).comparison.verdict
                for i, (a, b) in enumerate(zip(sim["A"], sim["B2d"], strict=True))]
    assert verdicts.count("equivalent") <= 0.05 * 200, verdicts.count("equivalent")
    assert verdicts.count("different") >= 0.5 * 200


def test_three_runs_per_arm_are_inconclusive_and_name_the_runs_needed(sim) -> None:
    (p99,) = parse_statistics("p99")
    for a, b in zip(sim["A"][:20], sim["B2d"][:20], strict=True):
        c = compare_statistic(a[:3], b[:3], p99, "5%").comparison
        assert c.verdict == "inconclusive" and c.ci90 is None and c.ci95 is None
        assert c.runs_needed >= MIN_RUNS and f"about {c.runs_needed} runs per arm" in c.reason


def test_percentile_bands_mark_where_the_sign_flips() -> None:
    """A narrow and a wide lognormal with the same median cross at the median: the sign of Delta flips there."""
    rng = np.random.default_rng(5)

    def arm(sigma: float) -> list[Run]:
        return [Run(Path("x"), "latency", "simulated", 5000, "exact",
                    ExactDistribution.from_samples(np.rint(20_000 * rng.lognormal(0, sigma, 5000)).astype(np.int64)))
                for _ in range(MIN_RUNS)]

    b = percentile_bands(arm(0.2), arm(0.5))
    assert len(b.flips) == 1 and 35 <= b.flips[0] <= 65, b.flips
    assert b.limit_percent == pytest.approx(100 * 0.025 ** (1 / 5000))
    assert b.percent[-1] == pytest.approx(b.limit_percent) and b.band_label["A"].startswith("95 % interval")
    assert np.all(b.low["A"] <= b.median["A"]) and np.all(b.median["A"] <= b.high["A"])


# ---- end to end -----------------------------------------------------------------------------------------------------
def write_hlog_run(path: Path, latencies_ns: np.ndarray) -> HdrHistogram:
    h = HdrHistogram(1, 10**9, 3)
    h.record(latencies_ns)
    with HlogWriter(path, start_time=1_700_000_000.0) as w:
        w.write_interval(0.0, 1.0, h)
    return h


@pytest.fixture(scope="module")
def hlog_runs(tmp_path_factory):
    """6 + 6 runs of 10,000 packets, B 10 % slower than A (twice the 5 % margin); run-to-run sigma 2 %."""
    d = tmp_path_factory.mktemp("compare")
    rng = np.random.default_rng(21)
    hists = {}
    for arm, scale in (("a", 1.0), ("b", 1.10)):
        for i in range(MIN_RUNS):
            lat = np.rint(20_000 * scale * rng.lognormal(0, 0.02) * rng.lognormal(0, 0.3, 10_000)).astype(np.int64)
            hists[f"{arm}{i}"] = write_hlog_run(d / f"{arm}{i}.hlog", lat)
    return d, hists


def test_cli_json_on_hlog_runs(hlog_runs) -> None:
    d, hists = hlog_runs
    a = [str(d / f"a{i}.hlog") for i in range(MIN_RUNS)]
    b = [str(d / f"b{i}.hlog") for i in range(MIN_RUNS)]
    r = compare_process(*a, "--vs", *b, "--stat", "p50,p99,p99.999,max,mean", "--json", "--seed", "7")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert list(doc) == ["statistics"]
    rows = {s["stat"]: s for s in doc["statistics"]}
    assert list(rows) == ["p50", "p99", "p99.999", "max", "mean"]
    for s in rows.values():
        assert list(s)[:len(KEYS)] == KEYS and s["runs_a"] == s["runs_b"] == MIN_RUNS
    p50 = rows["p50"]
    assert p50["values_a"] == [hists[f"a{i}"].percentiles([50.0])[50.0] for i in range(MIN_RUNS)]
    assert p50["delta"] == pytest.approx(math.log(np.median(p50["values_b"]) / np.median(p50["values_a"])))
    assert p50["verdict"] == "different" and p50["ci95"][0] > MARGIN and p50["seed"] == 7
    assert p50["ci95"][0] <= p50["ci90"][0] <= p50["delta"] <= p50["ci90"][1] <= p50["ci95"][1]
    assert p50["margin"] == pytest.approx(MARGIN) and p50["samples_a"] == [10_000] * MIN_RUNS
    assert rows["p99"]["verdict"] == "different"
    tail = rows["p99.999"]  # 10,000 packets per run cannot resolve p99.999 (368,887 needed)
    assert tail["verdict"] == "not resolvable" and tail["values_a"] == [None] * MIN_RUNS
    assert "not resolvable at N = 10000" in tail["reason"] and "368887" in tail["reason"]
    assert tail["ci90"] is None and tail["ci95"] is None
    mx = rows["max"]
    assert mx["verdict"] == "not resolvable" and mx["ci95"] is None and "no confidence interval" in mx["reason"]
    assert mx["values_a"] == [hists[f"a{i}"].hdr_max() for i in range(MIN_RUNS)]  # the log holds buckets


def test_cli_three_runs_text_and_plot(hlog_runs, tmp_path: Path) -> None:
    d, _ = hlog_runs
    plot = tmp_path / "bands.html"
    r = compare(*(str(d / f"a{i}.hlog") for i in range(3)), "--vs", *(str(d / f"b{i}.hlog") for i in range(3)),
                "--stat", "p50,p99.999", "--plot", str(plot))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    row = next(ln for ln in lines if ln.startswith("p50 "))
    assert "inconclusive" in row
    assert any("runs per arm would likely decide" in ln for ln in lines)
    assert any(ln.startswith("p99.999 ") and "not resolvable" in ln for ln in lines)
    assert plot.is_file() and "range of 3 runs" in plot.read_text()


def test_cli_latency_dir_and_moongen_csv(tmp_path: Path) -> None:
    make_capture_pair(tmp_path / "pre.pcap", tmp_path / "post.pcap", 4000, rate_pps=10_000,
                      latency=LatencyModel(base_ns=8000, tail_mean_ns=3000), seed=3)
    summary = analyze_captures(tmp_path / "pre.pcap", tmp_path / "post.pcap", tmp_path / "run1", IdKey(offset=42),
                               html=False)
    r = compare(str(tmp_path / "run1"), "--vs", str(tmp_path / "run1"), "--stat", "p50,p99", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["statistics"]
    assert rows[0]["values_a"] == [summary["percentiles_ns"]["50"]]
    assert rows[1]["values_a"] == [summary["percentiles_ns"]["99"]]
    assert rows[0]["verdict"] == "inconclusive" and rows[0]["runs_needed"] >= MIN_RUNS
    # MoonGen's own histogram file (exact values with decimals), as one run on each side
    csv = str(DATA / "moongen" / "histogram.csv")
    r = compare(csv, "--vs", csv, "--stat", "p50", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["statistics"][0]["values_a"] == [2227.2]


def test_cli_throughput_runs(tmp_path: Path) -> None:
    rep = DATA / "tcp" / "iperf3-cubic-2streams.json"
    doc = json.loads(rep.read_text())
    rates = [s["receiver"]["bits_per_second"] for s in doc["end"]["streams"]]
    r = compare(str(rep), "--vs", str(rep), "--json")
    assert r.returncode == 0, r.stderr
    rows = {s["stat"]: s for s in json.loads(r.stdout)["statistics"]}
    assert list(rows) == ["throughput", "jain"]
    assert rows["throughput"]["values_a"] == [pytest.approx(sum(rates))]
    assert rows["jain"]["values_a"] == [pytest.approx(sum(rates) ** 2 / (2 * sum(x * x for x in rates)))]
    assert rows["jain"]["scale"] == "difference" and rows["jain"]["margin"] == pytest.approx(0.05)
    dirs = []
    for seed in (1, 2):
        make_tcp_capture(tmp_path / f"c{seed}.pcap", flows=2, segments=1500, seed=seed)
        summary, _flows, _ = analyze_tcp([str(tmp_path / f"c{seed}.pcap")], tmp_path / f"t{seed}", html=False)
        dirs.append((tmp_path / f"t{seed}", summary))
    r = compare(str(dirs[0][0]), "--vs", str(dirs[1][0]), "--stat", "throughput,jain", "--json")
    assert r.returncode == 0, r.stderr
    rows = {s["stat"]: s for s in json.loads(r.stdout)["statistics"]}
    assert rows["throughput"]["values_b"] == [pytest.approx(sum(f["goodput_bps"] for f in dirs[1][1]["flows"]))]
    assert rows["jain"]["values_a"] == [dirs[0][1]["jain_of_means"]]


def test_cli_usage_and_input_errors(hlog_runs, tmp_path: Path) -> None:
    d, _ = hlog_runs
    a = str(d / "a0.hlog")
    rep = str(DATA / "tcp" / "iperf3-cubic-2streams.json")
    for args, code, text in [
        ((a, a), 2, "--vs"),
        ((a, "--vs"), 2, "both sets need at least one run"),
        ((a, "--vs", a, "--jsn"), 2, "no such option: --jsn"),
        ((a, "--vs", rep), 2, "mix latency runs and throughput runs"),
        ((rep, "--vs", rep, "--plot", str(tmp_path / "p.html")), 2, "--plot draws latency runs"),
        ((a, "--vs", a, "--plot", str(tmp_path / "p.png")), 2, "ending in .html"),
        ((a, "--vs", a, "--stat", "jain"), 2, "not a statistic of latency runs"),
        ((a, "--vs", a, "--stat", "p100"), 2, "use min/max"),
        ((a, "--vs", a, "--margin", "-5%"), 2, "margin"),
        ((a, "--vs", str(tmp_path / "missing.hlog")), 1, "missing.hlog"),
        ((a, "--vs", str(DATA / "tcp" / "iperf3-refused.json")), 1, "iperf3-refused.json"),
    ]:
        r = compare(*args)
        assert r.returncode == code, (args, r.stderr)
        assert text in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
