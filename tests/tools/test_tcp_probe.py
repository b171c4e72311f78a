"""tcp_probe records from `perf script` (recorded output)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Topology
from benchbook.tools import tcp_probe
from conftest import require_program, require_root

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def test_parse_script_records() -> None:
    text = (DATA / "perf-script-tcp_probe.txt").read_text()
    samples = tcp_probe.parse_script(text)
    assert len(samples) == 120
    first = samples[0]
    assert (first.src, first.sport, first.dst, first.dport) == ("127.0.0.1", 5301, "127.0.0.1", 47516)
    assert (first.cwnd, first.ssthresh, first.srtt_us, first.snd_wnd) == (10, 2147483647, 19, 65536)
    assert first.snd_nxt == 0xC6B51534 and first.t_s == 2116.207821
    assert all(s.cwnd > 0 for s in samples)
    assert len(tcp_probe.parse_script(text, port=5301)) == 70


def test_malformed_record_names_the_line() -> None:
    bad = "  iperf3  1 [000]  1.000001: tcp:tcp_probe: family=AF_INET src=1.2.3.4:5 dest=1.2.3.4:6 snd_cwnd=x"
    with pytest.raises(tcp_probe.TcpProbeError, match="line 2"):
        tcp_probe.parse_script("\n" + bad, source="p.txt")


@pytest.mark.root
def test_live_recording_sees_a_transfer_and_leaves_no_tracefs_mount(tmp_path: Path) -> None:
    require_root()
    require_program("perf")
    require_program("iperf3")

    mounted_before = tcp_probe._tracefs_mounted()
    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        ok, why = tcp_probe.probe_available(host)
        if not ok:
            pytest.skip(f"tcp:tcp_probe not available: {why}")
        srv = host.start(["iperf3", "-s", "-p", "5297", "--forceflush", "-1"])
        assert srv.wait_for("Server listening", timeout_s=10)
        rec = tcp_probe.Recording(host, tmp_path / "probe.data", port=5297).start()
        deadline = time.monotonic() + 20   # perf writes its header once the tracepoint is enabled
        while time.monotonic() < deadline and not ((tmp_path / "probe.data").exists()
                                                   and (tmp_path / "probe.data").stat().st_size > 0):
            time.sleep(0.05)
        host.run(["iperf3", "-c", "127.0.0.1", "-p", "5297", "-t", "1", "-b", "50M"], timeout_s=30)
        samples = rec.stop()
    assert samples and all(5297 in (s.sport, s.dport) for s in samples)
    assert max(s.cwnd for s in samples) >= 10
    assert tcp_probe._tracefs_mounted() == mounted_before
