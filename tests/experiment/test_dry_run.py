"""The dry run of the cgroup latency experiment: every command each host would run, built by
benchbook.tools, and nothing measured. Through the CLI (`benchbook reproduce ... --dry-run`) with the
testbed backend and the example inventory, and directly for both backends."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from benchbook.experiment import cgroup_latency as lp
from benchbook.experiment.repetitions import interleaved_order
from benchbook.paths import REPO_ROOT
from benchbook.testbed.ssh import shell_join
from benchbook.tools import lxc, moongen, perf, tcpdump, testpmd

INVENTORY = REPO_ROOT / "examples" / "testbed.toml"


def _assert_testbed_commands_from_tools(hosts: dict[str, list[str]], rates_pps: list[float], modes: list[str],
                                        repetitions: int, duration_s: int) -> None:
    assert {"loadgen", "dut", "timestamper"} <= set(hosts)
    dut, lg, ts = hosts["dut"], hosts["loadgen"], hosts["timestamper"]
    for mode in modes:
        for rate in rates_pps:
            for rep in range(1, repetitions + 1):   # the repetition runner counts from 1
                d = f"/srv/benchbook/{mode}-rate{int(rate)}-rep{rep}"
                m_rate_mbit = round(rate / 1e6 * 68 * 8, 3)
                load = moongen.build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": m_rate_mbit,
                                                                 "file": f"{d}/histogram.csv"})
                assert sum(shell_join(load) in c for c in lg) == 1, (mode, rate, rep)
                sniff = moongen.build_command("moonsniff-sniffer", {"devs": [0, 1], "output": f"{d}/ms",
                                                                    "runtime": duration_s + 10, "capture": True})
                assert sum(shell_join(sniff) in c for c in ts) == 1
                p = perf.build_argv(f"$(cat {d}/testpmd.pid)", duration_s + 2,
                                    events=("instructions", "branches", "cpu-migrations", "context-switches",
                                            "task-clock"), repeats=1, output_path=f"{d}/perf.csv")
                assert sum(shell_join(p) in c for c in dut) == 1
                assert shlex.join(lxc.start_argv("bb-dut", logfile=f"{d}/lxc.log")) in dut
    n = len(modes) * len(rates_pps) * repetitions
    assert dut.count(shlex.join(lxc.stop_argv("bb-dut", kill=True))) == n
    assert dut.count(shlex.join(lxc.destroy_argv("bb-dut"))) == n
    tp = testpmd.build_argv(pci=["0000:41:00.0", "0000:41:00.1"], main_cpu=3, fwd_cpu=3, file_prefix="bb-dut",
                            binary="/usr/bin/dpdk-testpmd", line_buffered=False)
    assert sum(("lxc.init.cmd = " + " ".join(tp)) == c for c in hosts["local"]) == n, "container config per point"


def test_reproduce_fig3_testbed_dry_run_lists_tool_commands(tmp_path):
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path))
    # as the README writes it: the inventory relative to the checkout (the notebook runs elsewhere)
    cmd = [sys.executable, "-m", "benchbook.cli", "reproduce", "daichendt-iitm23-fig3", "-p", "backend=testbed",
           "-p", f"inventory={INVENTORY.relative_to(REPO_ROOT)}", "--dry-run"]
    r = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    files = list(tmp_path.rglob(lp.DRY_RUN_FILE))
    assert len(files) == 1, files
    hosts = lp.read_dry_run(files[0])
    # the entry's [parameters]: rates_pps = [10000], 6 repetitions of v1 and v2, 1 s each
    _assert_testbed_commands_from_tools(hosts, [10000.0], ["v1", "v2"], 6, 1)
    assert "## host dut" in r.stdout, "the CLI prints the dry run"
    run_dir = files[0].parent
    assert not any((run_dir / "raw").rglob("*")) and not (run_dir / lp.RESULT_FILE).exists(), "nothing measured"


def test_testbed_dry_run_direct(tmp_path):
    params = lp.ExperimentParams(backend="testbed", inventory=str(INVENTORY), dry_run=True,
                                 rates_pps=[1.52e6, 6.24e6], repetitions=2, isolation_modes=["v1", "v2"], duration_s=60)
    result = lp.run_experiment(params, tmp_path)
    assert result["points"] == [] and (tmp_path / lp.DRY_RUN_FILE).exists()
    hosts = lp.read_dry_run(tmp_path / lp.DRY_RUN_FILE)
    _assert_testbed_commands_from_tools(hosts, [1.52e6, 6.24e6], ["v1", "v2"], 2, 60)
    assert sum("cset shield --cpu=3" in c for c in hosts["dut"]) == 4  # the v1 points only


def test_local_dry_run_lists_tool_commands_and_creates_nothing(tmp_path):
    params = lp.ExperimentParams(dry_run=True, rates_pps=[5000], repetitions=1, isolation_modes=["v1"], duration_s=2)
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    lp.run_experiment(params, tmp_path)
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == before
    hosts = lp.read_dry_run(tmp_path / lp.DRY_RUN_FILE)
    ns = "ip netns exec bb-000000-"
    d = "RUN/raw/v1-rate5000/rep1"
    pre = tcpdump.build_argv("bb-000000-lg0", f"{d}/pre.pcap", direction="out", bpf_filter="udp dst port 5678")
    assert f"{ns}lg {shlex.join(pre)}" in hosts["lg"]
    post = tcpdump.build_argv("bb-000000-ts0", f"{d}/post.pcap", direction="in", bpf_filter="udp dst port 5678")
    assert f"{ns}ts {shlex.join(post)}" in hosts["ts"]
    tp = testpmd.build_argv(["bb-000000-din", "bb-000000-dout"], main_cpu=1, fwd_cpu=1, file_prefix="bb-000000-tp")
    assert any(c.startswith(f"{ns}dut {shlex.join(tp)}") for c in hosts["dut"])
    assert shlex.join(perf.build_argv("DUT_PID", 2, repeats=3)) in hosts["local"]
    assert any("bb-loadgen --iface bb-000000-lg0 --rate 5000.0" in c for c in hosts["lg"])


def _plans_rendered(params: lp.ExperimentParams) -> dict[str, list[str]]:
    """Per host, the backend's own rendering of plan() for every point of the grid, concatenated."""
    backend = lp.backend_for(params)
    per_host: dict[str, list[str]] = {}
    for mode, rate, rep in lp._grid(params):
        m = lp.measurement(params, mode, rate, rep, run_dir=f"RUN/raw/{mode}-rate{int(rate)}/rep{rep}")
        for role, lines in backend.render(backend.plan(m)).items():
            per_host.setdefault(role, []).extend(lines)
    return per_host


