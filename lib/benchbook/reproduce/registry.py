"""The figure registry: paper folders, each with one TOML file per reproducible figure or table.

A paper folder holds ``paper.toml`` (the paper), one ``<entry id>.toml`` per figure or table, the
notebooks and, only where a paper needs code no other paper would reuse, a small module beside them.
The built-in paper folders are ``notebooks/*/paper.toml``; any number of the user's own are added
with ``benchbook reproduce --papers DIR`` (repeatable) or ``BENCHBOOK_PAPERS=dir1:dir2``. A DIR is
a paper folder (it holds paper.toml) or a folder of paper folders. Entry ids are unique over the
whole search path: a duplicate is an error naming both files.

paper.toml::

    id = "smith-conf24"                      # must equal the folder name
    title = "..."
    citation = "..."                         # inherited by every entry that gives none
    unstated = "what the paper leaves unstated"
    [datasets]                               # name -> a path relative to the paper folder when that
    containerized-low-latency = "containerized-low-latency"   # folder exists, else a folder under
                                             # data/published/

<entry id>.toml (data only)::

    id = "smith-conf24-table2"               # must equal the file name without .toml
    title = "..."
    citation = "..."                         # optional: paper.toml's citation
    notebook = "smith-conf24.ipynb"          # relative to the paper folder, or "benchbook:<name>.ipynb"
                                             # for a reusable notebook in notebooks/reusable/
    mode = "published-data"                  # | "local-measurement" | "testbed-measurement"
    dataset = "containerized-low-latency"    # a name of paper.toml's [datasets], or a folder under
                                             # data/published/ (optional)
    requires = ["root", "lxc-start"]         # capabilities (see benchbook.reproduce.capabilities)
    notes = "what this figure leaves unstated"
    claim = "the figure's principal claim"   # optional; its status is part of the verdict
    claim_rows = ["row name", ...]           # the verdict rows that carry the claim (default: all)

    [parameters]                             # passed to the notebook by papermill
    rate_pps = 1000000

    [[published]]                            # one number printed in the paper
    name = "..."
    value = 123.45
    unit = "us"
    tolerance_abs = 0.005                    # and/or tolerance_rel = 0.01 (fraction of |value|);
                                             # with both, the larger allowed deviation applies
    decimals = 2                             # how the paper printed it: the computed value is
    rounding = "half-up"                     # rounded so ("half-up" | "half-even" | "truncate") and
                                             # then compared, exactly unless a tolerance is given
    note = "..."
    # fields read by the notebook that computes the value (e.g. benchbook:evaluator-table.ipynb):
    folder = "vm/rt-optimized"               # data folder of the run(s) inside the dataset
    statistic = "max"                        # max | min | mean | p50 | p99 | p99.9 | ...
    rate_pps = 1000000
    repeat = "unstated"                      # a repeat number | "worst" | "median" | "best" | "unstated"

On a measured entry (mode local-/testbed-measurement) each ``[[published]]`` value is judged across runs
(benchbook.reproduce.judge) against a margin declared with its source; ``tolerance_abs`` / ``tolerance_rel`` /
``rounding`` and the evaluator fields are refused there::

    [[published]]
    name = "..."
    value = 0.5
    unit = ""
    decimals = 2                             # as printed: the margin must be at least half a unit of the last digit
    arm = "reno"                             # the runner arm whose runs carry the statistic
    run_statistic = "reduction_median"       # the Statistic name in run-statistics.parquet
    margin_abs = 0.1                         # OR margin_rel = 0.10 (judged on the log-ratio scale; value_range "rate")
    margin_source = ["instrument resolution", "emulation allowance"]   # one or more of MARGIN_SOURCES
    margin_note = "why, in words"            # required with "emulation allowance" (and "instrument resolution")
    value_range = "share"                    # "rate" [0, inf) | "share" [0, 1] | "jain:N" [1/N, 1] | "real"
    comparable = true                        # false: the paper's definition, estimator, instrument or set-up
    not_comparable_reason = "..."            # differs (then required, and arm/statistic/margin are optional)
    note = "..."

and the entry states its claims as tests (at least one ``principal = true``)::

    [[claims]]
    id = "reno-halves"                       # unique in the entry
    text = "..."
    principal = true
    test = "a > b"                           # "a > b" | "a < b" | "a ~ b" | "a / b within" | "share >="
    a = "arm:statistic"
    b = "arm:statistic"
    # "a ~ b":        margin_rel | margin_abs, margin_source, margin_note (as for a value)
    # "a / b within": within = [x, y]                  (0 < x < y)
    # "share >=":     successes = "arm:statistic", trials = "arm:statistic", q = 0.9 (no a, b)

Unknown or missing fields, wrong types and an id that differs from the file name are errors naming
the file.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Context, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.paths import NOTEBOOKS_DIR, PUBLISHED_DIR

MODES = ("published-data", "local-measurement", "testbed-measurement")
PAPER_FILE = "paper.toml"
REUSABLE_PREFIX = "benchbook:"
REUSABLE_DIR = NOTEBOOKS_DIR / "reusable"
PAPERS_ENV = "BENCHBOOK_PAPERS"
ROUNDINGS = {"half-up": ROUND_HALF_UP, "half-even": ROUND_HALF_EVEN, "truncate": ROUND_DOWN}

_PAPER_REQUIRED = {"id": str, "title": str, "citation": str}
_PAPER_OPTIONAL = {"datasets": dict, "unstated": str}
_ENTRY_REQUIRED = {"id": str, "title": str, "notebook": str, "mode": str}
_ENTRY_OPTIONAL = {"citation": str, "dataset": str, "requires": list, "parameters": dict, "published": list,
                   "notes": str, "claim": str, "claim_rows": list, "claims": list}
_PUBLISHED_REQUIRED = {"name": str, "value": (int, float), "unit": str}
_PUBLISHED_OPTIONAL = {"tolerance_abs": (int, float), "tolerance_rel": (int, float), "decimals": int,
                       "rounding": str, "note": str, "folder": str, "statistic": str, "rate_pps": int,
                       "repeat": (str, int)}
_MARGIN_FIELDS = {"margin_rel": (int, float), "margin_abs": (int, float), "margin_source": list, "margin_note": str}
_MEASURED_OPTIONAL = {"decimals": int, "note": str, "arm": str, "run_statistic": str, **_MARGIN_FIELDS,
                      "value_range": str, "comparable": bool, "not_comparable_reason": str}

# the repetition runner's arm names (benchbook.experiment.repetitions.ARM_NAME; not imported: the registry loads
# without the runner's pandas and numpy)
_ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+=-]*")
# Where a measured value's margin comes from (SPEC-21 section 2; docs/statistics.md "Margins"):
MARGIN_SOURCES = ("paper spread", "paper interval", "print precision", "instrument resolution",
                  "emulation allowance")
NOTE_NEEDED = ("emulation allowance", "instrument resolution")  # sources that must be explained in margin_note
VALUE_RANGES = ("rate", "share", "jain:N", "real")
CLAIM_TESTS = ("a > b", "a < b", "a ~ b", "a / b within", "share >=")
_CLAIM_REQUIRED = {"id": str, "text": str, "test": str}
_CLAIM_OPTIONAL = {"principal": bool, "a": str, "b": str, **_MARGIN_FIELDS, "within": list, "successes": str,
                   "trials": str, "q": (int, float), "note": str}
_CLAIM_FIELDS_BY_TEST = {  # fields a test needs; every other test-specific field is refused
    "a > b": ("a", "b"), "a < b": ("a", "b"), "a ~ b": ("a", "b", "margin_source"),
    "a / b within": ("a", "b", "within"), "share >=": ("successes", "trials", "q")}
_UNIT_DISPLAY = {"us": "µs"}
_CLAIM_SPECIFIC = ("a", "b", "margin_rel", "margin_abs", "margin_source", "margin_note", "within", "successes",
                   "trials", "q")


class RegistryError(BenchbookError, ValueError):
    """A registry entry or paper folder is malformed or missing; the message names the file."""


@dataclass(frozen=True)
class PublishedValue:
    """A number printed in the paper, how it was printed, and the tolerance within which a computed
    value matches.

    Matching: the computed value is first rounded the way the paper printed it (``decimals`` with
    ``rounding``, in decimal arithmetic), then compared with the published value. Without a tolerance
    the comparison is exact; with ``tolerance_abs`` and/or ``tolerance_rel`` the allowed deviation is
    the larger of tolerance_abs and tolerance_rel * |published value|.
    """

    name: str
    value: float
    unit: str
    tolerance_abs: float | None = None
    tolerance_rel: float | None = None
    note: str = ""
    decimals: int | None = None
    rounding: str = "half-up"
    folder: str | None = None
    statistic: str | None = None
    rate_pps: int | None = None
    repeat: str | int | None = None
    # measured values (judged across runs against a declared margin; benchbook.reproduce.judge)
    measured: bool = False
    arm: str | None = None
    run_statistic: str | None = None
    margin_rel: float | None = None
    margin_abs: float | None = None
    margin_source: tuple[str, ...] = ()
    margin_note: str = ""
    value_range: str = "real"
    comparable: bool = True
    not_comparable_reason: str = ""

    def print_precision(self) -> float | None:
        """Half a unit of the last printed digit (None when ``decimals`` is not given)."""
        return None if self.decimals is None else 0.5 * 10.0 ** (-self.decimals)

    def margin_text(self) -> str:
        """The margin as declared: "±10 %" (margin_rel) or "±0.1 ms" (margin_abs); "" without one."""
        return _margin_text(self.margin_rel, self.margin_abs, self.unit)

    def allowed_deviation(self) -> float:
        """The larger of tolerance_abs and tolerance_rel * |value| (0 when neither is given)."""
        return float(self._allowed_deviation())

    def _allowed_deviation(self) -> Decimal:
        dev = Decimal(0)
        if self.tolerance_abs is not None:
            dev = max(dev, _dec(self.tolerance_abs))
        if self.tolerance_rel is not None:
            dev = max(dev, _dec(self.tolerance_rel) * abs(_dec(self.value)))
        return dev

    def as_printed(self, computed: float) -> Decimal:
        """The computed value as the paper would have printed it (unchanged without ``decimals``)."""
        value = _dec(computed)
        if self.decimals is None:
            return value
        digits = max(value.adjusted(), 0) + self.decimals + 2  # every digit kept: 28 (the default) is not enough
        return value.quantize(Decimal(1).scaleb(-self.decimals), rounding=ROUNDINGS[self.rounding],
                              context=Context(prec=max(digits, 28)))

    def matches(self, computed: float | None) -> bool:
        if computed is None:
            return False
        try:
            shown = self.as_printed(float(computed))
        except (InvalidOperation, ValueError, OverflowError):
            return False
        if not shown.is_finite():
            return False
        return abs(shown - _dec(self.value)) <= self._allowed_deviation()

    def tolerance_text(self) -> str:
        if self.measured:
            text = self.margin_text()
            return f"{text} ({', '.join(self.margin_source)})" if text else "no margin (not comparable)"
        parts = []
        if self.decimals is not None:
            parts.append(f"printed with {self.decimals} decimals ({self.rounding})")
        tol = []
        if self.tolerance_abs is not None:
            unit = {"us": "µs"}.get(self.unit, self.unit)
            tol.append(f"±{self.tolerance_abs:g} {unit}".rstrip())
        if self.tolerance_rel is not None:
            tol.append(f"±{self.tolerance_rel * 100:g} %")
        if tol:
            parts.append(" or ".join(tol) + (" (the larger)" if len(tol) == 2 else ""))
        elif self.decimals is not None:
            parts.append("exact")
        return ", ".join(parts) if parts else "exact"


def value_range_bounds(text: str) -> tuple[float, float]:
    """The (low, high) of a value_range: "rate" [0, inf), "share" [0, 1], "jain:N" [1/N, 1], "real" (ValueError
    for anything else). benchbook.reproduce.judge turns it into the analysis Range."""
    fixed = {"rate": (0.0, math.inf), "share": (0.0, 1.0), "real": (-math.inf, math.inf)}
    if text in fixed:
        return fixed[text]
    head, _, n = text.partition(":")
    if head == "jain" and n.isdigit() and int(n) >= 1:
        return 1.0 / int(n), 1.0
    raise ValueError(f"value_range {text!r} is not one of {', '.join(VALUE_RANGES)} (N a whole number of flows)")


def _margin_text(rel: float | None, ab: float | None, unit: str = "") -> str:
    if rel is not None:
        return f"±{rel * 100:g} %"
    if ab is not None:
        return f"±{ab:g} {_UNIT_DISPLAY.get(unit, unit)}".rstrip()
    return ""


@dataclass(frozen=True)
class StatisticRef:
    """``"arm:statistic"``: a statistic of the runs of one arm."""

    arm: str
    statistic: str

    def __str__(self) -> str:
        return f"{self.arm}:{self.statistic}"


@dataclass(frozen=True)
class Claim:
    """A relation between statistics, judged across runs (benchbook.reproduce.judge)."""

    id: str
    text: str
    test: str
    principal: bool = False
    a: StatisticRef | None = None
    b: StatisticRef | None = None
    margin_rel: float | None = None
    margin_abs: float | None = None
    margin_source: tuple[str, ...] = ()
    margin_note: str = ""
    within: tuple[float, float] | None = None
    successes: StatisticRef | None = None
    trials: StatisticRef | None = None
    q: float | None = None
    note: str = ""

    def margin_text(self) -> str:
        return _margin_text(self.margin_rel, self.margin_abs)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "text": self.text, "principal": self.principal, "test": self.test}
        for key in ("a", "b", "successes", "trials"):
            if getattr(self, key) is not None:
                out[key] = str(getattr(self, key))
        for key in ("margin_rel", "margin_abs", "margin_note", "q", "note"):
            if getattr(self, key) not in (None, ""):
                out[key] = getattr(self, key)
        if self.margin_source:
            out["margin_source"] = list(self.margin_source)
        if self.within is not None:
            out["within"] = list(self.within)
        return out


def _dec(x: float | int) -> Decimal:
    """A number as the decimal its shortest repr shows (100.185 is 100.185, not its binary value)."""
    return Decimal(repr(x)) if isinstance(x, float) else Decimal(int(x))


@dataclass(frozen=True)
class Paper:
    """A paper folder's paper.toml."""

    id: str
    title: str
    citation: str
    folder: Path
    datasets: dict[str, str] = field(default_factory=dict)
    unstated: str = ""

    def dataset_path(self, name: str) -> Path | None:
        """Where the paper's dataset `name` lives, or None if paper.toml does not name it."""
        where = self.datasets.get(name)
        if where is None:
            return None
        local = self.folder / where
        if local.is_dir():
            return local.resolve()
        return Path(os.environ.get("BENCHBOOK_PUBLISHED", PUBLISHED_DIR)) / where


