"""tc builders and `tc -s -j qdisc show` read-back (recorded output; a live bottleneck as root)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.testbed.local import LocalBackend
from benchbook.testbed.topology import Topology
from benchbook.tools import tc
from benchbook.tools.host import CommandError
from conftest import require_root

DATA = Path(__file__).resolve().parents[1] / "data" / "tcp"


def test_builders() -> None:
    cmds = tc.htb_bottleneck("eth0", 100_000_000, 1000)
    assert cmds[0] == ["tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10"]
    assert cmds[1] == ["tc", "class", "replace", "dev", "eth0", "parent", "1:", "classid", "1:10", "htb", "rate",
                       "100000000bit", "quantum", "1514"]
    assert cmds[2] == ["tc", "qdisc", "replace", "dev", "eth0", "parent", "1:10", "handle", "10:", "pfifo", "limit",
                       "1000"]
    assert tc.tbf("e", 10_000_000, latency_ms=50)[-7:] == ["tbf", "rate", "10000000bit", "burst", "32768", "latency",
                                                           "50ms"]
    assert tc.bfifo("e", 30000)[-2:] == ["limit", "30000"]
    with pytest.raises(tc.TcError, match="exactly one"):
        tc.tbf("e", 1000, latency_ms=5, limit_bytes=100)
    with pytest.raises(tc.TcError, match=">= 1 packet"):
        tc.pfifo("e", 0)


def test_stats_with_drops() -> None:
    qs = tc.parse_stats((DATA / "tc-htb-pfifo.json").read_text(), dev="va")
    assert [q.kind for q in qs] == ["htb", "pfifo"]
    fifo = qs[1]
    assert (fifo.parent, fifo.handle, fifo.options["limit"]) == ("1:10", "10:", 10)
    assert (fifo.packets, fifo.drops, fifo.bytes) == (61, 2940, 86610)
    assert qs[0].parent is None and qs[0].dev == "va"
    kinds = {q.kind: q.dev for q in tc.parse_stats((DATA / "tc-all.json").read_text())}
    assert set(kinds) == {"bfifo", "tbf", "htb", "pfifo"} and kinds["bfifo"] == "lo"


def test_stats_without_counters_is_an_error() -> None:
    with pytest.raises(tc.TcError, match="lacks statistics"):
        tc.parse_stats('[{"kind": "pfifo", "handle": "1:"}]')


@pytest.mark.root
def test_live_bottleneck_counts_packets() -> None:
    require_root()

    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        for argv in tc.htb_bottleneck("lo", 10_000_000, 50):
            host.run(argv)
        host.run(["python3", "-c", "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                  "for _ in range(500): s.sendto(b'x' * 1000, ('127.0.0.1', 9))"], check=False)
        qs = tc.qdisc_stats(host, "lo")
    fifo = next(q for q in qs if q.kind == "pfifo")
    assert fifo.options["limit"] == 50
    assert fifo.packets + fifo.drops + fifo.qlen >= 500   # sent, dropped or still queued
    assert fifo.drops > 0


def test_batch_input_and_its_shell_line() -> None:
    cmds = [tc.tbf("eth0", 1000, burst_bytes=1514, limit_bytes=1514000, handle="1:"),
            tc.pfifo("eth0", 1000, parent="1:1", handle="10:")]
    assert tc.batch_input(cmds) == ("qdisc replace dev eth0 root handle 1: tbf rate 1000bit burst 1514 limit 1514000\n"
                                    "qdisc replace dev eth0 parent 1:1 handle 10: pfifo limit 1000\n")
    assert tc.batch_shell(cmds) == ("tc -batch - <<< $'qdisc replace dev eth0 root handle 1: tbf rate 1000bit burst "
                                    "1514 limit 1514000\\nqdisc replace dev eth0 parent 1:1 handle 10: pfifo limit "
                                    "1000'")
    with pytest.raises(tc.TcError, match=r"command \[1\] is not a tc command"):
        tc.batch_input([cmds[0], ["ip", "link"]])
    with pytest.raises(tc.TcError, match="cannot carry"):
        tc.batch_input([["tc", "qdisc", "add", "dev", "a b", "root", "pfifo"]])


@pytest.mark.root
def test_live_batch_applies_every_command_in_one_process_and_stops_at_a_failure() -> None:
    """The real tc: one `tc -batch -` process puts a tbf with a pfifo under it on a namespace's lo (read back with
    `tc -s -j qdisc show`); a batch whose second line fails raises, naming the line, with the first in force."""
    require_root()

    with LocalBackend(sweep=False).topology(Topology("one", ["t"])) as tb:
        host = tb.host("t")
        n_before = len(host.log.records)
        tc.run_batch(host, [tc.tbf("lo", 7_000_000, burst_bytes=1514, limit_bytes=151400, handle="1:"),
                            tc.pfifo("lo", 100, parent="1:1", handle="10:")], what="step")
        ran = host.log.records[n_before:]
        assert len(ran) == 1 and ran[0].argv[-3:] == ["tc", "-batch", "-"]
        assert "pfifo limit 100" in ran[0].what
        qs = {q.kind: q for q in tc.qdisc_stats(host, "lo")}
        assert qs["tbf"].options["rate"] == 875000 and qs["pfifo"].options["limit"] == 100   # tc -j: bytes/s
        assert qs["pfifo"].parent == "1:1"
        with pytest.raises(CommandError, match=":2"):
            tc.run_batch(host, [tc.tbf("lo", 5_000_000, burst_bytes=1514, limit_bytes=151400, handle="1:"),
                                tc.pfifo("nosuchdev", 100, parent="1:1", handle="10:")])
        assert {q.kind: q for q in tc.qdisc_stats(host, "lo")}["tbf"].options["rate"] == 625000
