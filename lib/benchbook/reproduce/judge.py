"""Judging a measured entry from its runs: each [[published]] value against its declared margin, each [[claims]]
test, all from the per-run statistics the repetition runner recorded (docs/statistics.md, "Judging a measured
entry"). Nothing statistical is computed here that benchbook.analysis does not compute: this module picks the
per-run values, calls the analysis core and turns its verdicts into row statuses and claim verdicts.

    from benchbook.reproduce.judge import judge_entry

    judgement = judge_entry(entry, output_dir)     # output_dir holds run-statistics.parquet and repetitions.json
    judgement.rows      # one MeasuredRow per [[published]] value, in the entry's order
    judgement.claims    # one ClaimResult per [[claims]] test
    judgement.plan      # the runner's plan (arms, runs per arm, seed, order, exclusions)

Rows (SPEC-21 section 3): ``compare_to_reference(per-run values, published value, margin, value_range)``:
equivalent -> ``reproduced``, different -> ``mismatch``, inconclusive -> ``inconclusive`` with the runs needed.
A statistic a run cannot resolve -- a percentile (a name with a token ``p<q>``: ``p99``, ``probe_p99_ms``,
``p99.9_latency``) whose per-run N is below what V2 needs, or an extreme (a name that starts with ``max``/``min``
or ends with ``_max``/``_min``) -- is ``inconclusive`` with the reason and no runs needed (more runs do not
help). A value declared ``comparable = false`` is ``not comparable``; one whose arm did not run or whose runs
carry no value is ``not derivable``; a margin below the stored noise floor makes the row ``inconclusive``.

Claims (SPEC-21 section 4): Delta = ln(a / b) (or a - b when a value is <= 0, or for "a ~ b" with margin_abs).
a and b of one arm: per-run pairs, Delta_i per run, intervals of their median from order statistics; of two
arms: independent sets, a seeded bootstrap over runs of ln(median a / median b) (or the difference of medians).
``a > b`` holds when the 95 % interval lies above 0, fails when below 0; ``a ~ b`` holds when equivalent (TOST),
fails when different; ``a / b within [x, y]`` holds when the 90 % interval lies inside (ln x, ln y), fails when
the 95 % interval lies outside; ``share >=`` holds when the Clopper-Pearson 95 % interval of the summed successes
over the summed trials lies at or above q, fails when it lies below q (trials taken as independent).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from benchbook.analysis.bootstrap import DEFAULT_SEED, RESAMPLES, bootstrap_delta, delta_of_medians
from benchbook.analysis.equivalence import (
    DIFFERENT,
    EQUIVALENT,
    Margin,
    compare_to_reference,
    directional_verdict,
    interval_verdict,
    levels,
    runs_needed,
    spread_standard_error,
    tost_verdict,
)
from benchbook.analysis.intervals import (
    MIN_RUNS,
    REAL,
    NoInterval,
    Range,
    level_text,
    proportion_interval,
    quantile_interval,
)
from benchbook.analysis.multiplicity import ALPHA
from benchbook.analysis.resolvability import samples_needed
from benchbook.experiment.repetitions import SUMMARY_FILE, TABLE_FILE
from benchbook.reproduce.noise_floor import NoiseFloors, load_noise_floors
from benchbook.reproduce.registry import Claim, FigureEntry, PublishedValue, StatisticRef, value_range_bounds
from benchbook.reproduce.verdict_rows import (
    FAILS,
    HOLDS,
    INCONCLUSIVE,
    MISMATCH,
    NOT_COMPARABLE,
    NOT_DERIVABLE,
    REPRODUCED,
    ClaimResult,
    MeasuredRow,
)

MAX_PLANNED_RUNS = 1_000_000   # the largest count a share claim's runs_needed search tries (None: none decides)
_PERCENTILE = re.compile(r"(?:^|[_.])p(\d+(?:\.\d+)?)(?=$|[_.])")
_EXTREME = re.compile(r"^(?:max|min)(?:$|[_.])|[_.](?:max|min)$")
_UNIT_ALIASES = {"1": "", "µs": "us"}


class JudgeError(ValueError):
    """The runs cannot be judged as the entry declares (the message names the entry file and the value)."""


class Unresolvable(str):
    """Why the runs cannot resolve a statistic (V2, V11): a row or claim on it is inconclusive with this reason,
    never judged as numbers and never "not derivable" (more runs do not help; more samples per run may)."""


def value_range(text: str) -> Range:
    """The analysis Range of a registry value_range ("rate", "share", "jain:N", "real")."""
    low, high = value_range_bounds(text)
    return Range(low, high, f"value_range {text!r}: [{low:g}, {high:g}]")


def margin_of(item: PublishedValue | Claim) -> Margin | None:
    """The declared margin on the scale of Delta: ln(1 + margin_rel) (log-ratio) or margin_abs (difference)."""
    sources = ", ".join(item.margin_source)
    if item.margin_rel is not None:
        return Margin(math.log1p(item.margin_rel), "log-ratio", item.margin_text(), sources)
    if item.margin_abs is not None:
        return Margin(float(item.margin_abs), "difference", item.margin_text(), sources)
    return None


def within_run_limit(statistic: str, n_per_run: list[int | None]) -> str | None:
    """Why a run cannot resolve ``statistic`` (V2, V11), or None: an extreme (max, min, p0, p100) never, a
    percentile not below the samples it needs at alpha = 0.05 (the fewest samples of any run count)."""
    m = _PERCENTILE.search(statistic)
    percent = float(m.group(1)) if m is not None else None
    if _EXTREME.search(statistic) or percent in (0.0, 100.0):
        return (f"not resolvable: {statistic} is an extreme of its run (a maximum or minimum has no confidence "
                f"interval at any N, V11); more runs do not help")
    if percent is None or percent > 100:
        return None
    need = samples_needed(percent)
    known = [n for n in n_per_run if n is not None]
    if len(known) < len(n_per_run):
        return (f"not resolvable: {statistic} is the {percent:g} percentile of its run, but a run records no N, so "
                f"whether it resolves it (N >= {need}) cannot be checked")
    low = min(known)
    if need is not None and low < need:
        return (f"not resolvable at N = {low}: the {percent:g} percentile needs N >= {need} samples per run for a 95 % "
                f"interval (V2); more runs do not help, more samples per run may")
    return None


def _unit(text: str | None) -> str:
    t = (text or "").strip()
    return _UNIT_ALIASES.get(t, t)


@dataclass
class PerRun:
    """The valid runs' values of one arm:statistic (runs without a value left out and listed)."""

    runs: np.ndarray              # repetition numbers, ascending
    values: np.ndarray
    n: list[int | None]
    unit: str
    definition: str
    without_value: list[int]


