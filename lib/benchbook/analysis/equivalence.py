"""Equivalence verdicts (TOST), directional claims and run planning (statistics-rules V5; docs/statistics.md).

For the difference Delta of two arms (or of one arm and a printed reference value) against a margin delta
declared before the runs:

    equivalent      the 90 % interval of Delta lies inside (-delta, +delta)   (TOST at alpha = 0.05; Lakens)
    different       the 95 % interval of Delta lies wholly outside [-delta, +delta]
    inconclusive    anything else, including too few runs for an interval; with the runs per arm that
                    would likely decide (:func:`runs_needed`)
    not resolvable  a run cannot resolve the statistic at all (V2: too few samples per run for the
                    percentile; the maximum has no interval at any N, V11); more runs do not help

"Not significant" is never "equivalent": an interval that holds 0 but reaches past the margin is inconclusive.
At another error rate ``alpha`` (``compare_samples(..., alpha=)``, ``compare_to_reference(..., alpha=)``; e.g.
alpha / K at each of K looks of ``benchbook reproduce --until-decisive``) the two intervals are the 1 - 2 alpha
and the 1 - alpha intervals; ``ci90``/``ci95`` name them by their levels at alpha = 0.05.
A directional claim (B > A) holds when the 95 % interval of Delta lies above 0, fails when it lies below 0,
and is inconclusive otherwise (:func:`directional_verdict`). A claim "Delta within [x, y]" is judged like
equivalence with the range (x, y) (:func:`interval_verdict`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from benchbook.analysis.bootstrap import (
    DEFAULT_SEED,
    RESAMPLES,
    Scale,
    bootstrap_delta,
    check_arm,
    delta_of_medians,
)
from benchbook.analysis.intervals import MIN_RUNS, REAL, NoInterval, Range, level_text, quantile_interval

EQUIVALENT = "equivalent"
DIFFERENT = "different"
INCONCLUSIVE = "inconclusive"
NOT_RESOLVABLE = "not resolvable"
VERDICTS = (EQUIVALENT, DIFFERENT, INCONCLUSIVE, NOT_RESOLVABLE)
HOLDS = "holds"
FAILS = "fails"

ALPHA = 0.05
POWER = 0.80             # runs_needed plans for this probability of a decisive verdict
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2)  # se(median) ~ 1.2533 sigma / sqrt(r) for normal data


@dataclass(frozen=True)
class Margin:
    """The equivalence margin delta on the scale of Delta, as declared (``text``) and with its ``source``."""

    delta: float
    scale: Scale
    text: str
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.delta > 0 and math.isfinite(self.delta)):
            raise ValueError(f"margin {self.text!r}: expected a positive finite margin")

    @classmethod
    def relative(cls, fraction: float, source: str = "") -> Margin:
        """A relative margin for a log ratio: +-fraction means the ratio lies in [1/(1+f), 1+f], delta = ln(1+f)."""
        return cls(math.log1p(fraction), "log-ratio", f"{fraction * 100:g}%", source)

    @classmethod
    def absolute(cls, value: float, source: str = "") -> Margin:
        """An absolute margin for a difference (in the statistic's own unit)."""
        return cls(float(value), "difference", f"{value:g}", source)

    @property
    def plus_minus(self) -> str:
        """The margin as printed: "±5%" whether it was declared as "5%" (compare --margin) or "±5 %" (a TOML)."""
        return self.text if self.text.startswith("±") else f"±{self.text}"

    def as_dict(self) -> dict[str, Any]:
        return {"delta": self.delta, "scale": self.scale, "declared": self.text, "source": self.source}


def parse_margin(text: str, scale: Scale, source: str = "") -> Margin:
    """``"5%"`` or ``"0.05"``: relative (ln(1.05)) for a log ratio; for a difference the same number is the
    absolute margin (0.05 of a statistic in [0, 1], e.g. Jain's index)."""
    t = text.strip()
    try:
        v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise ValueError(f"margin {text!r}: expected a number or a percentage such as 5%") from None
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"margin {text!r}: expected a positive margin")
    m = Margin.relative(v, source) if scale == "log-ratio" else Margin.absolute(v, source)
    return Margin(m.delta, m.scale, t, source)


