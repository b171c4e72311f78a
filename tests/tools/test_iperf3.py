"""iperf3 command lines and -J reports (recorded real output; a live run as root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis.fairness import combine
from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Topology
from benchbook.tools import iperf3
from conftest import require_program, require_root

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def test_client_argv_sets_the_cca_per_flow() -> None:
    argv = iperf3.client_argv("198.18.1.2", port=5202, duration_s=30, cca="cubic", interval_s=0.3)
    assert argv == ["iperf3", "-c", "198.18.1.2", "-p", "5202", "-t", "30", "-i", "0.3", "-C", "cubic", "-J"]
    assert "-P" in iperf3.client_argv("h", parallel=4)
    with pytest.raises(ValueError, match="whole seconds"):
        iperf3.client_argv("h", duration_s=0.5)   # iperf3 would read 0: run forever
    assert iperf3.server_argv(5202) == ["iperf3", "-s", "-p", "5202", "--forceflush", "-1"]


def test_report_per_interval_and_stream() -> None:
    rep = iperf3.read_report(DATA / "iperf3-cubic-2streams.json")
    assert rep.cca_sender == "cubic" and rep.num_streams == 2
    assert len(rep.intervals) == 8                        # 4 intervals x 2 streams
    second = [r for r in rep.intervals if r["start_s"] > 0.2 and r["start_s"] < 0.4]
    assert [(r["socket"], r["bytes"], r["retransmits"]) for r in second] == [(5, 913571840, 0), (7, 913571840, 0)]
    assert [s.bytes_sent for s in rep.streams] == [2991063040, 2983198720]
    assert rep.total_retransmits() == 0
    # interval bytes add up to the sender total of each stream
    for s in rep.streams:
        assert sum(r["bytes"] for r in rep.intervals if r["socket"] == s.socket) == s.bytes_sent


def test_error_report_and_bad_json_are_clear() -> None:
    with pytest.raises(iperf3.Iperf3Error, match="Connection refused"):
        iperf3.read_report(DATA / "iperf3-refused.json")
    with pytest.raises(iperf3.Iperf3Error, match="not JSON"):
        iperf3.parse_report("Connecting to host", source="x.json")
    with pytest.raises(iperf3.Iperf3Error, match="x.json: no 'end'"):
        iperf3.parse_report('{"start": {}, "intervals": []}', source="x.json")


@pytest.mark.root
def test_live_client_reports_its_cca_and_retransmit_counter() -> None:
    require_root()
    require_program("iperf3")

    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        iperf3.start_server(host, 5299)
        client = iperf3.start_client(host, iperf3.client_argv("127.0.0.1", port=5299, duration_s=1, cca="reno"))
        rep = client.wait(timeout_s=30)
    assert rep.cca_sender == "reno"
    assert rep.streams[0].bytes_sent > 0
    assert rep.streams[0].retransmits is not None


def test_late_timer_intervals_are_rebinned_on_a_fixed_grid() -> None:
    # iperf3's timer fired late: a 0.5 ms interval between two long ones (rates would spike to 20 Gbit/s)
    rep = iperf3.Iperf3Report(source="late", cca_sender="cubic", cca_receiver="cubic", reverse=False, num_streams=1,
                              start_unix_s=None)
    for n, (a, b, byts) in enumerate([(0.0, 0.3, 3_000_000), (0.3, 0.3005, 1_000_000), (0.3005, 0.6, 2_000_000),
                                      (0.6, 0.75, 500_000)]):
        rep.intervals.append({"interval": n, "socket": 5, "start_s": a, "end_s": b, "bytes": byts,
                              "bps": byts * 8 / (b - a), "omitted": False})
    s = iperf3.flow_series(rep, interval_s=0.3)
    assert s.flows == ["cubic#5"] and s.interval_ns == 300_000_000
    assert s.bps[:, 0].tolist() == pytest.approx([3_000_000 * 8 / 0.3, 3_000_000 * 8 / 0.3])   # 0.75 s: 2 full bins


def _report_with_lengths(label: str, lengths_s: list[float]) -> iperf3.Iperf3Report:
    rep = iperf3.Iperf3Report(source=label, cca_sender=label, cca_receiver=label, reverse=False, num_streams=1,
                              start_unix_s=None)
    t = 0.0
    for n, d in enumerate(lengths_s):
        rep.intervals.append({"interval": n, "socket": 5, "start_s": t, "end_s": t + d, "bytes": 1_000_000,
                              "bps": 8e6 / d, "omitted": False})
        t += d
    return rep


def test_inferred_grids_of_two_clients_agree_when_timer_jitter_straddles_a_tenth_of_a_millisecond() -> None:
    # seen in CI: one client's median interval 0.300049 s, the other's 0.300051 s (0.3000 vs 0.3001 at 0.1 ms)
    a = _report_with_lengths("cubic", [0.300049] * 9 + [0.1])
    b = _report_with_lengths("bbr", [0.300051] * 9 + [0.1])
    sa, sb = iperf3.flow_series(a), iperf3.flow_series(b)
    assert sa.interval_ns == sb.interval_ns == 300_000_000
    both = combine([sa, sb])
    assert both.flows == ["cubic#5", "bbr#5"] and both.bps.shape == (9, 2)
