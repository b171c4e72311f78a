"""``perf stat`` output files as they come: one record per report, each read with its own number format.

A file may hold several reports: runs appended with ``--append`` or ``2>>``, shell logs (``bash -x``,
``script``) with other commands' output around them. A report starts at ``Performance counter stats
for ...`` (human-readable), at the ``#  time  counts unit events`` header (``-I`` intervals) or at the
first ``-x`` CSV record after something else; a ``# started on`` line (``-o``) belongs to the report
after it. A human-readable report ends after its footer (``seconds time elapsed``, ``user``, ``sys``);
CSV records start a new report when their separator or their columns change (-I time, what the aggregate
column aggregates over: socket, die, core, CPU, node or thread, the CPU-count column, -r stddev), when an
event (per CPU/core/socket and interval) comes again, or when interval times go back; two -x runs of
different events appended without a line between them read as one report. Lines outside reports are not
perf's and are left alone.

Each report has its own number format. Human-readable: the decimal mark is the last ``.``/``,`` of a
number perf always prints with decimals (the footer's seconds, ``msec`` values, the metric after
``#``, the ``+-`` variation), else ``.``; every other ``,`` ``.`` ``'`` ``’`` space, no-break space
or narrow no-break space is digit grouping, accepted only between groups of 3 digits (2 in Indian
``1,06,724``). ``-x`` CSV: no grouping; the decimal mark is ``,`` when a number has one and the separator
is not ``,``. ``-I`` times are printed with ``.`` in every locale. Values keep unit, relative
stddev over ``-r`` runs (%), run time, enabled %, metric; ``<not supported>``/``<not counted>`` are
value None with that status, never zero. ``-A``/``--per-core``/``--per-socket``/``--per-die``/
``--per-node``/``--per-thread`` prefixes go to ``aggregate`` (and the CPU count beside it to ``aggregate_cpus``), ``-I``
times to ``time_s``.

A report that cannot be read is a :class:`PerfReportError` naming the file, the report and the line;
the other reports are still read (:class:`PerfFile` holds both).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError


class PerfError(BenchbookError, RuntimeError):
    pass


class PerfReportError(PerfError):
    """One report of a file could not be read: ``report`` is its number (1-based), ``line`` the line."""

    def __init__(self, message: str, report: int = 0, line: int = 0) -> None:
        super().__init__(message)
        self.report = report
        self.line = line


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
    time_s: float | None = None          # -I: seconds since the start at the end of the interval
    aggregate: str | None = None         # -A "CPU3", --per-core "S0-D0-C1", --per-socket "S0", --per-thread "sh-42"
    aggregate_cpus: int | None = None    # the number of CPUs perf prints beside a --per-* aggregate


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
    report: int = 1                   # its number in the file (1-based)
    first_line: int = 1               # its first and last line in the file
    last_line: int = 1
    grouping: str = ""                # the digit-grouping character seen ("" none)
    interval: bool = False            # -I output (counters carry time_s)


@dataclass
class PerfFile:
    """The reports of one file that could be read, and an error for each that could not."""

    source: str
    reports: list[PerfStat] = field(default_factory=list)
    errors: list[PerfReportError] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.reports) + len(self.errors)


_CSV_SEPARATORS = (",", ";", "\t", "|", ":")
_GROUPING = ",.'\u2019 \u00a0\u202f"
_STATS_RE = re.compile(
    r"Performance counter stats for (?:'(?P<cmd>.*)'|(?P<what>.*?))(?: \((?P<runs>\d+) runs\))?:\s*$"
)
_STARTED_RE = re.compile(r"^# started on ")
_INTERVAL_HEADER_RE = re.compile(r"^#\s+time\s+(?:\S+\s+)*counts\s+unit\s+events\s*$")
_NUM = r"[0-9]+(?:[.,'\u2019\u00a0\u202f ][0-9]+)*"
_AGGR = r"CPU\d+|(?:S\d+(?:-D\d+)?(?:-C\d+)?|N\d+)"
_UNITS = r"msec|sec|usec|nsec|ns|us|ms|Joules|MiB|bytes"
_COUNTER_TAIL = (
    rf"(?P<value>{_NUM}|<not supported>|<not counted>)\s+"
    rf"(?:(?P<unit>{_UNITS})\s+)?(?P<event>[^\s#(]+)"
    rf"(?:\s+#\s+(?P<metric>-?(?:{_NUM}))?\s*(?P<metric_unit>[^(]*?))?"
    rf"\s*(?:\(\s*\+-\s*(?P<stddev>{_NUM})\s*%\s*\))?\s*(?:\((?P<enabled>{_NUM})\s*%\))?\s*$"
)
_THREAD = r"\S+-\d+"   # --per-thread: comm-tid
_AGGR_PREFIX = (r"(?:(?:(?P<aggr>CPU\d+)|(?P<aggr_n>S\d+(?:-D\d+)?(?:-C\d+)?|N\d+)\s+(?P<cpus>\d+)|"
                rf"(?P<aggr_t>{_THREAD}))\s+)?")
_HUMAN_RE = re.compile(rf"^\s*{_AGGR_PREFIX}{_COUNTER_TAIL}")
_INTERVAL_RE = re.compile(rf"^\s*(?P<time>\d+\.\d+)\s+{_AGGR_PREFIX}{_COUNTER_TAIL}")
_ELAPSED_RE = re.compile(rf"^\s*(?P<v>{_NUM})\s*(?:\+-\s*(?P<sd>{_NUM})\s*)?seconds time elapsed")
_USERSYS_RE = re.compile(rf"^\s*(?P<v>{_NUM})\s+seconds (?P<what>user|sys)\s*$")
_EVENT_RE = re.compile(r"^[A-Za-z_][\w/.:=,@-]*$")
_CSV_UNIT_RE = re.compile(r"^(?:[A-Za-z%/]+)?$")
_CSV_VALUE_RE = re.compile(r"^(?:[0-9][0-9.,]*|<not supported>|<not counted>)$")


def _fail(source: str, report: int, lineno: int, message: str) -> PerfReportError:
    return PerfReportError(f"{source}: report {report}: line {lineno}: {message}", report, lineno)


def _number(text: str, decimal: str, where: tuple[str, int, int], what: str, grouped: bool = True) -> float:
    """A number as perf printed it: `decimal` is the decimal mark, any other grouping character must sit
    between groups of 3 digits (2 before the last group in Indian grouping); `grouped` False: none at all."""
    source, report, lineno = where
    raw = text.strip()
    t = raw.replace("%", "")
    int_part, _, frac = t.rpartition(decimal) if decimal in t else (t, "", "")
    seps = {c for c in int_part if not c.isdigit()}
    ok = bool(int_part) and int_part[0].isdigit() and (frac.isdigit() or frac == "") and len(seps) <= 1
    if ok and seps:
        sep = seps.pop()
        groups = int_part.split(sep)
        ok = (grouped and sep in _GROUPING and len(groups[-1]) == 3 and 1 <= len(groups[0]) <= 3
              and all(len(g) in (2, 3) for g in groups[1:-1]))
    if not ok:
        mark = f"decimal mark {decimal!r}" + ("" if grouped else ", no digit grouping")
        raise _fail(source, report, lineno, f"{what} {raw!r} is not a number with {mark}")
    v = float("".join(c for c in int_part if c.isdigit()) + ("." + frac if frac else ""))
    if not math.isfinite(v):
        raise _fail(source, report, lineno, f"{what} {raw!r} is not a finite number")
    return v


def _human_decimal(lines: list[str]) -> str:
    """The decimal mark of a human-readable report, from numbers perf always prints with decimals."""
    for line in lines:
        m = _ELAPSED_RE.match(line) or _USERSYS_RE.match(line)
        if m and re.search(r"[.,]", m.group("v")):
            return re.findall(r"[.,]", m.group("v"))[-1]
    for pattern in (r"\d([.,])\d{2}\s+(?:msec|Joules)\b", r"#\s+-?\d+([.,])\d+\s", r"\+-\s+\d+([.,])\d+\s*%"):
        for line in lines:
            m = re.search(pattern, line)
            if m:
                return m.group(1)
    for line in lines:  # counts are whole numbers; a scaled value has 2 decimals
        m = re.match(rf"^\s*(?:\d+\.\d{{9}}\s+)?{_AGGR_PREFIX}\d+([.,])\d{{2}}\s", line)
        if m:
            return m.group(m.lastindex or 0)
    return "."


def _grouping_of(values: list[str], decimal: str) -> str:
    for v in values:
        for c in v:
            if not c.isdigit() and c != decimal and c in _GROUPING:
                return c
    return ""


@dataclass
class _Segment:
    kind: str            # "human" | "interval" | "csv"
    first_line: int
    lines: list[tuple[int, str]] = field(default_factory=list)
    separator: str | None = None
    footer: bool = False                                # human: the elapsed line was seen
    keys: set[tuple[Any, ...]] = field(default_factory=set)
    last_time: float = -math.inf
    # csv: (-I time, aggregation kind ("S#", "S#-D#", "CPU#", "N#", "thread"... or None), CPU-count column,
    # -r stddev column): a report keeps one shape, so a change of shape starts the next report
    shape: tuple[bool, str | None, bool, bool] | None = None


def _csv_fields(line: str, sep: str) -> tuple[list[str], str | None, float | None, int | None] | None:
    """value,unit,event,... of a -x record and its time, aggregate and CPU count; None: not a record."""
    f = line.split(sep)
    time_s = aggr = cpus = None
    if len(f) > 4 and re.fullmatch(r" *\d+\.\d{9}", f[0]) and (
            _EVENT_RE.match(f[3].strip() or "-") or re.fullmatch(_AGGR, f[1].strip())):
        time_s, f = float(f[0]), f[1:]
    if f and re.fullmatch(_AGGR, f[0].strip()):
        aggr, f = f[0].strip(), f[1:]
        if not aggr.startswith("CPU") and f and f[0].strip().isdigit():
            cpus, f = int(f[0]), f[1:]
    elif f and re.fullmatch(_THREAD, f[0].strip()):
        aggr, f = f[0].strip(), f[1:]
    if len(f) < 5 or not _CSV_VALUE_RE.match(f[0].strip()) or not _CSV_UNIT_RE.match(f[1].strip()) \
            or not _EVENT_RE.match(f[2].strip()):
        return None
    return f, aggr, time_s, cpus


def _aggregation_kind(aggr: str | None) -> str | None:
    """What a -x record's first column aggregates over: "S#" (--per-socket), "S#-D#" (--per-die), "S#-D#-C#"
    (--per-core), "CPU#" (-A), "N#" (--per-node), "thread" (--per-thread: comm-pid), None (system-wide)."""
    if aggr is None:
        return None
    return re.sub(r"\d+", "#", aggr) if re.fullmatch(_AGGR, aggr) else "thread"


def _csv_separator(line: str) -> str | None:
    for sep in _CSV_SEPARATORS:
        if sep in line and _csv_fields(line, sep) is not None:
            return sep
    return None


def _split(text: str) -> list[_Segment]:
    segments: list[_Segment] = []
    cur: _Segment | None = None
    started: int | None = None          # the line of a '# started on' waiting for its report

    def open_(kind: str, lineno: int, sep: str | None = None) -> _Segment:
        nonlocal started, cur
        seg = _Segment(kind, started if started is not None else lineno, separator=sep)
        started = None
        segments.append(seg)
        cur = seg
        return seg

    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if _STARTED_RE.match(s):
            cur, started = None, lineno
            continue
        if _STATS_RE.search(line):
            open_("human", lineno).lines.append((lineno, line))
            continue
        if _INTERVAL_HEADER_RE.match(s):
            if cur is None or cur.kind != "interval":
                open_("interval", lineno)
            continue
        if cur is not None and cur.kind == "human":
            if not cur.footer or not s or _USERSYS_RE.match(line) or _ELAPSED_RE.match(line):
                cur.footer = cur.footer or bool(_ELAPSED_RE.match(line))
                cur.lines.append((lineno, line))
                continue
            cur = None
        if cur is not None and cur.kind == "interval":
            m = _INTERVAL_RE.match(line)
            if m:
                t = float(m.group("time"))
                if t < cur.last_time:
                    open_("interval", lineno)
                assert cur is not None
                cur.last_time = t
                cur.lines.append((lineno, line))
                continue
            if not s:
                continue
            if re.match(r"\d+\.\d{9}\s", s):  # a broken interval line: the report's reader names it
                cur.lines.append((lineno, line))
                continue
            cur = None
        if not s or s.startswith("#"):
            continue
        sep = cur.separator if cur is not None and cur.kind == "csv" else None
        rec = _csv_fields(line, sep) if sep else None
        if rec is None:
            new_sep = _csv_separator(line)
            if new_sep is None and _looks_like_decimal_comma_csv(line):
                if sep != ",":
                    open_("csv", lineno, ",")
                assert cur is not None
                cur.lines.append((lineno, line))  # refused by the report's reader, naming the line
                continue
            if new_sep is None:
                if sep is not None and sep in line and (s[0].isdigit() or s.startswith("<")):
                    assert cur is not None
                    cur.lines.append((lineno, line))  # a broken record: the report's reader names it
                continue
            sep, rec = new_sep, _csv_fields(line, new_sep)
            cur = None
        assert rec is not None
        f, aggr, time_s, cpus = rec
        key = (time_s, aggr, f[2].strip())
        shape = (time_s is not None, _aggregation_kind(aggr), cpus is not None, f[3].strip().endswith("%"))
        if cur is None or key in cur.keys or (time_s is not None and time_s < cur.last_time) or shape != cur.shape:
            open_("csv", lineno, sep)
        assert cur is not None
        cur.shape = shape
        cur.keys.add(key)
        cur.last_time = time_s if time_s is not None else cur.last_time
        cur.lines.append((lineno, line))
    return segments


def _human_report(seg: _Segment, source: str, number: int, decimal: str | None) -> PerfStat:
    texts = [t for _, t in seg.lines]
    dec = decimal or _human_decimal(texts)
    out = PerfStat(counters=[], format="human", decimal=dec, report=number, first_line=seg.first_line,
                   last_line=seg.lines[-1][0] if seg.lines else seg.first_line, interval=seg.kind == "interval")
    pattern = _INTERVAL_RE if out.interval else _HUMAN_RE
    values: list[str] = []
    for lineno, line in seg.lines:
        where = (source, number, lineno)
        s = line.strip()
        if not s:
            continue
        m = _STATS_RE.search(line)
        if m:
            out.command = m.group("cmd") if m.group("cmd") is not None else m.group("what")
            out.runs = int(m.group("runs")) if m.group("runs") else None
            continue
        m = _ELAPSED_RE.match(line)
        if m:
            out.elapsed_s = _number(m.group("v"), dec, where, "elapsed time")
            if m.group("sd"):
                out.elapsed_stddev_s = _number(m.group("sd"), dec, where, "elapsed stddev")
            continue
        m = _USERSYS_RE.match(line)
        if m:
            setattr(out, f"{m.group('what')}_s", _number(m.group("v"), dec, where, m.group("what")))
            continue
        m = pattern.match(line)
        if m is None:
            if s[0].isdigit() or s.startswith("<") or re.match(_AGGR + r"\s", s):
                form = "TIME " if out.interval else ""
                raise _fail(source, number, lineno, f"expected '{form}[CPU] VALUE [UNIT] EVENT [# METRIC] "
                            f"[( +- X% )] [(Y%)]' as perf stat writes, got {s[:100]!r}")
            continue  # perf's own notes ("Some events weren't counted ...")
        raw = m.group("value")
        if raw.startswith("<"):
            status, value = raw.strip("<>"), None
        else:
            status, value = "counted", _number(raw, dec, where, "value")
            values.append(raw)
        metric = m.group("metric")
        out.counters.append(PerfCounter(
            event=m.group("event"), value=value, unit=m.group("unit") or "", status=status,
            stddev_pct=(_number(m.group("stddev"), dec, where, "variation", grouped=False)
                        if m.group("stddev") and status == "counted" else None),
            run_time_ns=None,
            enabled_pct=(_number(m.group("enabled"), dec, where, "enabled %", grouped=False)
                         if m.group("enabled") else None),
            metric_value=_number(metric, dec, where, "metric", grouped=False) if metric else None,
            metric_unit=(m.group("metric_unit") or "").strip(),
            time_s=float(m.group("time")) if out.interval else None,
            aggregate=m.group("aggr") or m.group("aggr_n") or m.group("aggr_t"),
            aggregate_cpus=int(m.group("cpus")) if m.group("cpus") else None,
        ))
    if not out.counters:
        raise _fail(source, number, seg.first_line, "a perf stat report without counters")
    out.grouping = _grouping_of(values, dec)
    return out


def _csv_report(seg: _Segment, source: str, number: int, decimal: str | None) -> PerfStat:
    sep = seg.separator
    assert sep is not None
    recs = [(lineno, _csv_fields(line, sep), line) for lineno, line in seg.lines]
    numeric = [x.strip() for _, r, _ in recs if r for x in r[0][:1] + r[0][3:7]]
    dec = decimal or ("," if sep != "," and any(re.fullmatch(r"\d+,\d+%?", x) for x in numeric) else ".")
    out = PerfStat(counters=[], format="csv", separator=sep, decimal=dec, report=number,
                   first_line=seg.first_line, last_line=seg.lines[-1][0])
    for lineno, rec, line in recs:
        where = (source, number, lineno)
        if rec is None and _looks_like_decimal_comma_csv(line):
            raise _fail(source, number, lineno, f"{len(line.split(sep))} fields separated by {sep!r}, at most 8 "
                        "expected (a decimal comma with -x, is ambiguous: use another -x separator or LC_NUMERIC=C)")
        if rec is None:
            raise _fail(source, number, lineno, f"{len(line.split(sep))} fields separated by {sep!r}: expected "
                        "[time,][aggregate,]value,unit,event,[stddev%,]run_time,enabled%,metric,metric_unit")
        f, aggr, time_s, cpus = rec
        if len(f) > 8:
            raise _fail(source, number, lineno, f"{len(f)} fields separated by {sep!r}, at most 8 expected (a "
                        "decimal comma with -x, is ambiguous: use another -x separator or LC_NUMERIC=C)")
        raw, unit, event = f[0].strip(), f[1].strip(), f[2].strip()
        has_var = f[3].strip().endswith("%")
        rest = f[4:] if has_var else f[3:]

        def num(x: str, what: str, where: tuple[str, int, int] = where) -> float | None:
            x = x.strip().rstrip("%")
            return _number(x, dec, where, what, grouped=False) if x else None

        if raw.startswith("<"):
            status, value = raw.strip("<>"), None
        else:
            status, value = "counted", num(raw, "value")
        run_time = num(rest[0], "run time") if rest else None
        out.counters.append(PerfCounter(
            event=event, value=value, unit=unit, status=status,
            stddev_pct=num(f[3], "variation") if has_var and status == "counted" else None,
            run_time_ns=int(run_time) if run_time is not None else None,
            enabled_pct=num(rest[1], "enabled %") if len(rest) > 1 else None,
            metric_value=num(rest[2], "metric") if len(rest) > 2 else None,
            metric_unit=rest[3].strip() if len(rest) > 3 else "",
            time_s=time_s, aggregate=aggr, aggregate_cpus=cpus,
        ))
        out.interval = out.interval or time_s is not None
    return out


def _looks_like_decimal_comma_csv(line: str) -> bool:
    """`perf stat -x,` in a decimal-comma locale: '166,85,msec,task-clock,...' (the value split in two)."""
    f = line.split(",")
    return (len(f) >= 9 and f[0].strip().isdigit() and f[1].strip().isdigit()
            and _EVENT_RE.match(f[3].strip() or "-") is not None)


def parse_perf_reports(text: str, source: str = "perf stat", decimal: str | None = None) -> PerfFile:
    """Every report in what ``perf stat`` wrote (stderr, its -o file, several of them, a shell log).
    `decimal` ("." or ",") overrides the decimal mark of every report."""
    out = PerfFile(source=source)
    for number, seg in enumerate(_split(text), 1):
        try:
            if seg.kind == "csv":
                out.reports.append(_csv_report(seg, source, number, decimal))
            else:
                out.reports.append(_human_report(seg, source, number, decimal))
        except PerfReportError as exc:
            out.errors.append(exc)
    if not out.count:
        out.errors.append(PerfReportError(
            f"{source}: no perf stat report found (expected a 'Performance counter stats for' line, -I "
            f"output or -x records VALUE<sep>UNIT<sep>EVENT<sep>..., with one of the separators "
            f"{' '.join(repr(x) for x in _CSV_SEPARATORS)})"))
    return out


def parse_perf_output(text: str, source: str = "perf stat", decimal: str | None = None) -> PerfStat:
    """The one report of `text` (parse_perf_reports for files with several): an unreadable report, or
    more than one, is a PerfError."""
    parsed = parse_perf_reports(text, source, decimal)
    if parsed.errors:
        raise parsed.errors[0]
    if len(parsed.reports) > 1:
        raise PerfError(f"{source}: {len(parsed.reports)} perf stat reports (lines "
                        f"{', '.join(str(r.first_line) for r in parsed.reports)}); read them with "
                        "parse_perf_reports or `benchbook perf --report N`")
    return parsed.reports[0]


def read_text(path: str | Path) -> tuple[str, str]:
    """(text, source) of a perf output file (UTF-8; a byte that is not is an error naming its offset)."""
    p = Path(path)
    try:
        return p.read_bytes().decode("utf-8"), str(p)
    except UnicodeDecodeError as exc:
        raise PerfError(f"{p}: byte offset {exc.start}: not UTF-8 text ({exc.reason})") from None
    except IsADirectoryError:
        raise PerfError(f"{p}: is a directory, expected a perf stat output file") from None
    except OSError as exc:
        raise PerfError(f"{p}: cannot be read: {exc.strerror}") from None


def read_perf_reports(path: str | Path, decimal: str | None = None) -> PerfFile:
    """parse_perf_reports of a file."""
    text, source = read_text(path)
    return parse_perf_reports(text, source, decimal)


def read_perf_file(path: str | Path, decimal: str | None = None) -> PerfStat:
    """parse_perf_output of a file (its one report)."""
    text, source = read_text(path)
    return parse_perf_output(text, source, decimal)


__all__ = ["PerfCounter", "PerfError", "PerfFile", "PerfReportError", "PerfStat", "parse_perf_output",
           "parse_perf_reports", "read_perf_file", "read_perf_reports"]