class RunStatistics:
    """A run directory's run-statistics.parquet (valid runs only) and repetitions.json (the plan)."""

    def __init__(self, directory: Path | str, table: pd.DataFrame | None = None,
                 summary: dict[str, Any] | None = None) -> None:
        """Read ``directory``; or, given ``table`` (the runner's columns) and ``summary``, use those."""
        self.directory = Path(directory)
        if table is None and summary is None:
            table_path, summary_path = self.directory / TABLE_FILE, self.directory / SUMMARY_FILE
            if summary_path.is_file():
                summary = json.loads(summary_path.read_text(encoding="utf-8"))
            if table_path.is_file():
                table = pd.read_parquet(table_path)
        self.summary = summary
        self.table = None if table is None else table[table["valid"].astype(bool)]

    @property
    def plan(self) -> dict[str, Any] | None:
        """What verdict.json keeps of repetitions.json: the plan, the order, the counts, the exclusions and each
        run's status, validity and times."""
        if self.summary is None:
            return None
        return {k: self.summary.get(k) for k in ("plan", "order", "counts", "excluded", "runs")}

    def arms(self) -> list[str]:
        return list((self.summary or {}).get("plan", {}).get("arms", {}))

    def why_no_runs(self, arm: str) -> str:
        """Why ``arm`` has no valid run: not in the plan, not runnable here, or every run excluded."""
        if self.summary is None:
            return (f"no {SUMMARY_FILE} in {self.directory}: the notebook ran no repetitions here (dry run, or "
                    "it stopped before the runner)")
        if arm not in self.arms():
            return f"arm {arm!r} is not in the plan of {self.directory} (arms: {', '.join(self.arms()) or 'none'})"
        reasons = [r.get("reason") or "; ".join(x["reason"] for x in r.get("invalid_by", [])) or r.get("status", "")
                   for r in self.summary.get("runs", []) if r.get("arm") == arm]
        reasons = [x for x in dict.fromkeys(reasons) if x]
        return f"no valid run of arm {arm!r}" + (f": {reasons[0].strip().splitlines()[-1]}" if reasons else "")

    def get(self, ref: StatisticRef) -> PerRun | str:
        """The per-run values of ``ref`` from the valid runs, or why there are none."""
        if self.table is None:
            return (self.why_no_runs(ref.arm) if self.summary is None else
                    f"no {TABLE_FILE} in {self.directory}")
        arm = self.table[self.table["arm"] == ref.arm]
        if arm.empty:
            return self.why_no_runs(ref.arm)
        rows = arm[arm["statistic"] == ref.statistic].sort_values("run")
        if rows.empty:
            have = ", ".join(sorted(set(arm["statistic"].astype(str))))
            return f"the valid runs of arm {ref.arm!r} carry no statistic {ref.statistic!r} (they carry: {have})"
        values = rows["value"].to_numpy(dtype=np.float64)
        ok = np.isfinite(values)
        runs = rows["run"].to_numpy(dtype=np.int64)
        definitions = list(dict.fromkeys(rows["definition"].astype(str)))
        if not ok.all() and _PERCENTILE.search(ref.statistic):
            # a run without the percentile because its N cannot resolve it (the runner stores null, V2): the
            # statistic is not resolvable for the set; judging the runs that happen to resolve it would pick them
            limit = within_run_limit(ref.statistic, [None if pd.isna(x) else int(x) for x in rows["n"]])
            if limit is not None:
                return Unresolvable(f"{ref}: {limit}")
        if not ok.any():
            return (f"{ref} has no value in any of the {len(rows)} valid run(s) of arm {ref.arm!r}"
                    + (f" ({' | '.join(definitions)})" if any(definitions) else ""))
        n = [None if pd.isna(x) else int(x) for x in rows["n"][ok]]
        units = sorted({_unit(u) for u in rows["unit"].astype(str)})
        definitions = list(dict.fromkeys(rows["definition"][ok].astype(str)))
        return PerRun(runs[ok], values[ok], n, units[0] if len(units) == 1 else ", ".join(units),
                      " | ".join(definitions), [int(r) for r in runs[~ok]])


