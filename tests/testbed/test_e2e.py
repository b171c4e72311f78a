"""End to end on the local testbed: bb-loadgen -> DuT -> sink, tcpdump at both sides, captures
matched by packet id; and `benchbook reproduce daichendt-iitm23-fig3` twice leaving nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.commands.reproduce import EXIT_PARTIAL, EXIT_REPRODUCED
from benchbook.experiment import cgroup_latency as cl
from benchbook.paths import REPO_ROOT
from benchbook.testbed.cleanup import leftovers
from benchbook.tools import cgroups as cg
from benchbook.tools.host import read_command_log
from conftest import require_program, require_root


def _needs(*programs: str) -> None:
    require_root()
    for p in ("ip", "tcpdump", *programs):
        require_program(p)


def _empty_leftovers() -> dict:
    return {"netns": [], "links": [], "cgroups": [], "dpdk": []}


@pytest.mark.root
@pytest.mark.parametrize("kind,mode", [("testpmd", "v1"), ("ip-forward", "none")])
def test_point_through_dut(tmp_path, kind, mode):
    _needs("dpdk-testpmd") if kind == "testpmd" else _needs()

    if mode == "v1" and cg.v1_hierarchy("cpuset") is None:
        pytest.skip("no cgroup v1 cpuset hierarchy on this host (pure cgroup v2): the v1 recipe cannot run")

    params = cl.ExperimentParams(rates_pps=[5000], duration_s=1.0, repetitions=1, isolation_modes=[mode], dut_kind=kind,
                                 perf_repeats=2, settle_s=0.3)
    p = cl.measure_point(params, mode, 5000.0, 0, tmp_path)
    assert p["status"] == "complete", p.get("traceback")
    m = cl.point_metrics(p)
    # counts only: the achieved rate and the loss are measured by make bench (benchmarks/bench_loadgen.py)
    assert m["sent"] == 5000 and m["achieved_pps"] > 0
    assert m["pre_captured"] == 5000, "the timestamper saw every packet at DuT ingress"
    c = p["analysis"]["counts"]
    assert c["matched"] + c["lost"] == c["pre"] == 5000
    assert c["unmatched_post"] == 0 and c["duplicates"] == 0
    assert c["matched"] > 0 and m["loss_fraction"] == c["lost"] / c["pre"], m
    pct = p["analysis"]["percentiles_ns"]
    assert 0 < p["analysis"]["min_ns"] <= pct["50"] < 5_000_000, "median DuT latency between 0 and 5 ms"
    if kind == "testpmd":
        tot = p["dut_stats"]["total"]
        assert tot["RX-packets"] >= c["matched"] and tot["TX-packets"] >= c["matched"]
        assert p["dut"]["cpus_allowed"] == "1", "testpmd confined to the DuT core by its cgroup"
        tc = [x for x in p["perf"]["counters"] if x["event"] == "task-clock"][0]
        assert tc["status"] == "counted" and tc["value"] > 0
    else:  # the kernel's forwarding: the DuT's interface counters, read before and after the load
        st = p["dut_stats"]
        assert st["ingress_rx_packets"] >= c["matched"] and st["egress_tx_packets"] >= c["matched"], st
    assert (tmp_path / p["dir"] / "latencies.parquet").exists()
    # nothing of this run is left (other engineers' concurrent runs are not ours to judge)

    assert leftovers({p["testbed"]["token"]}) == _empty_leftovers()
    log = read_command_log(tmp_path / "raw")
    first, last = p["commands"]["first"], p["commands"]["last"]
    assert sorted(r["n"] for r in log) == list(range(first, last + 1)), "every command of the point is in the log"
    assert any("tcpdump" in r["argv"] and r["exit_code"] == 0 for r in log)


@pytest.mark.root
@pytest.mark.slow
@pytest.mark.timeout(1500)  # two full reproductions of the figure, each up to 600 s
def test_reproduce_fig3_twice_leaves_nothing(tmp_path):
    _needs("dpdk-testpmd", "perf")

    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path))
    cmd = [sys.executable, "-m", "benchbook.cli", "reproduce", "daichendt-iitm23-fig3",
           "-p", "duration_s=1", "-p", "repetitions=1"]
    for _ in range(2):
        r = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
        # reproduced (0), or partial (4) where the v2 arm cannot run and the v1/v2 claim is not derivable
        assert r.returncode in (EXIT_REPRODUCED, EXIT_PARTIAL), r.stdout[-3000:] + r.stderr[-3000:]
    runs = sorted((tmp_path / "daichendt-iitm23-fig3").iterdir())
    assert len(runs) == 2
    for run in runs:
        verdict = json.loads((run / "verdict.json").read_text())
        statuses = {r["status"] for r in verdict["rows"]}
        assert "mismatch" not in statuses
        v2_ran = any(p["mode"] == "v2" and p["status"] == "complete"
                     for p in json.loads((run / "latency-points.json").read_text())["points"])
        if not v2_ran:  # never "reproduced" without the comparison the figure exists for
            assert verdict["outcome"] == "partial" and verdict["claim"]["status"] == "not derivable", verdict
            rel = [c for c in verdict["claims"] if c["id"] == "v1-higher-p99.9"]
            assert rel and rel[0]["verdict"] == "not derivable" and "v2" in rel[0]["reason"]
        metrics = json.loads((run / "metrics.json").read_text())
        pts = metrics["latency_points"]["points"]
        assert any(p["status"] == "complete" and p["achieved_pps"] > 0 for p in pts)
        for p in pts:
            if p["status"] == "not runnable":
                assert p["reason"], "a mode that could not run says why"
        assert metrics["latency_points"]["leftovers_after"] == _empty_leftovers()
        points = json.loads((run / "latency-points.json").read_text())["points"]
        tokens = {p["testbed"]["token"] for p in points if "testbed" in p}
        assert tokens and leftovers(tokens) == _empty_leftovers()


_CHILD = """
import sys
from benchbook.experiment import cgroup_latency as cl
p = cl.ExperimentParams(rates_pps=[2000], duration_s=30, repetitions=1, isolation_modes=["v1"], perf_repeats=1)
cl.run_experiment(p, sys.argv[1], progress=lambda s: print(s, flush=True))
"""


@pytest.mark.root
@pytest.mark.slow
def test_sigint_mid_measurement_restores_everything(tmp_path):
    """Ctrl-C while testpmd forwards inside the v1 recipe: cgroups gone, tasks and settings back."""
    _needs("dpdk-testpmd")

    root = cg.v1_hierarchy("cpuset")
    if root is None:
        pytest.skip("no v1 cpuset hierarchy")
    lb_before = cg.read(root / "cpuset.sched_load_balance")
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert "v1 @ 2000" in proc.stdout.readline()
    token = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and token is None:
        for f in Path("/run/benchbook").glob("*.json"):
            data = json.loads(f.read_text() or "{}")
            if data.get("owner_pid") == proc.pid and any(w == "dpdk-testpmd" for _, _, w in data.get("pids", [])):
                token = data["token"]
        time.sleep(0.2)
    assert token, "the child should be forwarding by now"
    assert (root / f"bb-{token}-hk").is_dir() and cg.read(root / "cpuset.sched_load_balance") == "0"
    pre = tmp_path / "raw" / "v1-rate2000" / "rep1" / "pre.pcap"
    deadline = time.monotonic() + 60
    while not (pre.exists() and pre.stat().st_size > 24) and time.monotonic() < deadline:
        time.sleep(0.05)  # interrupt only once the capture holds packets
    assert pre.exists() and pre.stat().st_size > 24, "the timestamper should have captured packets by now"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) != 0
    assert leftovers({token}) == _empty_leftovers()
    assert not (root / f"bb-{token}-hk").exists() and not (root / f"bb-{token}-dut").exists()
    assert cg.read(root / "cpuset.sched_load_balance") == lb_before
    assert not (Path("/run/benchbook") / f"{token}.json").exists()
    raw = list(tmp_path.glob("raw/v1-rate2000/rep1/pre.pcap"))
    assert raw and raw[0].stat().st_size > 24, "raw data measured before the interrupt is kept"
