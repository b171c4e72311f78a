"""The local backend's plan of one latency point, and what its execution measured.

The steps, in order (every command built by :mod:`benchbook.tools`)::

    the topology: namespaces lg, dut, ts and their veth pairs          (LocalTestbed.steps)
    the isolation recipe of the mode on this machine                    (benchbook.testbed.isolation)
    the DuT up: testpmd inside the DuT cgroup, or the kernel's IPv4 forwarding (ip-forward; benchbook.testbed.dut)
    tcpdump at the DuT's ingress (LoadGen egress) and egress (sink ingress), until they listen
    perf stat on the DuT process (DUT_PID) for the sending window
    bb-loadgen at a constant rate to DUT_INGRESS_MAC, pinned to the first housekeeping CPU
    --- also after a failure:
    the settle time, the captures stopped (their drop counters), perf's counters, the DuT stopped
    --- teardown: the DuT's, the recipe's undo, the namespaces

The housekeeping CPU and every name come from the same recipe and topology the execution uses, so a
dry run prints exactly what runs (names carry the run token; DUT_PID and DUT_INGRESS_MAC are known at
run time).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.testbed.dut import DutPlan, plan_dut
from benchbook.testbed.isolation import CgroupLayout, Recipe, cpu_split, recipe
from benchbook.testbed.names import make_name
from benchbook.testbed.plan import Execution, Measurement, Plan, Step
from benchbook.tools import cgroups as cg
from benchbook.tools import loadgen, perf, tcpdump

if TYPE_CHECKING:  # the testbed's type only (local.py imports this module)
    from benchbook.testbed.local import LocalTestbed

UDP_DPORT = 5678      # bb-loadgen's destination port; the captures keep only these frames


def plan_point(tb: LocalTestbed, m: Measurement, layout: CgroupLayout | None = None,
               online_cpus: list[int] | None = None) -> Plan:
    """The steps of one point on the topology ``tb`` (its names; it is not brought up here)."""
    d = Path(m.run_dir)
    _, hk = cpu_split(m.dut_cpu, online_cpus if online_cpus is not None else cg.online_cpus())
    hk_cpu = int(hk.split(",")[0])
    rec = recipe(m.cgroup_mode, lambda role: make_name(tb.token, role), m.dut_cpu, hk, layout or CgroupLayout.here())
    dut = plan_dut(m.dut_kind, tb, cpu=m.dut_cpu, recipe=rec)
    setup, teardown = tb.steps()
    filt = f"udp dst port {UDP_DPORT}"
    pre, post = d / "pre.pcap", d / "post.pcap"
    steps = [*setup, *rec.steps, *dut.start,
             Step("start", "lg", tcpdump.build_argv(tb.ifname("lg0"), pre, direction="out", bpf_filter=filt),
                  name="pre", tool="tcpdump", produces=(str(pre),), options={"what": "tcpdump pre"},
                  note="the timestamper at the DuT's ingress (LoadGen egress)"),
             Step("start", "ts", tcpdump.build_argv(tb.ifname("ts0"), post, direction="in", bpf_filter=filt),
                  name="post", tool="tcpdump", produces=(str(post),), options={"what": "tcpdump post"},
                  note="the timestamper at the DuT's egress (sink ingress)")]
    perf_note = _perf_note(dut)
    if perf_note is None:
        steps.append(Step("start", "", perf.build_argv("DUT_PID", m.duration_s, repeats=m.perf_repeats),
                          name="perf", tool="perf", check=False, note="perf stat on the DuT for the sending window"))
    cfg = loadgen.LoadgenConfig(iface=tb.ifname("lg0"), rate_pps=m.rate_pps, duration_s=m.duration_s,
                                frame_size=m.frame_size, dst_mac="DUT_INGRESS_MAC", dport=UDP_DPORT, cpu=hk_cpu)
    steps += [Step("run", "lg", loadgen.build_argv(cfg), name="loadgen", tool="bb-loadgen",
                   options={"timeout_s": m.duration_s * 3 + 30},
                   note=f"bb-loadgen: {m.rate_pps:g} pkt/s of {m.frame_size} B for {m.duration_s:g} s on "
                        f"housekeeping CPU {hk_cpu}"),
              Step("wait", seconds=m.settle_s, always=True, note="the last packets reach the sink"),
              Step("stop", "lg", name="pre", always=True, note="tcpdump (SIGINT) prints its drop counters"),
              Step("stop", "ts", name="post", always=True, note="tcpdump (SIGINT) prints its drop counters")]
    if perf_note is None:
        steps.append(Step("stop", "", name="perf", always=True, check=False, note="perf's counters"))
    steps += [*dut.stop, *dut.teardown, *rec.teardown, *teardown]
    facts = {"recipe": rec, "dut": dut, "perf": perf_note, "housekeeping_cpu": hk_cpu,
             "substitutions": substitutions(m.dut_kind)}
    return Plan("local", m, steps, facts)


def _perf_note(dut: DutPlan) -> dict[str, str] | None:
    """Why perf stat is not part of the plan (None: it is)."""
    if not dut.process:
        return {"status": "not applicable", "reason": f"DuT kind {dut.kind!r} has no process to attach to"}
    if shutil.which("perf") is None:
        return {"status": "not run", "reason": "perf not installed (Debian linux-perf)"}
    return None


def substitutions(dut_kind: str) -> list[dict[str, str]]:
    """What the local backend runs instead of the paper's set-up, as capability lines."""
    return [
        {"capability": "load generator", "status": "substituted",
         "detail": "MoonGen on a 10G NIC -> bb-loadgen (AF_PACKET sendmmsg) on veth"},
        {"capability": "timestamper", "status": "substituted",
         "detail": "hardware timestamps on optical taps -> "
                   "tcpdump nanosecond software timestamps at LoadGen egress and sink ingress"},
        {"capability": "DuT", "status": "substituted" if dut_kind != "testpmd-lxc" else "present",
         "detail": f"DPDK L2 forwarder in an LXC container -> DuT kind {dut_kind!r}"},
    ]


