"""One run per file or directory, and the statistics of a run, for `benchbook compare`.

A run is recognised by content:

    latency runs     an HdrHistogram interval log (.hlog: its untagged intervals, as HistogramLogProcessor reads
                     them), a MoonGen histogram CSV (exact), a `benchbook latency` output directory
                     (latencies.parquet, exact, when it holds at most ``EXACT_LIMIT`` latencies; else latency.hlog)
    throughput runs  an iperf3 -J report (per-stream receiver rates), a `benchbook tcp` output directory
                     (summary.json: per-flow goodput and Jain's index of the bulk flows)

Statistics: ``pP`` (a discrete percentile, P in percent: p50, p99.9), ``max``, ``min`` and ``mean`` of latency
runs (ns); ``throughput`` (bit/s, the sum over flows) and ``jain`` (Jain's index of per-flow means) of
throughput runs. A percentile a run's N cannot resolve (V2) has no value for that run, with the reason.
Readers of external formats are passed in by the caller (layering: analysis imports no tool wrapper).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow.parquet as pq

from benchbook.analysis.bootstrap import Scale
from benchbook.analysis.distribution import ExactDistribution
from benchbook.analysis.fairness import jain_index
from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hist_report import HistInputError, is_interval_log, load_histograms
from benchbook.analysis.hlog import HlogFormatError, read_hlog
from benchbook.analysis.intervals import RATE, Range, jain_range
from benchbook.analysis.resolvability import ALPHA, resolve
from benchbook.errors import BenchbookError

Kind = Literal["latency", "throughput"]
EXACT_LIMIT = 1 << 24  # latencies read exactly from a latency directory's Parquet table (as `benchbook latency`)
LATENCY_DEFAULT = "p50,p99,p99.9,max,mean"
THROUGHPUT_DEFAULT = "throughput,jain"
_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)$")


class RunInputError(BenchbookError, ValueError):
    """A run that cannot be read, or a statistic a run does not have (the message names the file)."""


@dataclass
class Run:
    """One run: a latency distribution (``distribution``: ExactDistribution or HdrHistogram) or per-flow rates."""

    path: Path
    kind: Kind
    source: str                    # hlog, moongen-csv, latency-dir, iperf3, tcp-dir
    samples: int                   # latencies (packets) of a latency run; flows of a throughput run
    estimator: str
    distribution: Any = None
    flows_bps: np.ndarray | None = None
    jain: float | None = None
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Statistic:
    name: str
    kind: Kind
    scale: Scale
    unit: str
    percent: float | None = None

    def value_range(self, runs: list[Run]) -> Range:
        if self.name == "jain":
            return jain_range(max([r.samples for r in runs] + [1]))
        return RATE


def parse_statistics(text: str) -> list[Statistic]:
    """``"p50,p99,p99.9,max,mean"`` or ``"throughput,jain"`` into statistics (order kept, duplicates dropped)."""
    out: list[Statistic] = []
    for raw in text.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        if (m := _PERCENTILE.match(name)) is not None:
            p = float(m.group(1))
            if not 0 < p < 100:
                raise ValueError(f"--stat {raw.strip()!r}: a percentile between p0 and p100 (exclusive); use min/max "
                                 f"for the extremes")
            # one name per percentile: p99.90 and p050 are p99.9 and p50 (so that duplicates are dropped)
            st = Statistic(f"p{Decimal(m.group(1)).normalize():f}", "latency", "log-ratio", "ns", p)
        elif name in ("max", "min", "mean"):
            st = Statistic(name, "latency", "log-ratio", "ns")
        elif name in ("throughput", "goodput"):
            st = Statistic("throughput", "throughput", "log-ratio", "bit/s")
        elif name == "jain":
            st = Statistic("jain", "throughput", "difference", "")
        else:
            raise ValueError(f"--stat {raw.strip()!r}: expected pP (p50, p99.9), max, min, mean (latency runs), "
                             f"throughput or jain (throughput runs)")
        if st not in out:
            out.append(st)
    if not out:
        raise ValueError("--stat: no statistics given")
    return out


@dataclass(frozen=True)
class RunValue:
    """A run's value of a statistic, the samples behind it, and why there is none."""

    value: float | None
    samples: int
    reason: str | None = None


