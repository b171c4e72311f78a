"""MoonGen (libmoon): build its command lines, run it, parse what it writes.

Three outputs matter to benchbook:

* ``hist:save()`` histogram files: one ``value,count`` line per distinct latency, no header,
  sorted by value, written by libmoon's ``histogram.lua`` with Lua's ``tostring`` (``%.14g``), so
  values may carry decimals (hardware timestamps in 6.4 ns steps give ``1286.4``). benchbook reads
  them exactly: values are kept as integers scaled by 10**decimals.
* the summary line ``hist:print()`` writes::

      Samples: N, Average: X ns, StdDev: Y ns, Quartiles: a/b/c ns

  reproduced by :func:`moongen_summary` with libmoon's rules (see :func:`moongen_stats`).
* throughput lines of libmoon's ``stats.lua`` (plain formatter, with ANSI colours)::

      [Device: id=0] TX: 14.88 Mpps, 7619 Mbit/s (9999 Mbit/s with framing)
      [Device: id=0] TX: 14.88 (StdDev 0.01) Mpps, 7619 (StdDev 3) Mbit/s (9999 Mbit/s with framing), total 148800000 packets with 9523200000 bytes (incl. CRC)

  its CSV formatter (``Time,Device,Direction,PacketRate,Mbit,MbitWithFraming,TotalPackets,
  TotalBytes``) and the old pre-libmoon ``Sent N packets, current rate ...`` lines; all read by
  :func:`read_throughput_log` into one DataFrame.
"""

from __future__ import annotations

import csv
import math
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

PROGRAM = "MoonGen"

# --------------------------------------------------------------------------------------------
# Histogram files (hist:save)
# --------------------------------------------------------------------------------------------

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_COUNT_RE = re.compile(r"^\+?\d+(?:\.0*)?$")


class MoonGenFormatError(ValueError):
    """A MoonGen file that is not in the format MoonGen writes (message names file and position)."""


@dataclass(frozen=True)
class MoonGenHistogram:
    """A MoonGen latency histogram, exact.

    values_scaled: distinct values times 10**decimals, as int64, ascending.
    counts: samples per value (int64, > 0).
    decimals: number of decimal places needed to write every value exactly.
    """

    values_scaled: np.ndarray
    counts: np.ndarray
    decimals: int = 0
    source: str = ""
    warnings: tuple[str, ...] = ()

    @property
    def scale(self) -> int:
        return 10**self.decimals

    @property
    def values(self) -> np.ndarray:
        """Values in ns: int64 when all are integers, else float64 (nearest double)."""
        if self.decimals == 0:
            return self.values_scaled.astype(np.int64)
        return self.values_scaled.astype(np.float64) / self.scale

    @property
    def count(self) -> int:
        return int(self.counts.sum()) if self.counts.size else 0

    def value_str(self, scaled: int) -> str:
        """Exact decimal text of a scaled value (what MoonGen wrote)."""
        return _scaled_to_str(int(scaled), self.decimals)

    def to_distribution(self):
        """The histogram as benchbook.analysis.distribution.ExactDistribution."""
        from benchbook.analysis.distribution import ExactDistribution

        return ExactDistribution(self.values, self.counts.copy())

    @staticmethod
    def from_values(values: np.ndarray | Sequence[float | int | str], counts: np.ndarray | Sequence[int],
                    source: str = "") -> MoonGenHistogram:
        """Build from values (ints, floats - taken at their shortest repr - or decimal strings)."""
        texts = [v if isinstance(v, str) else _number_text(v) for v in np.asarray(values).tolist()]
        cnts = [int(c) for c in np.asarray(counts).tolist()]
        if len(texts) != len(cnts):
            raise ValueError(f"{len(texts)} values but {len(cnts)} counts")
        return _build(texts, cnts, source, [])

    def merge(self, other: MoonGenHistogram) -> MoonGenHistogram:
        d = max(self.decimals, other.decimals)
        a = self.values_scaled * 10 ** (d - self.decimals)
        b = other.values_scaled * 10 ** (d - other.decimals)
        vals, inv = np.unique(np.concatenate([a, b]), return_inverse=True)
        cnt = np.zeros(vals.size, dtype=np.int64)
        np.add.at(cnt, inv, np.concatenate([self.counts, other.counts]))
        return _normalise(vals, cnt, d, f"{self.source}+{other.source}", self.warnings + other.warnings)


def _number_text(v: float | int) -> str:
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if not math.isfinite(v):
        raise ValueError(f"histogram value {v} is not finite")
    return repr(float(v))