@dataclass(frozen=True)
class FigureEntry:
    id: str
    title: str
    citation: str
    notebook: str
    mode: str
    source: Path
    dataset: str | None = None
    requires: tuple[str, ...] = ()
    parameters: dict[str, Any] = field(default_factory=dict)
    published: tuple[PublishedValue, ...] = ()
    notes: str = ""
    claim: str = ""
    claim_rows: tuple[str, ...] = ()
    paper: Paper | None = None
    claims: tuple[Claim, ...] = ()

    @property
    def measured(self) -> bool:
        """Judged across runs against declared margins: a measured mode with [[published]] values or [[claims]] to
        judge (a measured-mode entry with neither, such as a check against a generator's known truth, writes exact
        rows as published-data entries do)."""
        return self.mode != "published-data" and bool(self.published or self.claims)

    @property
    def folder(self) -> Path:
        """The paper folder (the folder of the entry's TOML file)."""
        return self.source.parent

    @property
    def notebook_path(self) -> Path:
        if self.notebook.startswith(REUSABLE_PREFIX):
            return REUSABLE_DIR / self.notebook[len(REUSABLE_PREFIX):]
        p = Path(self.notebook)
        return p if p.is_absolute() else self.folder / p

    @property
    def dataset_dir(self) -> Path | None:
        """The folder of the entry's dataset (None when the entry has none)."""
        if not self.dataset:
            return None
        if self.paper is not None:
            found = self.paper.dataset_path(self.dataset)
            if found is not None:
                return found
        return Path(os.environ.get("BENCHBOOK_PUBLISHED", PUBLISHED_DIR)) / self.dataset

    def published_value(self, name: str) -> PublishedValue:
        for pv in self.published:
            if pv.name == name:
                return pv
        known = ", ".join(repr(p.name) for p in self.published) or "none"
        raise KeyError(f"{self.source}: no [[published]] value named {name!r} (known: {known})")


