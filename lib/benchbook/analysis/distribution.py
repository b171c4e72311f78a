"""Exact discrete distributions: (value, count) pairs with exact percentiles and moments.

Use this where the data are exact (a MoonGen histogram CSV, the per-packet latencies of a capture
pair that fit in memory); use :class:`benchbook.analysis.hdr.HdrHistogram` where values stream in
by the hundred million and 3 significant digits are enough.

Percentile definition (the *discrete percentile*): the smallest recorded value v such that at
least p percent of the samples are <= v, i.e. the value of rank ``max(1, ceil(p/100 * N))`` in
sorted order (p taken exactly as the decimal its repr shows). p = 0 gives the minimum, p = 100
the maximum. This is what HdrHistogram's value_at_percentile reports up to bucket resolution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from benchbook.analysis.hdr import (
    HdrHistogram,
    format_percentile_distribution,
    ladder_frame,
    percentile_iteration,
)
from benchbook.analysis.percentiles import discrete_rank

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class ExactDistribution:
    """An exact discrete distribution. `values` (int64 or float64, sorted, unique) with `counts`
    (int64, > 0). Duplicated values in the input are merged, zero counts dropped."""

    __slots__ = ("values", "counts", "_cum")

    def __init__(self, values: np.ndarray | Sequence[float], counts: np.ndarray | Sequence[int]) -> None:
        v = np.asarray(values)
        c = np.asarray(counts)
        if v.ndim != 1 or c.ndim != 1 or v.shape != c.shape:
            raise ValueError(f"values and counts must be 1-D arrays of equal length, got {v.shape} and {c.shape}")
        if v.dtype.kind in "iub":
            if v.dtype.kind == "u" and v.size and v.max() > np.iinfo(np.int64).max:
                raise ValueError("values exceed the int64 range")
            v = v.astype(np.int64)
        elif v.dtype.kind == "f":
            v = v.astype(np.float64)
            if v.size and not np.all(np.isfinite(v)):
                pos = int(np.flatnonzero(~np.isfinite(v))[0])
                raise ValueError(f"values[{pos}] = {v[pos]!r} is not finite")
        elif v.size == 0:
            v = v.astype(np.int64)
        else:
            raise TypeError(f"values must be numbers, got dtype {v.dtype}")
        if c.dtype.kind == "f":
            if c.size and np.any(c != np.floor(c)):
                pos = int(np.flatnonzero(c != np.floor(c))[0])
                raise ValueError(f"counts[{pos}] = {c[pos]!r} is not an integer")
        elif c.size and c.dtype.kind not in "iub":
            raise TypeError(f"counts must be integers, got dtype {c.dtype}")
        c = c.astype(np.int64)
        if c.size and c.min() < 0:
            pos = int(np.argmin(c))
            raise ValueError(f"counts[{pos}] = {int(c[pos])} is negative")
        keep = c > 0
        v, c = v[keep], c[keep]
        if v.size > 1 and not np.all(v[1:] > v[:-1]):
            uniq, inv = np.unique(v, return_inverse=True)
            c = _sum_by(inv, c, len(uniq))
            v = uniq
        self.values = v
        self.counts = c
        self._cum = np.cumsum(c)

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_samples(cls, samples: np.ndarray | Sequence[float]) -> ExactDistribution:
        s = np.asarray(samples)
        if s.ndim != 1:
            s = s.reshape(-1)
        if s.size == 0:
            return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        v, c = np.unique(s, return_counts=True)
        return cls(v, c)

    def merge(self, other: ExactDistribution) -> ExactDistribution:
        """A new distribution holding both (values of int and float kind combine as float)."""
        if self.count == 0:
            return ExactDistribution(other.values.copy(), other.counts.copy())
        if other.count == 0:
            return ExactDistribution(self.values.copy(), self.counts.copy())
        if self.values.dtype != other.values.dtype:
            v = np.concatenate([self.values.astype(np.float64), other.values.astype(np.float64)])
        else:
            v = np.concatenate([self.values, other.values])
        return ExactDistribution(v, np.concatenate([self.counts, other.counts]))

    def __add__(self, other: ExactDistribution) -> ExactDistribution:
        return self.merge(other)

    def recorded(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, counts) copies, as HdrHistogram.recorded() gives them."""
        return self.values.copy(), self.counts.copy()

    # ---- statistics -----------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return int(self._cum[-1]) if self._cum.size else 0

    @property
    def min(self) -> float | int:
        return self._scalar(self.values[0]) if self.values.size else math.nan

    @property
    def max(self) -> float | int:
        return self._scalar(self.values[-1]) if self.values.size else math.nan

    def _scalar(self, x) -> float | int:
        return int(x) if self.values.dtype.kind == "i" else float(x)

    @property
    def sum(self) -> float | int:
        """Sum of all samples: exact (Python int) for integer values; for float values the
        correctly rounded sum of the value*count products."""
        if self.values.dtype.kind == "i":
            vmax = int(np.abs(self.values).max()) if self.values.size else 0
            if vmax == 0 or vmax * self.count < (1 << 63):
                return int(np.dot(self.values, self.counts))
            return sum(int(v) * int(c) for v, c in zip(self.values.tolist(), self.counts.tolist(), strict=True))
        return math.fsum((self.values * self.counts.astype(np.float64)).tolist())

    @property
    def mean(self) -> float:
        n = self.count
        if n == 0:
            return math.nan
        s = self.sum
        return s / n

    @property
    def variance(self) -> float:
        """Population variance (divides by N)."""
        n = self.count
        if n == 0:
            return math.nan
        d = self.values.astype(np.float64) - self.mean
        return float(np.dot(d * d, self.counts.astype(np.float64))) / n

    @property
    def stddev(self) -> float:
        """Population standard deviation."""
        var = self.variance
        return math.sqrt(var) if not math.isnan(var) else math.nan

    def percentile(self, p: float) -> float | int:
        """Discrete percentile: the smallest value with at least p percent of samples <= it."""
        return self.percentiles([p])[p]

    def percentiles(self, ps: Sequence[float]) -> dict[float, float | int]:
        n = self.count
        out: dict[float, float | int] = {}
        for p in ps:
            if not 0.0 <= float(p) <= 100.0:
                raise ValueError(f"percentile {p} is outside 0..100")
            if n == 0:
                out[p] = math.nan
                continue
            idx = int(np.searchsorted(self._cum, discrete_rank(p, n), side="left"))
            out[p] = self._scalar(self.values[idx])
        return out

    def percentile_ladder(self, ticks_per_half: int = 5) -> pd.DataFrame:
        """HdrHistogram's percentile iteration over the exact values (same columns as
        HdrHistogram.percentile_ladder: percentile, value, count, inv_one_minus_p)."""
        rows = percentile_iteration(self._cum, self.count, ticks_per_half)
        return ladder_frame(rows, self.values, self._cum)

    def percentile_distribution(
        self, ticks_per_half: int = 5, value_scale: float = 1.0, csv: bool = False, value_decimals: int = 3
    ) -> str:
        """HistogramLogProcessor-style text of the exact distribution (exact mean, stddev, max)."""
        return format_percentile_distribution(
            self.percentile_ladder(ticks_per_half),
            significant_figures=value_decimals,
            mean=self.mean if self.count else 0.0,
            stddev=self.stddev if self.count else 0.0,
            max_value=self.max if self.count else 0.0,
            total=self.count,
            value_scale=value_scale,
            csv=csv,
        )

    def to_hdr(self, lowest_discernible_value: int = 1, highest_trackable_value: int | None = None,
               significant_figures: int = 3) -> HdrHistogram:
        """Record into an HdrHistogram (integer values only; floats must be integral)."""
        hi = highest_trackable_value or max(3_600_000_000_000, 2 * lowest_discernible_value,
                                            int(self.max) if self.count else 0)
        h = HdrHistogram(lowest_discernible_value, hi, significant_figures)
        if self.count:
            h.record(self.values, self.counts)
        return h

    def __repr__(self) -> str:
        return f"ExactDistribution(count={self.count}, unique={self.values.size}, min={self.min}, max={self.max})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExactDistribution):
            return NotImplemented
        return np.array_equal(self.values, other.values) and np.array_equal(self.counts, other.counts)


def _sum_by(inv: np.ndarray, c: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, inv, c)
    return out


__all__ = ["ExactDistribution"]
