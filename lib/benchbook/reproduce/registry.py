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

Unknown or missing fields, wrong types and an id that differs from the file name are errors naming
the file.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
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
                   "notes": str, "claim": str, "claim_rows": list}
_PUBLISHED_REQUIRED = {"name": str, "value": (int, float), "unit": str}
_PUBLISHED_OPTIONAL = {"tolerance_abs": (int, float), "tolerance_rel": (int, float), "decimals": int,
                       "rounding": str, "note": str, "folder": str, "statistic": str, "rate_pps": int,
                       "repeat": (str, int)}


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
        return value.quantize(Decimal(1).scaleb(-self.decimals), rounding=ROUNDINGS[self.rounding])

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
            if isinstance(val, bool) or not isinstance(val, typ):
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


def _parse_published(src: Path, i: int, item: Any) -> PublishedValue:
    where = f"[[published]] #{i + 1}: "
    if not isinstance(item, dict):
        raise RegistryError(f"{src}: {where}must be a table")
    _check_fields(src, where, item, _PUBLISHED_REQUIRED, _PUBLISHED_OPTIONAL)
    if not any(k in item for k in ("tolerance_abs", "tolerance_rel", "decimals")):
        raise RegistryError(f"{src}: {where}{item['name']!r} needs tolerance_abs, tolerance_rel or decimals")
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


def parse_entry(src: Path, data: dict[str, Any], paper: Paper | None = None) -> FigureEntry:
    optional = dict(_ENTRY_OPTIONAL)
    required = dict(_ENTRY_REQUIRED)
    if paper is None:
        required["citation"] = optional.pop("citation")
    _check_fields(src, "", data, required, optional)
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
    published = []
    seen: set[str] = set()
    for i, item in enumerate(data.get("published", [])):
        pv = _parse_published(src, i, item)
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
