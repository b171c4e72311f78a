"""Many verdicts at once (statistics-rules V9): with m judged rows, about m * alpha come out "different" by
chance alone. Either report "k of m" beside that expectation (:func:`k_of_m`), or correct: Holm's step-down
procedure (:func:`holm`, uniformly more powerful than Bonferroni and valid under any dependence), or
Bonferroni's per-row level (:func:`bonferroni_level`) for intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

ALPHA = 0.05


def holm(pvalues: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections: sort the m p-values, reject p_(i) while p_(i) <= alpha / (m - i + 1)
    (i = 1..m), stop at the first that is not; returns one flag per p-value in the given order."""
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError("holm: expected a list of p-values in [0, 1]")
    m = p.size
    reject = np.zeros(m, dtype=bool)
    for i, idx in enumerate(np.argsort(p, kind="stable")):
        if p[idx] > alpha / (m - i):
            break
        reject[idx] = True
    return reject.tolist()


def bonferroni_level(m: int, confidence: float = 1 - ALPHA) -> float:
    """The per-row confidence level that keeps the family-wise error at 1 - confidence over m rows."""
    if m < 1:
        raise ValueError(f"m {m!r}: expected at least one row")
    return 1 - (1 - confidence) / m


@dataclass(frozen=True)
class KOfM:
    """k of m rows came out a given way; ``expected`` of them would by chance (m * alpha) and ``p_chance`` is
    the probability of at least k by chance (binomial tail, rows taken as independent)."""

    k: int
    m: int
    alpha: float
    expected: float
    p_chance: float

    def text(self, what: str = "different") -> str:
        return (f"{self.k} of {self.m} {what}; {self.expected:.2g} expected by chance at alpha = {self.alpha:g} "
                f"(P(at least {self.k}) = {self.p_chance:.2g})")


def k_of_m(k: int, m: int, alpha: float = ALPHA) -> KOfM:
    if not 0 <= k <= m:
        raise ValueError(f"{k} of {m}: expected 0 <= k <= m")
    return KOfM(k, m, alpha, m * alpha, float(stats.binom.sf(k - 1, m, alpha)) if k else 1.0)


__all__ = ["ALPHA", "KOfM", "bonferroni_level", "holm", "k_of_m"]
