"""Zunker (master thesis 2024) Fig. 6.5: the probe statistics on hand-made probe logs, the isolated bottleneck's
tc commands, and (root) a short run of both arms whose probe waits behind the TCP queue only without isolation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from benchbook.commands.reproduce import EXIT_PARTIAL
from benchbook.testbed.cleanup import leftovers
from benchbook.testbed.dumbbell import Dumbbell, FlowSpec
from conftest import reproduce_cli, require_program, require_root

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "notebooks" / "zunker-thesis24"))
import zunker  # noqa: E402


def test_share_within_bound_counts_lost_probes_as_late_and_skips_slow_start(tmp_path: Path) -> None:
    # 10 packets/s: lead 1 s, TCP 3 s, tail 1 s -> seq 0-49; under load = sent in [2 s, 4 s) = seq 20-39
    tcp_start = 10_000_000_000
    sent = tcp_start + (np.arange(50) * 100_000_000 - 1_000_000_000)
    latency_ns = np.where(np.arange(50) % 4 == 0, 80_000_000, 5_000_000)
    keep = np.arange(50) != 25                        # seq 25 lost
    rows = np.c_[np.arange(50), sent, sent + latency_ns][keep]
    (tmp_path / "raw").mkdir()
    np.savetxt(tmp_path / "raw" / "probe.txt", rows, fmt="%d")
    info = {"dir": "raw", "tcp_start_ns": tcp_start, "sent": 50}
    p = zunker.probe_latencies(tmp_path, info)
    assert p["t_s"][0] == -1.0 and p["latency_ms"][0] == 80.0
    st = zunker.under_load(p, info, duration_s=3, bound_ms=56)
    assert (st["expected"], st["received"], st["lost"]) == (20, 19, 1)
    assert st["share_within_bound"] == 14 / 20        # seq 20, 24, 28, 32, 36 late; 25 lost
    assert st["alone_p50_ms"] == 5.0


def test_isolated_arm_gives_the_probe_port_a_class_and_fifo_of_its_own() -> None:
    link = zunker.link_of("isolated", 100, 1000, 2)
    cmds = [" ".join(argv) for role, argv in Dumbbell(link, [FlowSpec("cubic")]).configure_commands(lambda s: s)
            if role == "rtr" and argv[0] == "tc"]
    assert any("classid 1:20 htb rate 2000000bit ceil 100000000bit prio 0" in c for c in cmds)
    assert any("classid 1:10 htb rate 98000000bit ceil 100000000bit prio 1" in c for c in cmds)
    assert sum("pfifo limit 1000" in c for c in cmds) == 2
    assert any("match ip dport 7000 0xffff flowid 1:20" in c for c in cmds)
    fifo = [" ".join(a) for r, a in Dumbbell(zunker.link_of("fifo", 100, 1000, 2), [FlowSpec("cubic")])
            .configure_commands(lambda s: s) if a[0] == "tc"]
    assert not any("filter" in c for c in fifo) and sum("pfifo" in c for c in fifo) == 1


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_short_run_probe_waits_behind_the_tcp_queue_only_without_isolation(tmp_path: Path) -> None:
    require_root()
    require_program("iperf3")

    r = reproduce_cli(tmp_path, "zunker-thesis24-fig6-5", "-p", "duration_s=2", timeout_s=300)
    assert r.returncode == EXIT_PARTIAL, r.stdout[-3000:] + r.stderr[-3000:]
    (run,) = sorted((tmp_path / "zunker-thesis24-fig6-5").iterdir())
    verdict = json.loads((run / "verdict.json").read_text())
    rows = {row["name"]: row for row in verdict["rows"]}
    for name in ("Without the traffic shaper: share of probes within 56 ms",
                 "With the traffic shaper: share of probes within 56 ms"):
        assert rows[name]["status"] == "not derivable" and "SCNE" in rows[name]["note"]
    fifo = rows["fifo: share of probes within 56 ms (local bottleneck only)"]["computed"]
    isolated = rows["isolated: share of probes within 56 ms (local bottleneck only)"]["computed"]
    assert isolated > 0.9 > 0.5 > fifo, (fifo, isolated)   # a 1000-packet FIFO at 100 Mbit/s holds ~120 ms
    assert "fig6-5-latency-cdf" in verdict["figures"]
    metrics = json.loads((run / "metrics.json").read_text())
    kinds = {c["capability"]: c["status"] for c in metrics["shaper_capabilities"]}
    assert set(kinds) == {"qdisc:cake", "qdisc:fq_codel"}
    tokens = {a["token"] for a in metrics["arms"].values()}
    assert len(tokens) == 2 and None not in tokens and leftovers(tokens) == leftovers(set())
    summary = json.loads((run / "repetitions.json").read_text())
    assert sorted(o["arm"] for o in summary["order"]) == ["fifo", "isolated"] and isinstance(
        summary["plan"]["seed"], int)
    for arm, share in (("fifo", fifo), ("isolated", isolated)):
        record = json.loads((run / "raw" / arm / "rep1" / "repetition.json").read_text())
        stats = {s["name"]: s for s in record["statistics"]}
        assert stats["probe_share_within_bound"]["value"] == pytest.approx(share)
        assert stats["probe_share_within_bound"]["n"] == stats["probe_lost"]["n"] >= 50
        assert (run / "raw" / arm / "rep1" / "probe.txt").stat().st_size > 0