def run_value(run: Run, stat: Statistic, alpha: float = ALPHA) -> RunValue:
    if stat.kind != run.kind:
        raise RunInputError(f"{run.path}: a {run.kind} run has no {stat.name} (a {stat.kind} statistic)")
    if run.kind == "throughput":
        if stat.name == "throughput":
            return RunValue(float(np.sum(run.flows_bps)), run.samples)
        if run.jain is None:
            return RunValue(None, run.samples, f"Jain's index needs at least two flows ({run.samples} here)")
        return RunValue(float(run.jain), run.samples)
    d, n = run.distribution, run.samples
    if n == 0:
        return RunValue(None, 0, "no latencies")
    if stat.percent is not None:
        res = resolve(stat.percent, n, alpha)
        if not res.ok:
            return RunValue(None, n, res.reason)
        return RunValue(float(d.percentiles([stat.percent])[stat.percent]), n)
    if stat.name == "max":
        return RunValue(float(d.max), n)
    if stat.name == "min":
        return RunValue(float(d.min), n)
    return RunValue(float(d.mean), n)


ReadExact = Callable[[Path], Any]
ReadIperf3 = Callable[[Path], Any]


def load_run(path: Path, read_exact: ReadExact, read_iperf3: ReadIperf3) -> Run:
    """Read one run (see the module docstring for the kinds). ``read_exact`` reads a MoonGen histogram CSV
    (benchbook.tools.moongen_histogram.read_moongen_histogram), ``read_iperf3`` an iperf3 -J report
    (benchbook.tools.iperf3.read_report)."""
    p = Path(path)
    if p.is_dir():
        return _load_dir(p)
    if not p.is_file():
        raise RunInputError(f"{p}: no such file or directory")

    try:
        if not is_interval_log(p) and _first_char(p) == "{":
            return _iperf3_run(p, read_iperf3(p))
        loaded = load_histograms([p], read_exact)
    except HistInputError as exc:
        raise RunInputError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RunInputError(f"{p}: cannot read ({exc})") from None
    if loaded.is_exact:
        d = loaded.exact
        if d is None:
            raise RunInputError(f"{p}: no latencies")
        return Run(p, "latency", "moongen-csv", int(d.count), "exact discrete percentile (MoonGen histogram)", d,
                   notes=list(loaded.notes))
    h = loaded.hdr
    return Run(p, "latency", "hlog", int(h.total_count),
               f"HdrHistogram ({h.significant_figures} significant digits): highest value equivalent to the bucket "
               f"holding the discrete percentile", h, notes=list(loaded.notes))


def _first_char(p: Path) -> str:
    """The file's first character after any leading white space ("" for an empty or blank file)."""
    with open(p, "rb") as fh:
        while chunk := fh.read(4096):
            head = chunk.lstrip()
            if head:
                return head[:1].decode("ascii", "replace")
    return ""


def _iperf3_run(p: Path, report: Any) -> Run:
    rates = [s.receiver_bps if s.receiver_bps is not None else s.sender_bps for s in report.streams]
    if not rates:
        raise RunInputError(f"{p}: iperf3 report without per-stream totals (end.streams is empty)")
    x = np.asarray(rates, dtype=np.float64)
    jain = float(jain_index(x)) if x.size >= 2 else None
    return Run(p, "throughput", "iperf3", int(x.size), "iperf3 -J: receiver bit rate per stream (sender's when the "
               "receiver's is missing); Jain's index of those rates", flows_bps=x, jain=jain)


