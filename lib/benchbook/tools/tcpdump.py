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
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.tools.process import interrupt_and_wait

_STAT_RE = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel|dropped by interface)\s*$")


class CaptureError(RuntimeError):
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
    proc: subprocess.Popen[str]
    _lines: list[str] = field(default_factory=list)
    _ready: threading.Event = field(default_factory=threading.Event)
    _reader: threading.Thread | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    _listening: bool = False

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line)
            if "listening on" in line:
                self._listening = True
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = 10.0) -> None:
        if not self._ready.wait(timeout) or not self._listening:
            time.sleep(0.05)
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            raise CaptureError(f"tcpdump did not start: {shlex.join(self.argv)}\n{''.join(self._lines).strip()}")

    def stop(self, timeout: float = 20.0) -> dict[str, Any]:
        interrupt_and_wait(self.proc, timeout)
        if self._reader is not None:
            self._reader.join(timeout=5)
        text = "".join(self._lines)
        self.stats = {**parse_stats(text), "file": str(self.path), "argv": self.argv,
                      "exit_code": self.proc.returncode}
        return self.stats


def start_capture(argv: list[str], path: Path, popen: Any = None, what: str = "tcpdump") -> Capture:
    """Start tcpdump (popen: a testbed's popen(role, argv, ...) bound to a role, else subprocess.Popen)."""
    kwargs = dict(stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    proc = popen(argv, what=what, **kwargs) if popen is not None else subprocess.Popen(argv, **kwargs)
    cap = Capture(argv=argv, path=Path(path), proc=proc)
    cap._reader = threading.Thread(target=cap._read, daemon=True)
    cap._reader.start()
    cap.wait_ready()
    return cap
