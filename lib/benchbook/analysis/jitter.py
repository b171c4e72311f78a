"""Jitter, worst-N latencies and per-interval histograms from per-packet (time, latency) arrays.

* :func:`rfc3550_jitter` -- RFC 3550 (section 6.4.1 / A.8) interarrival jitter: for consecutive
  packets i-1, i, ``D = (R_i - R_{i-1}) - (S_i - S_{i-1})`` (= latency_i - latency_{i-1}) and the
  running estimate ``J += (|D| - J) / 16``, here in nanoseconds as float64. Pass packets in
  arrival order (sorted by t_post_ns), as a receiver sees them.
* :func:`latency_stddev` -- population standard deviation of the latencies.
* :func:`worst_n` / :class:`WorstN` -- the N largest latencies with their times, as the TUM pos
  evaluator's ``*.worst.csv`` (``ORDER BY latency DESC LIMIT 5000``); streaming over chunks.
* :func:`interval_histograms` / :class:`IntervalRecorder` -- one HdrHistogram per time interval
  (e.g. per second of capture time), ready for :func:`benchbook.analysis.hlog.write_hlog`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.signal import lfilter

from benchbook.analysis.hdr import HdrHistogram
from benchbook.analysis.hdr_layout import layout_for
from benchbook.analysis.hlog import Interval

NS_PER_S = 1_000_000_000


def _int64(a, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind not in "iu" and arr.size:
        raise TypeError(f"{name} must hold integers (nanoseconds), got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


# ---- RFC 3550 jitter ------------------------------------------------------------------------------


def rfc3550_jitter(t_pre_ns: np.ndarray, t_post_ns: np.ndarray) -> np.ndarray:
    """Running RFC 3550 interarrival jitter (ns, float64) after each packet, packets taken in the
    given order (arrival order). Element 0 is 0 (no predecessor); element i is the estimate after
    packet i. The recursion J_i = J_{i-1} + (|D_i| - J_{i-1})/16 is a first-order IIR filter, run
    here with scipy.signal.lfilter."""
    s = _int64(t_pre_ns, "t_pre_ns")
    r = _int64(t_post_ns, "t_post_ns")
    if s.shape != r.shape:
        raise ValueError(f"t_pre_ns ({s.size}) and t_post_ns ({r.size}) differ in length")
    out = np.zeros(s.size, dtype=np.float64)
    if s.size < 2:
        return out
    d = np.abs(np.diff(r - s)).astype(np.float64)  # |D(i-1, i)|, transit-time differences
    out[1:] = lfilter([1.0 / 16.0], [1.0, -15.0 / 16.0], d)
    return out


def rfc3550_jitter_final(t_pre_ns: np.ndarray, t_post_ns: np.ndarray) -> float:
    """The jitter estimate after the last packet (what an RTP receiver report would carry)."""
    j = rfc3550_jitter(t_pre_ns, t_post_ns)
    return float(j[-1]) if j.size else math.nan


def latency_stddev(latency_ns: np.ndarray) -> float:
    """Population standard deviation of the latencies (ns)."""
    lat = np.asarray(latency_ns)
    if lat.size == 0:
        return math.nan
    mean = lat.mean(dtype=np.float64)
    d = lat.astype(np.float64) - mean
    return math.sqrt(float(np.dot(d, d)) / lat.size)


# ---- worst N --------------------------------------------------------------------------------------


def _top_positions(lat: np.ndarray, n: int) -> np.ndarray:
    """Positions of the n largest values; ties at the threshold go to the earliest positions.
    Result ordered by latency descending, then position ascending."""
    if n <= 0 or lat.size == 0:
        return np.zeros(0, dtype=np.int64)
    if lat.size > n:
        thr = np.partition(lat, lat.size - n)[lat.size - n]
        above = np.flatnonzero(lat > thr)
        at = np.flatnonzero(lat == thr)[: n - above.size]
        pos = np.concatenate([above, at])
    else:
        pos = np.arange(lat.size)
    order = np.lexsort((pos, -lat[pos]))
    return pos[order]


class WorstN:
    """Streaming worst-N: feed chunks of (latency_ns, t_ns[, extra columns]); keeps the N largest
    latencies (ties: the earlier-fed packet wins). `result()` gives them latency-descending."""

    def __init__(self, n: int = 5000, extra_columns: Sequence[str] = ()) -> None:
        if n < 0:
            raise ValueError("n must be >= 0")
        self.n = n
        self.extra_columns = tuple(extra_columns)
        self._lat = np.zeros(0, dtype=np.int64)
        self._t = np.zeros(0, dtype=np.int64)
        self._seq = np.zeros(0, dtype=np.int64)
        self._extra = {c: np.zeros(0, dtype=np.int64) for c in self.extra_columns}
        self._fed = 0

    def update(self, latency_ns: np.ndarray, t_ns: np.ndarray, **extra: np.ndarray) -> None:
        lat = _int64(latency_ns, "latency_ns")
        t = _int64(t_ns, "t_ns")
        if lat.shape != t.shape:
            raise ValueError(f"latency_ns ({lat.size}) and t_ns ({t.size}) differ in length")
        if set(extra) != set(self.extra_columns):
            raise ValueError(f"extra columns {sorted(extra)} differ from {sorted(self.extra_columns)}")
        seq = np.arange(self._fed, self._fed + lat.size, dtype=np.int64)
        self._fed += lat.size
        # reduce the chunk to its own top n first (O(chunk)); every chunk packet comes after every
        # kept one, so the chunk's earliest-tie choice is the global one too
        extra = {k: _int64(v, k) for k, v in extra.items()}
        for k, v in extra.items():
            if v.shape != lat.shape:
                raise ValueError(f"extra column {k} ({v.size}) and latency_ns ({lat.size}) differ in length")
        if lat.size > self.n:
            keep = np.sort(_top_positions(lat, self.n))
            lat, t, seq = lat[keep], t[keep], seq[keep]
            extra = {k: v[keep] for k, v in extra.items()}
        all_lat = np.concatenate([self._lat, lat])
        all_seq = np.concatenate([self._seq, seq])
        # order candidates by feed sequence so ties keep the earliest packets
        by_seq = np.argsort(all_seq, kind="stable")
        all_lat, all_seq = all_lat[by_seq], all_seq[by_seq]
        all_t = np.concatenate([self._t, t])[by_seq]
        all_extra = {k: np.concatenate([self._extra[k], extra[k]])[by_seq] for k in self.extra_columns}
        pos = _top_positions(all_lat, self.n)
        self._lat, self._t, self._seq = all_lat[pos], all_t[pos], all_seq[pos]
        self._extra = {k: v[pos] for k, v in all_extra.items()}

    def result(self) -> pd.DataFrame:
        cols = {"latency_ns": self._lat.copy(), "t_ns": self._t.copy()}
        cols.update({k: v.copy() for k, v in self._extra.items()})
        return pd.DataFrame(cols)


def worst_n(
    latency_ns: np.ndarray, t_ns: np.ndarray, n: int = 5000, extra: Mapping[str, np.ndarray] | None = None
) -> pd.DataFrame:
    """The n largest latencies with their times, latency-descending (ties: earlier position
    first); columns latency_ns, t_ns and any `extra` columns (e.g. t_pre_ns, t_post_ns)."""
    w = WorstN(n, tuple(extra or {}))
    w.update(latency_ns, t_ns, **(extra or {}))
    return w.result()


# ---- per-interval histograms ----------------------------------------------------------------------


class IntervalRecorder:
    """One HdrHistogram per interval of `interval_ns` starting at `origin_ns` (default: the
    first time seen), fed in chunks of (t_ns, latency_ns) in any order. A packet before the origin
    falls into an interval of negative start. A call is recorded whole or not at all."""

    def __init__(
        self,
        interval_ns: int = NS_PER_S,
        origin_ns: int | None = None,
        lowest_discernible_value: int = 1,
        highest_trackable_value: int = 3_600_000_000_000,
        significant_figures: int = 3,
    ) -> None:
        if interval_ns <= 0:
            raise ValueError("interval_ns must be > 0")
        self.interval_ns = int(interval_ns)
        self.origin_ns = origin_ns
        self._layout = (lowest_discernible_value, highest_trackable_value, significant_figures)
        self._hists: dict[int, HdrHistogram] = {}
        self._next_key: int | None = None  # first interval not yet popped (after pop_completed)

    def record(self, t_ns: np.ndarray, latency_ns: np.ndarray) -> None:
        t = _int64(t_ns, "t_ns")
        lat = _int64(latency_ns, "latency_ns")
        if t.shape != lat.shape:
            raise ValueError(f"t_ns ({t.size}) and latency_ns ({lat.size}) differ in length")
        if t.size == 0:
            return
        top = layout_for(*self._layout).max_trackable_value
        bad = (lat < 0) | (lat > top)
        if bad.any():  # checked for the whole call first: no interval records part of a refused call
            pos = int(np.flatnonzero(bad)[0])
            v = int(lat[pos])
            raise ValueError(f"latency_ns[{pos}] = {v} cannot be recorded: "
                             + ("negative" if v < 0 else f"above the highest trackable value {top}")
                             + f" ({int(bad.sum())} such values in this call; nothing of this call was recorded)")
        if self.origin_ns is None:
            self.origin_ns = int(t.min())
        b = np.floor_divide(t - self.origin_ns, self.interval_ns)
        if self._next_key is not None:
            late = b < self._next_key
            if late.any():
                pos = int(np.flatnonzero(late)[0])
                raise ValueError(
                    f"t_ns[{pos}] = {int(t[pos])} falls into an interval already popped by pop_completed "
                    f"({int(late.sum())} such packets; nothing of this call was recorded): pop with a "
                    f"larger lag behind the newest time")
        if b.size > 1 and np.all(b[1:] >= b[:-1]):
            order = None
            bs = b
        else:
            order = np.argsort(b, kind="stable")
            bs = b[order]
        lat_sorted = lat if order is None else lat[order]
        starts = np.flatnonzero(np.concatenate([[True], bs[1:] != bs[:-1]]))
        ends = np.append(starts[1:], bs.size)
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            k = int(bs[s])
            h = self._hists.get(k)
            if h is None:
                h = self._hists[k] = HdrHistogram(*self._layout)
            h.record(lat_sorted[s:e])

    def intervals(self, include_empty: bool = True) -> list[Interval]:
        """Intervals in time order; start_s relative to origin_ns (write the log with
        start_time = origin_ns / 1e9). Empty intervals between the first and last are included
        as empty histograms unless include_empty is False."""
        if not self._hists:
            return []
        keys = sorted(self._hists)
        if include_empty:
            first = keys[0] if self._next_key is None else min(self._next_key, keys[0])
            keys = list(range(first, keys[-1] + 1))
        length_s = self.interval_ns / NS_PER_S
        out = []
        for k in keys:
            h = self._hists.get(k) or HdrHistogram(*self._layout)
            out.append(Interval(start_s=k * length_s, length_s=length_s, tag=None, max_s=None, histogram=h))
        return out

    def pop_completed(self, before_ns: int, include_empty: bool = True) -> list[Interval]:
        """Remove and return the intervals that end at or before `before_ns` (absolute ns), in
        time order -- for streaming: write them out (HlogWriter) once no later packet can fall
        into them, so memory stays bounded for long captures. Empty intervals between popped
        ones (and up to the next held one) are returned as empty histograms when
        include_empty."""
        if self.origin_ns is None or not self._hists:
            return []
        last_done = (int(before_ns) - self.origin_ns) // self.interval_ns - 1
        keys = sorted(k for k in self._hists if k <= last_done)
        if not keys:
            return []
        if include_empty:
            start = self._next_key if self._next_key is not None else keys[0]
            keys = list(range(min(start, keys[0]), keys[-1] + 1))
        length_s = self.interval_ns / NS_PER_S
        out = []
        for k in keys:
            h = self._hists.pop(k, None) or HdrHistogram(*self._layout)
            out.append(Interval(start_s=k * length_s, length_s=length_s, tag=None, max_s=None, histogram=h))
        self._next_key = keys[-1] + 1
        return out

    def total(self) -> HdrHistogram:
        acc = HdrHistogram(*self._layout)
        for h in self._hists.values():
            acc.merge(h)
        return acc


def interval_histograms(
    t_ns: np.ndarray,
    latency_ns: np.ndarray,
    interval_ns: int = NS_PER_S,
    origin_ns: int | None = None,
    include_empty: bool = True,
    **layout: int,
) -> list[Interval]:
    """Per-interval HdrHistograms of latency_ns by t_ns (see IntervalRecorder)."""
    rec = IntervalRecorder(interval_ns, origin_ns, **layout)
    rec.record(t_ns, latency_ns)
    return rec.intervals(include_empty)


def interval_summary(intervals: Sequence[Interval], percentiles: Sequence[float] = (50, 99, 99.9)) -> pd.DataFrame:
    """One row per interval: start_s, length_s, count, min, max, mean and the given percentiles
    (HdrHistogram semantics; min/max/mean exact for recorded histograms). Empty intervals have
    count 0 and NaN statistics."""
    rows = []
    for iv in intervals:
        h = iv.histogram
        row: dict[str, float] = {"start_s": iv.start_s, "length_s": iv.length_s, "count": h.total_count}
        if h.total_count:
            row.update(min=h.min, max=h.max, mean=h.mean)
            row.update({f"p{p:g}": v for p, v in h.percentiles(percentiles).items()})
        else:
            row.update(min=math.nan, max=math.nan, mean=math.nan)
            row.update({f"p{p:g}": math.nan for p in percentiles})
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = [
    "rfc3550_jitter",
    "rfc3550_jitter_final",
    "latency_stddev",
    "worst_n",
    "WorstN",
    "IntervalRecorder",
    "interval_histograms",
    "interval_summary",
]
