"""Reports over merged latency histograms: HdrHistogram interval logs (.hlog) and exact
value,count histograms (MoonGen CSVs), printed like HdrHistogram's HistogramLogProcessor, or as a
JSON summary.

Inputs are recognised by content: a file whose first non-blank line starts with '#' or '"' or
'Tag=' (or whose name ends in .hlog) is an interval log; anything else is an exact histogram read
by the reader the caller passes (MoonGen's `value,count` files: benchbook.tools.moongen_histogram).
Exact histograms alone merge exactly (ExactDistribution: exact percentiles, mean, standard
deviation); as soon as an interval log is involved everything is merged into an HdrHistogram
(values with decimals are rounded to whole ns, and a note says so).

Interval logs are processed as HdrHistogram's HistogramLogProcessor does: untagged intervals
(or a tag), those starting from 0 s after StartTime (or start_s/end_s), accumulated into a
histogram with the layout of the first one; the text output is the processor's, character for
character (tested against the Java tool; the StartTime date is printed in UTC).
significant_digits=N accumulates into a fresh N-digit histogram instead (what HdrHistogram's own
tests do with N = 3).

One difference from HistogramLogProcessor, on purpose: a percentile the sample count N cannot resolve (V2:
N >= ln(0.025)/ln(p), :mod:`benchbook.analysis.resolvability`) is not printed. The ladder leaves such rows out and
says so in one comment line per gap (CSV: the rows are left out); the minimum (0 %) and maximum (100 %) rows
stay, as the observed extremes. ``all_percentiles`` prints every row, as the Java tool does. In the JSON
summary such a percentile is null, with the reason in ``unresolved_percentiles``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, localcontext
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogFormatError, read_hlog
from benchbook.analysis.percentiles import REPORTED_PERCENTILES
from benchbook.analysis.resolvability import resolvable, resolved_percentiles
from benchbook.errors import BenchbookError

UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class HistInputError(BenchbookError, ValueError):
    """Bad input: the message names the file and the position."""


class ExactHistogram(Protocol):
    """What load_histograms needs of an exact histogram read from a file (MoonGenHistogram has it)."""

    values_scaled: Any
    counts: Any
    decimals: int
    warnings: tuple[str, ...]

    @property
    def scale(self) -> int: ...

    @property
    def count(self) -> int: ...

    def merge(self, other: Any) -> Any: ...

    def to_distribution(self) -> Any: ...


@dataclass
class LoadedHistograms:
    """What `benchbook hist` merged: an exact distribution or an HdrHistogram, and notes."""

    exact: Any = None                 # benchbook.analysis.distribution.ExactDistribution
    hdr: Any = None                   # benchbook.analysis.hdr.HdrHistogram
    moongen: Any = None               # merged exact histogram (MoonGenHistogram) when no input is an interval log
    decimals: int = 0                 # decimal places of the exact values
    start_time: float | None = None   # StartTime of the first interval log
    files: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def is_exact(self) -> bool:
        return self.hdr is None


def is_interval_log(path: Path) -> bool:
    if path.suffix.lower() == ".hlog":
        return True
    with open(path, "rb") as fh:
        for raw in fh:
            line = raw.strip()
            if line:
                return line[:1] in (b"#", b'"') or line.startswith(b"Tag=")
    return False


def load_histograms(
    paths: list[Path],
    read_exact: Callable[[Path], ExactHistogram],
    tag: str | None = None,
    all_tags: bool = False,
    start_s: float = 0.0,
    end_s: float = math.inf,
    significant_digits: int | None = None,
) -> LoadedHistograms:
    """Read and merge every input (see the module docstring for the rules); `read_exact` reads a
    file that is not an interval log (benchbook.tools.moongen_histogram.read_moongen_histogram).

    Interval logs: by default every untagged interval histogram (HistogramLogProcessor's
    default); `tag` selects one tag, `all_tags` every interval. `start_s`/`end_s` select by
    start time relative to the log's StartTime as HistogramLogReader.nextIntervalHistogram does
    (HistogramLogProcessor's defaults 0 and infinity; -inf keeps intervals stamped before
    StartTime). The intervals are accumulated into a histogram with the first one's layout, as
    HistogramLogProcessor does, or with `significant_digits` digits when given."""
    logs = []
    mg = None
    out = LoadedHistograms()
    for p in paths:
        if not p.is_file():
            raise HistInputError(f"{p}: no such file")
        try:
            if is_interval_log(p):
                log = read_hlog(p)
                want = ... if all_tags else tag
                ivs = log.select(start_s, end_s, tag=want)
                tagged_ok = [iv for iv in log.intervals if want is ... or iv.tag == want]
                skipped = sorted({str(iv.tag) for iv in log.intervals if want is not ... and iv.tag != want})
                if skipped and ivs:
                    out.notes.append(f"{p}: interval histograms tagged {', '.join(skipped)} not included "
                                     f"(--tag NAME or --all-tags to include them)")
                if ivs and len(tagged_ok) > len(ivs):
                    out.notes.append(f"{p}: {len(tagged_ok) - len(ivs)} interval histogram(s) starting outside "
                                     f"{start_s} s .. {end_s} s after StartTime not included (--start=-inf "
                                     f"keeps those stamped before StartTime)")
                if not ivs and log.intervals:
                    # HistogramLogProcessor prints an empty distribution here (HdrHistogram <= 2.1.9; 2.1.11 to
                    # 2.2.2 end in a NullPointerException instead): so does benchbook, with a note saying why.
                    tags = sorted({"(untagged)" if t is None else t for t in log.tags()})
                    if tagged_ok:
                        why = (f"all {len(tagged_ok)} start outside {start_s} s .. {end_s} s after StartTime (--start/"
                               f"--end select by start time; --start=-inf keeps intervals stamped before StartTime)")
                    else:
                        which = f"has tag {tag!r}" if tag is not None else "is untagged"
                        why = f"none {which} (tags present: {', '.join(tags)}; use --tag NAME or --all-tags)"
                    out.notes.append(f"{p}: no interval histogram selected of {len(log.intervals)}: {why}; the "
                                     f"distribution is empty, as HistogramLogProcessor prints it")
                if out.start_time is None:
                    out.start_time = log.start_time
                logs.append((p, log, ivs))
                out.files.append({"path": str(p), "kind": "hlog", "intervals": len(ivs),
                                  "count": sum(iv.histogram.total_count for iv in ivs)})
            else:
                h = read_exact(p)
                out.notes.extend(h.warnings)
                mg = h if mg is None else mg.merge(h)
                if mg.count < 0:
                    raise HistInputError(f"{p}: counts add up beyond the signed 64-bit limit {2**63 - 1}")
                out.files.append({"path": str(p), "kind": "moongen-csv", "count": h.count})
        except HistInputError:
            raise
        except (HlogFormatError, BenchbookError) as exc:
            raise HistInputError(str(exc)) from None
        except UnicodeDecodeError as exc:
            raise HistInputError(f"{p}: byte offset {exc.start}: not a text file ({exc.reason})") from None
    if not logs:
        out.moongen = mg
        out.decimals = mg.decimals if mg is not None else 0
        out.exact = mg.to_distribution() if mg is not None else None
        return out
    layouts = [iv.histogram for _p, _log, ivs in logs for iv in ivs]
    if significant_digits is None and layouts:
        # HistogramLogProcessor: a copy of the first interval's layout, auto-resized (as Java's
        # decoded histograms are) when later intervals hold larger values.
        first = layouts[0]
        need = max([h.hdr_max() for h in layouts if h.total_count], default=0)
        if need > first.highest_trackable_value:
            hdr = HdrHistogram(first.lowest_discernible_value, need, first.significant_figures)
        else:
            hdr = first.empty_like()
    else:
        hdr = HdrHistogram(
            1,
            max([3_600_000_000_000] + [h.highest_trackable_value for h in layouts]
                + [h.hdr_max() for h in layouts if h.total_count]),
            significant_digits or 3,
        )
    try:
        for _p, log, ivs in logs:
            log.merged(ivs, into=hdr)
    except ValueError as exc:
        raise HistInputError(f"{_p}: {exc}") from None
    if mg is not None and mg.count:
        if mg.decimals:
            out.notes.append(f"MoonGen values with {mg.decimals} decimal place(s) rounded to whole ns "
                             f"to merge with the interval logs")
        vals = np.rint(mg.values_scaled / mg.scale).astype(np.int64) if mg.decimals else mg.values_scaled
        hdr.merge(ExactDistribution(vals, mg.counts).to_hdr(
            hdr.lowest_discernible_value, max(hdr.highest_trackable_value, int(vals.max()) * 2),
            hdr.significant_figures))
    out.hdr = hdr
    return out


def _num(x: Any) -> int | float | None:
    if x is None:
        return None
    if isinstance(x, float):
        if math.isnan(x):
            return None
        return int(x) if x.is_integer() and abs(x) < 2**63 else x
    return int(x)


def summary_json(h: LoadedHistograms) -> dict[str, Any]:
    """The `--json` document: count, min_ns, max_ns, mean_ns, stddev_ns (population), percentiles_ns (null where
    the count cannot resolve the percentile), unresolved_percentiles (the reason for each null)."""
    ps = [float(p) for p in REPORTED_PERCENTILES]
    if h.is_exact:
        d, n = h.exact, h.exact.count
        method = ("discrete percentile, exact (smallest value with at least p of the samples at or "
                  "below it)")
    else:
        d, n = h.hdr, h.hdr.total_count
        method = (f"HdrHistogram value at percentile (highest equivalent value of the bucket, "
                  f"{d.significant_figures} significant digits)")
    pct = d.percentiles(ps) if n else {p: None for p in ps}
    shown, unresolved = resolved_percentiles(
        {k: _num(pct[p]) for k, p in zip(REPORTED_PERCENTILES, ps, strict=True)}, n)
    doc = {
        "count": n,
        "min_ns": _num(d.min) if n else None,
        "max_ns": _num(d.max) if n else None,
        "mean_ns": d.mean if n else None,
        "stddev_ns": d.stddev if n else None,
        "percentiles_ns": shown,
        "unresolved_percentiles": unresolved,
        "exact": h.is_exact,
        "percentile_method": method,
    }
    if h.is_exact and h.moongen is not None and h.decimals:
        # The same values as the exact decimals MoonGen wrote (floats above are nearest doubles).
        doc["value_decimals"] = h.decimals
    doc["inputs"] = h.files
    if h.notes:
        doc["notes"] = h.notes
    return doc


def java_fixed(x: float, decimals: int) -> str:
    """Java's String.format("%.Nf", x): the shortest decimal that identifies the double, rounded
    half-up (C and Python round the exact binary value half-even, which differs on ties)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    with localcontext() as ctx:
        ctx.prec = 80
        q = Decimal(repr(float(x))).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)
    return f"{q:f}"