def _pair(ci: tuple[float, float] | None) -> list[float] | None:
    return None if ci is None else [float(ci[0]), float(ci[1])]


def _to_value(published: float, scale: str, ci: tuple[float, float] | None) -> list[float] | None:
    """An interval of Delta back in the value's unit: published * e^Delta, or published + Delta."""
    if ci is None:
        return None
    if scale == "log-ratio":
        return [published * math.exp(ci[0]), published * math.exp(ci[1])]
    return [published + ci[0], published + ci[1]]


def _margin_dict(pv: PublishedValue | Claim, margin: Margin | None) -> dict[str, Any]:
    if margin is None:
        return {}
    out = {"delta": margin.delta, "scale": margin.scale, "text": margin.text, "sources": list(pv.margin_source),
           "note": pv.margin_note}
    if isinstance(pv, PublishedValue):
        out["print_precision"] = pv.print_precision()
    return out


_ROW_STATUS = {EQUIVALENT: REPRODUCED, DIFFERENT: MISMATCH}


def judge_value(pv: PublishedValue, data: RunStatistics, floors: NoiseFloors | None = None,
                source: Path | str = "", alpha: float = ALPHA) -> MeasuredRow:
    """One measured [[published]] value judged from the valid runs at error rate ``alpha`` (see the module
    docstring)."""
    margin = margin_of(pv)
    row = MeasuredRow(name=pv.name, published=pv.value, computed=None, unit=pv.unit, runs=0, status=NOT_DERIVABLE,
                      note=pv.note, tolerance=pv.tolerance_text(), arm=pv.arm, run_statistic=pv.run_statistic,
                      margin=_margin_dict(pv, margin), alpha=alpha)
    got = data.get(StatisticRef(pv.arm, pv.run_statistic)) if pv.arm and pv.run_statistic else None
    if isinstance(got, PerRun):
        if _unit(got.unit) != _unit(pv.unit):
            raise JudgeError(f"{source}: [[published]] {pv.name!r}: the runs give {pv.arm}:{pv.run_statistic} in "
                             f"{got.unit!r}, the paper prints {pv.unit!r}: emit the statistic in the printed unit")
        row.run_ids, row.values, row.n_per_run = got.runs.tolist(), got.values.tolist(), got.n
        row.runs_without_value, row.definition, row.runs = got.without_value, got.definition, int(got.values.size)
        row.estimate = row.computed = float(np.median(got.values))
    if not pv.comparable:
        row.status, row.reason = NOT_COMPARABLE, pv.not_comparable_reason
        return row
    if isinstance(got, Unresolvable):
        row.status, row.reason, row.method = INCONCLUSIVE, str(got), "resolvability of the statistic (V2, V11)"
        return row
    if not isinstance(got, PerRun):
        row.reason = got or "no arm and run_statistic declared"
        return row
    assert margin is not None
    missing = (f"; {len(got.without_value)} valid run(s) without a value (runs {got.without_value}) left out"
               if got.without_value else "")
    limit = within_run_limit(pv.run_statistic or "", got.n)
    if limit is not None:
        row.status, row.reason, row.method = INCONCLUSIVE, limit + missing, "resolvability of the statistic (V2, V11)"
        return row
    try:
        comp = compare_to_reference(got.values, pv.value, margin, value_range(pv.value_range), alpha=alpha)
    except ValueError as exc:   # values outside the range, or <= 0 for a log ratio: the declared scale does not fit
        row.reason = f"the per-run values cannot be judged as declared: {exc}"
        return row
    row.delta, row.ci90, row.ci95 = comp.estimate, _pair(comp.ci90), _pair(comp.ci95)
    row.ci90_value = _to_value(pv.value, margin.scale, comp.ci90)
    row.ci95_value = _to_value(pv.value, margin.scale, comp.ci95)
    row.method, row.runs_needed = comp.method, comp.runs_needed
    row.p_equivalent, row.p_different = comp.p_equivalent, comp.p_different
    row.status = _ROW_STATUS.get(comp.verdict, INCONCLUSIVE)
    row.reason = (comp.reason or "") + missing
    floor = floors.get(pv.arm or "", pv.run_statistic or "") if floors is not None else None
    if floor is not None:
        mde = floor.on_scale(margin.scale, pv.value)
        row.noise_floor = {**floor.as_dict(), "mde_on_margin_scale": mde, "applies": margin.delta < mde}
        if margin.delta < mde:
            row.status, row.runs_needed = INCONCLUSIVE, None
            row.reason = (f"below the noise floor: the margin {margin.text} (delta {margin.delta:.4g}) is smaller than "
                          f"the smallest effect this testbed detects for {floor.statistic} (MDE {mde:.4g} on the "
                          f"{margin.scale} scale, {floor.path.name}); more runs of this entry do not help")
    return row


