"""Confidence intervals across runs (statistics-rules V3; docs/statistics.md has the formulas and sources).

Every function takes one number per run -- a run's p99, its goodput, its Jain index -- never the packets of a
run: the run, not the packet, is the unit of inference (V1).

- :func:`quantile_interval` (:func:`median_interval`): distribution-free, from exact order statistics. The
  ranks j < k minimise k - j subject to P(j <= K <= k - 1) >= 1 - alpha with K ~ Bin(r, q), as asv's
  ``statistics.py``; for r above ``EXACT_RANKS_LIMIT``, Le Boudec's normal-approximation ranks, widened until
  the exact binomial coverage holds. The achieved coverage is returned. With ``tails="equal"`` the ranks are
  equal-tailed instead: each end misses the quantile with probability at most alpha/2 (P(K <= j - 1) and
  P(K >= k) each <= alpha/2), which a one-sided decision needs (TOST, directional claims); the shortest
  interval can put more than alpha/2 on one side (7 runs at 90 %: [X(1), X(6)], one tail 8/128).
- :func:`t_interval`: Student t for the mean, only with at least ``MIN_RUNS`` runs, only when Shapiro-Wilk
  does not reject normality at ``SHAPIRO_ALPHA``, and only when the interval stays inside the statistic's
  :class:`Range` (a t-interval that leaves it shows the normal model does not fit: no interval then).
- :func:`proportion_interval`: Clopper-Pearson (exact) or Wilson for "k of n" (scipy's binomtest).

With too few runs for the requested confidence the answer is a :class:`NoInterval` that names the smallest
run count that would give one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats

from benchbook.errors import BenchbookError

Tails = Literal["shortest", "equal"]

CONFIDENCE = 0.95
SHAPIRO_ALPHA = 0.05     # t-intervals only when Shapiro-Wilk's p-value is at least this
EXACT_RANKS_LIMIT = 1000  # above this many runs, Le Boudec's ranks (then checked against the exact coverage)
_EPS = 1e-12              # binomial sums are floats: a coverage this close to the level counts as reaching it


class RangeError(BenchbookError, ValueError):
    """A value outside the range its statistic can take."""


@dataclass(frozen=True)
class Range:
    """The values a statistic can take. Data outside it are an error; intervals are checked against it
    (:meth:`holds`) or clipped to it (:meth:`clip`)."""

    low: float = -math.inf
    high: float = math.inf
    name: str = "any real number"

    def check(self, values: Any, what: str = "value") -> np.ndarray:
        """``values`` as a float array; RangeError naming the first value outside the range (or not finite)."""
        x = np.asarray(values, dtype=np.float64).reshape(-1)
        bad = ~np.isfinite(x) | (x < self.low) | (x > self.high)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RangeError(f"{what} {i + 1} of {x.size} is {float(x[i])!r}, outside the range of the statistic "
                             f"({self.name})")
        return x

    def holds(self, low: float, high: float) -> bool:
        return self.low <= low and high <= self.high

    def clip(self, low: float, high: float) -> tuple[float, float]:
        return max(low, self.low), min(high, self.high)


REAL = Range()
RATE = Range(0.0, math.inf, "rates and latencies are >= 0")
SHARE = Range(0.0, 1.0, "shares are in [0, 1]")


def jain_range(flows: int) -> Range:
    """Jain's index of ``flows`` flows lies in [1/flows, 1]."""
    if flows < 1:
        raise ValueError(f"flows {flows!r}: Jain's index needs at least one flow")
    return Range(1.0 / flows, 1.0, f"Jain's index of {flows} flows is in [1/{flows}, 1]")


@dataclass(frozen=True)
class Interval:
    """A confidence interval: ``confidence`` is the level asked for, ``coverage`` the level achieved where it is
    known exactly (order statistics: the binomial sum), else None."""

    low: float
    high: float
    estimate: float
    confidence: float
    coverage: float | None
    runs: int
    method: str

    ok = True

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def as_dict(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high, "estimate": self.estimate, "confidence": self.confidence,
                "coverage": self.coverage, "runs": self.runs, "method": self.method}