def _load_dir(p: Path) -> Run:
    summary = p / "summary.json"
    if not summary.is_file():
        if (p / "merged.json").is_file():
            raise RunInputError(f"{p}: a `benchbook latency --pairs` directory holds several pairs; give each pair's "
                                f"folder {p}/<name> as one run")
        raise RunInputError(f"{p}: a directory without summary.json: expected a `benchbook latency` or "
                            f"`benchbook tcp` output directory")
    try:
        doc = json.loads(summary.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunInputError(f"{summary}: not a readable JSON summary ({exc})") from None
    if isinstance(doc, dict) and "flows" in doc and "jain_of_means" in doc:
        return _tcp_run(p, doc)
    if isinstance(doc, dict) and "matched" in doc:
        return _latency_dir_run(p, doc)
    raise RunInputError(f"{summary}: neither a `benchbook latency` summary (no 'matched') nor a `benchbook tcp` "
                        f"summary (no 'flows' and 'jain_of_means')")


def _number_or_none(value: Any, where: str) -> float | None:
    """A JSON number, or None for null and for the "NaN"/"Infinity" texts benchbook writes for non-finite values."""
    if value is None or value in ("NaN", "Infinity", "-Infinity"):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RunInputError(f"{where}: expected a number or null, got {value!r}")
    return float(value) if math.isfinite(value) else None


def _tcp_run(p: Path, doc: dict[str, Any]) -> Run:
    where = f"{p}/summary.json"
    flows = doc["flows"]
    if not isinstance(flows, list) or not all(isinstance(f, dict) for f in flows):
        raise RunInputError(f"{where}: 'flows' is not a list of flow objects")
    rates = [_number_or_none(f.get("goodput_bps"), f"{where}: flows[{i}].goodput_bps") for i, f in enumerate(flows)]
    x = np.asarray([r for r in rates if r is not None], dtype=np.float64)
    if x.size == 0:
        raise RunInputError(f"{where}: no flow with a goodput")
    jain = _number_or_none(doc.get("jain_of_means"), f"{where}: jain_of_means")
    return Run(p, "throughput", "tcp-dir", int(x.size), "benchbook tcp: per-flow goodput (bytes seen for the first "
               "time x 8 / duration); Jain's index of per-flow mean goodput of the bulk flows (summary.json)",
               flows_bps=x, jain=jain)


def _latency_dir_run(p: Path, doc: dict[str, Any]) -> Run:
    matched = doc["matched"]
    if isinstance(matched, bool) or not isinstance(matched, int) or matched < 0:
        raise RunInputError(f"{p}/summary.json: 'matched' is {matched!r}, expected a count of matched packets (an "
                            f"integer >= 0)")
    n = matched
    parquet, hlog = p / "latencies.parquet", p / "latency.hlog"
    if n <= EXACT_LIMIT and parquet.is_file():
        try:
            lat = pq.read_table(str(parquet), columns=["latency_ns"]).column(0).to_numpy()
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise RunInputError(f"{parquet}: cannot read the latency_ns column ({exc})") from None
        if lat.size != n:
            raise RunInputError(f"{parquet}: {lat.size} latencies, but summary.json counts {n} matched packets")
        return Run(p, "latency", "latency-dir", n, "exact discrete percentile over the run's latencies "
                   "(latencies.parquet)", ExactDistribution.from_samples(lat))
    if not hlog.is_file():
        raise RunInputError(f"{p}: neither latencies.parquet (up to {EXACT_LIMIT} latencies) nor latency.hlog")

    try:
        log = read_hlog(hlog)
        h = HdrHistogram(1, max([2] + [iv.histogram.highest_trackable_value for iv in log.intervals]), 3)
        for iv in log.intervals:
            h.merge(iv.histogram)
    except (HlogFormatError, ValueError) as exc:
        raise RunInputError(f"{hlog}: {exc}") from None
    if h.total_count != n:
        raise RunInputError(f"{hlog}: {h.total_count} latencies, but summary.json counts {n} matched packets")
    return Run(p, "latency", "latency-dir", n, "HdrHistogram (3 significant digits, latency.hlog): highest value "
               "equivalent to the bucket holding the discrete percentile", h)


__all__ = ["EXACT_LIMIT", "LATENCY_DEFAULT", "THROUGHPUT_DEFAULT", "Run", "RunInputError", "RunValue", "Statistic",
           "load_run", "parse_statistics", "run_value"]
