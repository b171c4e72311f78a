"""The native delay line ``bb-delayline`` (native/delayline/bb-delayline.c) for kernels without netem.

It bridges two interfaces of one namespace with AF_PACKET sockets and holds every frame for a constant
delay per direction. ``start`` runs it on a host and waits for "ready"; ``stats`` asks for its counters
(SIGUSR1: one JSON line), ``reset`` sets them to zero (SIGUSR2) and ``stop`` ends it and returns the
final ones: per direction frames forwarded, dropped, and the lateness of sends against their due time
(the delay added beyond the configured one).
"""

from __future__ import annotations

import json
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.paths import BUILD_DIR, REPO_ROOT
from benchbook.tools.host import Host, RunningCommand
from benchbook.tools.native import ensure_built

BINARY = BUILD_DIR / "bb-delayline"
SOURCE = REPO_ROOT / "native" / "delayline" / "bb-delayline.c"


class DelayLineError(BenchbookError, RuntimeError):
    pass


def ensure_binary() -> Path:
    """build/bb-delayline, compiled (as the Makefile does) when missing or older than its source."""
    return ensure_built(BINARY, SOURCE, DelayLineError)


def build_argv(if_a: str, if_b: str, delay_ab_us: int, delay_ba_us: int, limit_packets: int = 100_000,
               binary: Path | None = None) -> list[str]:
    if delay_ab_us < 0 or delay_ba_us < 0:
        raise ValueError("delays must be >= 0 us")
    if limit_packets < 1:
        raise ValueError(f"limit_packets must be >= 1, got {limit_packets}")
    return [str(binary or BINARY), if_a, if_b, str(int(delay_ab_us)), str(int(delay_ba_us)), str(int(limit_packets))]


def parse_stats(line: str, source: str = "bb-delayline") -> dict[str, Any]:
    try:
        doc = json.loads(line)
        dirs = {d["name"]: d for d in doc["directions"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise DelayLineError(f"{source}: not a statistics line: {line.strip()[:200]!r} ({exc})") from exc
    return dirs


@dataclass
class DelayLine:
    argv: list[str]
    command: RunningCommand

    def _stat_lines(self) -> list[str]:
        return [ln for ln in self.command.lines("stdout") if ln.startswith("{")]

    def stats(self, timeout_s: float = 5.0) -> dict[str, Any]:
        """The current counters (SIGUSR1, then the next JSON line it prints)."""
        before = len(self._stat_lines())
        self.command.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            lines = self._stat_lines()
            if len(lines) > before:
                return parse_stats(lines[-1])
            time.sleep(0.02)
        raise DelayLineError(f"no statistics from {' '.join(self.argv)} within {timeout_s:g} s")

    def reset(self, timeout_s: float = 5.0) -> None:
        """Counters to zero (SIGUSR2; it answers "reset")."""
        before = sum(1 for ln in self.command.lines("stdout") if ln.strip() == "reset")
        self.command.proc.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if sum(1 for ln in self.command.lines("stdout") if ln.strip() == "reset") > before:
                return
            time.sleep(0.02)
        raise DelayLineError(f"{' '.join(self.argv)} did not reset its counters within {timeout_s:g} s")

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any]:
        code = self.command.interrupt_and_wait(timeout_s)
        lines = self._stat_lines()
        if code != 0 or not lines:
            raise DelayLineError(f"bb-delayline ended with exit {code}: {self.command.output('stderr').strip()[-300:]}")
        return parse_stats(lines[-1])


def start(host: Host, argv: list[str], what: str = "bb-delayline") -> DelayLine:
    cmd = host.start(argv, what=what)
    if not cmd.wait_for("ready", "stdout", timeout_s=10.0):
        cmd.kill()
        raise DelayLineError(f"bb-delayline did not start: {cmd.output('stderr').strip()[-400:]}")
    return DelayLine(argv=list(argv), command=cmd)


__all__ = ["BINARY", "DelayLine", "DelayLineError", "build_argv", "ensure_binary", "parse_stats", "start"]