def _scaled_to_str(scaled: int, decimals: int) -> str:
    if decimals == 0:
        return str(scaled)
    sign = "-" if scaled < 0 else ""
    q, r = divmod(abs(scaled), 10**decimals)
    frac = str(r).rjust(decimals, "0").rstrip("0")
    return f"{sign}{q}.{frac}" if frac else f"{sign}{q}"


def _parse_decimal(text: str) -> tuple[int, int]:
    """'1286.4' -> (12864, 1); '1.5e3' -> (1500, 0). Exact."""
    d = Decimal(text).normalize()
    sign, digits, exp = d.as_tuple()
    mant = int("".join(map(str, digits))) if digits else 0
    if sign:
        mant = -mant
    if exp >= 0:
        return mant * 10**exp, 0
    return mant, -exp


def _normalise(vals: np.ndarray, cnt: np.ndarray, decimals: int, source: str,
               warnings: tuple[str, ...]) -> MoonGenHistogram:
    # Drop trailing decimal places no value needs (e.g. after merging).
    while decimals > 0 and vals.size and not np.any(vals % 10):
        vals = vals // 10
        decimals -= 1
    keep = cnt > 0
    return MoonGenHistogram(vals[keep].astype(np.int64), cnt[keep].astype(np.int64), decimals, source, warnings)


def _build(texts: list[str], counts: list[int], source: str, warnings: list[str]) -> MoonGenHistogram:
    parsed = [_parse_decimal(t) for t in texts]
    d = max((p[1] for p in parsed), default=0)
    if d > 12:
        raise ValueError(f"{source}: values with more than 12 decimal places cannot be kept exactly")
    scaled = [m * 10 ** (d - e) for m, e in parsed]
    if scaled and (max(scaled) >= 2**63 or min(scaled) < -(2**63)):
        raise ValueError(f"{source}: a value is too large to keep exactly at {d} decimal places")
    vals = np.asarray(scaled, dtype=np.int64)
    cnt = np.asarray(counts, dtype=np.int64)
    u, inv = np.unique(vals, return_inverse=True)
    tot = np.zeros(u.size, dtype=np.int64)
    np.add.at(tot, inv, cnt)
    return _normalise(u, tot, d, source, tuple(warnings))


def read_moongen_histogram(path: str | os.PathLike) -> MoonGenHistogram:
    """Read a MoonGen ``hist:save()`` file (``value,count`` per line, no header) exactly.

    Blank lines are skipped; repeated values are summed (files concatenated by hand). A
    malformed line is an error naming the file, line and byte offset - except a malformed *last*
    line without a final newline, which is what an interrupted write leaves: it is dropped with a
    warning (in ``.warnings``) and everything before it is kept.
    """
    p = Path(path)
    data = p.read_bytes()
    fast = _read_fast(data, str(p))
    if fast is not None:
        return fast
    return _read_lines(data, str(p))


def _read_lines(data: bytes, source: str) -> MoonGenHistogram:
    p = source
    texts: list[str] = []
    counts: list[int] = []
    warnings: list[str] = []
    offset = 0
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        line_offset = offset
        offset += len(raw) + 1
        is_last_unterminated = lineno == len(lines) and not data.endswith(b"\n")
        line = raw.rstrip(b"\r").strip()
        if not line:
            continue
        problem = _check_line(line)
        if problem is None:
            v, c = line.decode("ascii").split(",")
            texts.append(v.strip())
            counts.append(int(Decimal(c.strip())))
            continue
        where = f"{p}: line {lineno} (byte offset {line_offset})"
        if is_last_unterminated:
            warnings.append(f"{where}: incomplete last line {line[:60]!r} ignored ({problem})")
            continue
        raise MoonGenFormatError(
            f"{where}: {problem}; expected 'value,count' as MoonGen's hist:save() writes "
            f"(e.g. '1286.4,17'), got {line[:80]!r}"
        )
    return _build(texts, counts, source, warnings)


_FAST_LINE_RE = re.compile(rb"^[ \t]*(\d{1,18})(?:\.(\d{0,12}))?[ \t]*,[ \t]*(\d{1,18})[ \t]*\r?$", re.M)
_NONBLANK_RE = re.compile(rb"^[ \t\r]*\S", re.M)


# Files larger than this are scanned by the compiled scanner (numba), smaller ones with a regex
# (importing numba costs more than the regex saves on small files) unless numba is loaded already.
COMPILED_SCAN_BYTES = 512 << 10