@dataclass
class Effect:
    """Delta of a against b with its 90 % and 95 % intervals (None with fewer than MIN_RUNS runs)."""

    estimate: float
    ci90: tuple[float, float] | None
    ci95: tuple[float, float] | None
    standard_error: float
    runs: float            # runs (paired) or the harmonic mean of both arms' runs (unpaired), for runs_needed
    method: str
    seed: int | None = None
    reason: str = ""       # why there is no interval (empty when there is one)
    min_runs: int = MIN_RUNS   # the runs (per arm) an interval at this alpha needs at least


def paired_effect(d: np.ndarray, alpha: float = ALPHA) -> Effect:
    """Per-run differences Delta_i on the scale of Delta: the median and its order-statistic intervals (the
    1 - 2 alpha and 1 - alpha ones: 90 % and 95 % at alpha = 0.05)."""
    est = float(np.median(d))
    # equal tails: TOST and directional claims read one side of these intervals at a time
    i90, i95 = (quantile_interval(d, 0.5, level, REAL, tails="equal") for level in levels(alpha))
    method = f"order-statistic intervals of the median over {d.size} per-run pairs"
    if isinstance(i90, NoInterval) or isinstance(i95, NoInterval) or d.size < MIN_RUNS:
        # the wider (1 - alpha) interval needs the most runs; at alpha < 0.05 (a look of --until-decisive) more
        # than MIN_RUNS
        need = max(MIN_RUNS, *(i.runs_needed or 0 for i in (i90, i95) if isinstance(i, NoInterval)))
        return Effect(est, None, None, spread_standard_error(d, None, "difference"), d.size, method,
                      reason=f"{d.size} run(s): the {level_text(1 - alpha)} order-statistic interval of a median "
                             f"needs at least {need} runs", min_runs=need)
    se = (i95.high - i95.low) / (2 * NormalDist().inv_cdf(1 - alpha / 2))   # the interval's half-width in se
    return Effect(est, (i90.low, i90.high), (i95.low, i95.high), se, d.size, f"{method}: {i95.method}")


