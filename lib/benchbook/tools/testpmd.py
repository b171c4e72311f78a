"""DPDK ``dpdk-testpmd`` as the DuT's L2 forwarder: command line, start, parse its statistics.

On this kind of host testpmd runs without hugepages or PCI devices (``--no-huge --no-pci``)
on ``net_af_packet`` vdevs bound to veth ends (which must be promiscuous), forwarding in
``io`` mode on one forwarding lcore; the main lcore only waits for stdin.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, RunningCommand

BINARY = "dpdk-testpmd"
READY_MARK = "Press enter to exit"
_PORT_HDR = re.compile(r"-+ Forward statistics for port (\d+)\s+-+")
_ACC_HDR = re.compile(r"\++ Accumulated forward statistics for all ports\s*\++")
_PORTS_RE = re.compile(r"packet forwarding - ports=(\d+)")
_KV = re.compile(r"([A-Za-z][A-Za-z-]*):\s+(\d+)")


class TestpmdError(BenchbookError, RuntimeError):
    pass


def build_argv(ifaces: Sequence[str] = (), *, main_cpu: int, fwd_cpu: int, file_prefix: str,
               pci: Sequence[str] = (), mem_mb: int = 256, nb_mbufs: int = 8192, forward_mode: str = "io",
               burst: int = 32, binary: str = BINARY, line_buffered: bool = True) -> list[str]:
    """testpmd needs a main lcore besides the forwarding one; ``--lcores 0@main_cpu,1@fwd_cpu``
    maps them to CPUs, so both may sit on the DuT core (the main lcore only waits on stdin).

    ifaces: kernel interfaces forwarded through ``net_af_packet`` vdevs (no hugepages, no PCI);
    pci: NICs bound to a DPDK driver, allowed with ``-a`` (hugepages as the host has them).
    line_buffered: prefix ``stdbuf -oL`` (stdout is a pipe; the ready line must come at once)."""
    if bool(ifaces) == bool(pci):
        raise ValueError("testpmd forwards between either kernel interfaces (ifaces) or PCI devices (pci)")
    argv = ["stdbuf", "-oL"] if line_buffered else []
    argv += [binary, "--lcores", f"0@{main_cpu},1@{fwd_cpu}", "--main-lcore", "0"]
    if ifaces:
        argv += ["--no-huge", "--no-pci", "-m", str(mem_mb)]
    argv += ["--file-prefix", file_prefix]
    for i, iface in enumerate(ifaces):
        argv += ["--vdev", f"net_af_packet{i},iface={iface}"]
    for dev in pci:
        argv += ["-a", dev]
    argv += ["--", f"--forward-mode={forward_mode}", "--auto-start", "--nb-cores=1", f"--burst={burst}",
             "--no-mlockall", f"--total-num-mbufs={nb_mbufs}"]
    return argv


def parse_forward_stats(text: str) -> dict[str, Any]:
    """The "Forward statistics" blocks testpmd prints on stop: per port and accumulated.

    Returns {"ports": {0: {"RX-packets": n, "RX-dropped": n, ...}, ...}, "total": {...}};
    empty dicts when testpmd printed no statistics (e.g. killed)."""
    ports: dict[int, dict[str, int]] = {}
    total: dict[str, int] = {}
    current: dict[str, int] | None = None
    for line in text.splitlines():
        m = _PORT_HDR.search(line)
        if m:
            current = ports.setdefault(int(m.group(1)), {})
            continue
        if _ACC_HDR.search(line):
            current = total
            continue
        if current is not None:
            kv = _KV.findall(line)
            if kv:
                for k, v in kv:
                    current[k] = int(v)
            elif line.strip().startswith("---") or line.strip().startswith("+++"):
                current = None
    return {"ports": ports, "total": total}


@dataclass
class TestpmdProcess:
    argv: list[str]
    command: RunningCommand
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def pid(self) -> int:
        return self.command.pid

    @property
    def lines(self) -> list[str]:
        return self.command.lines("stdout")

    @property
    def output(self) -> str:
        return self.command.output("stdout")

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        if not self.command.wait_for(READY_MARK, "stdout", timeout_s):
            raise TestpmdError(f"dpdk-testpmd did not start forwarding: {shlex.join(self.argv)}\n"
                               + "".join(self.lines[-30:]))

    def stop(self, timeout_s: float = 20.0) -> dict[str, Any]:
        code = self.command.interrupt_and_wait(timeout_s)
        self.stats = parse_forward_stats(self.output)
        self.stats["exit_code"] = code
        return self.stats


def start_testpmd(host: Host, argv: list[str], join_cgroup: str | None = None) -> TestpmdProcess:
    """Start testpmd (argv from build_argv) on ``host`` (inside the cgroup whose cgroup.procs file
    is join_cgroup, when given); returns once it forwards on every port of its command line."""
    cmd = host.start(argv, what="dpdk-testpmd", stdin_open=True, merge_stderr=True, join_cgroup=join_cgroup)
    tp = TestpmdProcess(argv=list(argv), command=cmd)
    try:
        tp.wait_ready()
    except TestpmdError:
        tp.stop(timeout_s=5)
        raise
    # testpmd carries on with fewer ports when a vdev fails to probe: refuse that
    expected = sum(1 for a in argv if a in ("--vdev", "-a"))
    m = _PORTS_RE.search(tp.output)
    got = int(m.group(1)) if m else None
    if expected and got != expected:
        problems = [ln.strip() for ln in tp.lines if "fail" in ln.lower() or "error" in ln.lower()]
        tp.stop(timeout_s=5)
        raise TestpmdError(f"dpdk-testpmd forwards on {got} port(s), expected {expected}: {shlex.join(argv)}\n"
                           + "\n".join(problems))
    return tp
