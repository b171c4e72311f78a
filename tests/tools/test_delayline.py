"""bb-delayline: command line, statistics, and a TCP flow through it as root (its RTT grows by the delay)."""

from __future__ import annotations

import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Endpoint, Link, Topology
from benchbook.tools import delayline, iperf3
from conftest import require_program, require_root


def test_argv_and_bad_values() -> None:
    assert delayline.build_argv("a", "b", 20000, 0, binary="/x/bb-delayline") == ["/x/bb-delayline", "a", "b", "20000",
                                                                                   "0", "100000"]
    with pytest.raises(ValueError, match=">= 0"):
        delayline.build_argv("a", "b", -1, 0)
    with pytest.raises(ValueError, match="limit_packets"):
        delayline.build_argv("a", "b", 1, 0, limit_packets=0)


def test_stats_line() -> None:
    line = ('{"directions": [{"name": "a_to_b", "delay_ns": 20000000, "forwarded": 3985, "dropped_queue_full": 0, '
            '"dropped_send": 0, "queued": 1, "lateness_mean_ns": 315211.4, "lateness_max_ns": 11170110, '
            '"late_over_100us": 1052}]}')
    st = delayline.parse_stats(line)
    assert st["a_to_b"]["forwarded"] == 3985 and st["a_to_b"]["lateness_max_ns"] == 11170110
    with pytest.raises(delayline.DelayLineError, match="not a statistics line"):
        delayline.parse_stats("ready")


@pytest.mark.root
def test_tcp_through_the_delay_line() -> None:
    require_root()
    require_program("iperf3")

    binary = delayline.ensure_binary()
    topo = Topology("delay", ["a", "d", "b"], [
        Link(Endpoint("a", "a0", address="198.18.9.1/24"), Endpoint("d", "da", promisc=True)),
        Link(Endpoint("d", "db", promisc=True), Endpoint("b", "b0", address="198.18.9.2/24"))])
    with LocalBackend(sweep=False).topology(topo) as tb:
        line = delayline.start(tb.host("d"), delayline.build_argv(tb.ifname("da"), tb.ifname("db"), 15000, 15000,
                                                                  binary=binary))
        iperf3.start_server(tb.host("b"), 5296)
        rep = iperf3.start_client(tb.host("a"), iperf3.client_argv("198.18.9.2", port=5296, duration_s=2,
                                                                   cca="cubic")).wait(timeout_s=60)
        stats = line.stop()
    rtts_ms = [r["rtt_us"] / 1000 for r in rep.intervals if r["rtt_us"]]
    assert rtts_ms and min(rtts_ms) >= 30.0          # 15 ms each way; the kernel's srtt never undercuts it
    assert rep.streams[0].bytes_received and rep.streams[0].bytes_received > 0
    assert stats["a_to_b"]["forwarded"] > 100 and stats["b_to_a"]["forwarded"] > 100
    assert stats["a_to_b"]["delay_ns"] == 15_000_000
    assert stats["a_to_b"]["dropped_queue_full"] == 0