def _read_fast(data: bytes, source: str) -> MoonGenHistogram | None:
    """Vectorised reading of well-formed files (plain decimals, one pair per line). Returns None
    when anything is unusual (a bad or truncated line, exponents, huge numbers): the line-by-line
    reader then handles it and reports exactly where."""
    if len(data) > COMPILED_SCAN_BYTES or (len(data) > 16 << 10 and "numba" in sys.modules):
        return _read_compiled(data, source)
    matches = _FAST_LINE_RE.findall(data)
    if len(matches) != len(_NONBLANK_RE.findall(data)):
        return None
    if not matches:
        return _build([], [], source, [])
    ip = np.array([m[0] for m in matches])
    fp = np.array([m[1] for m in matches])
    cnt = np.array([m[2] for m in matches]).astype(np.int64)
    d = int(np.char.str_len(fp).max()) if fp.size else 0
    ints = ip.astype(np.uint64)
    if d:
        if int(ints.max()) >= (2**63 - 1) // 10**d:
            return None
        frac = np.char.ljust(fp, d, b"0").astype(np.int64)
        vals = ints.astype(np.int64) * 10**d + frac
    else:
        if int(ints.max()) >= 2**63:
            return None
        vals = ints.astype(np.int64)
    u, inv = np.unique(vals, return_inverse=True)
    tot = np.zeros(u.size, dtype=np.int64)
    np.add.at(tot, inv, cnt)
    return _normalise(u, tot, d, source, ())


def _read_compiled(data: bytes, source: str) -> MoonGenHistogram | None:
    from benchbook.tools.moongen_parse import scan_histogram

    ip, fv, fl, cnt, bad = scan_histogram(np.frombuffer(data, dtype=np.uint8))
    if bad >= 0:
        return None
    d = int(fl.max()) if fl.size else 0
    if d and ip.size and int(ip.max()) >= (2**63 - 1) // 10**d:
        return None
    vals = ip * 10**d + fv * (10 ** (d - fl)) if d else ip.copy()
    if vals.size > 1 and np.all(vals[1:] > vals[:-1]):  # MoonGen writes sorted, unique values
        return _normalise(vals, cnt.copy(), d, source, ())
    u, inv = np.unique(vals, return_inverse=True)
    tot = np.zeros(u.size, dtype=np.int64)
    np.add.at(tot, inv, cnt)
    return _normalise(u, tot, d, source, ())


def read_moongen_histogram_reference(path: str | os.PathLike) -> MoonGenHistogram:
    """The plain line-by-line reader alone (no vectorised or compiled path): the reference."""
    p = Path(path)
    return _read_lines(p.read_bytes(), str(p))


def _check_line(line: bytes) -> str | None:
    try:
        text = line.decode("ascii")
    except UnicodeDecodeError:
        return "non-ASCII bytes"
    parts = text.split(",")
    if len(parts) != 2:
        return f"{len(parts)} comma-separated fields instead of 2"
    v, c = parts[0].strip(), parts[1].strip()
    if not _NUMBER_RE.match(v):
        return f"value {v!r} is not a number"
    if not _COUNT_RE.match(c):
        return f"count {c!r} is not a non-negative integer"
    return None


def write_moongen_histogram(path: str | os.PathLike, hist: MoonGenHistogram) -> Path:
    """Write `hist` as MoonGen's hist:save() does: ``value,count\\n`` per value, ascending."""
    p = Path(path)
    with open(p, "w", encoding="ascii", newline="\n") as fh:
        for v, c in zip(hist.values_scaled.tolist(), hist.counts.tolist()):
            fh.write(f"{_scaled_to_str(v, hist.decimals)},{c}\n")
    return p


def read_histogram_csv(path: str | os.PathLike):
    """Contract API: a MoonGen histogram CSV as an ExactDistribution (values in ns; float64 when
    the file has decimals, each the nearest double to the decimal MoonGen wrote)."""
    return read_moongen_histogram(path).to_distribution()


# --------------------------------------------------------------------------------------------
# MoonGen's own summary (libmoon lua/histogram.lua, histogram:calc and histogram:print)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoonGenStats:
    samples: int
    average: float
    stddev: float
    quartiles: tuple[float, float, float]


def _values_counts_scaled(dist: Any) -> tuple[list[int], list[int], int]:
    """(scaled int values ascending, counts, decimals) from a MoonGenHistogram or anything with
    values/counts (ExactDistribution: .values/.counts or .recorded())."""
    if isinstance(dist, MoonGenHistogram):
        return dist.values_scaled.tolist(), dist.counts.tolist(), dist.decimals
    if hasattr(dist, "values") and hasattr(dist, "counts") and not callable(dist.values):
        values, counts = dist.values, dist.counts
    elif hasattr(dist, "recorded"):
        values, counts = dist.recorded()
    elif isinstance(dist, tuple) and len(dist) == 2:
        values, counts = dist
    else:
        raise TypeError(f"cannot read values and counts from {type(dist).__name__}")
    h = MoonGenHistogram.from_values(np.asarray(values), np.asarray(counts))
    return h.values_scaled.tolist(), h.counts.tolist(), h.decimals