def _check_fields(src: Path, where: str, data: dict[str, Any], required: dict, optional: dict) -> None:
    for key in data:
        if key not in required and key not in optional:
            allowed = ", ".join(sorted({*required, *optional}))
            raise RegistryError(f"{src}: {where}unknown field {key!r} (allowed: {allowed})")
    for key in required:
        if key not in data:
            raise RegistryError(f"{src}: {where}missing required field {key!r}")
    for key, typ in {**required, **optional}.items():
        if key in data:
            val = data[key]
            wants_bool = typ is bool or (isinstance(typ, tuple) and bool in typ)
            if (isinstance(val, bool) and not wants_bool) or not isinstance(val, typ):
                names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
                raise RegistryError(f"{src}: {where}field {key!r} must be {names}, got {type(val).__name__}")


def _read_toml(src: Path) -> dict[str, Any]:
    try:
        with open(src, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{src}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise RegistryError(f"{src}: cannot read ({exc.strerror})") from exc


def load_paper(folder: Path | str) -> Paper:
    """paper.toml of a paper folder."""
    folder = Path(folder)
    src = folder / PAPER_FILE
    data = _read_toml(src)
    _check_fields(src, "", data, _PAPER_REQUIRED, _PAPER_OPTIONAL)
    if data["id"] != folder.resolve().name:
        raise RegistryError(f"{src}: id {data['id']!r} must equal the folder name {folder.resolve().name!r}")
    datasets = data.get("datasets", {})
    for name, where in datasets.items():
        if not isinstance(where, str) or not where:
            raise RegistryError(f"{src}: [datasets] {name!r} must be a folder name or a path (string)")
    return Paper(id=data["id"], title=data["title"], citation=data["citation"], folder=folder,
                 datasets=dict(datasets), unstated=data.get("unstated", ""))


def _parse_margin(src: Path, where: str, item: dict[str, Any]) -> tuple[float | None, float | None, tuple[str, ...]]:
    """margin_rel | margin_abs with margin_source (and margin_note where a source needs one), checked."""
    rel, ab = item.get("margin_rel"), item.get("margin_abs")
    if rel is not None and ab is not None:
        raise RegistryError(f"{src}: {where}give margin_rel or margin_abs, not both")
    if rel is None and ab is None:
        raise RegistryError(f"{src}: {where}needs a margin declared before the runs: margin_rel (a fraction, judged "
                            "on the log-ratio scale) or margin_abs (in the value's unit), with margin_source")
    margin = rel if rel is not None else ab
    name = "margin_rel" if rel is not None else "margin_abs"
    if not (margin > 0 and math.isfinite(margin)):
        raise RegistryError(f"{src}: {where}{name} must be a positive number, got {margin!r}")
    sources = item.get("margin_source")
    if not sources:
        raise RegistryError(f"{src}: {where}needs margin_source: where the margin comes from, one or more of "
                            f"{', '.join(repr(m) for m in MARGIN_SOURCES)}")
    for source in sources:
        if source not in MARGIN_SOURCES:
            raise RegistryError(f"{src}: {where}margin_source {source!r} is not one of "
                                f"{', '.join(repr(m) for m in MARGIN_SOURCES)}")
    if len(set(sources)) < len(sources):
        raise RegistryError(f"{src}: {where}margin_source names a source twice")
    needs = [x for x in sources if x in NOTE_NEEDED]
    if needs and not item.get("margin_note", "").strip():
        raise RegistryError(f"{src}: {where}margin_source {needs[0]!r} needs margin_note saying why this margin "
                            "(which allowance, which resolution), in words")
    return (None if rel is None else float(rel)), (None if ab is None else float(ab)), tuple(sources)


def _parse_measured(src: Path, i: int, item: dict[str, Any]) -> PublishedValue:
    name = item.get("name", f"#{i + 1}")
    where = f"[[published]] {name!r}: "
    refused = [k for k in ("tolerance_abs", "tolerance_rel") if k in item]
    if refused:
        raise RegistryError(f"{src}: {where}{refused[0]} is not allowed on a measured entry: a measured value is "
                            "judged across runs against margin_rel or margin_abs with margin_source (and margin_note "
                            "for an emulation allowance); re-state the tolerance as a margin with its source")
    _check_fields(src, where, item, _PUBLISHED_REQUIRED, _MEASURED_OPTIONAL)
    comparable = item.get("comparable", True)
    reason = item.get("not_comparable_reason", "").strip()
    if not comparable and not reason:
        raise RegistryError(f"{src}: {where}comparable = false needs not_comparable_reason: which definition, "
                            "estimator, instrument or set-up differs from the paper's")
    if comparable and reason:
        raise RegistryError(f"{src}: {where}not_comparable_reason is given but comparable is not false")
    if "decimals" in item and item["decimals"] < 0:
        raise RegistryError(f"{src}: {where}decimals must not be negative")
    if ("arm" in item) != ("run_statistic" in item):
        raise RegistryError(f"{src}: {where}give arm and run_statistic together (the runs of that arm carry the "
                            "statistic)")
    if "arm" in item and not _ARM_NAME.fullmatch(item["arm"]):
        raise RegistryError(f"{src}: {where}arm {item['arm']!r} is not a runner arm name (letters, digits and "
                            ". _ @ + = -)")
    rel = ab = None
    sources: tuple[str, ...] = ()
    if comparable or any(k in item for k in _MARGIN_FIELDS):
        for key in ("arm", "value_range"):
            if comparable and key not in item:
                what = ("arm and run_statistic: which runs carry the value" if key == "arm" else
                        f"value_range: the statistic's range, one of {', '.join(VALUE_RANGES)}")
                raise RegistryError(f"{src}: {where}a measured value needs {what}")
        rel, ab, sources = _parse_margin(src, where, item)
    value_range = item.get("value_range", "real")
    try:
        low, high = value_range_bounds(value_range)
    except ValueError as exc:
        raise RegistryError(f"{src}: {where}{exc}") from None
    value = float(item["value"])
    if not low <= value <= high:
        raise RegistryError(f"{src}: {where}value {value:g} lies outside its value_range {value_range!r} "
                            f"[{low:g}, {high:g}]")
    if rel is not None and value_range != "rate":
        raise RegistryError(f"{src}: {where}margin_rel (a log ratio) needs value_range = \"rate\" (values > 0); "
                            f"a statistic with value_range {value_range!r} is judged as a difference: give margin_abs")
    if rel is not None and value <= 0:
        raise RegistryError(f"{src}: {where}margin_rel (a log ratio) needs a published value > 0, got {value:g}")
    pv = PublishedValue(name=item["name"], value=value, unit=item["unit"], note=item.get("note", ""),
                        decimals=item.get("decimals"), measured=True, arm=item.get("arm"),
                        run_statistic=item.get("run_statistic"), margin_rel=rel, margin_abs=ab, margin_source=sources,
                        margin_note=item.get("margin_note", ""), value_range=value_range, comparable=comparable,
                        not_comparable_reason=reason)
    _check_print_precision(src, where, pv)
    return pv


def _check_print_precision(src: Path, where: str, pv: PublishedValue) -> None:
    """The margin is at least the print precision (half a unit of the last printed digit); a margin whose only
    source is print precision is exactly that (within rounding)."""
    pp = pv.print_precision()
    if "print precision" in pv.margin_source and pp is None:
        raise RegistryError(f"{src}: {where}margin_source 'print precision' needs decimals (how many the paper "
                            "printed)")
    if pp is None or (pv.margin_rel is None and pv.margin_abs is None):
        return
    if pv.margin_abs is not None:
        margin, need, what = pv.margin_abs, pp, f"{pp:g} {pv.unit}".rstrip()
    else:
        margin, need = pv.margin_rel, pp / abs(pv.value)
        what = f"{pp:g} {pv.unit} of {pv.value:g}, {need * 100:.3g} %".replace("  ", " ")
    name = "margin_abs" if pv.margin_abs is not None else "margin_rel"
    if margin < need * (1 - 1e-9):
        raise RegistryError(f"{src}: {where}{name} {margin:g} is smaller than the print precision ({what}: half a "
                            f"unit of the last of {pv.decimals} printed decimals); the printed value is not known "
                            "better than that")
    if pv.margin_source == ("print precision",) and margin > need * (1 + 1e-6):
        raise RegistryError(f"{src}: {where}{name} {margin:g} is larger than the print precision ({what}), its only "
                            "source: name the other source(s) of the wider margin")


def _parse_published(src: Path, i: int, item: Any, measured: bool = False) -> PublishedValue:
    where = f"[[published]] #{i + 1}: "
    if not isinstance(item, dict):
        raise RegistryError(f"{src}: {where}must be a table")
    if measured:
        return _parse_measured(src, i, item)
    _check_fields(src, where, item, _PUBLISHED_REQUIRED, _PUBLISHED_OPTIONAL)
    if not any(k in item for k in ("tolerance_abs", "tolerance_rel", "decimals")):
        raise RegistryError(f"{src}: {where}{item['name']!r} needs tolerance_abs, tolerance_rel or decimals")
    for key in ("value", "tolerance_abs", "tolerance_rel"):  # TOML has nan and inf; no paper printed them
        if key in item and not math.isfinite(item[key]):
            raise RegistryError(f"{src}: {where}{key} must be a finite number, got {item[key]!r}")
    for tol in ("tolerance_abs", "tolerance_rel", "decimals"):
        if tol in item and item[tol] < 0:
            raise RegistryError(f"{src}: {where}{tol} must not be negative")
    rounding = item.get("rounding", "half-up")
    if rounding not in ROUNDINGS:
        raise RegistryError(f"{src}: {where}rounding {rounding!r} is not one of {', '.join(ROUNDINGS)}")
    if "rounding" in item and "decimals" not in item:
        raise RegistryError(f"{src}: {where}rounding needs decimals (how many the paper printed)")
    return PublishedValue(
        name=item["name"],
        value=float(item["value"]),
        unit=item["unit"],
        tolerance_abs=None if "tolerance_abs" not in item else float(item["tolerance_abs"]),
        tolerance_rel=None if "tolerance_rel" not in item else float(item["tolerance_rel"]),
        note=item.get("note", ""),
        decimals=item.get("decimals"),
        rounding=rounding,
        folder=item.get("folder"),
        statistic=item.get("statistic"),
        rate_pps=item.get("rate_pps"),
        repeat=item.get("repeat"),
    )


def _check_notebook(src: Path, notebook: str) -> None:
    """A notebook stays inside its paper folder (or is a reusable one by plain file name): an entry
    must not run code from elsewhere."""
    if notebook.startswith(REUSABLE_PREFIX):
        name = notebook[len(REUSABLE_PREFIX):]
        if not name or Path(name).name != name or name in (".", ".."):
            raise RegistryError(f"{src}: notebook {notebook!r}: expected {REUSABLE_PREFIX}<file name>.ipynb "
                                f"naming a notebook in {REUSABLE_DIR}")
        return
    rel = Path(notebook)
    folder = src.parent.resolve()
    if rel.is_absolute() or ".." in rel.parts or not (folder / rel).resolve().is_relative_to(folder):
        raise RegistryError(f"{src}: notebook {notebook!r} lies outside the paper folder {src.parent}: expected "
                            f"a path relative to it (no '..', not absolute) or {REUSABLE_PREFIX}<name>.ipynb")


def _statistic_ref(src: Path, where: str, key: str, text: Any) -> StatisticRef:
    arm, sep, stat = str(text).partition(":")
    if not sep or not stat or not _ARM_NAME.fullmatch(arm):
        raise RegistryError(f"{src}: {where}{key} = {text!r}: expected \"arm:statistic\" (a runner arm and a "
                            "Statistic name of its runs, e.g. \"reno:reduction_median\")")
    return StatisticRef(arm, stat)


def _parse_claim(src: Path, i: int, item: Any) -> Claim:
    if not isinstance(item, dict):
        raise RegistryError(f"{src}: [[claims]] #{i + 1}: must be a table")
    where = f"[[claims]] {item.get('id', f'#{i + 1}')!r}: "
    _check_fields(src, where, item, _CLAIM_REQUIRED, _CLAIM_OPTIONAL)
    test = item["test"]
    if test not in CLAIM_TESTS:
        raise RegistryError(f"{src}: {where}test {test!r} is not one of {', '.join(repr(t) for t in CLAIM_TESTS)}")
    need = _CLAIM_FIELDS_BY_TEST[test]
    for key in need:
        if key not in item:
            raise RegistryError(f"{src}: {where}test {test!r} needs {key!r}")
    margin_keys = ("margin_rel", "margin_abs", "margin_source", "margin_note")
    allowed = set(need) | (set(margin_keys) if test == "a ~ b" else set())
    for key in _CLAIM_SPECIFIC:
        if key in item and key not in allowed:
            raise RegistryError(f"{src}: {where}{key!r} does not belong to test {test!r} (it takes "
                                f"{', '.join(sorted(allowed))})")
    refs = {k: _statistic_ref(src, where, k, item[k]) for k in ("a", "b", "successes", "trials") if k in item}
    rel = ab = None
    sources: tuple[str, ...] = ()
    if test == "a ~ b":
        rel, ab, sources = _parse_margin(src, where, item)
    within = None
    if test == "a / b within":
        w = item["within"]
        if (len(w) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in w)
                or not 0 < w[0] < w[1] or not math.isfinite(w[1])):
            raise RegistryError(f"{src}: {where}within = {w!r}: expected [x, y] with 0 < x < y (the range of a / b)")
        within = (float(w[0]), float(w[1]))
    q = None
    if test == "share >=":
        q = float(item["q"])
        if not 0 < q < 1:
            raise RegistryError(f"{src}: {where}q = {q!r}: expected a share strictly between 0 and 1")
        if refs["successes"].arm != refs["trials"].arm:
            raise RegistryError(f"{src}: {where}successes and trials must be statistics of the same arm (counted in "
                                "the same runs)")
    return Claim(id=item["id"], text=item["text"], test=test, principal=item.get("principal", False),
                 a=refs.get("a"), b=refs.get("b"), margin_rel=rel, margin_abs=ab, margin_source=sources,
                 margin_note=item.get("margin_note", ""), within=within, successes=refs.get("successes"),
                 trials=refs.get("trials"), q=q, note=item.get("note", ""))


