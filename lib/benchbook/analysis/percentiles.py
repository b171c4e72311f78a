"""Discrete percentiles: one rank rule for every exact percentile benchbook computes.

The discrete p-th percentile of N samples is the smallest sample with at least p % of the samples
at or below it: the sample of 1-based rank ceil(p/100 * N), at least 1. ``p`` is taken as the
decimal its shortest repr shows (99.9 means 999/1000), so the rank is exact where binary floating
point is not (99.9/100 * 1000 is 999.0000000000001 in floats; the rank is 999).

HdrHistogram's nearest-rank rule (``nearest_rank``) is kept for interoperability with the C and
Python HdrHistogram implementations only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

import numpy as np

# The percentiles a latency summary reports, in percent as exact decimals: `benchbook latency`'s and
# `benchbook hist --json`'s summary.json, merged pair logs, the cgroup-latency sweep's points and the published
# evaluator runs (each reporting only what its sample resolves, benchbook.analysis.resolvability).
REPORTED_PERCENTILES = ("50", "90", "99", "99.9", "99.99", "99.999")

def discrete_rank(percentile: float, total: int) -> int:
    """Rank (1-based) of the discrete p-th percentile among ``total`` samples: ceil(p/100*N), >= 1.

    0 for an empty sample. ``percentile`` is clamped to [0, 100]; NaN is an error."""
    if total <= 0:
        return 0
    p = Decimal(repr(float(percentile)))
    if p.is_nan():
        raise ValueError("percentile is NaN")
    p = min(max(p, Decimal(0)), Decimal(100))
    r = math.ceil(p * total / 100)
    return max(1, min(int(r), total))


def nearest_rank(percentile: float, total: int) -> int:
    """Target count as HdrHistogram_c and the Python ``hdrh`` package compute it."""
    p = min(float(percentile), 100.0)
    return max(int((p * total / 100) + 0.5), 1)


def discrete_percentiles(sorted_values: np.ndarray, percentiles: Sequence[float]) -> dict[float, int | None]:
    """Exact discrete percentile per p (keys as given) of an ascending array; None when empty."""
    n = len(sorted_values)
    return {p: (int(sorted_values[discrete_rank(p, n) - 1]) if n else None) for p in percentiles}


def exact_ladder(values: np.ndarray, ticks_per_decade: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """(percent, value) on a log grid of 1/(1-p), from p = 0 up to p = (N-1)/N, the last percentile
    below 100 % that N samples resolve (exact): the points of an HDR percentile plot."""
    srt = np.sort(np.asarray(values))
    n = len(srt)
    if n == 0:
        return np.array([], dtype=np.float64), np.array([], dtype=srt.dtype)
    max_x = float(n)
    decades = max(1.0, math.log10(max_x))
    xs = np.unique(np.concatenate([np.logspace(0, math.log10(max_x), int(ticks_per_decade * decades) + 1), [max_x]]))
    # the last logspace point and N itself may round to the same percent: keep each percent once
    percents = sorted({float(p) for p in (100.0 * (1.0 - 1.0 / xs))})
    ranks = np.array([discrete_rank(p, n) for p in percents], dtype=np.int64)
    return np.array(percents), srt[ranks - 1]


def ladder_value(percent: np.ndarray, values: np.ndarray, p: float) -> int:
    """Discrete percentile read off a ladder (ascending percent in 0..100, with its values): the
    value at the smallest ladder percentile >= p; the last value when p is above the ladder."""
    pct = np.asarray(percent, dtype=np.float64)
    if not len(pct):
        raise ValueError("empty percentile ladder")
    idx = int(np.searchsorted(pct, float(p) - 1e-12, side="left"))
    return int(values[min(idx, len(pct) - 1)])


__all__ = ["REPORTED_PERCENTILES", "discrete_rank", "nearest_rank", "discrete_percentiles", "exact_ladder",
           "ladder_value"]
