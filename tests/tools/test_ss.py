"""`ss -tin` parsing on recorded output; sampling in a namespace as root."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Topology
from benchbook.tools import ss
from conftest import require_program, require_root

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def test_parse_bbr_sockets() -> None:
    socks = ss.parse((DATA / "ss-tin-bbr.txt").read_text())
    assert len(socks) == 3
    s = socks[1]
    assert (s["local_port"], s["peer_port"], s["state"], s["send_q_bytes"]) == (44606, 5301, "ESTAB", 262144)
    assert s["cca"] == "bbr"
    assert (s["cwnd"], s["ssthresh"], s["mss_bytes"]) == (20, 8, 65483)
    assert (s["rtt_ms"], s["rttvar_ms"], s["min_rtt_ms"]) == (0.051, 0.051, 0.002)
    assert s["delivery_rate_bps"] == 56128285712.0
    assert s["pacing_rate_bps"] == 57625036560.0
    assert s["bbr_bw_bps"] == 58207107640.0 and s["bbr_min_rtt_ms"] == 0.002
    assert s["bbr_pacing_gain"] == 1.0 and s["bbr_cwnd_gain"] == 2.0
    assert "ssthresh" not in socks[0]          # not printed: absent, never 0


def test_rates_with_unit_prefixes() -> None:
    text = "ESTAB 0 0 10.0.0.1:1 10.0.0.2:2\n\t cubic rtt:1.5/0.75 cwnd:10 pacing_rate 12.5Mbps delivery_rate 800Kbps"
    (s,) = ss.parse(text)
    assert s["pacing_rate_bps"] == 12.5e6 and s["delivery_rate_bps"] == 800e3 and s["cca"] == "cubic"


@pytest.mark.root
def test_sampler_sees_a_connection() -> None:
    require_root()
    require_program("iperf3")

    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        srv = host.start(["iperf3", "-s", "-p", "5298", "--forceflush", "-1"])
        assert srv.wait_for("Server listening", timeout_s=10)
        cli = host.start(["iperf3", "-c", "127.0.0.1", "-p", "5298", "-t", "2", "-C", "reno"])
        sampler = ss.Sampler(host, interval_s=0.2, filter_expr="dport = :5298").start()
        deadline = time.monotonic() + 20
        # the control connection (same port) keeps the default CCA: wait for the data stream's socket
        while time.monotonic() < deadline and not any(s.get("cca") == "reno" and s.get("cwnd")
                                                      for s in list(sampler.samples)):
            time.sleep(0.05)
        samples = sampler.stop()
        cli.wait(timeout_s=30)
    assert samples and all("t_ns" in s for s in samples)
    assert any(s.get("cca") == "reno" and s.get("cwnd", 0) > 0 for s in samples)