def processor_text(
    ladder,
    *,
    decimals: int,
    mean: float,
    stddev: float,
    max_value: float,
    total: int,
    value_scale: float,
    csv: bool = False,
    buckets: tuple[int, int] | None = None,
    start_time: float | None = None,
    all_percentiles: bool = True,
) -> str:
    """A percentile ladder (percentile level 0..100, value, count) as HistogramLogProcessor prints
    it (outputPercentileDistribution), including the StartTime line of the log. Without
    ``all_percentiles``, rows strictly between 0 % and 100 % that ``total`` samples cannot resolve are
    left out, each gap named in a comment line (text) or silently (CSV)."""
    out: list[str] = []
    if start_time is not None:
        stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(start_time))
        out.append(f"#[StartTime: {java_fixed(start_time, 3)} (seconds since epoch), {stamp}]\n")
    if csv:
        out.append('"Value","Percentile","TotalCount","1/(1-Percentile)"\n')
    else:
        out.append(f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}\n\n")
    gap: list[float] = []

    def close_gap() -> None:
        if gap and not csv:
            span = f"{gap[0]:.4f} %" if len(gap) == 1 else f"{gap[0]:.4f} % .. {gap[-1]:.4f} %"
            out.append(f"#[{len(gap)} percentile(s) {span} not resolvable at N = {total} (a 95 % bound needs "
                       f"N >= ln(0.025)/ln(p)); --all-percentiles prints them]\n")
        gap.clear()

    for level, value, count in zip(ladder["percentile"].tolist(), ladder["value"].tolist(),
                                   ladder["count"].tolist(), strict=True):
        if not all_percentiles and 0.0 < level < 100.0 and not resolvable(level, total):
            gap.append(level)
            continue
        close_gap()
        v = java_fixed(value / value_scale, decimals)
        p = java_fixed(level / 100.0, 12)
        last = level == 100.0
        inv = "Infinity" if last else java_fixed(1.0 / (1.0 - (level / 100.0)), 2)
        if csv:
            out.append(f"{v},{p},{int(count)},{inv}\n")
        elif last:
            out.append(f"{v:>12} {p:>2} {int(count):>10}\n")
        else:
            out.append(f"{v:>12} {p:>2} {int(count):>10} {inv:>14}\n")
    close_gap()
    if not csv:
        out.append(f"#[Mean    = {java_fixed(mean / value_scale, decimals):>12}, "
                   f"StdDeviation   = {java_fixed(stddev / value_scale, decimals):>12}]\n")
        out.append(f"#[Max     = {java_fixed(max_value / value_scale, decimals):>12}, "
                   f"Total count    = {total:>12}]\n")
        if buckets is not None:
            out.append(f"#[Buckets = {buckets[0]:>12}, SubBuckets     = {buckets[1]:>12}]\n")
    return "".join(out)


