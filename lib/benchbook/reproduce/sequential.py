"""Repeating a measured entry until its verdict is decisive (``benchbook reproduce ID --until-decisive``), with a
sequential rule that keeps the error rate (docs/statistics.md, "Repeating until decisive").

    plan = look_plan(first_runs=6, max_runs=24, alpha=0.05, budget_s=1800)
    plan.runs              (7, 14, 24): runs per arm at each look, fixed before the first run
    plan.alpha_per_look    0.05 / 3: what every look judges at
    undecided(verdict)     the judged rows and claims of a verdict.json that are still inconclusive
    parse_duration("1h30m")    5400.0

**The rule: Bonferroni over the planned looks.** The looks are planned before the first run: the runs per arm
start at ``first_runs`` (at least the fewest that give an interval of a median at 1 - alpha/K) and double up to
``max_runs``, so their number K is known in advance. Every look judges every row and claim at alpha / K (its
intervals at 1 - alpha/K, its equivalence test at 1 - 2 alpha/K). The probability that some look gives a wrong
decisive verdict is at most the sum over the looks of alpha / K = alpha (Bonferroni's inequality: whatever the
dependence between the looks, which share their runs, and whenever the procedure stops). Stopping early -- every
row and claim decisive, the budget spent, or nothing left that more runs could decide -- only drops looks. The
rule is conservative (Pocock or O'Brien-Fleming boundaries spend alpha more efficiently but assume a normal
statistic; these verdicts are order-statistic and bootstrap intervals).

A look is one execution of the entry's notebook on the same run directory with ``repetitions`` set to the
look's runs per arm and ``alpha`` to alpha / K: the repetition runner extends its plan there (the first rounds
keep their seeded order, finished runs are not rerun; benchbook.experiment.repetitions) and the notebook judges
again. The run record lists every look ("sequential" in run.json).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from benchbook.analysis.intervals import MIN_RUNS, runs_needed_for_quantile
from benchbook.analysis.multiplicity import ALPHA

RULE = ("Bonferroni over the planned looks: the runs per arm at each look are fixed before the first run "
        "(doubling from the first look up to the maximum), and each of the K looks judges every row and claim at "
        "alpha / K, so the chance of any wrong decisive verdict over all looks is at most alpha")
DEFAULT_GROWTH = 4   # without --max-runs: up to this many times the first look's runs per arm (3 looks)
_DURATION = re.compile(r"(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?")


class SequentialError(ValueError):
    """A look plan that cannot be made (the message says what was given and what is expected)."""


def parse_duration(text: str) -> float:
    """Seconds of a duration written as hours, minutes and seconds: "20m", "1h30m", "90s", "1h", "2m30s"."""
    t = text.strip().lower().replace(" ", "")
    m = _DURATION.fullmatch(t)
    if not t or m is None or not any(m.groupdict().values()):
        raise SequentialError(f"duration {text!r}: expected hours, minutes and/or seconds such as 20m, 1h30m, "
                              "90s or 2m30s")
    parts = {k: float(v) for k, v in m.groupdict().items() if v is not None}
    seconds = 3600 * parts.get("h", 0.0) + 60 * parts.get("m", 0.0) + parts.get("s", 0.0)
    if seconds <= 0:
        raise SequentialError(f"duration {text!r}: expected more than 0 seconds")
    return seconds


def duration_text(seconds: float) -> str:
    """A duration as the progress lines print it: "45 s", "4 m 12 s", "1 h 05 m"."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} m {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} m"


def look_schedule(first_runs: int, max_runs: int) -> tuple[int, ...]:
    """Runs per arm at each look: ``first_runs`` (raised to MIN_RUNS), doubled at each look, the last one
    ``max_runs``."""
    first = max(int(first_runs), MIN_RUNS)
    if max_runs < first:
        raise SequentialError(f"--max-runs {max_runs}: expected at least the first look's {first} runs per arm "
                              f"(at least {MIN_RUNS}: fewer give no interval)")
    runs = [first]
    while runs[-1] < max_runs:
        runs.append(min(2 * runs[-1], max_runs))
    return tuple(runs)


@dataclass(frozen=True)
class LookPlan:
    """The looks of ``--until-decisive``, fixed before the first run."""

    runs: tuple[int, ...]        # runs per arm at each look
    alpha: float = ALPHA         # the error rate over all looks
    budget_s: float | None = None

    @property
    def looks(self) -> int:
        return len(self.runs)

    @property
    def alpha_per_look(self) -> float:
        return self.alpha / self.looks

    def as_dict(self) -> dict[str, Any]:
        return {"rule": RULE, "alpha": self.alpha, "looks_planned": self.looks, "alpha_per_look": self.alpha_per_look,
                "runs_per_look": list(self.runs), "budget_s": self.budget_s}


