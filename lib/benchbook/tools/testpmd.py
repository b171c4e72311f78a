"""DPDK ``dpdk-testpmd`` as the DuT's L2 forwarder: command line, start, parse its statistics.

On this kind of host testpmd runs without hugepages or PCI devices (``--no-huge --no-pci``)
on ``net_af_packet`` vdevs bound to veth ends (which must be promiscuous), forwarding in
``io`` mode on one forwarding lcore; the main lcore only waits for stdin.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchbook.tools.process import interrupt_and_wait

BINARY = "dpdk-testpmd"
READY_MARK = "Press enter to exit"
_PORT_HDR = re.compile(r"-+ Forward statistics for port (\d+)\s+-+")
_ACC_HDR = re.compile(r"\++ Accumulated forward statistics for all ports\s*\++")
_PORTS_RE = re.compile(r"packet forwarding - ports=(\d+)")
_KV = re.compile(r"([A-Za-z][A-Za-z-]*):\s+(\d+)")


class TestpmdError(RuntimeError):
    pass


def available() -> str | None:
    return shutil.which(BINARY)


def build_argv(ifaces: list[str], *, main_cpu: int, fwd_cpu: int, file_prefix: str,
               mem_mb: int = 256, nb_mbufs: int = 8192, forward_mode: str = "io", burst: int = 32,
               binary: str = BINARY) -> list[str]:
    """testpmd needs a main lcore besides the forwarding one; ``--lcores 0@main_cpu,1@fwd_cpu``
    maps them to CPUs, so both may sit on the DuT core (the main lcore only waits on stdin)."""
    # stdbuf: testpmd's stdout is a pipe; line buffering lets us see "Press enter to exit" (same pid: exec)
    argv = ["stdbuf", "-oL", binary, "--lcores", f"0@{main_cpu},1@{fwd_cpu}", "--main-lcore", "0", "--no-huge",
            "--no-pci", "-m", str(mem_mb), "--file-prefix", file_prefix]
    for i, iface in enumerate(ifaces):
        argv += ["--vdev", f"net_af_packet{i},iface={iface}"]
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
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    stats: dict[str, Any] = field(default_factory=dict)
    _forwarding: bool = False

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if READY_MARK in line:
                self._forwarding = True
                self._ready.set()
        self._ready.set()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_ready(self, timeout: float = 30.0) -> None:
        if not self._ready.wait(timeout) or not self._forwarding:
            time.sleep(0.1)
            raise TestpmdError(f"dpdk-testpmd did not start forwarding: {' '.join(self.argv)}\n"
                               + "".join(self.lines[-30:]))

    def stop(self, timeout: float = 20.0) -> dict[str, Any]:
        interrupt_and_wait(self.proc, timeout)
        self.stats = parse_forward_stats(self.output)
        self.stats["exit_code"] = self.proc.returncode
        return self.stats


def start_testpmd(argv: list[str], popen: Any = None, **popen_kwargs: Any) -> TestpmdProcess:
    kwargs = dict(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.PIPE, text=True, **popen_kwargs)
    proc = popen(argv, what="dpdk-testpmd", **kwargs) if popen is not None else subprocess.Popen(argv, **kwargs)
    tp = TestpmdProcess(argv=argv, proc=proc)
    threading.Thread(target=tp._read, daemon=True).start()
    try:
        tp.wait_ready()
    except TestpmdError:
        tp.stop(timeout=5)
        raise
    # testpmd carries on with fewer ports when a vdev fails to probe: refuse that
    expected = sum(1 for a in argv if a == "--vdev")
    m = _PORTS_RE.search(tp.output)
    got = int(m.group(1)) if m else None
    if expected and got != expected:
        problems = [ln.strip() for ln in tp.lines if "fail" in ln.lower() or "error" in ln.lower()]
        tp.stop(timeout=5)
        raise TestpmdError(f"dpdk-testpmd forwards on {got} port(s), expected {expected}: {' '.join(argv)}\n"
                           + "\n".join(problems))
    return tp
