"""HdrHistogram interval logs (.hlog): read every log format (1.01 .. 1.3, encodings V0 .. V2),
write the current one (log format 1.3, compressed V2 histograms).

A log is a text file::

    #[Histogram log format version 1.3]
    #[StartTime: 1441812279.474 (seconds since epoch), Wed Sep 09 15:24:39 UTC 2015]
    #[BaseTime: 0.000 (seconds since epoch)]                       (optional)
    "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
    0.127,1.007,2.769,HISTFAAAAEV42pNpmSz...
    Tag=A,0.127,1.007,2.769,HISTFAAAAEV42pNpmSz...

Columns: interval start (seconds, relative to BaseTime), interval length (seconds), the interval's
maximum value divided by the writer's max-value unit ratio (HdrHistogram writes value/1e6, i.e.
milliseconds for nanosecond values), and the base64 compressed histogram. Old logs (format 1.01)
label the second column "EndTimestamp" but it holds the interval length too.

Timestamps follow HdrHistogram's HistogramLogReader: without a BaseTime line, timestamps more than
a year before StartTime are taken as relative to StartTime, otherwise as absolute. A log without
StartTime takes its first interval's timestamp as start time.

Anything that is not a comment, a legend or a well-formed interval line is an error naming the
file, the line number and what was expected.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hdr_codec import HdrFormatError
from benchbook.atomic_write import atomic_path
from benchbook.errors import BenchbookError

LOG_FORMAT_VERSION = "1.3"
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
DEFAULT_MAX_VALUE_UNIT_RATIO = 1_000_000.0
_YEAR_S = 365 * 24 * 3600.0

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_RE_START = re.compile(r"#\[StartTime:\s*(" + _NUM + r")")
_RE_BASE = re.compile(r"#\[BaseTime:\s*(" + _NUM + r")")
_RE_VERSION = re.compile(r"#\[Histogram log format version\s+([^\]\s]+)\s*\]")
_RE_NUMBER = re.compile(_NUM + r"\Z")
_RE_TAG = re.compile(r"[^,\s]+\Z")


class HlogFormatError(BenchbookError, ValueError):
    """A malformed interval log line; the message names file, line and what was expected."""

    def __init__(self, path: str | os.PathLike, line_no: int, message: str) -> None:
        self.path = str(path)
        self.line_no = line_no
        super().__init__(f"{path}:{line_no}: {message}")


class Interval:
    """One interval histogram of a log.

    start_s  : the interval's timestamp column as written (seconds; relative to the log's base
               time, see HlogFile.absolute_start_s)
    length_s : interval length (seconds)
    tag      : the `Tag=` value or None
    max_s    : the Interval_Max column (the interval's max value / max-value unit ratio; None when
               writing means "compute it from the histogram")
    histogram: the HdrHistogram. Intervals of a large log read from a file keep only their
               base64 payload (`payload`) and decode it on each access, so reading stays within
               bounded memory (see read_hlog); `lazy` says which kind this is.
    """

    __slots__ = ("start_s", "length_s", "tag", "max_s", "_histogram", "payload", "line_no")

    def __init__(
        self,
        start_s: float,
        length_s: float,
        tag: str | None,
        max_s: float | None,
        histogram: HdrHistogram | None = None,
        line_no: int = 0,
        payload: str | None = None,
    ) -> None:
        if histogram is None and payload is None:
            raise ValueError("an Interval needs a histogram or a payload")
        self.start_s = start_s
        self.length_s = length_s
        self.tag = tag
        self.max_s = max_s
        self._histogram = histogram
        self.payload = payload
        self.line_no = line_no

    @property
    def lazy(self) -> bool:
        return self._histogram is None

    @property
    def histogram(self) -> HdrHistogram:
        if self._histogram is not None:
            return self._histogram
        return HdrHistogram.decode(self.payload)  # type: ignore[arg-type]

    @histogram.setter
    def histogram(self, h: HdrHistogram) -> None:
        self._histogram = h

    def make_lazy(self) -> None:
        """Drop the decoded histogram (keeping the payload) to free memory."""
        if self.payload is None:
            self.payload = self._histogram.encode().decode("ascii")  # type: ignore[union-attr]
        self._histogram = None

    def __repr__(self) -> str:
        return (f"Interval(start_s={self.start_s!r}, length_s={self.length_s!r}, tag={self.tag!r}, "
                f"max_s={self.max_s!r}, line_no={self.line_no}, lazy={self.lazy})")


@dataclass
class HlogFile:
    intervals: list[Interval]
    start_time: float | None  # #[StartTime: ...] (or the first timestamp), seconds since epoch
    base_time: float  # #[BaseTime: ...] or deduced as HdrHistogram's reader does
    comments: list[str] = field(default_factory=list)  # comment lines without the leading '#'
    format_version: str | None = None
    path: str | None = None

    def absolute_start_s(self, interval: Interval) -> float:
        return interval.start_s + self.base_time

    def offset_s(self, interval: Interval) -> float:
        """Interval start relative to the log's StartTime (what HdrHistogram's range reads use)."""
        return interval.start_s + self.base_time - (self.start_time or 0.0)

    def tags(self) -> list[str | None]:
        seen: dict[str | None, None] = {}
        for iv in self.intervals:
            seen.setdefault(iv.tag, None)
        return list(seen)

    def select(
        self,
        start_s: float = 0.0,
        end_s: float = math.inf,
        *,
        absolute: bool = False,
        tag: str | None | type[Ellipsis] = ...,
    ) -> list[Interval]:
        """Intervals whose start lies in [start_s, end_s] (relative to StartTime unless
        `absolute`), as HdrHistogram's HistogramLogReader.nextIntervalHistogram(start, end)
        returns them: reading stops at the first interval starting after `end_s`.
        `tag`: ... for every tag, None for untagged only, or a tag name."""
        out: list[Interval] = []
        for iv in self.intervals:
            t = self.absolute_start_s(iv) if absolute else self.offset_s(iv)
            if t < start_s:
                continue
            if t > end_s:
                break
            if tag is not ... and iv.tag != tag:
                continue
            out.append(iv)
        return out

    def merged(
        self,
        intervals: Iterable[Interval] | None = None,
        tag: str | None | type[Ellipsis] = ...,
        into: HdrHistogram | None = None,
    ) -> HdrHistogram:
        """All (or the given) interval histograms added into one.

        `into`: the histogram to add to (modified and returned). By default a new histogram with
        the intervals' common layout; if their layouts differ, one with lowest value 1, the largest
        significant figures and a range that holds them all (as HdrHistogram's auto-resizing
        accumulation does; values of other layouts land at their bucket's lowest value)."""
        ivs = list(self.intervals if intervals is None else intervals)
        if tag is not ...:
            ivs = [iv for iv in ivs if iv.tag == tag]
        if into is None:
            layouts = set()
            need = 0
            for iv in ivs:  # one pass (lazy intervals decode once here)
                h = iv.histogram
                layouts.add(h.layout)
                need = max(need, h.hdr_max())
            if len(layouts) == 1:
                into = ivs[0].histogram.empty_like()
            elif not layouts:
                into = HdrHistogram()
            else:
                into = HdrHistogram(
                    1,
                    max(3_600_000_000_000, need, *(lay.highest_trackable_value for lay in layouts)),
                    max(lay.significant_figures for lay in layouts),
                )
        for iv in ivs:
            into.merge(iv.histogram)
        return into


def _parse_number(text: str, path, line_no: int, what: str) -> float:
    if not _RE_NUMBER.match(text):
        raise HlogFormatError(path, line_no, f"expected a number for {what}, got {text!r}")
    return float(text)


def _parse_interval_line(line: str, path, line_no: int) -> tuple[str | None, float, float, float, str]:
    tag = None
    rest = line
    if line.startswith("Tag="):
        comma = line.find(",")
        if comma < 0:
            raise HlogFormatError(path, line_no, "expected 'Tag=<tag>,<start>,<length>,<max>,<histogram>'")
        tag = line[4:comma]
        if not _RE_TAG.match(tag):
            raise HlogFormatError(path, line_no, f"invalid tag {tag!r} (a tag holds no commas or spaces)")
        rest = line[comma + 1 :]
    fields = rest.split(",")
    if not _RE_NUMBER.match(fields[0]):
        what = "the interval start timestamp" if tag is not None else "'Tag=<tag>,' or the interval start timestamp"
        raise HlogFormatError(path, line_no, f"expected {what} at the start of the line, got {fields[0][:40]!r}")
    if len(fields) != 4:
        raise HlogFormatError(
            path, line_no,
            f"expected an interval line '[Tag=<tag>,]<start>,<length>,<max>,<histogram>' (4 fields after "
            f"the tag), got {len(fields)} fields" + (": the histogram is missing" if len(fields) == 3 else ""),
        )
    start = _parse_number(fields[0], path, line_no, "the interval start timestamp")
    length = _parse_number(fields[1], path, line_no, "the interval length")
    vmax = _parse_number(fields[2], path, line_no, "the interval max")
    payload = fields[3].strip()
    if not payload:
        raise HlogFormatError(path, line_no, "missing histogram (empty 4th field)")
    return tag, start, length, vmax, payload


def iter_hlog(path: str | os.PathLike) -> Iterator[tuple[str, object]]:
    """Stream a log: yields ("comment", text), ("start_time", float), ("base_time", float),
    ("version", str), ("legend", text) and ("interval", Interval) events in file order."""
    with open(path, "rb") as fh:
        yield from _iter_lines(fh, path)


def _iter_lines(fh: IO[bytes], path) -> Iterator[tuple[str, object]]:
    offset = 0
    for line_no, raw_bytes in enumerate(fh, start=1):
        try:
            raw = raw_bytes.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HlogFormatError(
                path, line_no, f"byte offset {offset + exc.start}: not UTF-8 text (is this an .hlog file?)"
            ) from None
        offset += len(raw_bytes)
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        if line.startswith("#"):
            m = _RE_START.match(line)
            if m:
                yield "start_time", float(m.group(1))
                continue
            m = _RE_BASE.match(line)
            if m:
                yield "base_time", float(m.group(1))
                continue
            m = _RE_VERSION.match(line)
            if m:
                yield "version", m.group(1)
            yield "comment", line[1:]
            continue
        if line.startswith('"StartTimestamp"'):
            yield "legend", line
            continue
        tag, start, length, vmax, payload = _parse_interval_line(line, path, line_no)
        try:
            hist = HdrHistogram.decode(payload)
        except HdrFormatError as exc:
            raise HlogFormatError(path, line_no, f"invalid histogram payload: {exc}") from None
        yield "interval", Interval(start, length, tag, vmax, hist, line_no, payload)


DEFAULT_MEMORY_BUDGET = 256 * 2**20


def read_hlog(path: str | os.PathLike, memory_budget: int = DEFAULT_MEMORY_BUDGET) -> HlogFile:
    """Read a whole interval log (every format and encoding HdrHistogram has written).

    Every histogram is decoded (so a corrupt one is reported with its line). While the decoded
    counts arrays fit in `memory_budget` bytes they are kept; beyond it every interval keeps only
    its payload and decodes on access (Interval.lazy), so memory stays bounded for long logs."""
    start_time: float | None = None
    base_time: float | None = None
    version: str | None = None
    comments: list[str] = []
    intervals: list[Interval] = []
    lazy = False
    held = 0
    for kind, value in iter_hlog(path):
        if kind == "comment":
            comments.append(value)  # type: ignore[arg-type]
        elif kind == "start_time":
            start_time = value  # type: ignore[assignment]
        elif kind == "base_time":
            base_time = value  # type: ignore[assignment]
        elif kind == "version":
            version = value  # type: ignore[assignment]
        elif kind == "interval":
            iv: Interval = value  # type: ignore[assignment]
            if start_time is None:
                start_time = iv.start_s
            if base_time is None:
                base_time = start_time if iv.start_s < start_time - _YEAR_S else 0.0
            intervals.append(iv)
            if not lazy:
                held += iv.histogram.counts.nbytes
                if held > memory_budget:
                    lazy = True
                    for prev in intervals:
                        prev.make_lazy()
            else:
                iv.make_lazy()
    return HlogFile(intervals, start_time, base_time or 0.0, comments, version, str(path))


# ---- writing ---------------------------------------------------------------------------------


def _fmt_date(t: float) -> str:
    return time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(t))