def interval_verdict(ci90: tuple[float, float], ci95: tuple[float, float], low: float, high: float) -> str:
    """equivalent when the 90 % interval lies inside the open range (low, high); different when the 95 %
    interval lies wholly outside the closed range [low, high]; inconclusive otherwise."""
    if low < ci90[0] and ci90[1] < high:
        return EQUIVALENT
    if ci95[0] > high or ci95[1] < low:
        return DIFFERENT
    return INCONCLUSIVE


def tost_verdict(ci90: tuple[float, float], ci95: tuple[float, float], delta: float) -> str:
    """The equivalence verdict for the margin +-delta (:func:`interval_verdict` on (-delta, +delta))."""
    return interval_verdict(ci90, ci95, -delta, delta)


def directional_verdict(ci95: tuple[float, float], greater: bool = True) -> str:
    """The claim Delta > 0 (``greater``) or Delta < 0: holds when the 95 % interval lies wholly on the claimed
    side of 0, fails when it lies wholly on the other side, inconclusive when it touches or holds 0."""
    lo, hi = ci95
    above, below = lo > 0, hi < 0
    if above or below:
        return HOLDS if above == greater else FAILS
    return INCONCLUSIVE


def levels(alpha: float = ALPHA) -> tuple[float, float]:
    """The equivalence (TOST) and the difference levels at error rate ``alpha``: 1 - 2 alpha and 1 - alpha."""
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha {alpha!r}: expected a number between 0 and 0.5")
    return 1 - 2 * alpha, 1 - alpha


def runs_needed(estimate: float, standard_error: float, runs: float, delta: float, power: float = POWER,
                min_runs: int = MIN_RUNS, alpha: float = ALPHA) -> int | None:
    """Runs per arm at which the verdict would be decisive with probability about ``power`` if Delta and the
    run-to-run spread stay as observed (normal approximation; the interval's width shrinks as 1/sqrt(r)):

        equivalent  (|Delta| < delta):  r = runs * ((z_0.95 + z_power) * se / (delta - |Delta|))^2
        different   (|Delta| > delta):  r = runs * ((z_0.975 + z_power) * se / (|Delta| - delta))^2

    (z_{1-alpha} and z_{1-alpha/2} at another ``alpha``.)

    ``standard_error`` is that of Delta at ``runs`` runs per arm (for unequal arms pass their harmonic mean).
    At least ``min_runs`` and more than now; None when Delta sits on the margin (no run count decides)."""
    gap = delta - abs(estimate)
    if gap == 0 or not math.isfinite(standard_error):
        return None
    if standard_error <= 0:
        return max(min_runs, math.floor(runs) + 1)
    z_power = float(stats.norm.ppf(power))
    tost, different = levels(alpha)
    z = float(stats.norm.ppf(1 - (1 - tost) / 2 if gap > 0 else 1 - (1 - different) / 2))
    r = math.ceil(runs * ((z + z_power) * standard_error / abs(gap)) ** 2 - 1e-9)
    return max(r, min_runs, math.floor(runs) + 1)


def spread_standard_error(a: Any, b: Any | None, scale: Scale) -> float:
    """Standard error of Delta from the run-to-run spread alone (for when no interval may be computed yet):
    MEDIAN_SE_FACTOR * sqrt(s_A^2/r_A + s_B^2/r_B), s the standard deviation of the per-run values (of their
    logarithms for a log ratio). ``b`` None: one arm against a fixed reference. NaN with a single run in an arm."""
    parts = []
    for arm in (a, b):
        if arm is None:
            continue
        x = np.asarray(arm, dtype=np.float64).reshape(-1)
        t = np.log(x) if scale == "log-ratio" else x
        if t.size < 2:
            return math.nan
        parts.append(float(np.var(t, ddof=1)) / t.size)
    return MEDIAN_SE_FACTOR * math.sqrt(sum(parts))


def _harmonic(ra: int, rb: int) -> float:
    return 2.0 / (1.0 / ra + 1.0 / rb)


