"""``perf stat`` around a process for a measurement window: command line, run, parse its output.

Each counter keeps value, unit, event, relative stddev over the ``-r`` repeats (%), run
time and enabled %. ``<not supported>`` / ``<not counted>`` become value None with that
status, never zero. ``parse_perf_csv`` reads the ``-x,`` output of the runs started here; files
as users have them (every format and locale, several reports in one file) are read by
:mod:`benchbook.tools.perf_reports`.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from benchbook.tools.host import Host, LocalHost, RunningCommand
from benchbook.tools.perf_reports import PerfCounter, PerfError

SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations")
HARDWARE_EVENTS = ("instructions", "branches")


def _num(s: str) -> float | None:
    s = s.strip().rstrip("%")
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        return None


def parse_perf_csv(text: str, source: str = "perf stat") -> list[PerfCounter]:
    """Parse ``perf stat -x,`` output (with or without ``-r``).

    With -r: value,unit,event,stddev%,run_time,enabled%,metric,metric_unit
    without: value,unit,event,run_time,enabled%,metric,metric_unit
    """
    out: list[PerfCounter] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 5:
            if "," in line:
                raise PerfError(f"{source}: line {lineno}: expected value,unit,event,... got {line!r}")
            continue  # a message line (e.g. perf's own warnings)
        raw, unit, event = f[0].strip(), f[1].strip(), f[2].strip()
        has_var = f[3].strip().endswith("%")
        rest = f[4:] if has_var else f[3:]
        stddev = _num(f[3]) if has_var else None
        if raw.startswith("<"):
            status, value = raw.strip("<>"), None
        else:
            value = _num(raw)
            if value is None:
                raise PerfError(f"{source}: line {lineno}: value {raw!r} is not a number")
            status = "counted"
        run_time = _num(rest[0]) if rest else None
        enabled = _num(rest[1]) if len(rest) > 1 else None
        metric = _num(rest[2]) if len(rest) > 2 else None
        out.append(PerfCounter(event=event, value=value, unit=unit, status=status,
                               stddev_pct=stddev if status == "counted" else None,
                               run_time_ns=int(run_time) if run_time is not None else None,
                               enabled_pct=enabled, metric_value=metric,
                               metric_unit=rest[3].strip() if len(rest) > 3 else ""))
    return out


def build_argv(pid: int | str, window_s: float, *,
               events: tuple[str, ...] | list[str] = SOFTWARE_EVENTS + HARDWARE_EVENTS, repeats: int = 3,
               output_path: str | None = None) -> list[str]:
    """perf stat attached to pid for `repeats` consecutive sub-windows of window_s/repeats each.

    pid may be a shell expression (e.g. ``$(cat testpmd.pid)``) when the argv is run by a shell
    on a remote host; output_path: write the CSV there (``-o``) instead of stderr."""
    if repeats < 1 or window_s <= 0:
        raise ValueError("repeats >= 1 and window_s > 0 required")
    argv = ["perf", "stat", "-x,", "-e", ",".join(events)]
    if output_path is not None:
        argv += ["-o", output_path]
    argv += ["-p", str(pid)]
    if repeats > 1:
        argv[2:2] = ["-r", str(repeats)]
    return argv + ["--", "sleep", f"{window_s / repeats:g}"]


def hardware_counters_supported(host: Host | None = None) -> bool:
    """Does `perf stat -e instructions true` count (False on VMs without a PMU)?"""
    if host is None and shutil.which("perf") is None:
        return False
    r = (host or LocalHost()).run(["perf", "stat", "-x,", "-e", "instructions", "true"], check=False,
                                  what="perf probe")
    try:
        return any(c.event.startswith("instructions") and c.status == "counted" for c in parse_perf_csv(r.stderr))
    except PerfError:
        return False


@dataclass
class PerfRun:
    argv: list[str]
    command: RunningCommand

    def finish(self, timeout_s: float = 60.0) -> dict[str, Any]:
        try:
            code = self.command.wait(timeout_s)
        except subprocess.TimeoutExpired:
            code = self.command.kill()
        err = self.command.output("stderr")
        counters = parse_perf_csv(err)
        return {"argv": self.argv, "exit_code": code, "raw": err, "counters": [asdict(c) for c in counters]}


def start_perf_stat(host: Host, pid: int, window_s: float, *,
                    events: tuple[str, ...] | list[str] = SOFTWARE_EVENTS + HARDWARE_EVENTS,
                    repeats: int = 3) -> PerfRun:
    """Start perf stat on pid (runs in the background for window_s; finish() collects)."""
    if isinstance(host, LocalHost) and shutil.which("perf") is None:
        raise PerfError("perf not installed (Debian linux-perf)")
    return start_argv(host, build_argv(pid, window_s, events=events, repeats=repeats))


def start_argv(host: Host, argv: list[str]) -> PerfRun:
    """Start a perf stat command line (from build_argv) on ``host``; finish() collects its counters."""
    return PerfRun(argv=argv, command=host.start(argv, what="perf stat"))