def point_record(plan: Plan, execution: Execution) -> dict[str, Any]:
    """What the point measured, from its execution: the recipe's read-back, the DuT, the captures' counters,
    bb-loadgen's report, perf's counters, the DuT's statistics, and every step."""
    rec: Recipe = plan.facts["recipe"]
    dut: DutPlan = plan.facts["dut"]
    out = execution.outputs
    record: dict[str, Any] = {"backend": "local", **execution.record()}
    record["isolation"] = {"mode": rec.mode, "dut_cpus": rec.dut_cpus, "housekeeping_cpus": rec.housekeeping_cpus,
                           **rec.report(execution), "restore_problems": rec.restore_problems(execution)}
    if "dut" in out:
        record["dut"] = dut.describe(execution)
    if plan.facts["perf"] is not None:
        record["perf"] = plan.facts["perf"]
    elif "perf" in out:
        p = out["perf"]
        record["perf"] = {"status": "not run", "reason": p["error"]} if "error" in p else \
            {"status": "run", **{k: p[k] for k in ("argv", "exit_code", "raw", "counters") if k in p}}
    results: dict[str, Any] = {}
    if "loadgen" in out:
        results["loadgen"] = out["loadgen"]
    caps = {side: _capture(out[side]) for side in ("pre", "post") if "exit_code" in out.get(side, {})}
    if caps:
        results["captures"] = caps
    if "pre" in caps and "post" in caps:
        results["capture_dir"] = plan.measurement.run_dir
    stats = dut.stats(execution)   # every kind's: a DuT without a process keeps its counters in steps of its own
    if stats or "dut" in out:
        results["dut_stats"] = stats
    tail = out.get("dut", {}).get("stats", {}).get("log_tail")
    if tail is not None:
        results["dut_log"] = str(tail)
    record["results"] = results
    return record


def _capture(stats: dict[str, Any]) -> dict[str, Any]:
    """A capture's counters as tcpdump's stop gives them (without the step's own bookkeeping)."""
    return {k: v for k, v in stats.items() if k not in ("pid", "cpus_allowed")}
