"""The ``tcp:tcp_probe`` tracepoint through perf: cwnd, ssthresh and srtt per ACK processed.

``record_argv`` records the tracepoint system-wide (``perf record -e tcp:tcp_probe -a``, the only
way it works here: per-task recording misses softirq ACK processing); ``script_argv`` turns the
file into text and ``parse_script`` reads that text. perf mounts tracefs on first use, so both run
in a private mount namespace (``unshare --mount``) where that mount vanishes with perf;
``Recording`` also unmounts tracefs if it appears on the host during the recording. The kernel prints srtt in
microseconds (srtt_us >> 3) and snd_cwnd in segments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, RunningCommand

EVENT = "tcp:tcp_probe"
TRACEFS = Path("/sys/kernel/tracing")

_LINE = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<ts>\d+\.\d+):\s+"
                   r"tcp:tcp_probe:\s+(?P<rest>.*)$")
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]:\d+|\S+)")


class TcpProbeError(BenchbookError, ValueError):
    """perf script output that is not tcp_probe records; the message names the line."""


PRIVATE_MOUNTS = ["unshare", "--mount", "--propagation", "private"]


def record_argv(out_path: Path | str) -> list[str]:
    return [*PRIVATE_MOUNTS, "perf", "record", "-q", "-e", EVENT, "-a", "-o", str(out_path)]


def script_argv(data_path: Path | str) -> list[str]:
    return [*PRIVATE_MOUNTS, "perf", "script", "-i", str(data_path)]


def _endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if host.startswith("::ffff:"):
        host = host[7:]
    return host, int(port)


@dataclass(frozen=True)
class ProbeSample:
    t_s: float
    src: str
    sport: int
    dst: str
    dport: int
    cwnd: int
    ssthresh: int
    srtt_us: int
    snd_nxt: int
    snd_una: int
    snd_wnd: int
    data_len: int


def iter_script(text: str, source: str = "perf script") -> Iterator[ProbeSample]:
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            if "tcp:tcp_probe" in line:
                raise TcpProbeError(f"{source}: line {lineno}: a tcp_probe record perf script does not print: "
                                    f"{line.strip()[:120]}")
            continue
        f = dict(_FIELD.findall(m.group("rest")))
        try:
            src, sport = _endpoint(f["src"])
            dst, dport = _endpoint(f["dest"])
            yield ProbeSample(t_s=float(m.group("ts")), src=src, sport=sport, dst=dst, dport=dport,
                              cwnd=int(f["snd_cwnd"]), ssthresh=int(f["ssthresh"]), srtt_us=int(f["srtt"]),
                              snd_nxt=int(f["snd_nxt"], 16), snd_una=int(f["snd_una"], 16),
                              snd_wnd=int(f["snd_wnd"]), data_len=int(f.get("data_len", 0)))
        except (KeyError, ValueError) as exc:
            raise TcpProbeError(f"{source}: line {lineno}: tcp_probe record without {exc} "
                                "(expected src, dest, snd_cwnd, ssthresh, srtt, snd_nxt, snd_una, snd_wnd)") from exc


def parse_script(text: str, source: str = "perf script", port: int | None = None) -> list[ProbeSample]:
    """Every record (or only those with ``port`` as source or destination port)."""
    return [s for s in iter_script(text, source) if port is None or port in (s.sport, s.dport)]


def probe_available(host: Host) -> tuple[bool, str]:
    """Does perf know the tracepoint here? (``perf list`` lists it; needs root for tracefs.)"""
    r = host.run([*PRIVATE_MOUNTS, "perf", "list", EVENT], check=False, what="perf list tcp:tcp_probe")
    if r.exit_code == 0 and EVENT in r.stdout:
        return True, "perf list shows tcp:tcp_probe"
    return False, (r.stderr.strip() or r.stdout.strip() or f"perf list exit {r.exit_code}")[-300:]


class Recording:
    """``perf record`` of the tracepoint while the body runs; ``stop()`` returns the parsed samples."""

    def __init__(self, host: Host, data_path: Path | str, port: int | None = None) -> None:
        self.host = host
        self.data_path = Path(data_path)
        self.port = port
        self.tracefs_was_mounted = _tracefs_mounted()
        self.command: RunningCommand | None = None

    def start(self) -> Recording:
        self.command = self.host.start(record_argv(self.data_path), what="perf record tcp:tcp_probe")
        return self

    def stop(self, timeout_s: float = 30.0) -> list[ProbeSample]:
        try:
            if self.command is not None:
                self.command.interrupt_and_wait(timeout_s)
            r = self.host.run(script_argv(self.data_path), check=False, timeout_s=300.0, what="perf script")
            return parse_script(r.stdout, source=str(self.data_path), port=self.port)
        finally:
            self.cleanup()

    def cleanup(self) -> None:
        if not self.tracefs_was_mounted and _tracefs_mounted():
            self.host.run(["umount", str(TRACEFS)], check=False, what="unmount tracefs perf mounted")


def _tracefs_mounted() -> bool:
    try:
        return any(line.split()[1] == str(TRACEFS) for line in Path("/proc/self/mounts").read_text().splitlines())
    except OSError:
        return False


def samples_frame(samples: list[ProbeSample]) -> Any:
    """The samples as a pandas DataFrame (columns as ProbeSample's fields)."""
    import pandas as pd

    return pd.DataFrame([s.__dict__ for s in samples])


__all__ = ["EVENT", "ProbeSample", "Recording", "TcpProbeError", "iter_script", "parse_script", "probe_available",
           "record_argv", "samples_frame", "script_argv"]
