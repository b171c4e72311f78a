"""`benchbook tcp` from the shell on a generated capture with known truth: the five output files, summary.json
exactly in the documented shape, the per-flow table, atomic output, and clear errors on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from benchbook.capture.tcp_synth import make_tcp_capture

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


@pytest.fixture(scope="module")
def capture(tmp_path_factory) -> tuple[Path, object]:
    path = tmp_path_factory.mktemp("tcpcmd") / "bulk.pcap"
    truth = make_tcp_capture(path, flows=3, segments=4000, loss=0.003, reorder=0.003, seed=11)
    return path, truth


def run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}  # typer's error box does not wrap the message
    return subprocess.run([*BENCHBOOK, "tcp", *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("rule", ["zeek", "tcptrace"])
def test_tcp_command_outputs_and_summary(capture, tmp_path: Path, rule: str) -> None:
    path, truth = capture
    out = tmp_path / "out"
    ran = run(str(path), "-o", str(out), "--rule", rule, "--bin-ms", "300")
    assert ran.returncode == 0, ran.stderr
    assert sorted(p.name for p in out.iterdir()) == ["flows.parquet", "intervals.parquet", "plotly.min.js",
                                                     "report.html", "rtt.parquet", "summary.json"]
    s = json.loads((out / "summary.json").read_text())
    assert list(s) == ["rule", "bin_ms", "packets", "flows", "jain_of_means", "jain_mean_of_intervals"]
    assert (s["rule"], s["bin_ms"], s["packets"]) == (rule, 300.0, truth.packets)
    assert len(s["flows"]) == 3
    for f, t in zip(sorted(s["flows"], key=lambda f: f["sport"]), truth.flows, strict=True):
        assert list(f) == ["src", "sport", "dst", "dport", "start_seen", "packets", "bytes", "goodput_bps",
                           "retransmissions", "out_of_order", "syn_retransmissions", "fin_retransmissions", "rtt_ms"]
        assert f["start_seen"] is True and f["syn_retransmissions"] == f["fin_retransmissions"] == 0
        assert list(f["rtt_ms"]) == ["min", "mean", "p99"]
        assert (f["src"], f["sport"], f["dst"], f["dport"]) == (t["src"], t["sport"], t["dst"], t["dport"])
        assert f["bytes"] == t["orig_wire_bytes"] + t["resp_wire_bytes"]
        if rule == "zeek":
            assert (f["retransmissions"], f["out_of_order"]) == (t["retransmissions"] + t["reordered"], 0)
        else:
            assert (f["retransmissions"], f["out_of_order"]) == (t["retransmissions"], t["reordered"])
        assert f"{t['src']:>22} {t['sport']:>5}" in ran.stdout
    assert 0.99 < s["jain_of_means"] <= 1.0 and 0.9 < s["jain_mean_of_intervals"] <= 1.0
    iv = pd.read_parquet(out / "intervals.parquet")
    assert (iv["start_time_ns"] - iv["start_time_ns"].min()).mod(300_000_000).eq(0).all()
    assert int(iv["goodput_bytes"].sum()) == sum(t["unique_bytes"] for t in truth.flows)
    flows = pd.read_parquet(out / "flows.parquet")
    assert {"orig_retransmissions_zeek", "orig_out_of_order_wireshark", "handshake_rtt_ns", "start_seen",
            "orig_syn_retransmissions", "resp_fin_retransmissions"} <= set(flows.columns)
    assert flows["start_seen"].dtype == bool and flows["start_seen"].all()
    html = (out / "report.html").read_text()
    assert "plotly.min.js" in html and "goodput" in html


def test_tcp_command_bad_input_keeps_earlier_report(capture, tmp_path: Path) -> None:
    path, _ = capture
    out = tmp_path / "out"
    assert run(str(path), "-o", str(out), "--no-html").returncode == 0
    before = (out / "summary.json").read_text()
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"not a capture at all")
    ran = run(str(junk), "-o", str(out))
    assert ran.returncode == 1
    assert f"{junk}: at byte offset 0: unknown magic" in ran.stderr
    assert (out / "summary.json").read_text() == before
    assert not list(tmp_path.glob(".out.tmp-*"))
    ran = run(str(tmp_path / "missing.pcap"), "-o", str(out))
    assert ran.returncode == 2 and "no such file" in ran.stderr
    ran = run(str(path), "-o", str(out), "--rule", "bro")
    assert ran.returncode == 2 and "zeek, wireshark, tcptrace" in ran.stderr
    cut = tmp_path / "cut.pcap"
    data = path.read_bytes()
    cut.write_bytes(data[: len(data) - 5])
    ran = run(str(cut), "-o", str(tmp_path / "cut"), "--no-html")
    assert ran.returncode == 0
    assert f"warning: {cut}: truncated last packet record at byte offset" in ran.stderr
