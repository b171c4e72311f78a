"""tcpdump as the timestamper: nanosecond pcaps at DuT ingress/egress, kernel drop counters.

tcpdump's closing lines on stderr are parsed into counts::

    1000 packets captured
    1000 packets received by filter
    0 packets dropped by kernel
    [0 packets dropped by interface]
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, RunningCommand

_STAT_RE = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel|dropped by interface)\s*$")


class CaptureError(BenchbookError, RuntimeError):
    pass


def build_argv(iface: str, out_path: Path | str, *, snaplen: int = 128, buffer_kib: int = 32768,
               direction: str | None = None, bpf_filter: str | None = None) -> list[str]:
    argv = ["tcpdump", "-i", iface, "-n", "-s", str(snaplen), "-B", str(buffer_kib),
            "--time-stamp-precision=nano", "--immediate-mode", "-Z", "root", "-w", str(out_path)]
    if direction:
        if direction not in ("in", "out", "inout"):
            raise ValueError(f"direction must be in/out/inout, got {direction!r}")
        argv += ["-Q", direction]
    if bpf_filter:
        argv += shlex.split(bpf_filter)
    return argv


def parse_stats(stderr: str) -> dict[str, int | None]:
    """Counts from tcpdump's exit lines; a missing line is None (never 0)."""
    out: dict[str, int | None] = {"captured": None, "received_by_filter": None,
                                  "dropped_by_kernel": None, "dropped_by_interface": None}
    for line in stderr.splitlines():
        m = _STAT_RE.match(line.strip())
        if m:
            out[m.group(2).replace(" ", "_")] = int(m.group(1))
    return out


@dataclass
class Capture:
    """A running tcpdump. ``stop()`` ends it and returns the drop counters."""

    argv: list[str]
    path: Path
    command: RunningCommand
    stats: dict[str, Any] = field(default_factory=dict)

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        if not self.command.wait_for("listening on", "stderr", timeout_s):
            self.command.kill()
            raise CaptureError(f"tcpdump did not start: {shlex.join(self.argv)}\n"
                               f"{self.command.output('stderr').strip()}")

    def stop(self, timeout_s: float = 20.0) -> dict[str, Any]:
        code = self.command.interrupt_and_wait(timeout_s)
        self.stats = {**parse_stats(self.command.output("stderr")), "file": str(self.path), "argv": self.argv,
                      "exit_code": code}
        return self.stats


def start_capture(host: Host, argv: list[str], path: Path | str, what: str = "tcpdump") -> Capture:
    """Start tcpdump (argv from build_argv) on ``host``; returns once it listens."""
    cap = Capture(argv=list(argv), path=Path(path), command=host.start(argv, what=what))
    cap.wait_ready()
    return cap