def _parse_claims(src: Path, data: dict[str, Any], measured: bool) -> tuple[Claim, ...]:
    items = data.get("claims", [])
    if not items:
        return ()
    if not measured:
        raise RegistryError(f"{src}: [[claims]] are judged across runs: only measured entries (not published-data "
                            "ones) state them; use claim and claim_rows")
    if data.get("claim_rows"):
        raise RegistryError(f"{src}: claim_rows and [[claims]] both given: the principal claim's verdict comes from "
                            "the [[claims]] marked principal; remove claim_rows")
    claims, seen = [], set()
    for i, item in enumerate(items):
        c = _parse_claim(src, i, item)
        if c.id in seen:
            raise RegistryError(f"{src}: [[claims]] #{i + 1}: duplicate claim id {c.id!r}")
        seen.add(c.id)
        claims.append(c)
    if not any(c.principal for c in claims):
        raise RegistryError(f"{src}: [[claims]]: no claim has principal = true; the entry's principal claim is "
                            "judged from those")
    return tuple(claims)


def parse_entry(src: Path, data: dict[str, Any], paper: Paper | None = None) -> FigureEntry:
    optional = dict(_ENTRY_OPTIONAL)
    required = dict(_ENTRY_REQUIRED)
    if paper is None:
        required["citation"] = optional.pop("citation")
    _check_fields(src, "", data, required, optional)
    if not (data.get("citation") or "").strip() and not (paper and paper.citation.strip()):
        raise RegistryError(f"{src}: citation is empty: say which paper the entry reproduces (here or in the "
                            f"paper folder's {PAPER_FILE})")
    if data["id"] != src.stem:
        raise RegistryError(f"{src}: id {data['id']!r} must equal the file name {src.stem!r}")
    if data["mode"] not in MODES:
        raise RegistryError(f"{src}: mode {data['mode']!r} is not one of {', '.join(MODES)}")
    requires = data.get("requires", [])
    if not all(isinstance(r, str) and r for r in requires):
        raise RegistryError(f"{src}: 'requires' must be a list of capability names (strings)")
    _check_notebook(src, data["notebook"])
    claim_rows = data.get("claim_rows", [])
    if not all(isinstance(r, str) and r for r in claim_rows):
        raise RegistryError(f"{src}: 'claim_rows' must be a list of verdict row names (strings)")
    measured = data["mode"] != "published-data"
    claims = _parse_claims(src, data, measured)
    published = []
    seen: set[str] = set()
    for i, item in enumerate(data.get("published", [])):
        pv = _parse_published(src, i, item, measured)
        if pv.name in seen:
            raise RegistryError(f"{src}: [[published]] #{i + 1}: duplicate published name {pv.name!r}")
        seen.add(pv.name)
        published.append(pv)
    return FigureEntry(
        id=data["id"],
        title=data["title"],
        citation=data.get("citation") or (paper.citation if paper else ""),
        notebook=data["notebook"],
        mode=data["mode"],
        source=src,
        dataset=data.get("dataset") or None,
        requires=tuple(requires),
        parameters=dict(data.get("parameters", {})),
        published=tuple(published),
        notes=data.get("notes", ""),
        claim=data.get("claim", ""),
        claim_rows=tuple(claim_rows),
        paper=paper,
        claims=claims,
    )


