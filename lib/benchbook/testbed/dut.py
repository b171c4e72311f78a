"""Devices under test, registered by name in :data:`DUT_KINDS` (a :class:`benchbook.plugins.Registry`); each kind
plans its steps (`DutPlan`) on the local testbed.

Planner signature (every kind, including ``testpmd-lxc`` in ``benchbook.testbed.lxc_dut``)::

    planner(testbed, *, cpu: int, recipe: Recipe | None, ingress: str = "din", egress: str = "dout",
            **options) -> DutPlan

``testbed`` is a LocalTestbed (its names; it need not be up yet: the plan is made before it runs), role
"dut" holds the ingress/egress veth ends; ``recipe.dut_procs_file`` is where the DuT's pid goes to enter
the DuT cgroup. The DuT's ``start`` steps bring it up and set the run-time value ``DUT_INGRESS_MAC`` (and
``DUT_PID`` when it is a process, for perf stat); its ``stop`` steps run after the load (also after a
failure) and leave its final counters in the execution's outputs, which ``DutPlan.stats`` reads.

Kinds here:
- ``testpmd``: dpdk-testpmd, ``--no-huge --no-pci``, two net_af_packet vdevs on the DuT's
  (promiscuous) veth ends, io forwarding, both lcores pinned to the DuT core, started inside
  the DuT cgroup (so its threads never run elsewhere).
- ``ip-forward``: the Linux kernel's own IPv4 forwarding in the DuT namespace (ip_forward=1, static
  neighbour for the sink); no process, so perf stat does not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchbook.plugins import Registry
from benchbook.testbed.names import make_name
from benchbook.testbed.plan import Execution, Step
from benchbook.tools import testpmd

SINK_IP = "10.250.1.2"


@dataclass
class RunningDuT:
    """A DuT that runs itself (a context manager of its kind yields one): its pid, CPU, description,
    final counters and the MAC the load generator must address (DuT ingress)."""

    kind: str
    pid: int | None
    cpu: int | None
    description: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    dst_mac: str | None = None


@dataclass
class DutPlan:
    """The steps of a DuT kind: up and ready, then (after the load) stopped with its counters read."""

    kind: str
    start: list[Step]
    stop: list[Step]
    description: dict[str, Any]
    process: bool = True                       # a process perf stat can attach to (DUT_PID)
    teardown: list[Step] = field(default_factory=list)
    stats_of: Callable[[Execution], dict[str, Any]] = lambda ex: {}

    def stats(self, execution: Execution) -> dict[str, Any]:
        return self.stats_of(execution)

    def describe(self, execution: Execution) -> dict[str, Any]:
        """The description, with what is known once it ran (where its process may run)."""
        out = execution.outputs.get("dut", {})
        return {**self.description, **out.get("description", {}),
                **({"cpus_allowed": out["cpus_allowed"]} if "cpus_allowed" in out else {})}


def mac_step(testbed: Any, short: str, value: str, note: str) -> Step:
    """Read the MAC address of a testbed interface into a run-time value."""
    return Step("run", testbed.role_of(short), ["cat", f"/sys/class/net/{testbed.ifname(short)}/address"],
                produces=(value,), note=note)


# kind -> its planner, or "module:attribute" of it
DUT_KINDS: Registry[Callable[..., DutPlan]] = Registry("DuT kind", {
    "testpmd": "benchbook.testbed.dut:plan_testpmd",
    "ip-forward": "benchbook.testbed.dut:plan_ip_forward",
    "testpmd-lxc": "benchbook.testbed.lxc_dut:plan_testpmd_lxc",
})


def plan_dut(kind: str, testbed: Any, **kwargs: Any) -> DutPlan:
    """The DutPlan of a kind (see the module docstring for the arguments)."""
    return DUT_KINDS.get(kind)(testbed, **kwargs)


def plan_testpmd(testbed: Any, *, cpu: int, recipe: Any = None, ingress: str = "din", egress: str = "dout",
                 mem_mb: int = 256, nb_mbufs: int = 8192, burst: int = 32) -> DutPlan:
    ifaces = [testbed.ifname(ingress), testbed.ifname(egress)]
    argv = testpmd.build_argv(ifaces, main_cpu=cpu, fwd_cpu=cpu, file_prefix=make_name(testbed.token, "tp"),
                              mem_mb=mem_mb, nb_mbufs=nb_mbufs, burst=burst)
    procs = recipe.dut_procs_file if recipe is not None else None
    where = f", started inside the DuT cgroup ({procs})" if procs else ""
    start = [Step("start", "dut", argv, name="dut", tool="testpmd", produces=("DUT_PID",),
                  options={"join_cgroup": procs} if procs else {},
                  note=f"dpdk-testpmd, io forwarding on CPU {cpu}{where}; ready once it forwards on both ports"),
             mac_step(testbed, ingress, "DUT_INGRESS_MAC", "the DuT's ingress MAC: the load generator's destination")]
    stop = [Step("stop", "dut", name="dut", always=True, note="dpdk-testpmd (SIGINT) prints its forward statistics")]

    def stats(ex: Execution) -> dict[str, Any]:
        got = ex.outputs.get("dut", {}).get("stats", {})
        return {k: v for k, v in got.items() if k != "log_tail"}

    return DutPlan("testpmd", start, stop, {"kind": "testpmd", "argv": argv, "forward_mode": "io", "ports": ifaces,
                                            "cpu": cpu, "cgroup_procs_file": procs}, stats_of=stats)


def _counter(testbed: Any, short: str, counter: str, name: str, **kw: Any) -> Step:
    return Step("run", testbed.role_of(short), ["cat", f"/sys/class/net/{testbed.ifname(short)}/statistics/{counter}"],
                name=name, check=False, note=f"{counter} of {testbed.ifname(short)}", **kw)


def plan_ip_forward(testbed: Any, *, cpu: int | None = None, recipe: Any = None, ingress: str = "din",
                    egress: str = "dout", sink: str = "ts0") -> DutPlan:
    din, dout = testbed.ifname(ingress), testbed.ifname(egress)
    start = [Step("run", "dut", ["ip", "addr", "add", "10.250.0.2/24", "dev", din]),
             Step("run", "dut", ["ip", "addr", "add", "10.250.1.1/24", "dev", dout]),
             Step("run", "dut", ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], note="IPv4 forwarding in the DuT"),
             *[Step("run", "dut", ["sysctl", "-q", "-w", f"net.ipv4.conf.{dev}.rp_filter=0"], check=False)
               for dev in ("all", "default", din, dout)],
             mac_step(testbed, sink, "SINK_MAC", "the sink's MAC: the DuT's static neighbour"),
             Step("run", "dut", ["ip", "neigh", "replace", SINK_IP, "lladdr", "SINK_MAC", "dev", dout, "nud",
                                 "permanent"]),
             mac_step(testbed, ingress, "DUT_INGRESS_MAC", "the DuT's ingress MAC: the load generator's destination"),
             _counter(testbed, ingress, "rx_packets", "dut.rx_before"),
             _counter(testbed, egress, "tx_packets", "dut.tx_before")]
    stop = [_counter(testbed, ingress, "rx_packets", "dut.rx_after", always=True),
            _counter(testbed, egress, "tx_packets", "dut.tx_after", always=True)]

    def stats(ex: Execution) -> dict[str, Any]:
        def count(name: str) -> int | None:
            out = ex.outputs.get(name, {})
            text = str(out.get("stdout", "")).strip()
            return int(text) if out.get("exit_code") == 0 and text.isdigit() else None

        return {"ingress_rx_packets": _delta(count("dut.rx_after"), count("dut.rx_before")),
                "egress_tx_packets": _delta(count("dut.tx_after"), count("dut.tx_before"))}

    return DutPlan("ip-forward", start, stop, {
        "kind": "ip-forward", "forwarding": "IPv4 ip_forward in the DuT namespace",
        "note": "softirq forwarding runs on the sender's CPU (veth); no DuT process to pin or perf-stat",
    }, process=False, stats_of=stats)


def _delta(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b