@dataclass(frozen=True)
class Comparison:
    """One statistic's verdict with everything needed to redo it (V12)."""

    verdict: str
    estimate: float | None             # Delta
    ci90: tuple[float, float] | None
    ci95: tuple[float, float] | None
    margin: Margin
    runs_a: int
    runs_b: int | None                 # None: arm A against a fixed reference value
    method: str
    runs_needed: int | None = None     # per arm, for an inconclusive verdict
    reason: str | None = None
    seed: int | None = None
    resamples: int | None = None
    p_equivalent: float | None = None  # TOST p-value: equivalent at alpha iff below alpha
    p_different: float | None = None   # different at alpha iff below alpha (two-sided)
    reference: float | None = None
    alpha: float = ALPHA               # ci90 is the 1 - 2 alpha interval, ci95 the 1 - alpha one

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "delta": self.estimate, "ci90": _pair(self.ci90), "ci95": _pair(self.ci95),
                "margin": self.margin.delta, "margin_declared": self.margin.text, "margin_source": self.margin.source,
                "scale": self.margin.scale, "runs_a": self.runs_a, "runs_b": self.runs_b,
                "runs_needed": self.runs_needed, "reason": self.reason, "method": self.method, "seed": self.seed,
                "resamples": self.resamples, "p_equivalent": self.p_equivalent, "p_different": self.p_different,
                "reference": self.reference, "alpha": self.alpha}