def load_entry_file(path: Path | str, paper: Paper | None = None) -> FigureEntry:
    """One entry TOML; its paper is the paper.toml beside it unless given."""
    src = Path(path)
    data = _read_toml(src)
    if paper is None and (src.parent / PAPER_FILE).is_file():
        paper = load_paper(src.parent)
    return parse_entry(src, data, paper)


def builtin_paper_dirs() -> list[Path]:
    """The paper folders shipped with benchbook: notebooks/*/paper.toml."""
    return sorted(p.parent for p in NOTEBOOKS_DIR.glob(f"*/{PAPER_FILE}"))


def _expand(directory: Path) -> list[Path]:
    """A paper folder, or the paper folders inside a folder of paper folders."""
    if (directory / PAPER_FILE).is_file():
        return [directory]
    if not directory.is_dir():
        raise RegistryError(f"{directory}: paper folder not found")
    inner = sorted(p.parent for p in directory.glob(f"*/{PAPER_FILE}"))
    if not inner:
        raise RegistryError(f"{directory}: neither a paper folder (no {PAPER_FILE}) nor a folder of paper folders")
    return inner


def paper_dirs(extra: list[Path | str] | tuple = (), use_env: bool = True) -> list[Path]:
    """The search path: built-in paper folders, then BENCHBOOK_PAPERS (os.pathsep-separated), then
    `extra` (from --papers), each resolved; a folder listed twice counts once."""
    dirs: list[Path] = list(builtin_paper_dirs())
    if use_env:
        dirs += [Path(d) for d in os.environ.get(PAPERS_ENV, "").split(os.pathsep) if d]
    dirs += [Path(d) for d in extra]
    out: list[Path] = []
    seen: set[Path] = set()
    for d in dirs:
        for folder in _expand(Path(d)):
            key = folder.resolve()
            if key not in seen:
                seen.add(key)
                out.append(key)
    return out