def unpaired_effect(a: np.ndarray, b: np.ndarray, scale: str, seed: int, alpha: float = ALPHA) -> Effect:
    """Two independent sets: Delta = ln(median a / median b) (or the difference) by a bootstrap over runs (the
    1 - 2 alpha and 1 - alpha percentile intervals)."""
    harmonic = 2.0 / (1.0 / a.size + 1.0 / b.size)
    tost, different = levels(alpha)
    # bootstrap_delta(reference, other) is Delta = ln(other / reference): b is the reference; its texts name the
    # arms' run counts in its argument order, put back in the claim's (a, b)
    boot = bootstrap_delta(b, a, scale, (tost, different), RESAMPLES, seed)  # type: ignore[arg-type]
    swapped, ordered = f"{b.size} vs {a.size}", f"{a.size} vs {b.size}"
    if isinstance(boot, NoInterval):
        est = float(delta_of_medians(b, a, scale))  # type: ignore[arg-type]
        return Effect(est, None, None, spread_standard_error(b, a, scale), harmonic, boot.method,  # type: ignore
                      reason=boot.reason.replace(swapped, ordered, 1), min_runs=boot.runs_needed or MIN_RUNS)
    return Effect(boot.estimate, boot.interval(tost), boot.interval(different), boot.standard_error,
                  harmonic, boot.method.replace(f"({swapped};", f"({ordered};", 1), seed)


def _needed(effect: Effect, gap_estimate: float, delta: float, alpha: float = ALPHA) -> int | None:
    """Runs (per arm) that would likely decide: runs_needed on the observed spread; with no interval yet at
    least the runs an interval at this alpha needs."""
    need = runs_needed(gap_estimate, effect.standard_error, effect.runs, delta, alpha=alpha)
    if effect.ci95 is None:
        return max(need or effect.min_runs, effect.min_runs)
    return need


_CLAIM_VERDICT = {EQUIVALENT: HOLDS, DIFFERENT: FAILS}
_RESOLVABILITY = "resolvability of the statistics (V2, V11)"


def _observed(got: PerRun) -> str:
    """The per-run values of a statistic no interval is computed for, as the reason shows them: the largest
    (or smallest) over r runs x N each (V11: "observed max over r x N")."""
    known = [x for x in got.n if x is not None]
    per_run = (f"N = {min(known)}" if known and min(known) == max(known) else
               f"N = {min(known)}..{max(known)}" if known else "N not recorded")
    return (f"{min(got.values):.6g}..{max(got.values):.6g} {got.unit}".rstrip()
            + f" over {got.values.size} run(s) x {per_run}")


def _share_runs_needed(k: int, n: int, runs: int, q: float, alpha: float = ALPHA) -> int | None:
    """The smallest run count above ``runs`` at which the Clopper-Pearson interval at 1 - alpha of a share that
    stays at k/n (the trials per run as observed, whole trials and successes) would lie wholly on one side of q;
    None when the share sits at q or no count up to MAX_PLANNED_RUNS decides. Whether a count decides is not
    monotone in it (the projected counts are rounded), so every count is tried, in blocks of doubling length: the
    interval's bounds of a whole block from the beta quantiles at once, and each count they pick (to within 1e-9
    of q) confirmed by proportion_interval itself, which decides the verdict."""
    if k / n == q:
        return None

    def decided(r: int) -> bool:
        trials = max(1, round(n / runs * r))
        ci = proportion_interval(min(trials, round(k / n * trials)), trials, 1 - alpha)
        return ci.low >= q or ci.high < q

    start, length = runs + 1, runs + 1
    while start <= MAX_PLANNED_RUNS:
        r = np.arange(start, min(start + length, MAX_PLANNED_RUNS + 1), dtype=np.float64)
        trials = np.maximum(1.0, np.round(n / runs * r))
        successes = np.minimum(trials, np.round(k / n * trials))
        with np.errstate(invalid="ignore", divide="ignore"):
            low = np.where(successes > 0, stats.beta.ppf(alpha / 2, successes, trials - successes + 1), 0.0)
            high = np.where(successes < trials, stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes),
                            1.0)
        for i in np.flatnonzero((low >= q - 1e-9) | (high < q + 1e-9)):
            if decided(int(r[i])):
                return int(r[i])
        start, length = start + length, 2 * length
    return None