def percentile_text(h: LoadedHistograms, unit: str = "ms", ticks_per_half: int = 5, csv: bool = False,
                    all_percentiles: bool = False) -> str:
    """HistogramLogProcessor's text for the merged inputs (values divided by the unit); percentiles the count
    cannot resolve left out unless ``all_percentiles`` (see the module docstring)."""
    scale = UNITS[unit]
    if h.is_exact:
        d = h.exact
        if d.count == 0:
            return "# empty histogram: no samples\n"
        digits = h.decimals + round(math.log10(scale))
        return processor_text(d.percentile_ladder(ticks_per_half), decimals=max(3, digits), mean=d.mean,
                              stddev=d.stddev, max_value=float(d.max), total=d.count, value_scale=scale,
                              csv=csv, start_time=None, all_percentiles=all_percentiles)
    d = h.hdr
    if not any(f["intervals"] for f in h.files if f["kind"] == "hlog") and h.moongen is None:
        # Nothing selected: HistogramLogProcessor's empty Histogram(1000000, 2), without a StartTime line
        shape = HdrHistogram(1, 1_000_000, 2).layout
        return processor_text({"percentile": np.empty(0), "value": np.empty(0), "count": np.empty(0)}, decimals=2,
                               mean=0.0, stddev=0.0, max_value=0.0, total=0, value_scale=scale, csv=csv,
                               buckets=(shape.bucket_count, shape.sub_bucket_count))
    if d.total_count == 0:
        return "# empty histogram: no samples\n"
    return processor_text(d.percentile_ladder(ticks_per_half), decimals=d.significant_figures,
                          mean=d.hdr_mean(), stddev=d.hdr_stddev(), max_value=float(d.hdr_max()),
                          total=d.total_count, value_scale=scale, csv=csv,
                          buckets=(d.layout.bucket_count, d.layout.sub_bucket_count),
                          start_time=h.start_time, all_percentiles=all_percentiles)


__all__ = ["UNITS", "ExactHistogram", "HistInputError", "LoadedHistograms", "is_interval_log",
           "java_fixed", "load_histograms", "percentile_text", "processor_text", "summary_json"]
