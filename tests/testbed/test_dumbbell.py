"""The dumbbell link emulation: topology, capability gating, a real two-flow run as root, cleanup."""

from __future__ import annotations

import subprocess

import pytest

from benchbook.testbed.capabilities import NotRunnable, probe_netem
from benchbook.testbed.dumbbell import Dumbbell, FlowSpec, LinkSpec, requirements
from benchbook.testbed.topology import BUILTIN
from conftest import require_program, require_root


def test_topology_shape() -> None:
    topo = BUILTIN["dumbbell"](3)
    assert topo.roles == ["s1", "s2", "s3", "rtr", "rcv"]
    assert topo.endpoint("rb").address == "198.19.0.254/24"
    assert topo.endpoint("s2e").address == "198.18.2.1/24"
    with pytest.raises(ValueError, match="1..8"):
        BUILTIN["dumbbell"](0)
    delayed = BUILTIN["dumbbell"](2, (2,))
    assert delayed.roles == ["s1", "s2", "d2", "rtr", "rcv"]
    assert delayed.endpoint("d2a").promisc and delayed.endpoint("d2b").promisc
    assert delayed.endpoint("r2").address == "198.18.2.254/24"
    with pytest.raises(ValueError, match="shaper"):
        LinkSpec(shaper="cake")


def test_requirements_name_what_is_needed() -> None:
    caps = {c.capability for c in requirements(LinkSpec(loss=0.01), [FlowSpec("cubic"), FlowSpec("bbr", 20.0)],
                                                tracepoint=True)}
    assert {"qdisc:htb", "qdisc:pfifo", "tcp-cc:cubic", "tcp-cc:bbr", "netem", "nft:numgen-random-drop",
            "tracepoint:tcp:tcp_probe", "iperf3"} <= caps
    assert "netem" not in {c.capability for c in requirements(LinkSpec(), [FlowSpec("reno")])}


def _leftovers(token: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout
    return [line for line in out.splitlines() if f"bb-{token}-" in line]


@pytest.mark.root
def test_jitter_without_netem_is_not_runnable_and_leaves_nothing() -> None:
    require_root()
    if probe_netem().ok:
        pytest.skip("this kernel has netem: jitter is runnable")
    with pytest.raises(NotRunnable, match="jitter needs netem"):
        with Dumbbell(LinkSpec(jitter_ms=5), [FlowSpec("reno")], token="d0d0d0"):
            pass
    assert _leftovers("d0d0d0") == []


@pytest.mark.root
@pytest.mark.slow
def test_per_flow_delay_raises_that_flows_rtt() -> None:
    require_root()
    require_program("iperf3")
    token = "d3d3d3"
    with Dumbbell(LinkSpec(rate_bps=20_000_000, buffer_packets=50), [FlowSpec("reno"), FlowSpec("reno", 40.0)],
                  token=token) as db:
        mode = db.delay_mode
        res = db.run_flows(3, interval_s=0.5)
    assert _leftovers(token) == []
    near, far = (f.as_dict() for f in res["flows"])
    # the queue (50 packets at 20 Mbit/s: at most 30 ms) is shared; the delay adds 40 ms to flow 2 only
    assert far["mean_rtt_ms"] > near["mean_rtt_ms"] + 20
    delay = res["record"]["delay"]
    assert delay["mode"] == mode and delay["per_flow_ms"] == {2: 40.0}
    if mode == "delay-line":
        line = delay["delay_lines"]["2"]
        assert line["configured_delay_ms"] == 40.0
        assert line["calibration_udp_1gbps_1s"]["received_bps"] > 0
        run = line["after_run"]["a_to_b"]
        assert run["delay_ns"] == 40_000_000
        # every payload byte flow 2's receiver counted crossed the line in a frame of at most one MSS
        # (gso_max_segs 1 on every interface; 1460 bytes without TCP options), so the line forwarded at least
        # that many frames (how many depends on the share the far flow wins: a CI run had 951)
        far_bytes = sum(s.bytes_received or 0 for s in res["flows"][1].report.streams)
        assert far_bytes > 0 and run["forwarded"] >= far_bytes // 1460
        # counters were reset after the calibration (1 s offered at 1 Gbit/s: tens of thousands of frames),
        # so the run's 3 s at 20 Mbit/s (at most about 5,000 frames) are counted alone
        assert run["forwarded"] < line["calibration_lateness"]["forwarded"]
        assert line["calibration_lateness"]["lateness_max_ns"] >= line["calibration_lateness"]["lateness_mean_ns"]


@pytest.mark.root
@pytest.mark.slow
def test_two_flows_through_the_bottleneck() -> None:
    require_root()
    require_program("iperf3")
    token = "d1d1d1"
    with Dumbbell(LinkSpec(rate_bps=20_000_000, buffer_packets=100), [FlowSpec("reno"), FlowSpec("cubic")],
                  token=token) as db:
        assert len(_leftovers(token)) == 4
        res = db.run_flows(3, interval_s=0.5)
    assert _leftovers(token) == []
    flows = [f.as_dict() for f in res["flows"]]
    assert [f["cca_reported"] for f in flows] == ["reno", "cubic"]
    # no flow gets through faster than the bottleneck (the flows' 3 s windows do not coincide exactly, so
    # their sum may exceed it)
    assert all(0 < f["receiver_bps"] <= 20_000_000 for f in flows)
    fifo = next(q for q in res["qdisc"] if q["kind"] == "pfifo")
    assert fifo["options"]["limit"] == 100 and fifo["packets"] > 1000
    cc = res["record"]["congestion_control"]
    assert cc["allowed_before"] == cc["allowed_after"]


@pytest.mark.root
def test_ctrl_c_inside_leaves_nothing() -> None:
    require_root()
    token = "d2d2d2"
    with pytest.raises(KeyboardInterrupt):
        with Dumbbell(LinkSpec(), [FlowSpec("reno")], token=token):
            raise KeyboardInterrupt
    assert _leftovers(token) == []


def test_dry_run_lists_every_command_without_running() -> None:
    lines = Dumbbell(LinkSpec(rate_bps=100_000_000, buffer_packets=1000, loss=0.001),
                     [FlowSpec("cubic"), FlowSpec("bbr")]).dry_run(30)
    text = "\n".join(lines)
    assert "[rtr] tc class replace dev bb-000000-rb parent 1: classid 1:10 htb rate 100000000bit" in text
    assert "[rtr] tc qdisc replace dev bb-000000-rb parent 1:10 handle 10: pfifo limit 1000" in text
    assert "[s1] iperf3 -c 198.19.0.1 -p 5202 -t 30 -i 0.3 -C cubic -J" in text
    assert "[s2] iperf3 -c 198.19.0.1 -p 5203 -t 30 -i 0.3 -C bbr -J" in text
    assert "numgen random mod 1000000 < 1000 drop" in text
    assert _leftovers("000000") == []