def _on_common_runs(a: PerRun, b: PerRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs that carry both statistics, and each statistic's values in those runs."""
    runs = np.intersect1d(a.runs, b.runs)
    return runs, a.values[np.isin(a.runs, runs)], b.values[np.isin(b.runs, runs)]


def _judge_share(claim: Claim, data: RunStatistics, res: ClaimResult, source: Path | str,
                 alpha: float = ALPHA) -> ClaimResult:
    assert claim.successes is not None and claim.trials is not None and claim.q is not None
    res.successes, res.trials, res.q = str(claim.successes), str(claim.trials), claim.q
    s, t = data.get(claim.successes), data.get(claim.trials)
    for got in (s, t):
        if not isinstance(got, PerRun):
            res.reason = str(got)
            return res
    assert isinstance(s, PerRun) and isinstance(t, PerRun)
    runs, k_i, n_i = _on_common_runs(s, t)
    if runs.size == 0:
        res.reason = f"no valid run carries both {claim.successes} and {claim.trials}"
        return res
    _describe(res, s, t, runs, runs)
    if np.any(k_i != np.round(k_i)) or np.any(n_i != np.round(n_i)) or np.any(k_i < 0) or np.any(k_i > n_i):
        raise JudgeError(f"{source}: [[claims]] {claim.id!r}: successes and trials must be whole counts with "
                         f"0 <= successes <= trials in every run (got {k_i.tolist()} of {n_i.tolist()})")
    k, n = int(k_i.sum()), int(n_i.sum())
    res.run_ids, res.values_a, res.values_b, res.runs = runs.tolist(), k_i.tolist(), n_i.tolist(), int(runs.size)
    res.counts = [k, n]
    if n == 0:
        res.reason = f"no trials: {claim.trials} is 0 in every valid run"
        return res
    ci = proportion_interval(k, n, 1 - alpha)
    res.share, res.ci95, res.method = k / n, [ci.low, ci.high], (
        f"{ci.method}, summed over {runs.size} valid run(s); the trials are taken as independent")
    if ci.low >= claim.q:
        res.verdict = HOLDS
    elif ci.high < claim.q:
        res.verdict = FAILS
    else:
        res.verdict = INCONCLUSIVE
        res.runs_needed = _share_runs_needed(k, n, int(runs.size), claim.q, alpha)
        res.reason = (f"{k} of {n}: the {level_text(1 - alpha)} interval [{ci.low:.3f}, {ci.high:.3f}] holds "
                      f"q = {claim.q:g}; "
                      + (f"about {res.runs_needed} runs would decide if the share stays at {k / n:.3f}"
                         if res.runs_needed else "the share sits at (or within rounding of) q: more runs are "
                         "unlikely to decide"))
    return res


def _describe(res: ClaimResult, a: PerRun, b: PerRun, runs_a: np.ndarray, runs_b: np.ndarray) -> None:
    """Record what a claim's values are (V12): the runs each set comes from, N per run, definitions and units."""
    res.run_ids_a, res.run_ids_b = runs_a.tolist(), runs_b.tolist()
    res.n_per_run_a = [n for r, n in zip(a.runs.tolist(), a.n, strict=True) if r in set(res.run_ids_a)]
    res.n_per_run_b = [n for r, n in zip(b.runs.tolist(), b.n, strict=True) if r in set(res.run_ids_b)]
    res.definition_a, res.definition_b, res.unit_a, res.unit_b = a.definition, b.definition, a.unit, b.unit


def judge_claim(claim: Claim, data: RunStatistics, seed: int = DEFAULT_SEED, source: Path | str = "",
                alpha: float = ALPHA) -> ClaimResult:
    """One [[claims]] test judged from the valid runs at error rate ``alpha`` (see the module docstring)."""
    res = ClaimResult(id=claim.id, text=claim.text, principal=claim.principal, test=claim.test, alpha=alpha,
                      note=claim.note, a=None if claim.a is None else str(claim.a),
                      b=None if claim.b is None else str(claim.b))
    if claim.test == "share >=":
        return _judge_share(claim, data, res, source, alpha)
    assert claim.a is not None and claim.b is not None
    # the claimed range or margin, also on a claim that stops below without an interval (relation() prints them)
    if claim.within is not None:
        res.within = list(claim.within)
    if claim.test == "a ~ b" and (declared := margin_of(claim)) is not None:
        res.margin = _margin_dict(claim, declared)
    a, b = data.get(claim.a), data.get(claim.b)
    missing = [str(got) for got in (a, b) if not isinstance(got, PerRun | Unresolvable)]
    if missing:    # an arm that did not run, a statistic no run carries: nothing to judge
        res.reason = "; ".join(dict.fromkeys(missing))
        return res
    unresolved = [str(got) for got in (a, b) if isinstance(got, Unresolvable)]
    if unresolved:
        res.verdict, res.method, res.reason = INCONCLUSIVE, _RESOLVABILITY, "; ".join(dict.fromkeys(unresolved))
        return res
    assert isinstance(a, PerRun) and isinstance(b, PerRun)
    if a.unit != b.unit or "," in a.unit:  # ln(a / b) and a - b mean nothing across units (PerRun joins mixed ones)
        raise JudgeError(f"{source}: [[claims]] {claim.id!r}: the runs give {claim.a} in {a.unit!r} and {claim.b} in "
                         f"{b.unit!r}: a claim compares two statistics in one unit; emit both in the same unit")
    paired = claim.a.arm == claim.b.arm
    if paired:
        runs, va, vb = _on_common_runs(a, b)
        res.run_ids = runs.tolist()
        res.runs = int(runs.size)
        _describe(res, a, b, runs, runs)
    else:
        va, vb = a.values, b.values
        res.runs = [int(va.size), int(vb.size)]
        _describe(res, a, b, a.runs, b.runs)
    res.paired, res.values_a, res.values_b = paired, va.tolist(), vb.tolist()
    if va.size == 0:
        res.reason = f"no valid run carries both {claim.a} and {claim.b}"
        return res
    limits = [f"{ref}: {why}" for ref, got in ((claim.a, a), (claim.b, b))
              if (why := within_run_limit(ref.statistic, got.n)) is not None]
    if limits:   # a percentile the runs' N cannot resolve, or an extreme: its per-run values are shown, not judged
        res.verdict, res.method = INCONCLUSIVE, _RESOLVABILITY
        res.reason = "; ".join(limits) + "; observed: " + ", ".join(
            f"{ref} {_observed(got)}" for ref, got in ((claim.a, a), (claim.b, b)))
        return res
    margin = margin_of(claim)
    positive = bool(np.all(va > 0) and np.all(vb > 0))
    scale = margin.scale if margin is not None else ("log-ratio" if positive or claim.test == "a / b within"
                                                     else "difference")
    res.scale = scale
    if scale == "log-ratio" and not positive:
        res.reason = (f"a per-run value <= 0: {claim.a} / {claim.b} has no log ratio"
                      + ("; declare margin_abs to judge a difference" if claim.test == "a ~ b" else ""))
        return res
    if paired:
        effect = paired_effect(np.log(va / vb) if scale == "log-ratio" else va - vb, alpha)
    else:
        effect = unpaired_effect(va, vb, scale, seed, alpha)
    res.delta, res.ci90, res.ci95, res.method, res.seed = (effect.estimate, _pair(effect.ci90), _pair(effect.ci95),
                                                           effect.method, effect.seed)
    if claim.test in ("a > b", "a < b"):
        verdict = directional_verdict(effect.ci95, greater=claim.test == "a > b") if effect.ci95 else INCONCLUSIVE
        gap_estimate, delta = effect.estimate, 0.0
    elif claim.test == "a ~ b":
        assert margin is not None
        verdict = _CLAIM_VERDICT.get(tost_verdict(effect.ci90, effect.ci95, margin.delta), INCONCLUSIVE) \
            if effect.ci95 and effect.ci90 else INCONCLUSIVE
        gap_estimate, delta = effect.estimate, margin.delta
    else:
        assert claim.within is not None
        low, high = math.log(claim.within[0]), math.log(claim.within[1])
        verdict = _CLAIM_VERDICT.get(interval_verdict(effect.ci90, effect.ci95, low, high), INCONCLUSIVE) \
            if effect.ci95 and effect.ci90 else INCONCLUSIVE
        gap_estimate, delta = effect.estimate - (low + high) / 2, (high - low) / 2
    res.verdict = verdict
    if verdict == INCONCLUSIVE:
        res.runs_needed = _needed(effect, gap_estimate, delta, alpha)
        per = " per arm" if not paired else ""
        # an effect without an interval says why in its reason (and has one only then)
        why = (f"the {level_text(1 - alpha)} interval of Delta holds 0" if delta == 0.0 and effect.ci95 else
               "the intervals overlap the claimed range" if effect.ci95 else effect.reason)
        res.reason = why + (f"; about {res.runs_needed} runs{per} would likely decide" if res.runs_needed else
                            "; Delta sits on the boundary: more runs are unlikely to decide")
    return res


@dataclass(frozen=True)
class RunSummary:
    """What an info row shows of one arm:statistic over the valid runs (never judged): ``value`` is the median of
    the per-run values, or for an extreme the largest (smallest) observed; ``text`` says over how many runs and N,
    the 95 % interval of the median (shortest order-statistic ranks: descriptive), or why there is no value."""

    value: float | None
    text: str
    unit: str = ""


def summarise_runs(data: RunStatistics, ref: StatisticRef, scale: float = 1.0, unit: str | None = None) -> RunSummary:
    """The valid runs' values of ``ref`` for an info row (``scale`` converts them for display, shown in ``unit``;
    default the statistic's own unit). An extreme (a maximum or minimum, V11) is given as the observed extreme over
    r runs x N, without an interval; a statistic no run resolves (V2) or carries gives no value and the reason."""
    got = data.get(ref)
    if not isinstance(got, PerRun):
        return RunSummary(None, ("not printed: " if isinstance(got, Unresolvable) else "") + str(got), unit or "")
    shown = unit if unit is not None else got.unit
    v = got.values * scale
    known = [x for x in got.n if x is not None]
    per = (f" x N = {min(known)}" if known and min(known) == max(known) else
           f" x N = {min(known)}..{max(known)}" if known else "")
    if _EXTREME.search(ref.statistic):
        lowest = ref.statistic.startswith("min") or ref.statistic.endswith("min")
        return RunSummary(float(v.min() if lowest else v.max()),
                          f"the {'smallest' if lowest else 'largest'} observed over {v.size} run(s){per}: an extreme "
                          "has no confidence interval at any N (V11), an observation, not an estimate", shown)
    iv = quantile_interval(v, 0.5, 0.95)
    where = f"median of {v.size} run(s){per}" + (f" ({len(got.without_value)} valid run(s) without a value)"
                                                  if got.without_value else "")
    if isinstance(iv, NoInterval):
        return RunSummary(float(np.median(v)), f"{where}; no interval: {iv.reason}", shown)
    return RunSummary(float(np.median(v)), f"{where}; 95 % interval of the median [{iv.low:.4g}, {iv.high:.4g}] "
                                           f"{shown}".rstrip(), shown)


@dataclass
class Judgement:
    """What judge_entry found: a row per [[published]] value, a result per [[claims]] test, the plan."""

    rows: list[MeasuredRow]
    claims: list[ClaimResult]
    plan: dict[str, Any] | None
    noise_floor: str | None = None              # the calibration file used, if any
    notes: list[str] = field(default_factory=list)


def judge_entry(entry: FigureEntry, output_dir: Path | str, floors: NoiseFloors | None = None,
                seed: int | None = None, alpha: float = ALPHA) -> Judgement:
    """Every [[published]] value and every [[claims]] test of a measured entry, judged from the runs in
    ``output_dir`` (the repetition runner's directory). ``floors``: the noise floors to hold the margins against
    (default: the entry's calibration for this host, if any). ``seed``: of the bootstraps (default: the plan's
    seed, else DEFAULT_SEED), recorded in each claim. ``alpha``: the error rate of every row and claim (0.05; a
    look of ``benchbook reproduce --until-decisive`` passes alpha / K, benchbook.reproduce.sequential)."""
    if not entry.measured:
        raise JudgeError(f"{entry.source}: entry {entry.id!r} is not judged across runs (mode {entry.mode!r}, "
                         "no [[published]] values or [[claims]]): use Verdict.check")
    data = RunStatistics(output_dir)
    if floors is None:
        floors = load_noise_floors(entry.id)
    if seed is None:
        plan_seed = ((data.summary or {}).get("plan") or {}).get("seed")
        seed = int(plan_seed) if isinstance(plan_seed, int) else DEFAULT_SEED
    rows = [judge_value(pv, data, floors, entry.source, alpha) for pv in entry.published]
    claims = [judge_claim(c, data, seed, entry.source, alpha) for c in entry.claims]
    return Judgement(rows, claims, data.plan, None if floors.path is None else str(floors.path))


__all__ = ["Effect", "JudgeError", "Judgement", "PerRun", "RunStatistics", "RunSummary", "Unresolvable",
           "judge_claim", "judge_entry", "judge_value", "margin_of", "paired_effect", "summarise_runs",
           "unpaired_effect", "value_range", "within_run_limit"]
