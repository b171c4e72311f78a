"""MoonGen (libmoon) histogram files: read and write them exactly.

libmoon's ``histogram.lua`` ``hist:save()`` writes one ``value,count`` line per distinct latency,
no header, sorted by value, with Lua's ``tostring`` (``%.14g``), so values may carry decimals
(hardware timestamps in 6.4 ns steps give ``1286.4``). Values are kept as integers scaled by
10**decimals (:mod:`benchbook.analysis.exact_decimal`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import numpy as np

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.exact_decimal import (
    normalise_scaled,
    scale_decimal_texts,
    scale_values,
    scaled_to_str,
    sum_by_value,
)
from benchbook.errors import BenchbookError
from benchbook.tools.moongen_parse import scan_histogram

_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")
_COUNT_RE = re.compile(r"^\+?\d+(?:\.0*)?$")


INT64_MAX = 2**63 - 1


class MoonGenFormatError(BenchbookError, ValueError):
    """A MoonGen file that is not in the format MoonGen writes (message names file and position)."""


def check_total(counts: np.ndarray | list[int], source: str) -> None:
    """Refuse counts whose sum does not fit a signed 64-bit integer (what every histogram here
    counts in): such a file would otherwise wrap around to a wrong or negative total."""
    if isinstance(counts, np.ndarray):
        if counts.size == 0 or int(counts.max()) <= INT64_MAX // max(1, counts.size):
            return
        total = sum(int(c) for c in counts.tolist())
    else:
        total = sum(counts)
    if total > INT64_MAX:
        raise MoonGenFormatError(
            f"{source}: the counts add up to {total}, beyond the largest total a histogram can hold "
            f"({INT64_MAX}, the signed 64-bit limit)"
        )


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
        return scaled_to_str(int(scaled), self.decimals)

    def to_distribution(self):
        """The histogram as benchbook.analysis.distribution.ExactDistribution."""
        return ExactDistribution(self.values, self.counts.copy())

    @staticmethod
    def from_values(values: np.ndarray | Sequence[float | int | str], counts: np.ndarray | Sequence[int],
                    source: str = "") -> MoonGenHistogram:
        """Build from values (ints, floats - taken at their shortest repr - or decimal strings)."""
        vals, cnt, d = scale_values(np.asarray(values), np.asarray(counts), source)
        return MoonGenHistogram(vals, cnt, d, source)

    def merge(self, other: MoonGenHistogram) -> MoonGenHistogram:
        if self.count + other.count > INT64_MAX:
            raise MoonGenFormatError(
                f"{self.source}+{other.source}: merged counts add up to {self.count + other.count}, beyond the "
                f"largest total a histogram can hold ({INT64_MAX}, the signed 64-bit limit)"
            )
        d = max(self.decimals, other.decimals)
        a = self.values_scaled * 10 ** (d - self.decimals)
        b = other.values_scaled * 10 ** (d - other.decimals)
        vals, cnt = sum_by_value(np.concatenate([a, b]), np.concatenate([self.counts, other.counts]))
        return _histogram(vals, cnt, d, f"{self.source}+{other.source}", self.warnings + other.warnings)


def _histogram(vals: np.ndarray, cnt: np.ndarray, decimals: int, source: str,
               warnings: tuple[str, ...] = ()) -> MoonGenHistogram:
    v, c, d = normalise_scaled(vals, cnt, decimals)
    return MoonGenHistogram(v, c, d, source, warnings)


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
    """Line by line: accepts everything MoonGen (or a hand edit) may write and names the bad line."""
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
            if counts[-1] > INT64_MAX:
                raise MoonGenFormatError(
                    f"{source}: line {lineno} (byte offset {line_offset}): count {counts[-1]} is beyond the "
                    f"signed 64-bit limit {INT64_MAX}"
                )
            continue
        where = f"{source}: line {lineno} (byte offset {line_offset})"
        if is_last_unterminated:
            warnings.append(f"{where}: incomplete last line {line[:60]!r} ignored ({problem})")
            continue
        raise MoonGenFormatError(
            f"{where}: {problem}; expected 'value,count' as MoonGen's hist:save() writes "
            f"(e.g. '1286.4,17'), got {line[:80]!r}"
        )
    check_total(counts, source)
    try:
        vals, cnt, d = scale_decimal_texts(texts, counts, source)
    except ArithmeticError:  # decimal.Overflow of exponents such as 1E3999999999999990
        raise MoonGenFormatError(
            f"{source}: a value's exponent is far beyond what a histogram can hold (values times 10**decimals "
            f"must stay below {INT64_MAX + 1} = 2**63)"
        ) from None
    except ValueError as exc:
        raise MoonGenFormatError(
            f"{exc} (a value times 10**decimals must stay below {INT64_MAX + 1} = 2**63, with at most 12 decimal "
            "places)"
        ) from None
    return MoonGenHistogram(vals, cnt, d, source, tuple(warnings))


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
        return _histogram(np.zeros(0, np.int64), np.zeros(0, np.int64), 0, source)
    ip = np.array([m[0] for m in matches])
    fp = np.array([m[1] for m in matches])
    cnt = np.array([m[2] for m in matches]).astype(np.int64)
    check_total(cnt, source)
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
    u, tot = sum_by_value(vals, cnt)
    return _histogram(u, tot, d, source)


def _read_compiled(data: bytes, source: str) -> MoonGenHistogram | None:
    ip, fv, fl, cnt, bad = scan_histogram(np.frombuffer(data, dtype=np.uint8))
    if bad >= 0:
        return None
    check_total(cnt, source)
    d = int(fl.max()) if fl.size else 0
    if d and ip.size and int(ip.max()) >= (2**63 - 1) // 10**d:
        return None
    vals = ip * 10**d + fv * (10 ** (d - fl)) if d else ip.copy()
    if vals.size > 1 and np.all(vals[1:] > vals[:-1]):  # MoonGen writes sorted, unique values
        return _histogram(vals, cnt.copy(), d, source)
    u, tot = sum_by_value(vals, cnt)
    return _histogram(u, tot, d, source)


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
        for v, c in zip(hist.values_scaled.tolist(), hist.counts.tolist(), strict=True):
            fh.write(f"{scaled_to_str(v, hist.decimals)},{c}\n")
    return p


def read_histogram_csv(path: str | os.PathLike):
    """Contract API: a MoonGen histogram CSV as an ExactDistribution (values in ns; float64 when
    the file has decimals, each the nearest double to the decimal MoonGen wrote)."""
    return read_moongen_histogram(path).to_distribution()


__all__ = [
    "COMPILED_SCAN_BYTES", "MoonGenFormatError", "MoonGenHistogram", "read_histogram_csv",
    "read_moongen_histogram", "write_moongen_histogram",
]
