"""Devices under test, registered by name; each is a context manager yielding a RunningDuT.

Factory signature (every kind, including ``testpmd-lxc`` in ``benchbook.testbed.lxc_dut``)::

    factory(testbed, *, cpu: int, isolation: IsolationInfo | None,
            ingress: str = "din", egress: str = "dout", **options) -> ContextManager[RunningDuT]

``testbed`` is a started LocalTestbed (role "dut" holds the ingress/egress veth ends);
``isolation.dut_procs_file`` is where the DuT's pid goes to enter the DuT cgroup. On exit the
DuT is stopped and ``RunningDuT.stats`` holds its final counters.

Kinds here:
- ``testpmd``: dpdk-testpmd, ``--no-huge --no-pci``, two net_af_packet vdevs on the DuT's
  (promiscuous) veth ends, io forwarding, both lcores pinned to the DuT core, started inside
  the DuT cgroup (so its threads never run elsewhere).
- ``kernel``: the kernel's own IPv4 forwarding in the DuT namespace (ip_forward=1, static
  neighbour for the sink); no process, so ``pid`` is None and perf stat does not apply.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed.names import make_name
from benchbook.testbed.procinfo import cpus_allowed
from benchbook.tools.host import describe_exit

SINK_IP = "10.250.1.2"
SRC_IP = "10.250.0.1"


class DutError(BenchbookError, RuntimeError):
    """The DuT failed during a measurement (its process ended before it was stopped)."""


@dataclass
class RunningDuT:
    kind: str
    pid: int | None
    cpu: int | None
    description: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    dst_mac: str | None = None   # the MAC the load generator must address (DuT ingress)


_REGISTRY: dict[str, str | Callable[..., Any]] = {
    "testpmd": "benchbook.testbed.dut:testpmd_dut",
    "kernel": "benchbook.testbed.dut:kernel_dut",
    "testpmd-lxc": "benchbook.testbed.lxc_dut:testpmd_lxc_dut",
}


def register_dut(name: str, factory: str | Callable[..., Any]) -> None:
    _REGISTRY[name] = factory


def dut_kinds() -> list[str]:
    return sorted(_REGISTRY)


def get_dut_factory(kind: str) -> Callable[..., Any]:
    try:
        ref = _REGISTRY[kind]
    except KeyError:
        raise KeyError(f"unknown DuT kind {kind!r}; known: {', '.join(dut_kinds())}") from None
    if callable(ref):
        return ref
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise RuntimeError(f"DuT kind {kind!r} ({ref}) is not available: {exc}") from exc


def open_dut(kind: str, testbed: Any, **kwargs: Any) -> Any:
    """The context manager of DuT kind (see the module docstring for the arguments)."""
    return get_dut_factory(kind)(testbed, **kwargs)


@contextlib.contextmanager
def testpmd_dut(testbed: Any, *, cpu: int, isolation: Any = None, ingress: str = "din", egress: str = "dout",
                mem_mb: int = 256, nb_mbufs: int = 8192, burst: int = 32) -> Iterator[RunningDuT]:
    from benchbook.tools import testpmd

    if testpmd.available() is None:
        raise RuntimeError("dpdk-testpmd not installed (Debian packages dpdk, dpdk-dev)")
    ifaces = [testbed.ifname(ingress), testbed.ifname(egress)]
    argv = testpmd.build_argv(ifaces, main_cpu=cpu, fwd_cpu=cpu, file_prefix=make_name(testbed.token, "tp"),
                              mem_mb=mem_mb, nb_mbufs=nb_mbufs, burst=burst)
    procs_file = isolation.dut_procs_file if isolation is not None else None
    tp = testpmd.start_testpmd(testbed.host("dut"), argv, join_cgroup=str(procs_file) if procs_file else None)
    dut = RunningDuT(kind="testpmd", pid=tp.pid, cpu=cpu, dst_mac=testbed.mac(ingress), description={
        "kind": "testpmd", "argv": argv, "forward_mode": "io", "ports": ifaces, "cpu": cpu,
        "cgroup_procs_file": str(procs_file) if procs_file else None,
        "cpus_allowed": cpus_allowed(tp.pid),
    })
    try:
        yield dut
    finally:
        ended = tp.command.poll()  # not None: testpmd ended before it was stopped
        dut.stats = tp.stop()
        dut.stats["log_tail"] = "".join(tp.lines[-60:])
    if ended is not None:
        out = tp.command.log.path(tp.command.record.stdout)
        raise DutError(f"dpdk-testpmd (pid {tp.pid}) ended during the measurement ({describe_exit(ended)})"
                       + (f"; its output: {out}" if out is not None else ""))


def _read_counter(testbed: Any, ifname: str, name: str) -> int | None:
    r = testbed.run("dut", ["cat", f"/sys/class/net/{ifname}/statistics/{name}"], check=False)
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else None


@contextlib.contextmanager
def kernel_dut(testbed: Any, *, cpu: int | None = None, isolation: Any = None, ingress: str = "din",
               egress: str = "dout", sink: str = "ts0") -> Iterator[RunningDuT]:
    din, dout = testbed.ifname(ingress), testbed.ifname(egress)
    testbed.run("dut", ["ip", "addr", "add", "10.250.0.2/24", "dev", din])
    testbed.run("dut", ["ip", "addr", "add", "10.250.1.1/24", "dev", dout])
    testbed.run("dut", ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])
    for dev in ("all", "default", din, dout):
        testbed.run("dut", ["sysctl", "-q", "-w", f"net.ipv4.conf.{dev}.rp_filter=0"], check=False)
    testbed.run("dut", ["ip", "neigh", "replace", SINK_IP, "lladdr", testbed.mac(sink), "dev", dout,
                        "nud", "permanent"])
    dut = RunningDuT(kind="kernel", pid=None, cpu=None, dst_mac=testbed.mac(ingress), description={
        "kind": "kernel", "forwarding": "IPv4 ip_forward in the DuT namespace",
        "note": "softirq forwarding runs on the sender's CPU (veth); no DuT process to pin or perf-stat",
    })
    before = {n: _read_counter(testbed, d, n) for d, n in ((din, "rx_packets"), (dout, "tx_packets"))}
    try:
        yield dut
    finally:
        dut.stats = {"ingress_rx_packets": _delta(_read_counter(testbed, din, "rx_packets"), before["rx_packets"]),
                     "egress_tx_packets": _delta(_read_counter(testbed, dout, "tx_packets"), before["tx_packets"])}


def _delta(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b
