"""`benchbook compare`: two sets of runs, statistic by statistic (docs/statistics.md, "benchbook compare").

For each statistic: every run's value (the run is the unit), Delta between the sets (log ratio of medians, or
the difference of medians for a bounded statistic), its 90 % and 95 % bootstrap intervals over runs, and the
verdict equivalent / different / inconclusive / not resolvable against the margin
(:mod:`benchbook.analysis.equivalence`). The maximum is never given an interval (V11): its verdict is
"not resolvable" with the observed maxima. A percentile any run cannot resolve (V2) is "not resolvable",
naming the run and its N.

Also the data of the HDR percentile plot with run-level bands (:func:`percentile_bands`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchbook.analysis.bootstrap import DEFAULT_SEED, RESAMPLES, delta_of_medians
from benchbook.analysis.equivalence import Comparison, compare_samples, not_resolvable, parse_margin
from benchbook.analysis.intervals import MIN_RUNS, NoInterval, quantile_interval
from benchbook.analysis.resolvability import highest_resolvable_percent
from benchbook.analysis.run_sets import Run, RunValue, Statistic, run_value


@dataclass(frozen=True)
class StatisticResult:
    stat: Statistic
    values_a: list[RunValue]
    values_b: list[RunValue]
    comparison: Comparison

    def as_dict(self) -> dict[str, Any]:
        c = self.comparison
        doc = {"stat": self.stat.name, "verdict": c.verdict, "runs_a": len(self.values_a),
               "runs_b": len(self.values_b), "values_a": [v.value for v in self.values_a],
               "values_b": [v.value for v in self.values_b], "delta": c.estimate, "ci90": _pair(c.ci90),
               "ci95": _pair(c.ci95), "margin": c.margin.delta, "method": c.method}
        doc.update({"scale": c.margin.scale, "margin_declared": c.margin.text, "unit": self.stat.unit,
                    "samples_a": [v.samples for v in self.values_a], "samples_b": [v.samples for v in self.values_b],
                    "runs_needed": c.runs_needed, "reason": c.reason, "seed": c.seed, "resamples": c.resamples,
                    "p_equivalent": c.p_equivalent, "p_different": c.p_different})
        return doc


def _pair(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def compare_statistic(runs_a: list[Run], runs_b: list[Run], stat: Statistic, margin: str,
                      seed: int = DEFAULT_SEED, resamples: int = RESAMPLES) -> StatisticResult:
    for arm, runs in (("A", runs_a), ("B", runs_b)):
        if not runs:
            raise ValueError(f"arm {arm}: no runs")
    va = [run_value(r, stat) for r in runs_a]
    vb = [run_value(r, stat) for r in runs_b]
    m = parse_margin(margin, stat.scale)
    missing = [(arm, i, r, v) for arm, runs, vals in (("A", runs_a, va), ("B", runs_b, vb))
               for i, (r, v) in enumerate(zip(runs, vals, strict=True), start=1) if v.value is None]
    if missing:
        arm, i, r, v = missing[0]
        more = f" (and {len(missing) - 1} more run(s))" if len(missing) > 1 else ""
        reason = f"run {i} of {arm} ({r.path}): {v.reason}{more}"
        method = "none: a statistic a run cannot resolve is not compared"
        return StatisticResult(stat, va, vb, not_resolvable(reason, m, len(va), len(vb), method))
    zero = [(arm, i, r, v) for arm, runs, vals in (("A", runs_a, va), ("B", runs_b, vb))
            for i, (r, v) in enumerate(zip(runs, vals, strict=True), start=1)
            if m.scale == "log-ratio" and v.value <= 0]
    if zero:   # e.g. latencies of 0 ns below a clock's resolution: no ratio to compare (Delta would be inf or nan)
        arm, i, r, v = zero[0]
        more = f" (and {len(zero) - 1} more run(s))" if len(zero) > 1 else ""
        reason = (f"run {i} of {arm} ({r.path}): {stat.name} = {v.value:g} {stat.unit}, and Delta is a log ratio of "
                  f"medians, which needs per-run values > 0{more}")
        return StatisticResult(stat, va, vb, not_resolvable(reason, m, len(va), len(vb),
                                                            "none: a log ratio needs per-run values > 0"))
    if stat.name in ("max", "min"):
        pick = max if stat.name == "max" else min

        def observed(runs: list[Run], vals: list[RunValue]) -> str:
            n = sum(v.samples for v in vals)
            return f"{pick(v.value for v in vals):g} {stat.unit} over {len(runs)} runs, {n} samples in all"

        est = float(delta_of_medians([v.value for v in va], [v.value for v in vb], m.scale))
        reason = (f"the {stat.name}imum has no confidence interval at any N (V11); observed {stat.name} A "
                  f"{observed(runs_a, va)}, B {observed(runs_b, vb)}")
        return StatisticResult(stat, va, vb, not_resolvable(reason, m, len(va), len(vb),
                                                            "none: extremes are reported as observed", est))
    cmp = compare_samples([v.value for v in va], [v.value for v in vb], m, stat.value_range(runs_a + runs_b), seed,
                          resamples)
    return StatisticResult(stat, va, vb, cmp)


def compare_run_sets(runs_a: list[Run], runs_b: list[Run], stats: list[Statistic], margin: str,
                     seed: int = DEFAULT_SEED, resamples: int = RESAMPLES) -> list[StatisticResult]:
    return [compare_statistic(runs_a, runs_b, s, margin, seed, resamples) for s in stats]


def document(results: list[StatisticResult]) -> dict[str, Any]:
    """What `benchbook compare --json` prints."""
    return {"statistics": [r.as_dict() for r in results]}


def _fmt_delta(x: float, scale: str) -> str:
    return f"{math.expm1(x) * 100:+.2f} %" if scale == "log-ratio" else f"{x:+.4f}"


def _fmt_ci(ci: tuple[float, float] | None, scale: str) -> str:
    return "-" if ci is None else f"[{_fmt_delta(ci[0], scale)}, {_fmt_delta(ci[1], scale)}]"


def _fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ns":
        return f"{v / 1e3:.3f}"
    if unit == "bit/s":
        return f"{v / 1e6:.3f}"
    return f"{v:.4f}"


def text(results: list[StatisticResult], files_a: list[str], files_b: list[str]) -> str:
    """The table `benchbook compare` prints: verdicts, Delta (B against A) and intervals, per-run values."""
    lines = [f"A: {len(files_a)} run(s); B: {len(files_b)} run(s). Delta is B against A: the ratio of medians "
             f"as a change in percent (a difference for bounded statistics)."]
    head = f"{'stat':<11} {'verdict':<15} {'Delta':>10}  {'90 % interval':<24} {'95 % interval':<24} margin"
    lines += ["", head]
    for r in results:
        c = r.comparison
        delta = "-" if c.estimate is None else _fmt_delta(c.estimate, c.margin.scale)
        margin = c.margin.plus_minus
        lines.append(f"{r.stat.name:<11} {c.verdict:<15} {delta:>10}  {_fmt_ci(c.ci90, c.margin.scale):<24} "
                     f"{_fmt_ci(c.ci95, c.margin.scale):<24} {margin}")
        if c.reason:
            lines.append(f"{'':<11} {c.reason}")
    lines.append("")
    units = {"ns": "us", "bit/s": "Mbit/s", "": ""}
    for r in results:
        unit = units.get(r.stat.unit, r.stat.unit)
        lines.append(f"{r.stat.name} per run{f' ({unit})' if unit else ''}:")
        for arm, vals in (("A", r.values_a), ("B", r.values_b)):
            lines.append(f"  {arm}: " + " ".join(_fmt_value(v.value, r.stat.unit) for v in vals))
    boot = sorted({(c.resamples, c.seed) for c in (r.comparison for r in results) if c.seed is not None})
    for resamples, seed in boot:
        lines.append(f"bootstrap over runs: {resamples} resamples, percentile intervals, seed {seed}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Bands:
    """Per arm: the median over runs at each percentile and its band (95 % order-statistic interval of the median
    over runs, or the range of the runs when there are fewer than MIN_RUNS); where the sign of Delta flips."""

    percent: np.ndarray
    median: dict[str, np.ndarray]
    low: dict[str, np.ndarray]
    high: dict[str, np.ndarray]
    band_label: dict[str, str]
    flips: list[float]
    limit_percent: float
    per_run: dict[str, np.ndarray]


def percentile_grid(limit_percent: float, steps_per_decade: int = 20) -> np.ndarray:
    """Percentiles from 0 up to ``limit_percent``, evenly spaced on the HDR axis 1/(1-p)."""
    top = math.log10(1.0 / (1.0 - limit_percent / 100.0))
    k = np.arange(0, int(math.floor(top * steps_per_decade)) + 1) / steps_per_decade
    ps = 100.0 * (1.0 - 10.0 ** -k)
    return np.unique(np.round(np.append(ps, limit_percent), 10))


def percentile_bands(runs_a: list[Run], runs_b: list[Run], names: tuple[str, str] = ("A", "B")) -> Bands:
    """The HDR plot's data: each run's percentiles on a common grid up to the highest percentile the smallest run
    resolves (V2), summarised per arm across runs; ``flips`` are the percentiles between which the sign of
    ln(median B / median A) changes."""
    runs = runs_a + runs_b
    if any(r.kind != "latency" for r in runs):
        raise ValueError("an HDR percentile plot needs latency runs")
    limit = highest_resolvable_percent(min(r.samples for r in runs))
    if limit is None:
        raise ValueError("an HDR percentile plot needs latencies in every run")
    grid = percentile_grid(limit)
    per_run, med, lo, hi, label = {}, {}, {}, {}, {}
    for name, arm in zip(names, (runs_a, runs_b), strict=True):
        vals = np.array([[r.distribution.percentiles([float(p)])[float(p)] for p in grid] for r in arm],
                        dtype=np.float64)
        per_run[name] = vals
        med[name] = np.median(vals, axis=0)
        if len(arm) >= MIN_RUNS:
            ivs = [quantile_interval(vals[:, i]) for i in range(grid.size)]
            lo[name] = np.array([iv.low if not isinstance(iv, NoInterval) else np.nan for iv in ivs])
            hi[name] = np.array([iv.high if not isinstance(iv, NoInterval) else np.nan for iv in ivs])
            label[name] = f"95 % interval of the median of {len(arm)} runs"
        else:
            lo[name], hi[name] = vals.min(axis=0), vals.max(axis=0)
            label[name] = f"range of {len(arm)} runs (too few for an interval)"
    sign = np.sign(np.log(med[names[1]] / med[names[0]]))
    flips = []
    last = 0.0
    for i, s in enumerate(sign):
        if s == 0:
            continue
        if last and s != last:
            flips.append(float(grid[i]))
        last = s
    return Bands(grid, med, lo, hi, label, flips, float(limit), per_run)


__all__ = ["Bands", "StatisticResult", "compare_run_sets", "compare_statistic", "document", "percentile_bands",
           "percentile_grid", "text"]
