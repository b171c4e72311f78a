"""The verdict vocabulary and the rows of a verdict: one per published number, and one per claim.

Row statuses (docs/statistics.md, "Verdict words"):

- published-data entries (exact print rules): ``match``, ``mismatch``, ``not derivable``, ``info``
- measured entries (judged across runs against a declared margin): ``reproduced`` (equivalent: the 90 %
  interval of Delta inside +-delta), ``mismatch`` (the 95 % interval wholly outside), ``inconclusive``
  (neither, too few runs, a statistic a run cannot resolve, or delta below the noise floor), ``not comparable``
  (the paper's definition, estimator, instrument or set-up differs), ``not derivable``, ``info``
- both: ``figure redrawn`` (a figure with nothing to compare; v1 files said "figure only")

Claim verdicts: ``holds``, ``fails``, ``inconclusive``, ``not derivable``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

MATCH = "match"
MISMATCH = "mismatch"
NOT_DERIVABLE = "not derivable"
INFO = "info"
FIGURE_REDRAWN = "figure redrawn"
REPRODUCED = "reproduced"
INCONCLUSIVE = "inconclusive"
NOT_COMPARABLE = "not comparable"
FIGURE_ONLY_V1 = "figure only"          # verdict/1's word for figure redrawn (read, never written)

PUBLISHED_DATA_STATUSES = (MATCH, MISMATCH, NOT_DERIVABLE, FIGURE_REDRAWN, INFO)
MEASURED_STATUSES = (REPRODUCED, MISMATCH, INCONCLUSIVE, NOT_COMPARABLE, NOT_DERIVABLE, FIGURE_REDRAWN, INFO)
STATUSES = (MATCH, REPRODUCED, MISMATCH, INCONCLUSIVE, NOT_COMPARABLE, NOT_DERIVABLE, FIGURE_REDRAWN, INFO)
JUDGED_STATUSES = (REPRODUCED, MISMATCH, INCONCLUSIVE)   # measured rows held against a margin (the m of k of m)

HOLDS = "holds"
FAILS = "fails"
CLAIM_VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_DERIVABLE)

PARTIAL = "partial"
FAILED = "failed"
OUTCOMES = (REPRODUCED, FIGURE_REDRAWN, PARTIAL, INCONCLUSIVE, MISMATCH, FAILED)

_UNIT_DISPLAY = {"us": "µs"}


def fmt_value(value: Any, unit: str = "") -> str:
    """A number as the verdict tables print it, with its unit ("-" for None)."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.6g}"
    else:
        text = str(value)
    return f"{text} {_UNIT_DISPLAY.get(unit, unit)}".strip()


def fmt_interval(bounds: list[float] | tuple[float, float] | None, unit: str = "") -> str:
    """[low, high] in the value's unit, 4 significant digits ("-" without one)."""
    if bounds is None:
        return "-"
    lo, hi = bounds
    return f"[{lo:.4g}, {hi:.4g}] {_UNIT_DISPLAY.get(unit, unit)}".rstrip()