class HlogWriter:
    """Streaming .hlog writer (log format 1.3). Use as a context manager::

        with HlogWriter(path, start_time=t0) as w:
            w.write_interval(start_s, length_s, histogram, tag=None)

    `start_s` is relative to `base_time` (default: the start time, so intervals are written
    relative to it and the BaseTime line says so). Timestamps are written with
    `timestamp_decimals` digits (3, as HdrHistogram does)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        start_time: float | None = None,
        base_time: float | None = None,
        comments: Sequence[str] = (),
        max_value_unit_ratio: float = DEFAULT_MAX_VALUE_UNIT_RATIO,
        timestamp_decimals: int = 3,
    ) -> None:
        self.path = Path(path)
        self.start_time = start_time
        self.base_time = base_time if base_time is not None else start_time
        self.comments = list(comments)
        self.max_value_unit_ratio = max_value_unit_ratio
        self.decimals = timestamp_decimals
        self._fh: IO[str] | None = None

    def __enter__(self) -> HlogWriter:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def open(self) -> None:
        self._fh = open(self.path, "w", encoding="utf-8", newline="\n")
        self._write_header(self._fh)

    def _write_header(self, fh: IO[str]) -> None:
        for c in self.comments:
            for part in str(c).splitlines() or [""]:
                fh.write(f"#{part}\n")
        fh.write(f"#[Histogram log format version {LOG_FORMAT_VERSION}]\n")
        if self.start_time is not None:
            fh.write(f"#[StartTime: {self.start_time:.3f} (seconds since epoch), {_fmt_date(self.start_time)}]\n")
        if self.base_time is not None:
            fh.write(f"#[BaseTime: {self.base_time:.3f} (seconds since epoch)]\n")
        fh.write(LEGEND + "\n")

    def format_interval(
        self, start_s: float, length_s: float, histogram: HdrHistogram, tag: str | None = None,
        max_s: float | None = None,
    ) -> str:
        if tag is not None and not _RE_TAG.match(tag):
            raise ValueError(f"invalid tag {tag!r}: a tag must be non-empty without commas or whitespace")
        if max_s is None:
            max_s = histogram.hdr_max() / self.max_value_unit_ratio
        d = self.decimals
        prefix = f"Tag={tag}," if tag is not None else ""
        payload = histogram.encode().decode("ascii")
        return f"{prefix}{start_s:.{d}f},{length_s:.{d}f},{max_s:.3f},{payload}\n"

    def write_interval(
        self, start_s: float, length_s: float, histogram: HdrHistogram, tag: str | None = None,
        max_s: float | None = None,
    ) -> None:
        if self._fh is None:
            raise RuntimeError("HlogWriter is not open (use it as a context manager)")
        self._fh.write(self.format_interval(start_s, length_s, histogram, tag, max_s))

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def write_hlog(
    path: str | os.PathLike,
    intervals: Iterable[Interval],
    *,
    start_time: float | None = None,
    base_time: float | None = None,
    comments: Sequence[str] = (),
    max_value_unit_ratio: float = DEFAULT_MAX_VALUE_UNIT_RATIO,
    timestamp_decimals: int = 3,
) -> Path:
    """Write intervals as a log format 1.3 file, atomically (benchbook.atomic_write: a temporary file beside it,
    then rename; created with the permissions the umask gives, as HlogWriter's).
    An Interval's max_s None means: compute from its histogram (hdr max / max_value_unit_ratio)."""
    path = Path(path)
    w = HlogWriter(path, start_time=start_time, base_time=base_time, comments=comments,
                   max_value_unit_ratio=max_value_unit_ratio, timestamp_decimals=timestamp_decimals)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        w._write_header(fh)
        for iv in intervals:
            fh.write(w.format_interval(iv.start_s, iv.length_s, iv.histogram, iv.tag, iv.max_s))
    return path


__all__ = ["Interval", "HlogFile", "HlogFormatError", "HlogWriter", "read_hlog", "write_hlog", "iter_hlog"]
