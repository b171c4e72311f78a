"""The figure registry: one TOML file per reproducible paper figure or table.

Entries live in lib/benchbook/reproduce/figures/<id>.toml (the directory can be overridden with
the BENCHBOOK_FIGURES environment variable or a ``figures_dir`` argument). An entry is data only:

    id = "wiedner-itc23-table3"              # must equal the file name without .toml
    title = "..."
    citation = "..."
    notebook = "notebooks/wiedner-itc23.ipynb"   # relative to the repository root
    mode = "published-data"                  # | "local-measurement" | "testbed-measurement"
    dataset = "containerized-low-latency"    # folder under data/published/ (optional: an entry
                                             # may work from printed parameters alone)
    requires = ["root", "lxc-start"]         # capabilities (see benchbook.reproduce.capabilities)
    notes = "what the paper leaves unstated"

    [parameters]                             # passed to the notebook by papermill
    rate_pps = 1000000

    [[published]]                            # numbers printed in the paper, with tolerances
    name = "..."
    value = 9969.08
    unit = "us"
    tolerance_abs = 0.005                    # or tolerance_rel = 0.01 (fraction of value)
    note = "..."

Unknown or missing fields, wrong types and an id that differs from the file name are errors naming
the file.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.paths import PACKAGE_DIR, REPO_ROOT

DEFAULT_FIGURES_DIR = PACKAGE_DIR / "reproduce" / "figures"
MODES = ("published-data", "local-measurement", "testbed-measurement")

_ENTRY_REQUIRED = {"id": str, "title": str, "citation": str, "notebook": str, "mode": str}
_ENTRY_OPTIONAL = {"dataset": str, "requires": list, "parameters": dict, "published": list, "notes": str}
_PUBLISHED_REQUIRED = {"name": str, "value": (int, float), "unit": str}
_PUBLISHED_OPTIONAL = {"tolerance_abs": (int, float), "tolerance_rel": (int, float), "note": str}


class RegistryError(ValueError):
    """A registry entry is malformed; the message names the file."""


@dataclass(frozen=True)
class PublishedValue:
    """A number printed in the paper, with the tolerance within which a computed value matches."""

    name: str
    value: float
    unit: str
    tolerance_abs: float | None = None
    tolerance_rel: float | None = None
    note: str = ""

    def allowed_deviation(self) -> float:
        dev = 0.0
        if self.tolerance_abs is not None:
            dev = max(dev, float(self.tolerance_abs))
        if self.tolerance_rel is not None:
            dev = max(dev, float(self.tolerance_rel) * abs(self.value))
        return dev

    def matches(self, computed: float) -> bool:
        if computed is None or not math.isfinite(float(computed)):
            return False
        dev = self.allowed_deviation()
        # a hair of slack for binary floating point at the rounding boundary (e.g. 100.185 -> 100.19)
        return abs(float(computed) - self.value) <= dev * (1 + 1e-9) + 1e-12

    def tolerance_text(self) -> str:
        parts = []
        if self.tolerance_abs is not None:
            unit = {"us": "µs"}.get(self.unit, self.unit)
            parts.append(f"±{self.tolerance_abs:g} {unit}".rstrip())
        if self.tolerance_rel is not None:
            parts.append(f"±{self.tolerance_rel * 100:g} %")
        return " or ".join(parts) if parts else "exact"


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

    @property
    def notebook_path(self) -> Path:
        p = Path(self.notebook)
        return p if p.is_absolute() else REPO_ROOT / p

    def published_value(self, name: str) -> PublishedValue:
        for pv in self.published:
            if pv.name == name:
                return pv
        known = ", ".join(repr(p.name) for p in self.published) or "none"
        raise KeyError(f"{self.source}: no [[published]] value named {name!r} (known: {known})")


def figures_dir(override: Path | str | None = None) -> Path:
    if override is not None:
        return Path(override)
    env = os.environ.get("BENCHBOOK_FIGURES")
    return Path(env) if env else DEFAULT_FIGURES_DIR


def _check_fields(src: Path, where: str, data: dict[str, Any], required: dict, optional: dict) -> None:
    for key in data:
        if key not in required and key not in optional:
            allowed = ", ".join(sorted({*required, *optional}))
            raise RegistryError(f"{src}: {where}unknown field {key!r} (allowed: {allowed})")
    for key, typ in required.items():
        if key not in data:
            raise RegistryError(f"{src}: {where}missing required field {key!r}")
    for key, typ in {**required, **optional}.items():
        if key in data:
            val = data[key]
            if isinstance(val, bool) or not isinstance(val, typ):
                names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
                raise RegistryError(f"{src}: {where}field {key!r} must be {names}, got {type(val).__name__}")


def parse_entry(src: Path, data: dict[str, Any]) -> FigureEntry:
    _check_fields(src, "", data, _ENTRY_REQUIRED, _ENTRY_OPTIONAL)
    if data["id"] != src.stem:
        raise RegistryError(f"{src}: id {data['id']!r} must equal the file name {src.stem!r}")
    if data["mode"] not in MODES:
        raise RegistryError(f"{src}: mode {data['mode']!r} is not one of {', '.join(MODES)}")
    requires = data.get("requires", [])
    if not all(isinstance(r, str) and r for r in requires):
        raise RegistryError(f"{src}: 'requires' must be a list of capability names (strings)")
    published = []
    seen: set[str] = set()
    for i, item in enumerate(data.get("published", [])):
        where = f"[[published]] #{i + 1}: "
        if not isinstance(item, dict):
            raise RegistryError(f"{src}: {where}must be a table")
        _check_fields(src, where, item, _PUBLISHED_REQUIRED, _PUBLISHED_OPTIONAL)
        if "tolerance_abs" not in item and "tolerance_rel" not in item:
            raise RegistryError(f"{src}: {where}{item['name']!r} needs tolerance_abs or tolerance_rel")
        for tol in ("tolerance_abs", "tolerance_rel"):
            if tol in item and item[tol] < 0:
                raise RegistryError(f"{src}: {where}{tol} must not be negative")
        if item["name"] in seen:
            raise RegistryError(f"{src}: {where}duplicate published name {item['name']!r}")
        seen.add(item["name"])
        published.append(
            PublishedValue(
                name=item["name"],
                value=float(item["value"]),
                unit=item["unit"],
                tolerance_abs=None if "tolerance_abs" not in item else float(item["tolerance_abs"]),
                tolerance_rel=None if "tolerance_rel" not in item else float(item["tolerance_rel"]),
                note=item.get("note", ""),
            )
        )
    return FigureEntry(
        id=data["id"],
        title=data["title"],
        citation=data["citation"],
        notebook=data["notebook"],
        mode=data["mode"],
        source=src,
        dataset=data.get("dataset") or None,
        requires=tuple(requires),
        parameters=dict(data.get("parameters", {})),
        published=tuple(published),
        notes=data.get("notes", ""),
    )


def load_entry_file(path: Path | str) -> FigureEntry:
    src = Path(path)
    try:
        with open(src, "rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{src}: not valid TOML: {exc}") from exc
    except OSError as exc:
        raise RegistryError(f"{src}: cannot read ({exc.strerror})") from exc
    return parse_entry(src, data)


def load_registry(directory: Path | str | None = None) -> dict[str, FigureEntry]:
    """All entries of the registry directory, by id (sorted)."""
    folder = figures_dir(directory)
    if not folder.is_dir():
        raise RegistryError(f"{folder}: figure registry directory not found")
    entries = {}
    for path in sorted(folder.glob("*.toml")):
        entry = load_entry_file(path)
        entries[entry.id] = entry
    return entries


def load_entry(figure_id: str, directory: Path | str | None = None) -> FigureEntry:
    folder = figures_dir(directory)
    path = folder / f"{figure_id}.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.toml"))) or "none"
        raise RegistryError(f"{path}: no registry entry {figure_id!r} (known: {known})")
    return load_entry_file(path)