def test_dry_run_of_each_backend_is_its_plan(tmp_path):
    """dry-run.txt lists exactly the steps plan() returns, for the local backend and the ssh backend (example
    inventory): nothing restated beside the plan; run-time values appear as their placeholders."""
    for name, extra in (("local", {}), ("testbed", {"inventory": str(INVENTORY)})):
        params = lp.ExperimentParams(backend=name, dry_run=True, rates_pps=[5000, 20000], repetitions=2,
                                     isolation_modes=["v1", "v2", "none"] if name == "local" else ["v1", "v2"],
                                     duration_s=2, **extra)
        lp.run_experiment(params, tmp_path / name)
        printed = lp.read_dry_run(tmp_path / name / lp.DRY_RUN_FILE)
        # read_dry_run splits a multi-line command (a file written here) into its lines: so does the comparison
        planned = {role: [part for line in lines for part in line.split("\n") if part]
                   for role, lines in _plans_rendered(params).items()}
        assert printed == planned, name
        assert sum(len(v) for v in printed.values()) > 40
    local = lp.read_dry_run(tmp_path / "local" / lp.DRY_RUN_FILE)
    # the housekeeping CPU of bb-loadgen is the first CPU the recipe leaves to housekeeping (not the DuT's)
    loads = [c for c in local["lg"] if "bb-loadgen --iface" in c]
    assert len(loads) == 3 * 2 * 2 and all("--dst-mac DUT_INGRESS_MAC --cpu " in c for c in loads)
    assert not any("--cpu 1" in c for c in loads), "bb-loadgen never on the DuT's CPU 1"
    assert sum("-p DUT_PID" in c for c in local["local"]) == 3 * 2 * 2, "perf stat on the DuT's pid, once per point"
    assert sum(c.endswith("/cpuset.sched_load_balance'") and "ROOT_SCHED_LOAD_BALANCE" in c
               for c in local["local"]) == 2 * 2, "the v1 points write the root's previous value back"


def test_dry_run_lists_the_runs_in_the_runners_seeded_order(tmp_path):
    """With a seed, the dry run lists the points in the order the repetition runner will run them (one permuted
    block of the arms = mode x rate per round), each in its run's directory raw/<arm>/rep<k>/."""
    params = lp.ExperimentParams(dry_run=True, rates_pps=[5000, 20000], repetitions=3, isolation_modes=["v1", "none"],
                                 duration_s=1, seed=11)
    lp.run_experiment(params, tmp_path)
    pre = [c for c in lp.read_dry_run(tmp_path / lp.DRY_RUN_FILE)["lg"] if " tcpdump -i " in c]
    listed = [c.split(" -w RUN/")[1].split("/pre.pcap")[0] for c in pre]
    order = interleaved_order(["v1-rate5000", "v1-rate20000", "none-rate5000", "none-rate20000"], 3, 11)
    assert listed == [s["dir"] for s in order]
    blocks = {tuple(d.rsplit("/", 1)[0] for d in listed[i:i + 4]) for i in (0, 4, 8)}
    assert len(blocks) > 1, "arms alternate: not the same order every round (seed 11)"
