"""From a capture pair to a latency report directory (what `benchbook latency` writes).

    latencies.parquet  per-packet table (id, t_pre_ns, t_post_ns, latency_ns)
    latency.hlog       one interval histogram per second of capture time (by t_pre)
    hdr.html           HDR percentile plot (optional)
    summary.json       counts, min/max/mean, discrete percentiles and how they were computed; a percentile the
                       packet count cannot resolve (V2, benchbook.analysis.resolvability) is null, with the reason
                       in ``unresolved_percentiles``

Memory stays bounded: interval histograms are written as soon as no later match can fall into
them, and exact percentiles come from the latencies kept in memory up to ``exact_limit`` values;
beyond that they come from the HdrHistogram (3 significant digits), and ``percentile_method`` says
which.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hlog import HlogWriter
from benchbook.analysis.latency import DEFAULT_MAX_LATENCY_NS, DEFAULT_WINDOW, IdKey, Key, match_captures
from benchbook.analysis.percentiles import REPORTED_PERCENTILES, discrete_rank
from benchbook.analysis.resolvability import resolved_percentiles
from benchbook.atomic_write import write_json_atomic
from benchbook.report_dir import report_dir

SUMMARY_COUNTS = ("pre", "post", "matched", "lost", "unmatched_post", "duplicates", "reordered")
EXACT_LIMIT = 1 << 24
INTERVAL_NS = 1_000_000_000


class _Accumulator:
    """Receives batches of matches: per-second histograms, the total histogram, exact values."""

    def __init__(self, hlog_path: Path, max_latency_ns: int, exact_limit: int, comments: list[str]) -> None:
        self._H = HdrHistogram
        self.highest = max(2, int(max_latency_ns))
        self.total = HdrHistogram(1, self.highest, 3)
        self.open: dict[int, Any] = {}
        self.t0: int | None = None
        self.max_latency = int(max_latency_ns)
        self.exact_limit = exact_limit
        self.parts: list[np.ndarray] = []
        self.kept = 0
        self.exact = True
        self.hlog_path = hlog_path
        self.comments = comments
        self.writer: Any = None
        self._HlogWriter = HlogWriter
        self.intervals_written = 0
        self.parquet: Path | None = None

    def __call__(self, ids: np.ndarray, t_pre: np.ndarray, t_post: np.ndarray, lat: np.ndarray) -> None:
        if self.t0 is None:
            self.t0 = int(t_pre.min())
            self.writer = self._HlogWriter(self.hlog_path, start_time=self.t0 / 1e9, comments=self.comments)
            self.writer.open()
        idx = (t_pre - self.t0) // INTERVAL_NS
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0:  # a packet sent before the first matched one (reordering): fold into interval 0
            idx = np.maximum(idx, 0)
            lo = 0
        if lo == hi:
            self._interval(lo).record(lat)
        elif hi - lo <= 8:  # the usual case: a batch spans one or two seconds
            for k in range(lo, hi + 1):
                sel = lat[idx == k]
                if len(sel):
                    self._interval(k).record(sel)
        else:
            order = np.argsort(idx, kind="stable")
            sidx = idx[order]
            bounds = np.flatnonzero(np.diff(sidx)) + 1
            for part in np.split(order, bounds):
                self._interval(int(idx[part[0]])).record(lat[part])
        if self.exact:
            if self.kept + len(lat) <= self.exact_limit:
                self.parts.append(lat)
                self.kept += len(lat)
            else:
                self.exact = False
                self.parts = []
        # intervals no later match can reach: every future match has t_pre > t_post - max latency
        horizon = int(t_post[-1]) - self.max_latency
        self._flush(lambda k: self.t0 + (k + 1) * INTERVAL_NS <= horizon)

    def _interval(self, k: int) -> Any:
        h = self.open.get(k)
        if h is None:
            h = self.open[k] = self._H(1, self.highest, 3)
        return h

    def _flush(self, done) -> None:
        for k in sorted(self.open):
            if not done(k):
                break
            h = self.open.pop(k)
            if h.total_count:
                self.writer.write_interval(k * INTERVAL_NS / 1e9, INTERVAL_NS / 1e9, h)
                self.intervals_written += 1
            self.total.merge(h)

    def close(self) -> None:
        if self.writer is not None:
            self._flush(lambda k: True)
            self.writer.close()
        else:  # nothing matched: still an (empty) log with its header
            w = self._HlogWriter(self.hlog_path, comments=self.comments)
            w.open()
            w.close()

    def percentiles(self) -> tuple[dict[str, int | None], str]:
        n = self.total.total_count
        if n == 0:
            return {p: None for p in REPORTED_PERCENTILES}, "none: no matched packets"
        if self.exact:
            values = np.concatenate(self.parts) if len(self.parts) > 1 else self.parts[0].copy()
            self.parts = []
            ranks = sorted({discrete_rank(float(p), n) - 1 for p in REPORTED_PERCENTILES})
            values.partition(ranks)  # in place: no second copy
            part = values
            out = {p: int(part[discrete_rank(float(p), n) - 1]) for p in REPORTED_PERCENTILES}
            return out, (f"exact discrete percentile over all {n} latencies (smallest latency with at least p% of "
                         f"packets at or below it)")
        if self.parquet is not None and self.parquet.exists():
            exact = exact_from_buckets(self.total, self.parquet, [float(p) for p in REPORTED_PERCENTILES])
            out = {p: exact[float(p)] for p in REPORTED_PERCENTILES}
            return out, (
                f"exact discrete percentile over all {n} latencies (smallest latency with at least p% of "
                f"packets at or below it), in two passes as they exceed the in-memory limit of "
                f"{self.exact_limit}: the HdrHistogram bucket holding each percentile, then the exact "
                "values in that bucket from latencies.parquet"
            )
        vals = self.total.percentiles([float(p) for p in REPORTED_PERCENTILES])
        out = {p: int(vals[float(p)]) for p in REPORTED_PERCENTILES}
        return out, (
            f"HdrHistogram, 3 significant digits: {n} latencies exceed the exact limit of {self.exact_limit}; "
            "each value is the highest value equivalent to the bucket holding the discrete percentile"
        )


def exact_from_buckets(total: Any, parquet: Path, percentiles: list[float]) -> dict[float, int]:
    """Exact discrete percentiles without holding every latency: the histogram says which bucket
    holds each percentile's rank and how many latencies lie below it; one pass over the Parquet
    latency column collects just the values inside those buckets."""
    import pyarrow.parquet as pq  # noqa: PLC0415 pyarrow loads in the writer thread (latency_table)

    n = total.total_count
    lows, counts = total.recorded("lowest")
    highs, _ = total.recorded("highest")
    cum = np.cumsum(counts)
    targets = {}
    for p in percentiles:
        r = discrete_rank(p, n)
        b = int(np.searchsorted(cum, r, side="left"))
        below = int(cum[b - 1]) if b else 0
        targets[p] = (b, r - below)
    buckets = sorted({b for b, _ in targets.values()})
    lo_arr = np.array([lows[b] for b in buckets], np.int64)
    hi_arr = np.array([highs[b] for b in buckets], np.int64)
    found: dict[int, list[np.ndarray]] = {b: [] for b in buckets}
    f = pq.ParquetFile(str(parquet))
    for batch in f.iter_batches(batch_size=1 << 20, columns=["latency_ns"]):
        v = batch.column(0).to_numpy()
        for b, lo, hi in zip(buckets, lo_arr, hi_arr, strict=True):
            sel = v[(v >= lo) & (v <= hi)]
            if len(sel):
                found[b].append(sel)
    out = {}
    for p, (b, k) in targets.items():
        vals = np.sort(np.concatenate(found[b])) if found[b] else np.zeros(0, np.int64)
        if len(vals) != counts[b]:
            raise RuntimeError(
                f"{parquet}: {len(vals)} latencies in [{lo_arr[buckets.index(b)]}, {hi_arr[buckets.index(b)]}] "
                f"but the histogram counted {counts[b]}: the table and the histogram disagree"
            )
        out[p] = int(vals[k - 1])
    return out


def analyze_captures(
    pre: str | Path,
    post: str | Path,
    out_dir: str | Path,
    key: Key = IdKey(offset=42),
    max_latency_ns: int = DEFAULT_MAX_LATENCY_NS,
    window_packets: int = DEFAULT_WINDOW,
    exact_limit: int = EXACT_LIMIT,
    html: bool = True,
    report_path: str | Path | None = None,
) -> dict[str, Any]:
    """Match the pair and write the report directory; returns the summary dict.

    ``report_path``: where the report will finally live when the caller moves ``out_dir`` there (named in
    summary.json; default ``out_dir``).

    The files are written into a temporary directory beside ``out_dir`` and moved into place only
    when everything succeeded: a failed run leaves an earlier report in ``out_dir`` exactly as it
    was. Every warning (capture truncation, zero latencies, ...) is kept in summary.json
    (details.warnings) and issued again as a Python warning."""
    out = Path(out_dir)
    with report_dir(out, OUTPUT_FILES) as work:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            final = Path(report_path) if report_path is not None else out
            summary = _analyze_into(work, final, pre, post, key, max_latency_ns, window_packets, exact_limit, html)
        seen = set(summary["details"]["warnings"])
        extra = [str(w.message) for w in caught if str(w.message) not in seen]
        summary["details"]["warnings"] = list(summary["details"]["warnings"]) + list(dict.fromkeys(extra))
        zero = summary["details"]["counts"].get("out_of_range_post", 0)
        if zero:
            summary["details"]["warnings"].append(
                f"{zero} post packets carry a timestamp at or before their pre packet's (latency <= 0; "
                f"{summary['matched']} matched): the same capture given twice, or timestamps too coarse for the "
                "device under test"
            )
        write_json_atomic(work / "summary.json", summary)
    for m in summary["details"]["warnings"]:
        warnings.warn(m, stacklevel=2)
    return summary


OUTPUT_FILES = ("latencies.parquet", "latency.hlog", "hdr.html", "plotly.min.js", "summary.json")


def _analyze_into(
    out: Path, final: Path, pre: str | Path, post: str | Path, key: Key, max_latency_ns: int, window_packets: int,
    exact_limit: int, html: bool,
) -> dict[str, Any]:
    if html:  # import the figure stack while the matching kernels (which release the GIL) run
        threading.Thread(target=_import_figures, name="import-figures", daemon=True).start()
    comments = [f"benchbook latency: pre={Path(pre).name} post={Path(post).name} key={key.describe()}",
                "values in ns; one interval per second of capture time (by pre timestamp)"]
    acc = _Accumulator(out / "latency.hlog", max_latency_ns, exact_limit, comments)
    acc.parquet = out / "latencies.parquet"
    try:
        res = match_captures(
            pre, post, key, max_latency_ns=max_latency_ns, out_parquet=out / "latencies.parquet",
            window_packets=window_packets, keep_arrays=False, on_batch=acc,
        )
    finally:
        acc.close()
    tot = acc.total
    pcts, method = acc.percentiles()
    n = tot.total_count
    pcts, unresolved = resolved_percentiles(pcts, n)
    summary: dict[str, Any] = {k: int(res.counts[k]) for k in SUMMARY_COUNTS}
    summary.update({
        "min_ns": int(tot.min) if n else None,
        "max_ns": int(tot.max) if n else None,
        "mean_ns": int(round(tot.mean)) if n else None,
        "percentiles_ns": pcts,
        "unresolved_percentiles": unresolved,
        "percentile_method": method,
    })
    summary["details"] = {
        "pre_file": str(pre), "post_file": str(post), "key": res.key,
        "max_latency_ns": int(max_latency_ns),
        "stddev_ns": float(tot.stddev) if n else None,
        "counts": res.counts,
        "hlog_intervals": acc.intervals_written,
        "warnings": res.warnings,
    }
    if html:
        made = _hdr_html(tot, out)
        summary["details"]["hdr_html"] = str(final / Path(made).name) if made.endswith(".html") else made
    return summary


def _import_figures() -> None:
    try:
        import plotly.io  # noqa: F401,PLC0415 imported in a thread while the kernels match

        import benchbook.figures  # noqa: F401,PLC0415 imported in a thread while the kernels match
    except Exception:  # reported when the figure is made
        pass


def _hdr_html(total: Any, out: Path) -> str:
    if total.total_count == 0:
        return "unavailable: no matched packets"
    from benchbook.figures import hdr_percentile_plot, save_figure  # noqa: PLC0415 plotly loaded by _import_figures

    percent, values = total.ladder_points()
    fig = hdr_percentile_plot({"latency": (percent, values)}, unit="us", title="Latency (post - pre)")
    return save_figure(fig, out, "hdr", formats=("html",)).get("html", "")


def format_summary(summary: dict[str, Any]) -> str:
    """The percentile table `benchbook latency` prints."""
    lines = []
    c = summary
    lines.append(
        f"pre {c['pre']}  post {c['post']}  matched {c['matched']}  lost {c['lost']}  "
        f"unmatched post {c['unmatched_post']}  duplicates {c['duplicates']}  reordered {c['reordered']}"
    )
    if c["min_ns"] is None:
        lines.append("no matched packets: no latency distribution")
        return "\n".join(lines)
    lines.append(f"{'percentile':>12}  {'latency ns':>14}  {'latency us':>12}")
    lines.append(f"{'min':>12}  {c['min_ns']:>14}  {c['min_ns'] / 1e3:>12.3f}")
    for p, v in c["percentiles_ns"].items():
        if v is None:
            lines.append(f"{p + ' %':>12}  {c.get('unresolved_percentiles', {}).get(p, 'no value')}")
        else:
            lines.append(f"{p + ' %':>12}  {v:>14}  {v / 1e3:>12.3f}")
    lines.append(f"{'max':>12}  {c['max_ns']:>14}  {c['max_ns'] / 1e3:>12.3f}")
    lines.append(f"{'mean':>12}  {c['mean_ns']:>14}  {c['mean_ns'] / 1e3:>12.3f}")
    lines.append(f"percentiles: {c['percentile_method']}")
    return "\n".join(lines)


__all__ = ["analyze_captures", "format_summary", "EXACT_LIMIT"]
