"""`benchbook latency` from the shell on generated captures with known truth."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hdrh.histogram import HdrHistogram as H

from benchbook.analysis.hlog import read_hlog
from benchbook.analysis.latency import IdKey
from benchbook.analysis.latency_report import analyze_captures
from benchbook.analysis.latency_table import read_latencies
from benchbook.capture.synth import LatencyModel, make_capture_pair

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    truth = make_capture_pair(
        d / "pre.pcap", d / "post.pcap", 30_000, rate_pps=10_000,  # 3 s of capture time
        latency=LatencyModel(base_ns=8000, tail_mean_ns=3000, spike_prob=0.001, spike_ns=400_000),
        loss=0.01, duplicate=0.005, reorder=0.002, seed=11,
    )
    return d, truth


def needed(p: float) -> int:
    """V2: the fewest samples whose largest lies above the p-th percentile with probability 97.5 %."""
    return int(np.ceil(np.log(0.025) / np.log(p / 100)))


def check_percentiles(s: dict, lat: np.ndarray) -> None:
    """Every resolvable percentile is the discrete percentile of the truth; the others are null with the reason."""
    for p, v in s["percentiles_ns"].items():
        if len(lat) >= needed(float(p)):
            assert v == discrete(lat, float(p)), p
        else:
            assert v is None, p
            assert s["unresolved_percentiles"][p] == (f"not resolvable at N = {len(lat)}: p{p} needs N >= "
                                                      f"{needed(float(p))} for a 95 % interval")
    assert set(s["unresolved_percentiles"]) == {p for p in s["percentiles_ns"] if len(lat) < needed(float(p))}


def discrete(values: np.ndarray, p: float) -> int:
    v = np.sort(values)
    r = max(1, int(np.ceil(p / 100 * len(v) - 1e-9)))
    return int(v[r - 1])


@pytest.mark.parametrize("mode", [["--id-offset", "42"], ["--content-key"]])
def test_latency_command_outputs(pair, mode, tmp_path):
    d, truth = pair
    out = tmp_path / "out"
    r = subprocess.run(BENCHBOOK + ["latency", str(d / "pre.pcap"), str(d / "post.pcap"), "-o", str(out), *mode],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    for k, v in truth.counts().items():
        if k != "post" and k != "pre":
            assert s[k] == v, k
    assert s["pre"] == truth.pre and s["post"] == truth.post
    lat = truth.latency_ns[truth.latency_ns >= 0]
    assert s["min_ns"] == lat.min() and s["max_ns"] == lat.max() and s["mean_ns"] == round(lat.mean())
    assert set(s["percentiles_ns"]) == {"50", "90", "99", "99.9", "99.99", "99.999"}
    check_percentiles(s, lat)
    assert set(s["unresolved_percentiles"]) == {"99.99", "99.999"}  # 29,701 matched: p99.99 needs 36,887
    assert s["percentile_method"].startswith("exact")
    assert "99.9 %" in r.stdout and str(s["percentiles_ns"]["99.9"]) in r.stdout
    row = next(ln for ln in r.stdout.splitlines() if ln.strip().startswith("99.99 %"))
    assert row.split("%", 1)[1].strip() == s["unresolved_percentiles"]["99.99"]
    assert str(discrete(lat, 99.99)) not in row
    # per-packet table
    t = read_latencies(out / "latencies.parquet")
    assert np.array_equal(np.sort(t["latency_ns"]), np.sort(lat))
    assert np.all(t["t_post_ns"] - t["t_pre_ns"] == t["latency_ns"])
    # one interval per second of capture time, together all latencies
    log = read_hlog(out / "latency.hlog")
    assert len(log.intervals) == 3
    assert sum(iv.histogram.total_count for iv in log.intervals) == len(lat)
    per_sec = np.bincount((truth.t_pre_ns[truth.latency_ns >= 0] - truth.t_pre_ns[0]) // 10**9)
    assert [iv.histogram.total_count for iv in log.intervals] == per_sec.tolist()
    assert (out / "hdr.html").stat().st_size > 1000


def test_hlog_is_read_by_hdrh_package(pair, tmp_path):
    hdrh = pytest.importorskip("hdrh.log")
    d, truth = pair
    out = tmp_path / "o"
    subprocess.run(BENCHBOOK + ["latency", str(d / "pre.pcap"), str(d / "post.pcap"), "-o", str(out),
                                "--id-offset", "42", "--no-html"], check=True, capture_output=True)

    reader = hdrh.HistogramLogReader(str(out / "latency.hlog"), H(1, 5_000_000_000, 3))
    n = 0
    while (h := reader.get_next_interval_histogram()) is not None:
        n += h.get_total_count()
    assert n == truth.matched
    assert not (out / "hdr.html").exists()


def test_latency_command_bad_input(pair, tmp_path):
    d, _ = pair
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x00" * 64)
    r = subprocess.run(
        BENCHBOOK + ["latency", str(bad), str(d / "post.pcap"), "-o", str(tmp_path / "x"), "--id-offset", "42"],
        capture_output=True, text=True,
    )
    assert r.returncode == 1
    assert f"{bad}: at byte offset 0: unknown magic 0x00000000" in r.stderr
    r = subprocess.run(BENCHBOOK + ["latency", str(d / "pre.pcap"), str(d / "post.pcap"), "-o", str(tmp_path / "y")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "--id-offset" in r.stderr


def test_truncated_capture_warns_with_offset_and_keeps_complete_packets(pair, tmp_path):
    d, truth = pair
    raw = (d / "post.pcap").read_bytes()
    cut = tmp_path / "post-cut.pcap"
    cut.write_bytes(raw[:-10])
    rec = 16 + 64
    r = subprocess.run(BENCHBOOK + ["latency", str(d / "pre.pcap"), str(cut), "-o", str(tmp_path / "t"),
                                    "--id-offset", "42", "--no-html"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert f"post-cut.pcap: truncated last packet record at byte offset {len(raw) - rec}" in r.stderr
    s = json.loads((tmp_path / "t" / "summary.json").read_text())
    assert s["post"] == truth.post - 1


def test_exact_percentiles_beyond_the_in_memory_limit(pair, tmp_path):
    d, truth = pair
    lat = truth.latency_ns[truth.latency_ns >= 0]
    s = analyze_captures(d / "pre.pcap", d / "post.pcap", tmp_path / "o", IdKey(42), exact_limit=1000, html=False)
    assert "two passes" in s["percentile_method"]
    check_percentiles(s, lat)
    assert s["min_ns"] == lat.min() and s["max_ns"] == lat.max()
