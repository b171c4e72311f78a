"""`benchbook latency` on bad options and bad captures: one line naming what is wrong, exit 2 for
usage and 1 for data, never a traceback; a failed rerun leaves the earlier report exactly as it was;
warnings are kept in summary.json; latencies <= 0 are explained."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchbook.capture.synth import LatencyModel, make_capture_pair

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
MALFORMED = Path(__file__).resolve().parent.parent / "data" / "malformed"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    make_capture_pair(d / "pre.pcap", d / "post.pcap", 2000, rate_pps=10_000,
                      latency=LatencyModel(base_ns=8000, tail_mean_ns=1000), seed=3)
    return d


def latency(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHBOOK + ["latency", *map(str, args)], capture_output=True, text=True, env=env,
                          timeout=240)


def assert_one_line_error(r: subprocess.CompletedProcess, code: int, text: str) -> None:
    assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if "error" in ln]
    assert len(errors) == 1 and text in errors[0], r.stderr


@pytest.mark.parametrize("option,text", [
    (["--window", "1000"], "--window 1000: expected a power of two"),
    (["--max-latency-ms", "nan"], "--max-latency-ms nan: expected a number > 0"),
    (["--max-latency-ms", "1e300"], "expected a number > 0 and at most"),
    (["--max-latency-ms", "-1"], "expected a number > 0"),
    (["--id-width", "9"], "--id-width 9: expected 1..8"),
])
def test_bad_options_are_usage_errors(pair, tmp_path, option, text):
    r = latency(pair / "pre.pcap", pair / "post.pcap", "-o", tmp_path / "out", "--id-offset", "42", *option)
    assert_one_line_error(r, 2, text)
    assert not (tmp_path / "out").exists()


def test_out_naming_a_file_is_a_usage_error(pair, tmp_path):
    f = tmp_path / "afile"
    f.write_text("keep me")
    r = latency(pair / "pre.pcap", pair / "post.pcap", "-o", f, "--id-offset", "42")
    assert_one_line_error(r, 2, "exists and is not a directory")
    assert f.read_text() == "keep me"


@pytest.mark.parametrize("which,text", [("dir", "is a directory"), ("/dev/null", "is a character device"),
                                        ("absent", "no such file")])
def test_directory_device_missing_named(pair, tmp_path, which, text):
    cap = {"dir": tmp_path, "absent": tmp_path / "absent.pcap"}.get(which, Path(which))
    r = latency(cap, pair / "post.pcap", "-o", tmp_path / "out", "--id-offset", "42")
    assert_one_line_error(r, 2, text)


def test_corrupt_zstd_is_one_line_exit_1(pair, tmp_path):
    r = latency(MALFORMED / "zstd-garbage.pcap.zst", pair / "post.pcap", "-o", tmp_path / "out", "--id-offset", "42")
    assert_one_line_error(r, 1, "corrupt zstd data")


def test_failed_rerun_leaves_previous_report_exactly(pair, tmp_path):
    out = tmp_path / "out"
    r = latency(pair / "pre.pcap", pair / "post.pcap", "-o", out, "--id-offset", "42")
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"latencies.parquet", "latency.hlog", "summary.json", "hdr.html"} <= set(before)
    bad = tmp_path / "bad.pcap"
    good = (pair / "pre.pcap").read_bytes()
    rec = 16 + int.from_bytes(good[32:36], "little")  # the synthetic frames are all one size
    bad.write_bytes(good[:24 + 5 * rec] + b"\xff" * 16 + good[24 + 5 * rec:])  # record 5 claims 4 GB
    r = latency(bad, pair / "post.pcap", "-o", out, "--id-offset", "42")
    assert r.returncode == 1 and "left unchanged" in r.stderr, r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.tmp-")]


def test_truncation_warnings_kept_in_summary(pair, tmp_path):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes((pair / "pre.pcap").read_bytes()[:-30])
    out = tmp_path / "out"
    r = latency(cut, pair / "post.pcap", "-o", out, "--id-offset", "42", "--no-html")
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert any("truncated last packet record" in w for w in s["details"]["warnings"]), s["details"]["warnings"]
    assert "truncated last packet record" in r.stderr


def test_same_capture_twice_explained(pair, tmp_path):
    out = tmp_path / "out"
    r = latency(pair / "pre.pcap", pair / "pre.pcap", "-o", out, "--id-offset", "42", "--no-html")
    assert r.returncode == 1  # nothing matched
    assert "same capture given twice, or timestamps too coarse" in r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert any("latency <= 0" in w for w in s["details"]["warnings"])


def test_byte_swapped_ids_match_like_the_counter(pair, tmp_path):
    """Reading the little-endian counter as big-endian gives ids whose low bytes do not vary (the
    slot of the id table must follow the counter at either end): the same packets match."""
    sums = []
    for order in ([], ["--id-big-endian"]):
        out = tmp_path / f"out{len(order)}"
        r = latency(pair / "pre.pcap", pair / "post.pcap", "-o", out, "--id-offset", "42", "--no-html", *order)
        assert r.returncode == 0, r.stderr
        s = json.loads((out / "summary.json").read_text())
        sums.append({k: s[k] for k in ("pre", "post", "matched", "lost", "duplicates", "reordered", "min_ns",
                                       "max_ns", "mean_ns", "percentiles_ns")})
    assert sums[0] == sums[1] and sums[0]["matched"] > 1900


def test_captures_piped_through_fifos(pair, tmp_path):
    """As when tcpdump writes into a named pipe: each capture can be read once, as a stream."""
    feeders = []
    for side in ("pre", "post"):
        fifo = tmp_path / f"{side}.fifo"
        os.mkfifo(fifo)
        data = (pair / f"{side}.pcap").read_bytes()
        t = threading.Thread(target=lambda f=fifo, d=data: f.write_bytes(d))
        t.start()
        feeders.append(t)
    out = tmp_path / "out"
    r = latency(tmp_path / "pre.fifo", tmp_path / "post.fifo", "-o", out, "--id-offset", "42", "--no-html")
    for t in feeders:
        t.join(timeout=30)
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["pre"] == s["post"] == 2000 and s["matched"] > 1900
