"""tcpdump (timestamper) and dpdk-testpmd (DuT) tools on real programs: counters parsed from
their own output, clear errors when they cannot start, nothing left behind."""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.tools import loadgen, tcpdump, testpmd
from conftest import require_program, require_root


def _wait_captured(cap: tcpdump.Capture, n: int, timeout_s: float = 10.0) -> None:
    """Poll tcpdump's own count (SIGUSR1 makes it print its statistics) until it has captured n packets."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        os.kill(cap.command.pid, signal.SIGUSR1)
        time.sleep(0.02)
        # "tcpdump: 120 packets captured, 123 packets received by filter, 0 packets dropped by kernel"
        counts = re.findall(r"(\d+) packets captured", cap.command.output("stderr"))
        if counts and int(counts[-1]) >= n:
            return


def _wait_rx(tb, node: str, ifname: str, n: int, timeout_s: float = 10.0) -> None:
    """Poll an interface's kernel receive counter until it reaches n."""
    path = f"/sys/class/net/{ifname}/statistics/rx_packets"
    deadline = time.monotonic() + timeout_s
    while int(tb.host(node).run(["cat", path]).stdout) < n and time.monotonic() < deadline:
        time.sleep(0.02)


@pytest.fixture
def tb():
    require_root()
    require_program("tcpdump")

    with LocalBackend().topology() as t:
        yield t


@pytest.mark.root
def test_tcpdump_counts_and_missing_lines_are_none(tb, tmp_path):
    pcap = tmp_path / "c.pcap"
    cap = tcpdump.start_capture(tb.host("dut"), tcpdump.build_argv(tb.ifname("din"), pcap, direction="in",
                                                                   bpf_filter="udp"), pcap)
    loadgen.run_loadgen(tb.host("lg"), loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=1000, count=123))
    _wait_captured(cap, 123)
    st = cap.stop()
    assert st["captured"] == 123 and st["received_by_filter"] == 123 and st["dropped_by_kernel"] == 0
    assert st["exit_code"] == 0 and "--time-stamp-precision=nano" in st["argv"]
    # the nanosecond pcap magic (0xa1b23c4d, either byte order)
    assert pcap.read_bytes()[:4] in (bytes.fromhex("4d3cb2a1"), bytes.fromhex("a1b23c4d"))
    assert tcpdump.parse_stats("tcpdump: listening on x\n") == {
        "captured": None, "received_by_filter": None, "dropped_by_kernel": None, "dropped_by_interface": None}


@pytest.mark.root
def test_tcpdump_bad_interface_is_a_clear_error(tb, tmp_path):
    pcap = tmp_path / "x.pcap"
    with pytest.raises(tcpdump.CaptureError, match="no-such-if0"):
        tcpdump.start_capture(tb.host("dut"), tcpdump.build_argv("no-such-if0", pcap), pcap)


@pytest.mark.root
def test_testpmd_forwards_and_reports(tb):
    require_program("dpdk-testpmd")
    argv = testpmd.build_argv([tb.ifname("din"), tb.ifname("dout")], main_cpu=1, fwd_cpu=1,
                              file_prefix=f"bb-{tb.token}-tp")
    tp = testpmd.start_testpmd(tb.host("dut"), argv)
    loadgen.run_loadgen(tb.host("lg"), loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=2000, count=500))
    _wait_rx(tb, "ts", tb.ifname("ts0"), 500)  # every forwarded frame has left testpmd's out port
    st = tp.stop()
    assert st["exit_code"] == 0
    assert st["ports"][0]["RX-packets"] == 500 and st["ports"][1]["TX-packets"] == 500
    assert st["total"]["RX-packets"] == 500 and st["total"]["TX-dropped"] == 0


@pytest.mark.root
def test_testpmd_bad_interface_is_a_clear_error(tb):
    require_program("dpdk-testpmd")
    argv = testpmd.build_argv(["no-such-if0", tb.ifname("dout")], main_cpu=1, fwd_cpu=1,
                              file_prefix=f"bb-{tb.token}-tp")
    with pytest.raises(testpmd.TestpmdError, match=r"(?s)forwards on 1 port\(s\), expected 2.*SIOCGIFINDEX"):
        testpmd.start_testpmd(tb.host("dut"), argv)


@pytest.mark.root
def test_dpdk_runtime_dir_removed_after_teardown():
    require_root()
    require_program("dpdk-testpmd")

    with LocalBackend().topology() as t:
        argv = testpmd.build_argv([t.ifname("din"), t.ifname("dout")], main_cpu=1, fwd_cpu=1,
                                  file_prefix=f"bb-{t.token}-tp")
        tp = testpmd.start_testpmd(t.host("dut"), argv)
        assert (Path("/var/run/dpdk") / f"bb-{t.token}-tp").is_dir()
        tok = t.token
    assert tp.command.poll() is not None
    assert not (Path("/var/run/dpdk") / f"bb-{tok}-tp").exists()


def test_parse_forward_stats_without_output():
    assert testpmd.parse_forward_stats("EAL: Error - exiting with code: 1\n") == {"ports": {}, "total": {}}