@dataclass(frozen=True)
class NoInterval:
    """No interval: ``reason`` says why; ``runs_needed`` is the smallest run count that would give one (None when
    more runs would not help)."""

    reason: str
    runs: int
    runs_needed: int | None
    confidence: float
    method: str

    ok = False

    def as_dict(self) -> dict[str, Any]:
        return {"low": None, "high": None, "reason": self.reason, "runs": self.runs,
                "runs_needed": self.runs_needed, "confidence": self.confidence, "method": self.method}


def level_text(confidence: float) -> str:
    """0.95 -> "95 %"."""
    return f"{confidence * 100:g} %"


def _check_level(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence {confidence!r}: expected a level between 0 and 1, e.g. 0.95")


def _check_q(q: float) -> None:
    if not 0.0 < q < 1.0:
        raise ValueError(f"quantile {q!r}: expected 0 < q < 1 (0.5 is the median)")


def rank_coverage(runs: int, q: float, j: int, k: int) -> float:
    """P(X(j) <= x_q <= X(k)) for continuous data: P(j <= K <= k - 1), K ~ Bin(runs, q); ranks 1-based."""
    return float(stats.binom.cdf(k - 1, runs, q) - stats.binom.cdf(j - 1, runs, q))


def order_statistic_ranks(runs: int, q: float = 0.5, confidence: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """The 1-based ranks (j, k) of the shortest order-statistic interval [X(j), X(k)] for the q-quantile of
    ``runs`` values whose coverage reaches ``confidence``, and that coverage; None when even [X(1), X(runs)]
    falls short. Among equally short intervals: the highest coverage, then the lower ranks. (asv's rule takes the
    most central next; pairs of equal coverage are mirror images about the median, equally central, and for any
    other quantile two pairs of one width sum to the same coverage only by coincidence, so centrality does not
    decide.)"""
    _check_q(q)
    _check_level(confidence)
    if runs < 2:
        return None
    if runs > EXACT_RANKS_LIMIT:
        return _le_boudec_ranks(runs, q, confidence)
    cdf = np.concatenate([[0.0], stats.binom.cdf(np.arange(0, runs + 1), runs, q)])  # cdf[i] = P(K <= i - 1)
    for width in range(1, runs):
        j = np.arange(1, runs - width + 1)
        k = j + width
        cov = cdf[k] - cdf[j]  # P(j <= K <= k - 1) = P(K <= k - 1) - P(K <= j - 1)
        good = np.flatnonzero(cov >= confidence - _EPS)
        if good.size:
            # the highest coverage; coverages within _EPS of it are a tie (mirror-image pairs of the median differ
            # only in the last bits), which the lowest ranks win (j ascends along good)
            best = good[cov[good] >= cov[good].max() - _EPS][0]
            return int(j[best]), int(k[best]), float(cov[best])
    return None


def equal_tailed_ranks(runs: int, q: float = 0.5, confidence: float = CONFIDENCE) -> tuple[int, int, float] | None:
    """The 1-based ranks (j, k) of the equal-tailed order-statistic interval [X(j), X(k)] for the q-quantile: the
    largest j with P(X(j) > x_q) = P(K <= j - 1) <= (1 - confidence) / 2 and the smallest k with
    P(X(k) < x_q) = P(K >= k) <= (1 - confidence) / 2, K ~ Bin(runs, q), and its coverage P(j <= K <= k - 1);
    None when even X(1) or X(runs) misses by more than that."""
    _check_q(q)
    _check_level(confidence)
    if runs < 2:
        return None
    tail = (1.0 - confidence) / 2 + _EPS
    cdf = stats.binom.cdf(np.arange(0, runs + 1), runs, q)      # cdf[i] = P(K <= i)
    below = np.flatnonzero(cdf[:runs] <= tail)                   # j - 1 candidates (j <= runs)
    above = np.flatnonzero(1.0 - cdf[:runs] <= tail)             # k - 1 candidates: P(K >= k) = 1 - cdf[k - 1]
    if below.size == 0 or above.size == 0:
        return None
    j, k = int(below[-1]) + 1, int(above[0]) + 1
    if j >= k:
        return None
    return j, k, rank_coverage(runs, q, j, k)


def _le_boudec_ranks(runs: int, q: float, confidence: float) -> tuple[int, int, float] | None:
    """Le Boudec's ranks for large r, floor(rq - z*sqrt(rq(1-q))) and ceil(1 + rq + z*sqrt(rq(1-q))) (for the
    median: (r - z*sqrt(r))/2 and 1 + (r + z*sqrt(r))/2), widened one rank at a time until the exact binomial
    coverage reaches the level."""
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    half = z * math.sqrt(runs * q * (1 - q))
    j = max(1, math.floor(runs * q - half))
    k = min(runs, math.ceil(1 + runs * q + half))
    cov = rank_coverage(runs, q, j, k)
    while cov < confidence - _EPS and (j > 1 or k < runs):
        j, k = max(1, j - 1), min(runs, k + 1)
        cov = rank_coverage(runs, q, j, k)
    return (j, k, cov) if cov >= confidence - _EPS else None


def ranks_for(runs: int, q: float, confidence: float, tails: Tails) -> tuple[int, int, float] | None:
    """order_statistic_ranks (``tails="shortest"``) or equal_tailed_ranks (``tails="equal"``)."""
    if tails == "equal":
        return equal_tailed_ranks(runs, q, confidence)
    if tails == "shortest":
        return order_statistic_ranks(runs, q, confidence)
    raise ValueError(f"tails {tails!r}: expected 'shortest' or 'equal'")


def runs_needed_for_quantile(q: float = 0.5, confidence: float = CONFIDENCE) -> int:
    """The smallest run count whose widest interval [X(1), X(r)] reaches ``confidence`` for the q-quantile:
    1 - q^r - (1-q)^r >= confidence (6 for the median at 95 %)."""
    _check_q(q)
    _check_level(confidence)
    r = 2
    while 1.0 - q**r - (1.0 - q) ** r < confidence - _EPS:
        r += 1
    return r


MIN_RUNS = runs_needed_for_quantile(0.5, CONFIDENCE)  # 6: no decisive answer from fewer runs per arm


def _estimate(x: np.ndarray, q: float) -> float:
    """The sample median (mean of the middle two for even r), or the discrete q-quantile (rank ceil(q r))."""
    if q == 0.5:
        return float(np.median(x))
    s = np.sort(x)
    return float(s[max(1, math.ceil(q * s.size - 1e-12)) - 1])


def quantile_interval(values: Any, q: float = 0.5, confidence: float = CONFIDENCE,
                      value_range: Range = REAL, tails: Tails = "shortest") -> Interval | NoInterval:
    """Distribution-free interval for the q-quantile of the per-run values (exact order statistics; the shortest
    ranks, or equal-tailed ones for one-sided decisions); a NoInterval naming the runs needed when there are too
    few."""
    x = value_range.check(values, "run")
    method = f"order statistics (binomial rule{', equal tails' if tails == 'equal' else ''}), q = {q:g}"
    ranks = ranks_for(x.size, q, confidence, tails)
    if ranks is None:
        need = runs_needed_for_quantile(q, confidence)
        return NoInterval(f"{x.size} run(s): an order-statistic interval for the {q:g}-quantile at "
                          f"{level_text(confidence)} needs at least {need} runs", x.size, need, confidence, method)
    j, k, cov = ranks
    s = np.sort(x)
    lo, hi = value_range.clip(float(s[j - 1]), float(s[k - 1]))
    return Interval(lo, hi, _estimate(x, q), confidence, cov, x.size, f"{method}: [X({j}), X({k})] of {x.size}")


def median_interval(values: Any, confidence: float = CONFIDENCE, value_range: Range = REAL,
                    tails: Tails = "shortest") -> Interval | NoInterval:
    return quantile_interval(values, 0.5, confidence, value_range, tails)


@dataclass(frozen=True)
class NormalityCheck:
    statistic: float
    pvalue: float
    alpha: float

    @property
    def ok(self) -> bool:
        """Normality not rejected (Shapiro-Wilk p >= alpha). Weak evidence with few runs, never proof."""
        return self.pvalue >= self.alpha


def normality_check(values: Any, alpha: float = SHAPIRO_ALPHA) -> NormalityCheck:
    """Shapiro-Wilk (scipy.stats.shapiro) on the per-run values (at least 3)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size < 3:
        raise ValueError(f"Shapiro-Wilk needs at least 3 runs, got {x.size}")
    if np.ptp(x) == 0:
        return NormalityCheck(1.0, 1.0, alpha)
    res = stats.shapiro(x)
    return NormalityCheck(float(res.statistic), float(res.pvalue), alpha)


def t_interval(values: Any, confidence: float = CONFIDENCE, value_range: Range = REAL,
               normality_alpha: float = SHAPIRO_ALPHA, min_runs: int = MIN_RUNS) -> Interval | NoInterval:
    """Student-t interval for the mean of the per-run values, or a NoInterval when there are fewer than
    ``min_runs`` runs, when Shapiro-Wilk rejects normality (p < ``normality_alpha``), or when the interval would
    leave ``value_range`` (e.g. a negative RTT bound: the normal model does not fit; use quantile_interval)."""
    _check_level(confidence)
    x = value_range.check(values, "run")
    method = f"Student t of the mean after Shapiro-Wilk (p >= {normality_alpha:g})"
    if x.size < min_runs:
        return NoInterval(f"{x.size} run(s): a t-interval needs at least {min_runs} runs (with fewer, Shapiro-Wilk "
                          f"rejects almost nothing, so normality cannot be checked)", x.size, min_runs, confidence,
                          method)
    check = normality_check(x, normality_alpha)
    if not check.ok:
        return NoInterval(f"Shapiro-Wilk rejects normality of the {x.size} runs (W = {check.statistic:.3f}, "
                          f"p = {check.pvalue:.3g} < {normality_alpha:g}): no t-interval; use the order-statistic "
                          f"interval of the median", x.size, None, confidence, method)
    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    lo, hi = mean - half, mean + half
    if not value_range.holds(lo, hi):
        return NoInterval(f"the t-interval [{lo:.6g}, {hi:.6g}] leaves the range of the statistic "
                          f"({value_range.name}): the normal model does not fit these {x.size} runs; use the "
                          f"order-statistic interval of the median", x.size, None, confidence, method)
    return Interval(lo, hi, mean, confidence, None, x.size, f"{method}: p = {check.pvalue:.3g}")


def proportion_interval(successes: int, trials: int, confidence: float = CONFIDENCE,
                        method: Literal["exact", "wilson"] = "exact") -> Interval:
    """Interval for a proportion "k of n" (e.g. 4 of 6 epochs): Clopper-Pearson ("exact", coverage >= the level
    for every true proportion) or Wilson's score interval (scipy.stats.binomtest)."""
    _check_level(confidence)
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"{successes} of {trials}: expected 0 <= k <= n and n >= 1")
    if method not in ("exact", "wilson"):
        raise ValueError(f"method {method!r}: expected 'exact' (Clopper-Pearson) or 'wilson'")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method=method)
    lo, hi = SHARE.clip(float(ci.low), float(ci.high))
    name = "Clopper-Pearson (exact)" if method == "exact" else "Wilson score"
    return Interval(lo, hi, successes / trials, confidence, None, int(trials),
                    f"{name} interval for {successes} of {trials}")


__all__ = ["CONFIDENCE", "EXACT_RANKS_LIMIT", "MIN_RUNS", "RATE", "REAL", "SHAPIRO_ALPHA", "SHARE", "Interval",
           "NoInterval", "NormalityCheck", "Range", "RangeError", "jain_range", "median_interval", "normality_check",
           "level_text", "order_statistic_ranks", "proportion_interval", "quantile_interval", "rank_coverage",
           "runs_needed_for_quantile", "t_interval"]