def _entry_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.toml") if p.name != PAPER_FILE)


def load_folder(folder: Path | str) -> dict[str, FigureEntry]:
    """Every entry of one folder (a paper folder, or a plain folder of entry TOMLs), by id."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RegistryError(f"{folder}: registry folder not found")
    paper = load_paper(folder) if (folder / PAPER_FILE).is_file() else None
    return {e.id: e for e in (load_entry_file(p, paper) for p in _entry_files(folder))}


def load_registry(papers: list[Path | str] | tuple = (), use_env: bool = True) -> dict[str, FigureEntry]:
    """All entries on the search path (built-in paper folders + BENCHBOOK_PAPERS + `papers`), by id
    (sorted). A duplicate id is an error naming both files."""
    entries: dict[str, FigureEntry] = {}
    for folder in paper_dirs(papers, use_env):
        for entry in load_folder(folder).values():
            if entry.id in entries:
                raise RegistryError(f"duplicate entry id {entry.id!r}: {entries[entry.id].source} and {entry.source}")
            entries[entry.id] = entry
    return dict(sorted(entries.items()))


def load_entry(figure_id: str, paper_dir: Path | str | None = None,
               papers: list[Path | str] | tuple = ()) -> FigureEntry:
    """The entry `figure_id`: from the folder `paper_dir` (a paper folder, as notebooks receive
    it) when given, otherwise from the whole search path."""
    if paper_dir is not None:
        folder = Path(paper_dir)
        path = folder / f"{figure_id}.toml"
        if not path.is_file():
            known = ", ".join(p.stem for p in _entry_files(folder)) or "none"
            raise RegistryError(f"{path}: no registry entry {figure_id!r} (known: {known})")
        return load_entry_file(path)
    entries = load_registry(papers)
    if figure_id not in entries:
        known = ", ".join(entries) or "none"
        raise RegistryError(f"no registry entry {figure_id!r} on the search path (known: {known})")
    return entries[figure_id]
