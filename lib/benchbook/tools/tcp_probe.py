"""The ``tcp:tcp_probe`` tracepoint through perf: cwnd, ssthresh and srtt per ACK processed.

``record_argv`` records the tracepoint system-wide (``perf record -e tcp:tcp_probe -a``, the only
way it works here: per-task recording misses softirq ACK processing); ``script_argv`` turns the
file into text and ``parse_script`` reads that text. perf mounts tracefs on first use, so both run
in a private mount namespace (``unshare --mount``) where that mount vanishes with perf;
``Recording`` also unmounts tracefs if it appears on the host during the recording. The kernel prints srtt in
microseconds (srtt_us >> 3) and snd_cwnd in segments.

Clock: captures are stamped with CLOCK_REALTIME, which the kernel refuses for tracepoints (``perf record -k
CLOCK_REALTIME`` ends in "wrong clockid"). Recordings therefore use CLOCK_MONOTONIC (``-k``), and ``Recording``
measures CLOCK_REALTIME - CLOCK_MONOTONIC on the recording host at start and stop, written beside the data as
``<data>.clock.json`` (``{"perf_clock": "CLOCK_MONOTONIC", "realtime_minus_monotonic_ns": N, ...}``; write it
by hand for a recording of your own made with ``-k CLOCK_MONOTONIC``). ``read_records`` reads a ``perf script``
text or a perf.data file (through ``perf script`` on a Host) and, with that file beside it, puts the records on
the capture's clock (benchbook.analysis.tcp_cwnd).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.analysis.tcp_cwnd import ProbeRecords
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
    return [*PRIVATE_MOUNTS, "perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", EVENT, "-a", "-o", str(out_path)]


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
    t_ns: int = 0  # the time exactly as printed (perf prints microseconds), in ns


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
            sec, _, frac = m.group("ts").partition(".")
            yield ProbeSample(t_s=float(m.group("ts")), t_ns=int(sec) * 1_000_000_000 + int((frac + "0" * 9)[:9]),
                              src=src, sport=sport, dst=dst, dport=dport,
                              cwnd=int(f["snd_cwnd"]), ssthresh=int(f["ssthresh"]), srtt_us=int(f["srtt"]),
                              snd_nxt=int(f["snd_nxt"], 16), snd_una=int(f["snd_una"], 16),
                              snd_wnd=int(f["snd_wnd"]), data_len=int(f.get("data_len", 0)))
        except (KeyError, ValueError) as exc:
            raise TcpProbeError(f"{source}: line {lineno}: tcp_probe record without {exc} "
                                "(expected src, dest, snd_cwnd, ssthresh, srtt, snd_nxt, snd_una, snd_wnd)") from exc


def parse_script(text: str, source: str = "perf script", port: int | None = None) -> list[ProbeSample]:
    """Every record (or only those with ``port`` as source or destination port)."""
    return [s for s in iter_script(text, source) if port is None or port in (s.sport, s.dport)]


PERF_DATA_MAGIC = b"PERFILE2"


def read_records(path: Path | str, host: Host) -> ProbeRecords:
    """tcp_probe records of a ``perf script`` text or of a perf.data file (``perf script`` run on ``host``)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
        if head == PERF_DATA_MAGIC:
            r = host.run(script_argv(path), check=False, timeout_s=600.0, what="perf script")
            if r.exit_code != 0:
                raise TcpProbeError(f"{path}: perf script failed ({r.stderr.strip()[-300:] or r.exit_code})")
            text = r.stdout
        else:
            text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise TcpProbeError(f"{path}: at byte offset {exc.start}: not text (expected `perf script` output of "
                            f"{EVENT} records, or a perf.data file)") from None
    except OSError as exc:
        raise TcpProbeError(f"{path}: {exc.strerror or exc}") from None
    samples = list(iter_script(text, source=str(path)))
    if not samples:
        raise TcpProbeError(f"{path}: no {EVENT} records (expected `perf script` output of `perf record -e {EVENT}`)")
    offset_ns, clock = 0, "perf's clock as recorded"
    side = clock_file(path)
    if side.exists():
        try:
            doc = json.loads(side.read_text(encoding="utf-8"))
            offset_ns = int(doc["realtime_minus_monotonic_ns"])
            if doc.get("perf_clock") != "CLOCK_MONOTONIC":
                raise ValueError(f"perf_clock {doc.get('perf_clock')!r}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TcpProbeError(f"{side}: expected {{\"perf_clock\": \"CLOCK_MONOTONIC\", "
                                f"\"realtime_minus_monotonic_ns\": N}}: {exc}") from None
        clock = f"CLOCK_MONOTONIC + {offset_ns} ns ({side.name})"
    return records_of(samples, str(path), offset_ns=offset_ns, clock=clock)


def clock_file(data_path: Path | str) -> Path:
    """Where the recording's clock offset is kept: beside the data, ``<data>.clock.json``."""
    return Path(f"{data_path}.clock.json")


CLOCKS_ARGV = ["python3", "-c", "import time; a = time.time_ns(); m = time.monotonic_ns(); b = time.time_ns(); "
               "print(a, m, b)"]


def measure_offset(host: Host) -> tuple[int, int]:
    """CLOCK_REALTIME - CLOCK_MONOTONIC on ``host`` (ns) and the uncertainty of that reading (ns)."""
    r = host.run(CLOCKS_ARGV, what="clock offset")
    try:
        a, m, b = (int(x) for x in r.stdout.split())
    except ValueError:
        raise TcpProbeError(f"clock offset on {host.name}: expected three integers, got {r.stdout[:200]!r}") from None
    return (a + b) // 2 - m, b - a


def records_of(samples: list[ProbeSample], source: str, offset_ns: int = 0,
               clock: str = "perf's clock as recorded") -> ProbeRecords:
    """The samples as the columns benchbook.analysis.tcp_cwnd matches to a capture's flows (times + offset_ns)."""
    def col(name: str) -> np.ndarray:
        return np.array([getattr(s, name) for s in samples], np.int64)

    return ProbeRecords(source=source, clock=clock, time_ns=col("t_ns") + offset_ns, src=[s.src for s in samples],
                        sport=col("sport"),
                        dst=[s.dst for s in samples], dport=col("dport"), cwnd_segments=col("cwnd"),
                        ssthresh_segments=col("ssthresh"), srtt_us=col("srtt_us"), snd_wnd_bytes=col("snd_wnd"))


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
        offset, error = measure_offset(self.host)
        self.clock = {"perf_clock": "CLOCK_MONOTONIC", "realtime_minus_monotonic_ns": offset,
                      "reading_uncertainty_ns": error}
        self.command = self.host.start(record_argv(self.data_path), what="perf record tcp:tcp_probe")
        return self

    def stop(self, timeout_s: float = 30.0) -> list[ProbeSample]:
        try:
            if self.command is not None:
                self.command.interrupt_and_wait(timeout_s)
                offset, _ = measure_offset(self.host)
                self.clock["drift_until_stop_ns"] = offset - self.clock["realtime_minus_monotonic_ns"]
                clock_file(self.data_path).write_text(json.dumps(self.clock, indent=1) + "\n", encoding="utf-8")
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
    import pandas as pd  # noqa: PLC0415 pandas: `benchbook tcp` imports this module without it

    return pd.DataFrame([s.__dict__ for s in samples])


__all__ = ["EVENT", "ProbeSample", "Recording", "TcpProbeError", "iter_script", "parse_script", "probe_available",
           "clock_file", "measure_offset", "read_records", "record_argv", "records_of", "samples_frame", "script_argv"]