@dataclass
class VerdictRow:
    """One published number (or an info/figure row): what the paper printed, what was computed, the status."""

    name: str
    published: float | str | None
    computed: float | str | None
    unit: str = ""
    runs: Any = ""
    status: str = INFO
    note: str = ""
    tolerance: str = ""

    def __post_init__(self) -> None:
        if self.status == FIGURE_ONLY_V1:
            self.status = FIGURE_REDRAWN
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r} is not one of {', '.join(STATUSES)}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MeasuredRow(VerdictRow):
    """A published number judged across runs (kind "measured"): ``computed`` is the estimate (median of the
    per-run values), ``runs`` the number of valid runs used; ``ci90``/``ci95`` are on the scale of Delta
    (ln(estimate / published) or estimate - published), ``ci90_value``/``ci95_value`` the same in the value's
    unit (the interval of the median)."""

    kind: str = "measured"
    arm: str | None = None
    run_statistic: str | None = None
    definition: str = ""
    margin: dict[str, Any] = field(default_factory=dict)
    run_ids: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    n_per_run: list[int | None] = field(default_factory=list)
    runs_without_value: list[int] = field(default_factory=list)
    estimate: float | None = None
    delta: float | None = None
    ci90: list[float] | None = None
    ci95: list[float] | None = None
    ci90_value: list[float] | None = None
    ci95_value: list[float] | None = None
    method: str = ""
    seed: int | None = None
    alpha: float = 0.05
    runs_needed: int | None = None
    noise_floor: dict[str, Any] | None = None
    p_equivalent: float | None = None
    p_different: float | None = None
    reason: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MeasuredRow:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class ClaimResult:
    """One [[claims]] test judged across runs: Delta of a against b (ln(a / b) or a - b; paired per run when a and
    b are statistics of the same arm), its intervals, the verdict and why."""

    id: str
    text: str
    principal: bool
    test: str
    verdict: str = NOT_DERIVABLE
    a: str | None = None
    b: str | None = None
    paired: bool | None = None
    scale: str | None = None
    values_a: list[float] = field(default_factory=list)
    values_b: list[float] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)          # the runs both carry (paired claims, shares)
    run_ids_a: list[int] = field(default_factory=list)        # the runs values_a / values_b come from
    run_ids_b: list[int] = field(default_factory=list)
    n_per_run_a: list[int | None] = field(default_factory=list)   # packets/samples behind each value
    n_per_run_b: list[int | None] = field(default_factory=list)
    definition_a: str = ""                                    # the Statistics' definitions and units
    definition_b: str = ""
    unit_a: str = ""
    unit_b: str = ""
    delta: float | None = None
    ci90: list[float] | None = None
    ci95: list[float] | None = None
    margin: dict[str, Any] | None = None
    within: list[float] | None = None
    successes: str | None = None
    trials: str | None = None
    q: float | None = None
    share: float | None = None
    counts: list[int] | None = None          # [successes, trials] summed over the valid runs
    method: str = ""
    runs: Any = None                         # runs used: an int (paired, share), [runs of a, runs of b] unpaired
    runs_needed: int | None = None
    seed: int | None = None
    alpha: float = 0.05
    reason: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in CLAIM_VERDICTS:
            raise ValueError(f"claim verdict {self.verdict!r} is not one of {', '.join(CLAIM_VERDICTS)}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClaimResult:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def relation(self) -> str:
        """The test in words with its operands, e.g. "reno:a > reno:b" or "share reno:x / reno:y >= 0.9"."""
        if self.test == "share >=":
            return f"{self.successes} / {self.trials} >= {self.q:g}"
        if self.test == "a / b within":   # a verdict.json of before 2026-11-27 has no range on an unjudged claim
            bounds = f"[{self.within[0]:g}, {self.within[1]:g}]" if self.within else "the claimed range"
            return f"{self.a} / {self.b} within {bounds}"
        op = {"a > b": ">", "a < b": "<", "a ~ b": "~"}[self.test]
        margin = f" within {self.margin['text']}" if self.margin else ""
        return f"{self.a} {op} {self.b}{margin}"


def row_from_dict(data: dict[str, Any]) -> VerdictRow:
    """A row of verdict.json (/1 or /2): measured rows carry kind "measured"."""
    if data.get("kind") == "measured":
        return MeasuredRow.from_dict(data)
    known = {f.name for f in fields(VerdictRow)}
    return VerdictRow(**{k: v for k, v in data.items() if k in known})


__all__ = ["CLAIM_VERDICTS", "FAILED", "FAILS", "FIGURE_ONLY_V1", "FIGURE_REDRAWN", "HOLDS", "INCONCLUSIVE", "INFO",
           "JUDGED_STATUSES", "MATCH", "MEASURED_STATUSES", "MISMATCH", "NOT_COMPARABLE", "NOT_DERIVABLE", "OUTCOMES",
           "PARTIAL", "PUBLISHED_DATA_STATUSES", "REPRODUCED", "STATUSES", "ClaimResult", "MeasuredRow",
           "VerdictRow", "fmt_interval", "fmt_value", "row_from_dict"]
