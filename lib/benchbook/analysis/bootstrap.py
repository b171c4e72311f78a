"""Seeded bootstrap over runs for the difference between two sets of runs (statistics-rules V4).

The difference of two arms A and B is Delta on one of two scales:

    "log-ratio"   Delta = ln(median(B) / median(A))   latencies, rates: scale-free, symmetric (FDA's +-ln 1.25)
    "difference"  Delta = median(B) - median(A)        bounded statistics (Jain's index, shares)

where the medians are over the per-run values (one number per run). Its interval comes from
scipy.stats.bootstrap with the two arms as independent samples: each resample draws r_A runs of A and r_B
runs of B with replacement, 10,000 resamples (``RESAMPLES``), from a seeded generator (the seed is returned
and recorded). Intervals are the **percentile** intervals of that bootstrap distribution, the 90 % and the
95 % from the same resamples.

Why percentile and not BCa: the bootstrap distribution of a median of a handful of runs is discrete, with a
large mass exactly at the sample median. BCa's bias correction z0 = Phi^-1(share of resamples below the
estimate) jumps with those ties, and its acceleration comes from the jackknife, which is inconsistent for the
median (Efron 1982). The percentile interval needs neither, and it respects transformations (the interval of
the ratio is exp of the interval of the log ratio).

Too few runs: a bootstrap over 3 runs per arm has only 10 distinct resampled medians per arm and looks
decisive when it is not. Below ``MIN_RUNS`` runs in either arm (6: the fewest for which the order-statistic
interval of a median reaches 95 %, :data:`benchbook.analysis.intervals.MIN_RUNS`) no interval is computed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

from benchbook.analysis.intervals import MIN_RUNS, NoInterval

RESAMPLES = 10_000
DEFAULT_SEED = 0
LEVELS = (0.90, 0.95)
Scale = Literal["log-ratio", "difference"]
SCALES: tuple[Scale, ...] = ("log-ratio", "difference")
_BATCH_ELEMENTS = 1 << 22  # resampled values held at once (memory bound of scipy's vectorised resampling)


def median(x: Any, axis: int = -1) -> Any:
    """np.median of finite values along ``axis`` (the mean of the middle two for an even count), by a full sort:
    for the few runs of an arm about five times faster than np.median's partition and NaN check, which
    dominate a bootstrap's time."""
    s = np.sort(np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1), axis=-1)
    n = s.shape[-1]
    return s[..., n // 2] if n % 2 else (s[..., n // 2 - 1] + s[..., n // 2]) / 2


def delta_of_medians(a: Any, b: Any, scale: Scale, axis: int = -1) -> Any:
    """Delta between the medians of the per-run values along ``axis``: ln(med B / med A) or med B - med A."""
    ma = median(a, axis=axis)
    mb = median(b, axis=axis)
    if scale == "log-ratio":
        return np.log(mb / ma)
    if scale == "difference":
        return mb - ma
    raise ValueError(f"scale {scale!r}: expected one of {', '.join(SCALES)}")


def check_arm(values: Any, scale: Scale, what: str) -> np.ndarray:
    """Per-run values as a float array (batch dimensions first, runs last); a log ratio needs values > 0."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"{what}: no runs")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{what}: a per-run value is not finite")
    if scale == "log-ratio" and np.any(x <= 0):
        raise ValueError(f"{what}: a log ratio of medians needs per-run values > 0 (got {float(x.min())!r}); "
                         "compare such a statistic as a difference")
    return x


def bootstrap_distribution(a: Any, b: Any, scale: Scale = "log-ratio", resamples: int = RESAMPLES,
                           seed: int = DEFAULT_SEED) -> tuple[Any, np.ndarray]:
    """(Delta of the data, the bootstrap distribution of Delta): runs resampled within each arm. ``a`` and ``b``
    may carry leading batch dimensions (one data set each, runs on the last axis): the distribution then has
    shape batch + (resamples,), one independent bootstrap per data set from one generator."""
    x = check_arm(a, scale, "arm A")
    y = check_arm(b, scale, "arm B")
    if resamples < 1:
        raise ValueError(f"resamples {resamples!r}: expected >= 1")

    def statistic(xa: np.ndarray, xb: np.ndarray, axis: int = -1) -> np.ndarray:
        return delta_of_medians(xa, xb, scale, axis=axis)

    cells = max(1, int(np.prod(np.broadcast_shapes(x.shape[:-1], y.shape[:-1]), dtype=np.int64)))
    batch = max(1, min(resamples, _BATCH_ELEMENTS // (cells * max(x.shape[-1], y.shape[-1]))))
    res = stats.bootstrap((x, y), statistic, n_resamples=resamples, batch=batch, vectorized=True, axis=-1,
                          paired=False, confidence_level=LEVELS[-1], method="percentile",
                          rng=np.random.default_rng(seed))
    return statistic(x, y), np.asarray(res.bootstrap_distribution)


def percentile_interval(distribution: np.ndarray, level: float) -> tuple[Any, Any]:
    """The equal-tailed percentile interval of a bootstrap distribution (last axis), as scipy's "percentile"
    method computes it."""
    tail = (1.0 - level) / 2.0
    lo, hi = np.percentile(distribution, [100.0 * tail, 100.0 * (1.0 - tail)], axis=-1)
    return lo, hi


@dataclass(frozen=True)
class DeltaIntervals:
    """Delta of two arms with its bootstrap percentile intervals (level -> (low, high))."""

    estimate: float
    intervals: dict[float, tuple[float, float]]
    scale: Scale
    runs_a: int
    runs_b: int
    resamples: int
    seed: int
    distribution: np.ndarray = field(repr=False, compare=False)

    ok = True

    @property
    def method(self) -> str:
        what = "ln(median B / median A)" if self.scale == "log-ratio" else "median B - median A"
        return (f"bootstrap over runs ({self.runs_a} vs {self.runs_b}; percentile intervals, {self.resamples} "
                f"resamples, seed {self.seed}) of Delta = {what}")

    def interval(self, level: float) -> tuple[float, float]:
        return self.intervals[level]

    @property
    def standard_error(self) -> float:
        """The bootstrap standard error of Delta (standard deviation of the distribution)."""
        return float(np.std(self.distribution, ddof=1))

    def share_below(self, x: float, inclusive: bool = True) -> float:
        d = self.distribution
        return float(np.mean(d <= x) if inclusive else np.mean(d < x))

    def share_above(self, x: float, inclusive: bool = True) -> float:
        d = self.distribution
        return float(np.mean(d >= x) if inclusive else np.mean(d > x))


def bootstrap_delta(a: Any, b: Any, scale: Scale = "log-ratio", levels: tuple[float, ...] = LEVELS,
                    resamples: int = RESAMPLES, seed: int = DEFAULT_SEED,
                    min_runs: int = MIN_RUNS) -> DeltaIntervals | NoInterval:
    """Delta between the per-run values of two arms and its percentile intervals at ``levels``; a NoInterval
    (with ``min_runs`` as the runs needed) when either arm has fewer than ``min_runs`` runs."""
    x = check_arm(a, scale, "arm A").reshape(-1)
    y = check_arm(b, scale, "arm B").reshape(-1)
    if min(x.size, y.size) < min_runs:
        return NoInterval(f"{x.size} vs {y.size} runs: a bootstrap over fewer than {min_runs} runs per arm looks "
                          f"decisive and is not (its few distinct resampled medians under-cover); no interval",
                          min(x.size, y.size), min_runs, max(levels),
                          f"bootstrap over runs, refused below {min_runs} runs per arm")
    est, dist = bootstrap_distribution(x, y, scale, resamples, seed)
    intervals = {}
    for level in levels:
        lo, hi = percentile_interval(dist, level)
        intervals[level] = (float(lo), float(hi))
    return DeltaIntervals(float(est), intervals, scale, x.size, y.size, resamples, seed, dist)


__all__ = ["DEFAULT_SEED", "LEVELS", "RESAMPLES", "SCALES", "DeltaIntervals", "Scale", "bootstrap_delta",
           "bootstrap_distribution", "check_arm", "delta_of_medians", "median", "percentile_interval"]
