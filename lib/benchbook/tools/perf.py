"""``perf stat`` around a process for a measurement window: command line, run, parse its output.

Each counter keeps value, unit, event, relative stddev over the ``-r`` repeats (%), run
time and enabled %. ``<not supported>`` / ``<not counted>`` become value None with that
status, never zero.

``parse_perf_output`` reads every format ``perf stat`` writes: ``-x SEP`` CSV with any separator,
with and without ``-r``, and the human-readable report in any locale (thousands separators ``,``
``.`` ``'`` or spaces; decimal point or comma, told from the ``seconds time elapsed`` footer or the
``msec`` task-clock value), with ``(msec)`` units, multiplexing percentages ``(62.50%)``,
``( +- 0.33% )`` variation, hybrid-CPU PMU prefixes (``cpu_core/instructions/``) and the
``seconds time elapsed`` / ``user`` / ``sys`` footers.
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.tools.host import Host, LocalHost, RunningCommand

SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations")
HARDWARE_EVENTS = ("instructions", "branches")


class PerfError(BenchbookError, RuntimeError):
    pass


@dataclass
class PerfCounter:
    event: str
    value: float | None
    unit: str
    status: str                  # "counted" | "not supported" | "not counted"
    stddev_pct: float | None     # relative stddev across -r repeats ("+- x%"), None without -r
    run_time_ns: int | None
    enabled_pct: float | None
    metric_value: float | None = None
    metric_unit: str = ""


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


@dataclass
class PerfStat:
    """Everything one ``perf stat`` report says."""

    counters: list[PerfCounter]
    format: str                       # "csv" | "human"
    separator: str | None = None      # the -x separator (CSV)
    decimal: str = "."                # the decimal mark of the numbers
    command: str | None = None        # "Performance counter stats for '...'"
    runs: int | None = None           # "(3 runs)" / -r
    elapsed_s: float | None = None    # seconds time elapsed
    elapsed_stddev_s: float | None = None
    user_s: float | None = None
    sys_s: float | None = None


_CSV_SEPARATORS = (",", ";", "\t", "|", ":")
_STATS_RE = re.compile(
    r"Performance counter stats for (?:'(?P<cmd>.*)'|(?P<what>.*?))(?: \((?P<runs>\d+) runs\))?:\s*$"
)
_NUM = r"[0-9][0-9.,'\u00a0\u202f ]*[0-9]|[0-9]"
_HUMAN_RE = re.compile(
    rf"^\s*(?P<value>{_NUM}|<not supported>|<not counted>)\s+"
    rf"(?:(?P<unit>msec|sec|usec|nsec|ns|us|ms|Joules|MiB|bytes)\s+)?(?P<event>[^\s#(]+)"
    rf"(?:\s+#\s+(?P<metric>-?(?:{_NUM}))?\s*(?P<metric_unit>[^(]*?))?"
    rf"\s*(?:\(\s*\+-\s*(?P<stddev>{_NUM})\s*%\s*\))?\s*(?:\((?P<enabled>{_NUM})\s*%\))?\s*$"
)
_ELAPSED_RE = re.compile(rf"^\s*(?P<v>{_NUM})\s*(?:\+-\s*(?P<sd>{_NUM})\s*)?seconds time elapsed")
_USERSYS_RE = re.compile(rf"^\s*(?P<v>{_NUM})\s+seconds (?P<what>user|sys)\s*$")


def parse_perf_output(text: str, source: str = "perf stat", decimal: str | None = None) -> PerfStat:
    """Parse what ``perf stat`` wrote (stderr or its -o file), CSV or human-readable. `decimal`
    ("." or ",") overrides the decimal mark told from the report."""
    if "Performance counter stats for" in text:
        return _parse_human(text, source, decimal)
    return _parse_csv_any(text, source, decimal)


def read_perf_file(path: str | Any, decimal: str | None = None) -> PerfStat:
    """parse_perf_output of a file (UTF-8; a byte that is not is an error naming its offset)."""
    from pathlib import Path

    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PerfError(f"{p}: byte offset {exc.start}: not UTF-8 text ({exc.reason})") from None
    except IsADirectoryError:
        raise PerfError(f"{p}: is a directory, expected a perf stat output file") from None
    except OSError as exc:
        raise PerfError(f"{p}: cannot be read: {exc.strerror}") from None
    return parse_perf_output(text, str(p), decimal)


def _number(text: str, decimal: str, source: str, lineno: int, what: str) -> float:
    t = text.strip().replace("\u00a0", "").replace("\u202f", "").replace("'", "").replace(" ", "")
    if decimal == ",":
        t = t.replace(".", "").replace(",", ".")
    else:
        t = t.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        raise PerfError(f"{source}: line {lineno}: {what} {text.strip()!r} is not a number") from None
    if not math.isfinite(v):
        raise PerfError(f"{source}: line {lineno}: {what} {text.strip()!r} is not a finite number")
    return v


def _decimal_mark(lines: list[str]) -> str:
    for line in lines:
        m = _ELAPSED_RE.match(line)
        if m:
            v = m.group("v")
            return "," if "," in v and "." not in v else "."
    for line in lines:
        m = re.search(r"(\d)([.,])(\d{2})\s+msec\b", line)
        if m:
            return m.group(2)
    return "."


def _parse_human(text: str, source: str, decimal: str | None) -> PerfStat:
    lines = text.splitlines()
    dec = decimal or _decimal_mark(lines)
    out = PerfStat(counters=[], format="human", decimal=dec)
    in_stats = False
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _STATS_RE.search(line)
        if m:
            in_stats = True
            out.command = m.group("cmd") if m.group("cmd") is not None else m.group("what")
            out.runs = int(m.group("runs")) if m.group("runs") else None
            continue
        if not in_stats:
            continue
        m = _ELAPSED_RE.match(line)
        if m:
            out.elapsed_s = _number(m.group("v"), dec, source, lineno, "elapsed time")
            if m.group("sd"):
                out.elapsed_stddev_s = _number(m.group("sd"), dec, source, lineno, "elapsed stddev")
            continue
        m = _USERSYS_RE.match(line)
        if m:
            setattr(out, f"{m.group('what')}_s", _number(m.group("v"), dec, source, lineno, m.group("what")))
            continue
        m = _HUMAN_RE.match(line)
        if m is None:
            if line.strip()[0].isdigit() or line.strip().startswith("<"):
                raise PerfError(f"{source}: line {lineno}: expected 'VALUE [UNIT] EVENT [# METRIC] [( +- X% )] "
                                f"[(Y%)]' as perf stat writes, got {line.strip()[:100]!r}")
            continue  # perf's own notes ("Some events weren't counted ...")
        raw = m.group("value")
        if raw.startswith("<"):
            status, value = raw.strip("<>"), None
        else:
            status, value = "counted", _number(raw, dec, source, lineno, "value")
        metric = m.group("metric")
        out.counters.append(PerfCounter(
            event=m.group("event"), value=value, unit=m.group("unit") or "", status=status,
            stddev_pct=(_number(m.group("stddev"), dec, source, lineno, "variation")
                        if m.group("stddev") and status == "counted" else None),
            run_time_ns=None,
            enabled_pct=_number(m.group("enabled"), dec, source, lineno, "enabled %") if m.group("enabled") else None,
            metric_value=_number(metric, dec, source, lineno, "metric") if metric else None,
            metric_unit=(m.group("metric_unit") or "").strip(),
        ))
    if not in_stats:
        raise PerfError(f"{source}: no 'Performance counter stats for' line: not a perf stat report")
    if not out.counters:
        raise PerfError(f"{source}: a perf stat report without counters")
    return out


def _csv_separator(lines: list[str], source: str) -> str:
    best, best_score = None, 0
    for sep in _CSV_SEPARATORS:
        score = 0
        for line in lines:
            f = line.split(sep)
            if 5 <= len(f) <= 9 and re.match(r"^[A-Za-z_][\w/.:=,-]*$", f[2].strip() or "-"):
                score += 1
        if score > best_score:
            best, best_score = sep, score
    if best is None or best_score * 2 < len(lines):
        raise PerfError(f"{source}: no perf stat -x output found (expected VALUE<sep>UNIT<sep>EVENT<sep>... lines, "
                        f"with one of the separators {' '.join(repr(x) for x in _CSV_SEPARATORS)})")
    return best


def _parse_csv_any(text: str, source: str, decimal: str | None) -> PerfStat:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    sep = _csv_separator(lines, source)
    dec = decimal or ("," if sep != "," and any(re.match(r"^\d+,\d", ln) for ln in lines) else ".")
    out = PerfStat(counters=[], format="csv", separator=sep, decimal=dec)
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        f = line.split(sep)
        if len(f) < 5:
            if sep in line:
                raise PerfError(f"{source}: line {lineno}: {len(f)} fields separated by {sep!r}: expected "
                                "value,unit,event,[stddev%,]run_time,enabled%,metric,metric_unit")
            continue  # a message line (perf's own warnings)
        if len(f) > 8:
            raise PerfError(f"{source}: line {lineno}: {len(f)} fields separated by {sep!r}, at most 8 expected "
                            "(a decimal comma with -x, is ambiguous: use another -x separator or LC_NUMERIC=C)")
        raw, unit, event = f[0].strip(), f[1].strip(), f[2].strip()
        has_var = f[3].strip().endswith("%")
        rest = f[4:] if has_var else f[3:]

        def num(x: str, what: str, lineno: int = lineno) -> float | None:
            x = x.strip().rstrip("%")
            return _number(x, dec, source, lineno, what) if x else None

        if raw.startswith("<"):
            status, value = raw.strip("<>"), None
        else:
            status, value = "counted", num(raw, "value")
            if value is None:
                raise PerfError(f"{source}: line {lineno}: empty value")
        stddev = num(f[3], "variation") if has_var else None
        run_time = num(rest[0], "run time") if rest else None
        out.counters.append(PerfCounter(
            event=event, value=value, unit=unit, status=status,
            stddev_pct=stddev if status == "counted" else None,
            run_time_ns=int(run_time) if run_time is not None else None,
            enabled_pct=num(rest[1], "enabled %") if len(rest) > 1 else None,
            metric_value=num(rest[2], "metric") if len(rest) > 2 else None,
            metric_unit=rest[3].strip() if len(rest) > 3 else "",
        ))
    return out


def counters_frame(counters: list[PerfCounter]) -> Any:
    import pandas as pd

    return pd.DataFrame([asdict(c) for c in counters])


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