def lua_quartile_positions(n: int) -> list[int | None]:
    """0-based sample positions libmoon's histogram:calc() takes the quartiles from.

    The Lua loop walks the samples in order with idx = 0, 1, ...; at each sample it sets at
    most one quartile (an if/elseif chain): q1 when idx >= n/4, else q2 when idx >= n/2, else q3
    when idx >= 3n/4. So q_j sits at max(ceil(j*n/4), position of q_{j-1} + 1), and is NaN when
    that runs past the last sample (n = 1 gives nan/nan/nan, n = 2 gives x/nan/nan).
    """
    out: list[int | None] = []
    prev = -1
    for j in (1, 2, 3):
        pos = max(-(-j * n // 4), prev + 1)
        if pos > n - 1:
            out.append(None)
            prev = n  # later quartiles are unreachable as well
        else:
            out.append(pos)
            prev = pos
    return out


def moongen_stats(dist: Any) -> MoonGenStats:
    """Samples, average, standard deviation and quartiles as libmoon's histogram.lua computes them.

    * average = sum(k*v)/N (0/0 = NaN for an empty histogram);
    * stddev = (sum(v*(k-avg)^2) / (N-1)) ^ 0.5, the *sample* standard deviation. For N = 1 this
      is 0/0 = NaN; for N = 0 the sum is 0 and 0/(-1) = -0, and (-0)^0.5 = +0 (C99 pow), so an
      empty histogram prints "StdDev: 0.0 ns" next to "Average: nan ns";
    * quartiles as in :func:`lua_quartile_positions`.
    Computed exactly (integers and fractions) and rounded once to the nearest double, where
    MoonGen accumulates doubles in hash order: the printed %.1f can differ only when its own
    rounding error crosses a .x5 boundary.
    """
    vals, cnts, decimals = _values_counts_scaled(dist)
    scale = 10**decimals
    n = sum(cnts)
    if n == 0:
        return MoonGenStats(0, math.nan, 0.0, (math.nan, math.nan, math.nan))
    s1 = sum(v * c for v, c in zip(vals, cnts))
    s2 = sum(v * v * c for v, c in zip(vals, cnts))
    average = float(Fraction(s1, n * scale))
    if n == 1:
        stddev = math.nan
    else:
        num = n * s2 - s1 * s1  # = n * sum(c (v - mean)^2), exact and >= 0
        with localcontext() as ctx:
            ctx.prec = 50
            stddev = float((Decimal(num) / Decimal(n * (n - 1))).sqrt() / Decimal(scale))
    positions = lua_quartile_positions(n)
    cum = np.cumsum(np.asarray(cnts, dtype=np.int64))
    quarts: list[float] = []
    for pos in positions:
        if pos is None:
            quarts.append(math.nan)
        else:
            i = int(np.searchsorted(cum, pos, side="right"))  # first value whose samples reach pos
            quarts.append(float(Fraction(vals[i], scale)))
    return MoonGenStats(n, average, stddev, (quarts[0], quarts[1], quarts[2]))


def _lua_f1(x: float) -> str:
    """Lua(JIT) string.format('%.1f', x): 'nan' for NaN (LuaJIT prints NaN without sign),
    'inf'/'-inf' for infinities, else C's correctly rounded %.1f."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.1f}"


def moongen_summary(dist: Any, prefix: str | None = None) -> str:
    """Exactly the line MoonGen's ``hist:print(prefix)`` prints, e.g.
    ``Samples: 3, Average: 1500.0 ns, StdDev: 500.0 ns, Quartiles: 1000.0/1500.0/2000.0 ns``;
    with a prefix, ``[prefix] `` goes in front."""
    st = moongen_stats(dist)
    head = f"[{prefix}] " if prefix else ""
    q = "/".join(_lua_f1(x) for x in st.quartiles)
    return (
        f"{head}Samples: {st.samples}, Average: {_lua_f1(st.average)} ns, "
        f"StdDev: {_lua_f1(st.stddev)} ns, Quartiles: {q} ns"
    )


def moongen_percentile(dist: Any, percentile: float) -> float | None:
    """libmoon's histogram:percentile(p): the value of the first sample whose 0-based position
    idx satisfies idx >= N*p/100; None where Lua returns nil (empty histogram)."""
    if percentile < 0 or percentile > 100:
        raise ValueError("invalid argument: percentile must be in 0..100")
    vals, cnts, decimals = _values_counts_scaled(dist)
    n = sum(cnts)
    target = float(n) * float(percentile) / 100.0  # in doubles, in Lua's order of operations
    pos = math.ceil(target)
    if pos > n - 1:
        return None
    cum = np.cumsum(np.asarray(cnts, dtype=np.int64))
    i = int(np.searchsorted(cum, pos, side="right"))
    return float(Fraction(vals[i], 10**decimals))


_SUMMARY_RE = re.compile(
    r"(?:\[(?P<prefix>[^\]]*)\] )?Samples: (?P<n>\d+), Average: (?P<avg>\S+) ns, "
    r"StdDev: (?P<sd>\S+) ns, Quartiles: (?P<q1>[^/\s]+)/(?P<q2>[^/\s]+)/(?P<q3>[^/\s]+) ns"
)


def parse_histogram_summaries(text: str) -> list[dict[str, Any]]:
    """Every ``Samples: ..., Quartiles: a/b/c ns`` line in MoonGen output (colours removed)."""
    out = []
    for lineno, line in enumerate(strip_ansi(text).splitlines(), start=1):
        m = _SUMMARY_RE.search(line)
        if m:
            out.append({
                "line": lineno,
                "prefix": m["prefix"],
                "samples": int(m["n"]),
                "average_ns": _num(m["avg"]),
                "stddev_ns": _num(m["sd"]),
                "quartiles_ns": (_num(m["q1"]), _num(m["q2"]), _num(m["q3"])),
            })
    return out


# --------------------------------------------------------------------------------------------
# Throughput logs (libmoon lua/stats.lua)
# --------------------------------------------------------------------------------------------

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NUM = r"(-?(?:\d+(?:\.\d*)?|nan|inf)|-?nan|-?inf)"
_UPDATE_RE = re.compile(
    r"\[(?P<name>[^\[\]]+)\] (?P<dir>TX|RX): " + _NUM.replace("(", "(?P<mpps>", 1) + r" Mpps, "
    + _NUM.replace("(", "(?P<mbit>", 1) + r" Mbit/s \(" + _NUM.replace("(", "(?P<wire>", 1)
    + r" Mbit/s with framing\)\s*$"
)
_FINAL_RE = re.compile(
    r"\[(?P<name>[^\[\]]+)\] (?P<dir>TX|RX): " + _NUM.replace("(", "(?P<mpps>", 1) + r" \(StdDev "
    + _NUM.replace("(", "(?P<mpps_sd>", 1) + r"\) Mpps, " + _NUM.replace("(", "(?P<mbit>", 1)
    + r" \(StdDev " + _NUM.replace("(", "(?P<mbit_sd>", 1) + r"\) Mbit/s \("
    + _NUM.replace("(", "(?P<wire>", 1) + r" Mbit/s with framing\), total (?P<pkts>\d+) packets "
    r"with (?P<bytes>\d+) bytes \(incl\. CRC\)\s*$"
)
_LEGACY_RE = re.compile(
    r"\[+(?P<name>[^\[\]]+)\]+ (?P<verb>Sent|Received) (?P<pkts>\d+) packets, current rate "
    + _NUM.replace("(", "(?P<mpps>", 1) + r" Mpps, " + _NUM.replace("(", "(?P<mbit>", 1)
    + r" MBit/s, " + _NUM.replace("(", "(?P<wire>", 1) + r" MBit/s wire rate\.?\s*$"
)
_LOOKS_LIKE_STATS = re.compile(r"\] (?:TX|RX): \S|\] (?:Sent|Received) \d+ packets, current rate")
_CSV_HEADER = "Time,Device,Direction,PacketRate,Mbit,MbitWithFraming,TotalPackets,TotalBytes"
_DEVICE_ID_RE = re.compile(r"\bid=(\d+)")

THROUGHPUT_COLUMNS = [
    "line", "device", "device_id", "direction", "kind", "seq", "time_s", "mpps", "mbit",
    "mbit_framing", "mpps_stddev", "mbit_stddev", "total_packets", "total_bytes",
]


def strip_ansi(text: str) -> str:
    """Remove ANSI colour escapes (libmoon colours the device name and direction)."""
    return _ANSI_RE.sub("", text)


def _num(s: str | None) -> float:
    if s is None:
        return math.nan
    s = s.strip()
    if s.lstrip("+-") == "nan":
        return math.nan
    return float(s)


def parse_throughput(text: str, source: str = "<text>"):
    """Throughput rows of MoonGen output text as a DataFrame (see :func:`read_throughput_log`)."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    lines = text.splitlines()
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    if strip_ansi(first) == _CSV_HEADER:
        rows, warnings = _parse_csv_stats(lines, source)
    else:
        for lineno, raw in enumerate(lines, start=1):
            line = strip_ansi(raw).replace("\r", "")
            m = _FINAL_RE.search(line)
            if m:
                rows.append(_row(lineno, m["name"], m["dir"], "final", m, total=True, sd=True))
                continue
            m = _UPDATE_RE.search(line)
            if m:
                rows.append(_row(lineno, m["name"], m["dir"], "update", m))
                continue
            m = _LEGACY_RE.search(line)
            if m:
                d = "TX" if m["verb"] == "Sent" else "RX"
                rows.append(_row(lineno, m["name"], d, "update", m, total=True, legacy=True))
                continue
            if _LOOKS_LIKE_STATS.search(line):
                warnings.append(f"{source}: line {lineno}: looks like a throughput line but does not "
                                f"parse (truncated?): {line.strip()[:100]!r}")
    df = pd.DataFrame(rows, columns=THROUGHPUT_COLUMNS)
    df = df.astype({
        "line": "int64", "device": "string", "device_id": "Int64", "direction": "string",
        "kind": "string", "seq": "Int64", "time_s": "float64", "mpps": "float64", "mbit": "float64",
        "mbit_framing": "float64", "mpps_stddev": "float64", "mbit_stddev": "float64",
        "total_packets": "Int64", "total_bytes": "Int64",
    })
    if len(df):
        upd = df["kind"] != "final"
        df.loc[upd, "seq"] = df[upd].groupby(["device", "direction"]).cumcount().astype("Int64")
    df.attrs["source"] = source
    df.attrs["warnings"] = warnings
    return df


def _row(lineno: int, name: str, direction: str, kind: str, m: re.Match, total: bool = False,
         sd: bool = False, legacy: bool = False) -> dict[str, Any]:
    dev_id = _DEVICE_ID_RE.search(name)
    return {
        "line": lineno,
        "device": name,
        "device_id": int(dev_id.group(1)) if dev_id else None,
        "direction": direction,
        "kind": kind,
        "seq": None,
        "time_s": math.nan,
        "mpps": _num(m["mpps"]),
        "mbit": _num(m["mbit"]),
        "mbit_framing": _num(m["wire"]),
        "mpps_stddev": _num(m["mpps_sd"]) if sd else math.nan,
        "mbit_stddev": _num(m["mbit_sd"]) if sd else math.nan,
        "total_packets": int(m["pkts"]) if total else None,
        "total_bytes": int(m["bytes"]) if (total and not legacy) else None,
    }


def _parse_csv_stats(lines: list[str], source: str) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for lineno, raw in enumerate(lines, start=1):
        line = strip_ansi(raw).strip()
        if not line or line == _CSV_HEADER:
            continue
        fields = next(csv.reader([line]))
        if len(fields) != 8:
            msg = (f"{source}: line {lineno}: {len(fields)} fields, expected 8 ({_CSV_HEADER})")
            if lineno == len(lines):
                warnings.append(msg + " - incomplete last line ignored")
                continue
            raise MoonGenFormatError(msg)
        try:
            t, dev, d, mpps, mbit, wire, pk, by = fields
            dev_id = _DEVICE_ID_RE.search(dev)
            rows.append({
                "line": lineno, "device": dev, "device_id": int(dev_id.group(1)) if dev_id else None,
                "direction": d, "kind": "csv", "seq": None, "time_s": float(t), "mpps": _num(mpps),
                "mbit": _num(mbit), "mbit_framing": _num(wire), "mpps_stddev": math.nan,
                "mbit_stddev": math.nan, "total_packets": int(float(pk)), "total_bytes": int(float(by)),
            })
        except ValueError as exc:
            raise MoonGenFormatError(f"{source}: line {lineno}: {exc}; expected {_CSV_HEADER}") from None
    return rows, warnings


def read_throughput_log(path: str | os.PathLike):
    """Read a MoonGen throughput log (captured stdout, or a stats CSV) into a DataFrame.

    One row per throughput line, in file order, with columns
    line (1-based line number), device ("Device: id=0", or the counter's name), device_id,
    direction ("TX"/"RX"), kind ("update" per-second line, "final" summary line, "csv" row of
    the CSV formatter, which does not mark its final row), seq (0, 1, ... per device and
    direction among non-final rows: the plain format has no clock, updates are ~1 s apart),
    time_s (CSV only), mpps, mbit, mbit_framing (Mbit/s with 20 B/packet preamble+IFG),
    mpps_stddev, mbit_stddev (final lines), total_packets, total_bytes (incl. CRC; final lines).
    Other output (log lines, the histogram) is skipped; ANSI colours and ^C are ignored. Lines
    that look like throughput lines but do not parse are listed in ``df.attrs["warnings"]``.
    """
    p = Path(path)
    text = p.read_bytes().decode("utf-8", errors="replace")
    return parse_throughput(text, str(p))


# --------------------------------------------------------------------------------------------
# Command lines and running
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptSpec:
    """How one MoonGen script takes its arguments (libmoon's argparse `configure(parser)`)."""

    path: str                                  # relative to the MoonGen checkout
    positional: tuple[str, ...] = ()           # names, in order; a list value expands in place
    options: Mapping[str, str] = field(default_factory=dict)  # name -> flag taking a value
    flags: Mapping[str, str] = field(default_factory=dict)    # name -> flag without value
    required: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()              # what it writes (documentation for the backend)


SCRIPTS: dict[str, ScriptSpec] = {
    # examples/l2-load-latency.lua: CBR load on dev1 with hardware rate control, PTP timestamped
    # latency probes from dev1 to dev2; prints stats lines, then hist:print(); saves the histogram.
    "l2-load-latency": ScriptSpec(
        path="examples/l2-load-latency.lua",
        positional=("dev1", "dev2"),
        options={"rate": "--rate", "file": "--file"},      # rate in Mbit/s; file default histogram.csv
        required=("dev1", "dev2"),
        outputs=("histogram CSV (--file, default histogram.csv)", "stdout: stats + summary"),
    ),
    "l3-load-latency": ScriptSpec(
        path="examples/l3-load-latency.lua",
        positional=("tx_dev", "rx_dev"),
        options={"rate": "--rate", "flows": "--flows", "size": "--size"},
        required=("tx_dev", "rx_dev"),
        outputs=("histogram.csv", "stdout: stats + summary"),
    ),
    # MoonSniff (examples/moonsniff): the timestamper capturing pre- and post-DuT copies.
    "moonsniff-sniffer": ScriptSpec(
        path="examples/moonsniff/sniffer.lua",
        positional=("devs",),                              # two port numbers: pre, post
        options={"output": "--output", "runtime": "--runtime"},
        flags={"binary": "--binary", "live": "--live", "fast": "--fast", "capture": "--capture",
               "debug": "--debug"},
        required=("devs",),
        outputs=("<output>-pre.mscap/-post.mscap, or -pre.pcap/-post.pcap with capture",
                 "<output>-stats.csv (CSV stats)"),
    ),
    "moonsniff-traffic-gen": ScriptSpec(
        path="examples/moonsniff/traffic-gen.lua",
        positional=("devs",),
        required=("devs",),
        outputs=("stdout: stats",),
    ),
    "moonsniff-post-processing": ScriptSpec(
        path="examples/moonsniff/post-processing.lua",
        options={"input": "--input", "second_input": "--second-input", "output": "--output",
                 "nrbuckets": "--nrbuckets"},
        flags={"binary": "--binary", "debug": "--debug"},
        required=("input", "second_input"),
        outputs=("<output>.csv histogram (default hist.csv)",),
    ),
}


def _arg_text(name: str, value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(f"argument {name!r}: a boolean is not a value (use a flag)")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    if not text or any(ch in text for ch in "\n\r\0"):
        raise ValueError(f"argument {name!r}: value {text!r} is empty or has control characters")
    return text


def build_command(
    script: str,
    args: Mapping[str, Any] | Sequence[str] = (),
    moongen: str = "./build/MoonGen",
    moongen_options: Sequence[str] = (),
) -> list[str]:
    """The argv list that runs a MoonGen script.

    script: a name from SCRIPTS ("l2-load-latency", "moonsniff-sniffer", ...) whose arguments are
        given by name in `args` (validated: unknown or missing names are errors), or a path to
        any other .lua script, whose `args` are a sequence of strings passed verbatim.
    moongen: the MoonGen binary (relative to its checkout by default; the backend runs it there).
    moongen_options: options for MoonGen itself, placed before the script (e.g.
        ["--dpdk-config=/etc/dpdk-conf.lua"]).

    >>> build_command("l2-load-latency", {"dev1": 0, "dev2": 1, "rate": 1000, "file": "h.csv"})
    ['./build/MoonGen', 'examples/l2-load-latency.lua', '0', '1', '--rate', '1000', '--file', 'h.csv']
    """
    cmd = [moongen, *map(str, moongen_options)]
    spec = SCRIPTS.get(script)
    if spec is None:
        if not script.endswith(".lua"):
            raise ValueError(f"unknown MoonGen script {script!r}: known are {sorted(SCRIPTS)}, "
                             f"or give a path to a .lua script")
        if isinstance(args, Mapping):
            raise ValueError(f"{script}: arguments of an unregistered script must be a list of strings")
        return cmd + [script] + [_arg_text(script, a) for a in args]
    if not isinstance(args, Mapping):
        raise ValueError(f"{script}: give the arguments by name, one of "
                         f"{sorted([*spec.positional, *spec.options, *spec.flags])}")
    known = set(spec.positional) | set(spec.options) | set(spec.flags)
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValueError(f"{script}: unknown argument(s) {unknown}; known are {sorted(known)}")
    missing = [r for r in spec.required if args.get(r) is None]
    if missing:
        raise ValueError(f"{script}: missing required argument(s) {missing}")
    cmd.append(spec.path)
    for name in spec.positional:
        value = args.get(name)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            cmd.extend(_arg_text(name, v) for v in value)
        else:
            cmd.append(_arg_text(name, value))
    for name, flag in spec.options.items():
        if args.get(name) is not None:
            cmd.extend([flag, _arg_text(name, args[name])])
    for name, flag in spec.flags.items():
        value = args.get(name)
        if value is None or value is False:
            continue
        if value is not True:
            raise ValueError(f"{script}: flag {name!r} takes True/False, not {value!r}")
        cmd.append(flag)
    return cmd


@dataclass
class MoonGenRun:
    """What one MoonGen run left: the exact command, exit status, logs, parsed throughput."""

    command: list[str]
    returncode: int
    stdout_path: Path
    stderr_path: Path
    duration_s: float
    throughput: Any = None              # DataFrame from read_throughput_log(stdout)
    summaries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)


def run_moongen(
    command: Sequence[str],
    log_dir: str | os.PathLike,
    cwd: str | os.PathLike | None = None,
    timeout_s: float | None = None,
    runner: Callable[..., int] | None = None,
    name: str = "moongen",
) -> MoonGenRun:
    """Run a MoonGen command (from :func:`build_command`) and keep everything it printed.

    stdout and stderr go to <log_dir>/<name>.stdout / .stderr as they are produced, the command
    line to <name>.cmd, so a crash or timeout loses nothing already printed. `runner` lets a
    testbed backend run it elsewhere (e.g. over ssh): it is called as
    ``runner(command, cwd=..., stdout=fh, stderr=fh, timeout=...)`` and returns the exit code;
    the default runs it locally with subprocess. A timeout kills the process and is reported
    as return code -9 with a note in the stderr file.
    """
    out = Path(log_dir)
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(c) for c in command]
    (out / f"{name}.cmd").write_text(shlex.join(cmd) + "\n")
    stdout_path, stderr_path = out / f"{name}.stdout", out / f"{name}.stderr"
    t0 = time.monotonic()
    with open(stdout_path, "wb") as so, open(stderr_path, "wb") as se:
        if runner is not None:
            rc = int(runner(cmd, cwd=cwd, stdout=so, stderr=se, timeout=timeout_s))
        else:
            proc = subprocess.Popen(cmd, cwd=cwd, stdout=so, stderr=se, start_new_session=True)
            try:
                rc = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                se.write(f"\n[benchbook] killed after timeout of {timeout_s} s\n".encode())
                rc = -9
            except BaseException:
                proc.kill()
                proc.wait()
                raise
    run = MoonGenRun(cmd, rc, stdout_path, stderr_path, time.monotonic() - t0)
    run.throughput = read_throughput_log(stdout_path)
    run.summaries = parse_histogram_summaries(stdout_path.read_text(errors="replace"))
    return run


__all__ = [
    "PROGRAM", "SCRIPTS", "MoonGenFormatError", "MoonGenHistogram", "MoonGenRun", "MoonGenStats",
    "ScriptSpec", "build_command", "lua_quartile_positions", "moongen_percentile", "moongen_stats",
    "moongen_summary", "parse_histogram_summaries", "parse_throughput", "read_histogram_csv",
    "read_moongen_histogram", "read_moongen_histogram_reference", "read_throughput_log", "run_moongen", "strip_ansi",
    "write_moongen_histogram",
]