def look_plan(first_runs: int, max_runs: int | None = None, alpha: float = ALPHA,
              budget_s: float | None = None) -> LookPlan:
    """The plan of looks from the first look's runs per arm up to ``max_runs`` (default DEFAULT_GROWTH times the
    first look's). The first look is raised to the fewest runs per arm whose order-statistic interval of a median
    exists at the looks' level 1 - alpha/K (MIN_RUNS = 6 at 95 %, 7 at K = 2 or 3, 8 at K = 4 to 6): a look with
    fewer could decide no row and would spend its share of alpha for nothing. Raising it can only lower K."""
    if not 0 < alpha < 1:
        raise SequentialError(f"alpha {alpha!r}: expected a number between 0 and 1")
    first = max(int(first_runs), MIN_RUNS)
    while True:
        runs = look_schedule(first, max_runs if max_runs is not None else DEFAULT_GROWTH * first)
        fewest = runs_needed_for_quantile(0.5, 1 - alpha / len(runs))
        if fewest <= first:
            return LookPlan(runs, alpha, budget_s)
        if max_runs is not None and fewest > max_runs:
            raise SequentialError(f"--max-runs {max_runs}: a look judged at alpha / K = {alpha:g} / {len(runs)} "
                                  f"needs at least {fewest} runs per arm for an interval of a median")
        first = fewest


@dataclass(frozen=True)
class Undecided:
    """A judged row or claim a look left inconclusive: ``runs_needed`` None when more runs do not help (a
    statistic a run cannot resolve, a margin below the noise floor, Delta on the margin)."""

    kind: str                    # "row" | "claim"
    name: str
    runs_needed: int | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def undecided(verdict: Mapping[str, Any]) -> list[Undecided]:
    """The measured rows (status "inconclusive") and claims (verdict "inconclusive") of a verdict.json."""
    out = [Undecided("row", str(r.get("name", "")), r.get("runs_needed"), str(r.get("reason") or r.get("note") or ""))
           for r in verdict.get("rows", []) if r.get("status") == "inconclusive"]
    out += [Undecided("claim", str(c.get("id") or c.get("text", "")), c.get("runs_needed"), str(c.get("reason", "")))
            for c in verdict.get("claims", []) if c.get("verdict") == "inconclusive"]
    return out


def judged_items(verdict: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The rows judged across runs (kind "measured", not info) and the claims of a verdict.json."""
    return [*(r for r in verdict.get("rows", []) if r.get("kind") == "measured" and r.get("status") != "info"),
            *verdict.get("claims", [])]


def judged_alphas(verdict: Mapping[str, Any]) -> set[float]:
    """The alphas the judged rows and claims of a verdict.json carry (rows judged across runs, claims)."""
    return {float(x["alpha"]) for x in judged_items(verdict) if isinstance(x.get("alpha"), (int, float))}


def alpha_mismatch(verdict: Mapping[str, Any], alpha: float) -> str | None:
    """Why the verdict was not judged at the look's ``alpha`` (None when every judged item carries it): then the
    sequential rule does not hold and no further look may be taken."""
    judged = judged_items(verdict)
    if not judged:
        return None
    found = judged_alphas(verdict)
    wrong = sorted(a for a in found if not math.isclose(a, alpha, rel_tol=1e-9))
    if wrong or len(found) == 0 or any("alpha" not in x for x in judged):
        got = ", ".join(f"{a:g}" for a in wrong) if wrong else "no alpha"
        return (f"the verdict was judged at {got}, not at this look's alpha / K = {alpha:.4g} (the notebook must "
                "pass its alpha parameter to the judge): the sequential rule would not hold, so no further look")
    return None


def needed_runs(items: Sequence[Undecided]) -> int | None:
    """The most runs per arm any undecided item names (None when none names any)."""
    need = [i.runs_needed for i in items if i.runs_needed is not None]
    return max(need) if need else None


__all__ = ["DEFAULT_GROWTH", "RULE", "LookPlan", "SequentialError", "Undecided", "alpha_mismatch", "duration_text",
           "judged_alphas", "judged_items", "look_plan", "look_schedule", "needed_runs", "parse_duration", "undecided"]