def _pair(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def not_resolvable(reason: str, margin: Margin, runs_a: int, runs_b: int | None, method: str,
                   estimate: float | None = None) -> Comparison:
    """The verdict for a statistic a run cannot resolve (V2) or that has no interval at all (the maximum, V11)."""
    return Comparison(NOT_RESOLVABLE, estimate, None, None, margin, runs_a, runs_b, method, reason=reason)


def compare_samples(a: Any, b: Any, margin: Margin, value_range: Range = REAL, seed: int = DEFAULT_SEED,
                    resamples: int = RESAMPLES, min_runs: int = MIN_RUNS, alpha: float = ALPHA) -> Comparison:
    """The verdict on Delta between the per-run values of arm A and arm B (bootstrap over runs, TOST against
    ``margin`` at error rate ``alpha``); inconclusive with the runs needed when either arm has fewer than
    ``min_runs`` runs."""
    tost, different = levels(alpha)
    x = check_arm(value_range.check(a, "run of A"), margin.scale, "arm A")
    y = check_arm(value_range.check(b, "run of B"), margin.scale, "arm B")
    est = float(delta_of_medians(x, y, margin.scale))
    boot = bootstrap_delta(x, y, margin.scale, (tost, different), resamples, seed, min_runs)
    if isinstance(boot, NoInterval):
        se = spread_standard_error(x, y, margin.scale)
        need = max(runs_needed(est, se, _harmonic(x.size, y.size), margin.delta, min_runs=min_runs, alpha=alpha)
                   or min_runs, min_runs)
        return Comparison(INCONCLUSIVE, est, None, None, margin, x.size, y.size, boot.method, need,
                          f"{boot.reason}; about {need} runs per arm would likely decide (from the spread of these "
                          f"runs, normal approximation)", alpha=alpha)
    ci90, ci95 = boot.interval(tost), boot.interval(different)
    verdict = tost_verdict(ci90, ci95, margin.delta)
    d = margin.delta
    p_eq = max(boot.share_below(-d), boot.share_above(d))
    p_diff = min(1.0, 2 * min(boot.share_below(d), boot.share_above(-d)))
    need = reason = None
    if verdict == INCONCLUSIVE:
        need = runs_needed(est, boot.standard_error, _harmonic(x.size, y.size), d, min_runs=min_runs, alpha=alpha)
        reason = (f"the {level_text(tost)} interval reaches past the margin {margin.plus_minus} and the "
                  f"{level_text(different)} interval overlaps it; "
                  + (f"about {need} runs per arm would likely decide (bootstrap standard error, normal "
                     f"approximation)" if need else "Delta lies on the margin: more runs are unlikely to decide"))
    return Comparison(verdict, est, ci90, ci95, margin, x.size, y.size, boot.method, need, reason, seed, resamples,
                      p_eq, p_diff, alpha=alpha)


def _sign_p(count: int, runs: int) -> float:
    """One-sided sign-test p-value: P(K >= count), K ~ Bin(runs, 1/2)."""
    return float(stats.binom.sf(count - 1, runs, 0.5))


def compare_to_reference(values: Any, reference: float, margin: Margin, value_range: Range = REAL,
                         min_runs: int = MIN_RUNS, alpha: float = ALPHA) -> Comparison:
    """The verdict on Delta between the median of the per-run values and a fixed reference (a printed value):
    ln(median / reference) or median - reference, with intervals from the order statistics of the median
    (distribution-free) at error rate ``alpha`` and p-values from the sign test (the test those intervals
    invert)."""
    tost, different = levels(alpha)
    x = check_arm(value_range.check(values, "run"), margin.scale, "runs")
    if margin.scale == "log-ratio" and not reference > 0:
        raise ValueError(f"reference {reference!r}: a log ratio needs a reference > 0")

    def to_delta(v: float) -> float:
        return math.log(v / reference) if margin.scale == "log-ratio" else v - reference

    est = to_delta(float(np.median(x)))
    method = ("order-statistic intervals of the median over runs against the reference "
              + (f"ln(median / {reference:g})" if margin.scale == "log-ratio" else f"median - {reference:g}"))
    # equal tails: each of TOST's one-sided tests may err alpha/2 of the interval's level, no more
    i90, i95 = (quantile_interval(x, 0.5, level, value_range, tails="equal") for level in (tost, different))
    if isinstance(i90, NoInterval) or isinstance(i95, NoInterval) or x.size < min_runs:
        se = spread_standard_error(x, None, margin.scale)
        need = max(runs_needed(est, se, x.size, margin.delta, min_runs=min_runs, alpha=alpha) or min_runs, min_runs)
        fewest = max([min_runs] + [i.runs_needed for i in (i90, i95) if isinstance(i, NoInterval) and i.runs_needed])
        need = max(need, fewest)
        return Comparison(INCONCLUSIVE, est, None, None, margin, x.size, None, method, need,
                          f"{x.size} run(s): the order-statistic interval of a median at "
                          f"{level_text(different)} needs at least {fewest} runs; about {need} runs would likely "
                          "decide", reference=reference, alpha=alpha)
    ci90 = (to_delta(i90.low), to_delta(i90.high))
    ci95 = (to_delta(i95.low), to_delta(i95.high))
    verdict = tost_verdict(ci90, ci95, margin.delta)
    lo_t, hi_t = (reference * math.exp(s * margin.delta) if margin.scale == "log-ratio"
                  else reference + s * margin.delta for s in (-1, 1))
    p_eq = max(_sign_p(int(np.sum(x > lo_t)), x.size), _sign_p(int(np.sum(x < hi_t)), x.size))
    p_diff = min(1.0, 2 * min(_sign_p(int(np.sum(x > hi_t)), x.size), _sign_p(int(np.sum(x < lo_t)), x.size)))
    need = reason = None
    if verdict == INCONCLUSIVE:
        se = (ci95[1] - ci95[0]) / (2 * float(stats.norm.ppf(1 - (1 - different) / 2)))
        need = runs_needed(est, se, x.size, margin.delta, min_runs=min_runs, alpha=alpha)
        reason = (f"the intervals overlap the margin {margin.plus_minus}; "
                  + (f"about {need} runs would likely decide" if need else "Delta lies on the margin"))
    return Comparison(verdict, est, ci90, ci95, margin, x.size, None, method, need, reason, p_equivalent=p_eq,
                      p_different=p_diff, reference=reference, alpha=alpha)


__all__ = ["ALPHA", "DIFFERENT", "EQUIVALENT", "FAILS", "HOLDS", "INCONCLUSIVE",
           "MEDIAN_SE_FACTOR", "NOT_RESOLVABLE", "POWER", "VERDICTS", "Comparison", "Margin",
           "compare_samples", "compare_to_reference", "directional_verdict", "interval_verdict", "levels",
           "not_resolvable", "parse_margin", "runs_needed", "spread_standard_error", "tost_verdict"]
