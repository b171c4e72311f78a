"""tcpdump as the timestamper: nanosecond pcaps at DuT ingress/egress, kernel drop counters.

tcpdump's closing lines on stderr are parsed into counts::

    1000 packets captured
    1000 packets received by filter
    0 packets dropped by kernel
    [0 packets dropped by interface]
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, RunningCommand, describe_exit

FULL_BELOW_BYTES = 64 * 1024   # a file system with less free space than this after a capture counts as full
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
        ended_early = self.command.poll() is not None
        code = self.command.interrupt_and_wait(timeout_s)
        self.stats = {**parse_stats(self.command.output("stderr")), "file": str(self.path), "argv": self.argv,
                      "exit_code": code, "ended_before_stop": ended_early}
        try:
            self.stats["file_bytes"] = self.path.stat().st_size
            fs = os.statvfs(self.path.parent)
            self.stats["fs_free_bytes"] = fs.f_bfree * fs.f_frsize
        except OSError:
            self.stats["file_bytes"] = self.stats["fs_free_bytes"] = None
        return self.stats

    def problem(self) -> str | None:
        """Why the capture file cannot be trusted (after stop), or None: tcpdump ended before it was
        stopped or with an error, or the file system holding the file is full (tcpdump 4.99 does not
        report write errors: it counts packets as captured that never reached the file)."""
        st = self.stats
        if st.get("ended_before_stop") or st.get("exit_code") not in (0, None):
            last = [ln.strip() for ln in self.command.lines("stderr") if ln.strip() and not _STAT_RE.match(ln.strip())]
            early = " before it was stopped," if st.get("ended_before_stop") else ""
            return (f"tcpdump ({self.path}) ended{early} with {describe_exit(st.get('exit_code'))}"
                    + (f": {last[-1]}" if last else ""))
        free = st.get("fs_free_bytes")
        if free is not None and free < FULL_BELOW_BYTES:
            return (f"{self.path}: [Errno 28] No space left on device: the file system holding it has {free} bytes "
                    f"free after tcpdump wrote {st.get('file_bytes')} bytes; tcpdump counted {st.get('captured')} "
                    f"packets captured but does not report write errors, so the file is incomplete")
        return None


def wait_until_written(path: Path | str, timeout_s: float = 20.0, polls: int = 5, interval_s: float = 0.1) -> bool:
    """Until tcpdump has written what it received: the file's size unchanged over ``polls`` polls
    ``interval_s`` apart (False when ``timeout_s`` passed first). Stopping tcpdump earlier can lose the
    packets still in its buffer."""
    p = Path(path)
    deadline = time.monotonic() + timeout_s
    last, same = -1, 0
    while time.monotonic() < deadline:
        size = p.stat().st_size if p.exists() else -1
        same = same + 1 if size == last else 0
        if same >= polls:
            return True
        last = size
        time.sleep(interval_s)
    return False


def start_capture(host: Host, argv: list[str], path: Path | str, what: str = "tcpdump") -> Capture:
    """Start tcpdump (argv from build_argv) on ``host``; returns once it listens."""
    cap = Capture(argv=list(argv), path=Path(path), command=host.start(argv, what=what))
    cap.wait_ready()
    return cap
