"""Which percentiles one run's N samples can resolve (statistics-rules V2).

The p-quantile of N iid samples has a finite distribution-free upper confidence bound at level 1 - alpha/2
only when some order statistic lies above it with that probability: 1 - p^N >= 1 - alpha/2, that is

    N >= ln(alpha/2) / ln(p)                    (upper bound; p = 0.9999 needs 36,887 at alpha = 0.05)

and, for the lower bound of a low percentile, N >= ln(alpha/2) / ln(1 - p). A percentile is *resolvable*
at N when both hold (the equal-tailed two-sided interval [X(1), X(N)] then reaches the confidence). Below
that, the value at that rank is just the largest (or smallest) sample and is not printed as the percentile:
outputs say "not resolvable at N = ..." instead. The condition is necessary, not sufficient: it assumes iid
samples, which packets of one run are not (V1), so it is optimistic.

The minimum (p = 0) and the maximum (p = 100) are observed extremes, never resolvable percentiles: they are
reported as observed values, without an interval (V11).

Percentiles are given in percent (99.99) and taken as the decimal their shortest repr shows, so 1 - p is
exact (``percentiles.discrete_rank`` does the same).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

ALPHA = 0.05  # within-run resolution is judged for a 95 % two-sided interval


def _fraction(percent: float) -> tuple[Decimal, Decimal]:
    """(p, 1 - p) as exact decimals for a percentile in percent."""
    p = Decimal(repr(float(percent))) / 100
    if p.is_nan() or not 0 <= p <= 1:
        raise ValueError(f"percentile {percent!r}: expected 0 <= p <= 100")
    return p, 1 - p


def samples_needed(percent: float, alpha: float = ALPHA) -> int | None:
    """Smallest N at which the ``percent`` percentile is resolvable at confidence 1 - alpha (two-sided,
    alpha/2 in each tail); None for 0 and 100 (the extremes: no N resolves them)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha!r}: expected 0 < alpha < 1")
    p, q = _fraction(percent)
    if p == 0 or q == 0:
        return None
    half = math.log(alpha / 2)
    need = 1
    for tail in (p, q):  # upper bound needs p^N <= alpha/2, lower bound (1-p)^N <= alpha/2
        n = math.ceil(half / math.log1p(-float(1 - tail)))
        # guard the float ceiling: the smallest n with tail^n <= alpha/2, checked in exact-enough logs
        while n > 1 and (n - 1) * math.log1p(-float(1 - tail)) <= half:
            n -= 1
        while n * math.log1p(-float(1 - tail)) > half:
            n += 1
        need = max(need, n)
    return need


def highest_resolvable_percent(samples: int, alpha: float = ALPHA) -> float | None:
    """The largest p (in percent) whose upper bound N samples resolve: 100 * (alpha/2)^(1/N); None when N < 1."""
    if samples < 1:
        return None
    return 100.0 * math.exp(math.log(alpha / 2) / samples)


@dataclass(frozen=True)
class Resolution:
    """Whether one run's ``samples`` resolve the ``percent`` percentile; ``needed`` is None for the extremes."""

    percent: float
    samples: int
    needed: int | None
    alpha: float = ALPHA

    @property
    def ok(self) -> bool:
        return self.needed is not None and self.samples >= self.needed

    @property
    def reason(self) -> str | None:
        """None when resolvable; else "not resolvable at N = ..." with what it would need."""
        if self.ok:
            return None
        name = f"p{self.percent:g}"
        if self.needed is None:
            return (f"not resolvable at N = {self.samples}: the {'maximum' if self.percent else 'minimum'} "
                    f"has no confidence interval at any N (report it as the observed extreme)")
        return (f"not resolvable at N = {self.samples}: {name} needs N >= {self.needed} for a "
                f"{(1 - self.alpha) * 100:g} % interval")


def resolve(percent: float, samples: int, alpha: float = ALPHA) -> Resolution:
    """The resolvability of the ``percent`` percentile among ``samples`` samples (V2)."""
    if samples < 0:
        raise ValueError(f"samples {samples!r}: expected a count >= 0")
    return Resolution(float(percent), int(samples), samples_needed(percent, alpha), alpha)


def resolvable(percent: float, samples: int, alpha: float = ALPHA) -> bool:
    return resolve(percent, samples, alpha).ok


def resolved_percentiles(values: dict[str, float | int | None], samples: int,
                         alpha: float = ALPHA) -> tuple[dict[str, float | int | None], dict[str, str]]:
    """Percentile values keyed by their percent text ("99.9"), with those ``samples`` cannot resolve set to
    None, and a reason per such key: what a summary.json holds as ``percentiles_ns`` and ``unresolved``."""
    shown: dict[str, float | int | None] = {}
    why: dict[str, str] = {}
    for key, v in values.items():
        r = resolve(float(key), samples, alpha)
        if v is None or r.ok:
            shown[key] = v
        else:
            shown[key] = None
            why[key] = r.reason or ""
    return shown, why


RULE_TEXT = ("a percentile is printed only when the run's N resolves it: N >= ln(alpha/2)/ln(p) "
             "(and N >= ln(alpha/2)/ln(1-p) below the median), alpha = 0.05; see docs/statistics.md")

__all__ = ["ALPHA", "RULE_TEXT", "Resolution", "highest_resolvable_percent", "resolvable", "resolve",
           "resolved_percentiles", "samples_needed"]
