"""The verdict of a figure reproduction: published | computed | which run(s) | status | note.

A notebook builds a Verdict (usually ``Verdict.for_entry(entry)`` so the published values and
their tolerances come from the registry), adds one row per published number it checks, and writes
``verdict.json`` into its output directory. ``benchbook reproduce`` reads that file back, prints the
table and exits with the entry's outcome.

Statuses:
- ``match``          computed value within the registry tolerance of the published one
- ``mismatch``       the data exist and the computed value lies outside the tolerance
- ``not derivable``  the published number cannot be computed from what is available here, e.g. its
                     source run is absent from the dataset (the note says why); never a mismatch
- ``figure only``    a figure without printed numbers: nothing to compare, the figure is produced
- ``info``           a computed number shown for context (e.g. benchbook's own extensions)

Outcome of an entry (verdict.json "outcome"):
- ``reproduced``  no mismatch and every published value derived here
- ``partial``     no mismatch, but some published values are not derivable here; "claim" says
                  whether the figure's principal claim (entry fields claim, claim_rows) was reproduced
- ``mismatch``    at least one computed value disagrees with the published one
- ``failed``      the notebook did not complete or wrote no verdict (set by ``benchbook reproduce``)

Claim status (verdict.json "claim": {"text", "rows", "status"}): over the claim rows (all rows when
claim_rows is empty): ``mismatch`` if any is a mismatch, else ``not derivable`` if any is not
derivable or a claim row is missing, else ``reproduced``.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchbook.atomic_write import write_json_atomic
from benchbook.reproduce.registry import FigureEntry, PublishedValue

STATUSES = ("match", "mismatch", "not derivable", "figure only", "info")
OUTCOMES = ("reproduced", "partial", "mismatch", "failed")
VERDICT_FILE = "verdict.json"
SCHEMA = "benchbook.verdict/1"


@dataclass
class VerdictRow:
    name: str
    published: float | str | None
    computed: float | str | None
    unit: str = ""
    runs: str = ""
    status: str = "info"
    note: str = ""
    tolerance: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r} is not one of {', '.join(STATUSES)}")


_UNIT_DISPLAY = {"us": "µs"}


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        text = f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.6g}"
    else:
        text = str(value)
    return f"{text} {_UNIT_DISPLAY.get(unit, unit)}".strip()


@dataclass
class Verdict:
    figure_id: str
    title: str = ""
    citation: str = ""
    rows: list[VerdictRow] = field(default_factory=list)
    figures: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    claim_text: str = ""
    claim_rows: tuple[str, ...] = ()
    entry: FigureEntry | None = field(default=None, repr=False, compare=False)

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def for_entry(cls, entry: FigureEntry) -> Verdict:
        v = cls(figure_id=entry.id, title=entry.title, citation=entry.citation, entry=entry,
                claim_text=entry.claim, claim_rows=tuple(entry.claim_rows))
        if entry.notes:
            v.notes.append(entry.notes)
        return v

    def add(self, name: str, published: Any, computed: Any, unit: str = "", runs: str = "",
            status: str = "info", note: str = "", tolerance: str = "") -> VerdictRow:
        row = VerdictRow(name, _plain(published), _plain(computed), unit, runs, status, note, tolerance)
        self.rows.append(row)
        return row

    def check(self, published: PublishedValue | str, computed: float | None, runs: str = "",
              note: str = "") -> VerdictRow:
        """Compare a computed value with a published one (by registry name or PublishedValue)."""
        if isinstance(published, str):
            if self.entry is None:
                raise ValueError("check() by name needs a Verdict created with Verdict.for_entry(entry)")
            published = self.entry.published_value(published)
        pv = published
        if computed is None or (isinstance(computed, float) and not math.isfinite(computed)):
            status = "not derivable"
            computed = None
        else:
            status = "match" if pv.matches(computed) else "mismatch"
        full_note = "; ".join(x for x in (note, pv.note) if x)
        return self.add(pv.name, pv.value, computed, pv.unit, runs, status, full_note, pv.tolerance_text())

    def not_derivable(self, published: PublishedValue | str, reason: str, runs: str = "") -> VerdictRow:
        if isinstance(published, str):
            if self.entry is None:
                raise ValueError("not_derivable() by name needs Verdict.for_entry(entry)")
            published = self.entry.published_value(published)
        return self.add(published.name, published.value, None, published.unit, runs, "not derivable",
                        reason, published.tolerance_text())

    def figure_only(self, name: str, note: str = "no published numbers to compare: figure only",
                    runs: str = "") -> VerdictRow:
        return self.add(name, None, None, "", runs, "figure only", note)

    def add_figure(self, stem: str, exports: dict[str, str]) -> None:
        """Record what save_figure produced: format -> path or 'unavailable: <reason>'."""
        self.figures[stem] = {k: str(v) for k, v in exports.items()}

    def finalize(self) -> None:
        """Published values of the entry that no row covers become 'not derivable' rows."""
        if self.entry is None:
            return
        covered = {r.name for r in self.rows}
        for pv in self.entry.published:
            if pv.name not in covered:
                self.not_derivable(pv, "the notebook did not compute this value")

    # -- reading --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for r in self.rows:
            out[r.status] += 1
        return out

    @property
    def ok(self) -> bool:
        return not any(r.status == "mismatch" for r in self.rows)

    @property
    def outcome(self) -> str:
        """reproduced | partial | mismatch (a verdict that exists did not fail)."""
        c = self.counts()
        if c["mismatch"]:
            return "mismatch"
        return "partial" if c["not derivable"] else "reproduced"

    def claim_status(self) -> str:
        """reproduced | mismatch | not derivable, over the claim rows (all rows if none named)."""
        by_name = {r.name: r for r in self.rows}
        if self.claim_rows:
            missing = [n for n in self.claim_rows if n not in by_name]
            rows = [by_name[n] for n in self.claim_rows if n in by_name]
        else:
            missing, rows = [], self.rows
        statuses = {r.status for r in rows}
        if "mismatch" in statuses:
            return "mismatch"
        if missing or "not derivable" in statuses:
            return "not derivable"
        return "reproduced"

    def claim(self) -> dict[str, Any]:
        return {"text": self.claim_text, "rows": list(self.claim_rows), "status": self.claim_status()}

    def summary(self) -> str:
        c = self.counts()
        checked = c["match"] + c["mismatch"]
        parts = [f"{c['match']}/{checked} published values matched"]
        for s in ("mismatch", "not derivable", "figure only", "info"):
            if c[s]:
                parts.append(f"{c[s]} {s}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "figure_id": self.figure_id,
            "title": self.title,
            "citation": self.citation,
            "ok": self.ok,
            "outcome": self.outcome,
            "claim": self.claim(),
            "counts": self.counts(),
            "summary": self.summary(),
            "rows": [asdict(r) for r in self.rows],
            "figures": self.figures,
            "notes": self.notes,
        }

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            [
                {
                    "name": r.name,
                    "published": _fmt(r.published, r.unit) if r.published is not None else "-",
                    "computed": _fmt(r.computed, r.unit) if r.computed is not None else "-",
                    "runs": r.runs,
                    "status": r.status,
                    "note": r.note,
                }
                for r in self.rows
            ]
        )

    def _repr_html_(self) -> str:
        return f"<p><b>{self.figure_id}</b>: {self.summary()}</p>" + self.to_frame().to_html(index=False)

    def write(self, output_dir: Path | str) -> Path:
        """Write verdict.json, and for the run record metrics.json (the verdict counts) and
        capabilities.json (figure formats that could not be produced, with the reason); both
        are merged with what the notebook may already have written there."""
        self.finalize()
        out = Path(output_dir)
        path = out / VERDICT_FILE
        write_json_atomic(path, self.to_dict())
        metrics = _read_json(out / "metrics.json", {})
        if isinstance(metrics, dict):
            metrics["verdict"] = {"ok": self.ok, **self.counts()}
            write_json_atomic(out / "metrics.json", metrics)
        caps = _read_json(out / "capabilities.json", [])
        if isinstance(caps, list):
            for stem, exports in self.figures.items():
                for fmt, where in exports.items():
                    if str(where).startswith("unavailable"):
                        caps.append({"capability": f"figure export {fmt}", "status": "missing",
                                     "detail": f"{stem}.{fmt}: {where}"})
            write_json_atomic(out / "capabilities.json", caps)
        return path

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        v = cls(figure_id=data["figure_id"], title=data.get("title", ""), citation=data.get("citation", ""))
        v.rows = [VerdictRow(**r) for r in data.get("rows", [])]
        v.figures = dict(data.get("figures", {}))
        v.notes = list(data.get("notes", []))
        claim = data.get("claim") or {}
        v.claim_text = claim.get("text", "")
        v.claim_rows = tuple(claim.get("rows", ()))
        return v

    @classmethod
    def load(cls, path: Path | str) -> Verdict:
        path = Path(path)
        if path.is_dir():
            path = path / VERDICT_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{path}: expected schema {SCHEMA!r}, got {data.get('schema')!r}")
        return cls.from_dict(data)

    def rich_table(self):
        """A rich renderable: the verdict table, then the numbered notes its rows refer to."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        styles = {"match": "green", "mismatch": "bold red", "not derivable": "yellow",
                  "figure only": "cyan", "info": "dim"}
        table = Table(title=f"{self.figure_id}: {self.summary()}", show_lines=False, expand=False)
        for col in ("#", "published value", "published", "computed", "run(s)", "status"):
            table.add_column(col, overflow="fold", no_wrap=col in ("#", "published", "computed", "status"))
        notes = []
        for i, r in enumerate(self.rows, start=1):
            table.add_row(
                str(i),
                r.name,
                _fmt(r.published, r.unit) if r.published is not None else "-",
                _fmt(r.computed, r.unit) if r.computed is not None else "-",
                r.runs,
                f"[{styles[r.status]}]{r.status}[/]",
            )
            if r.note:
                tol = f" (tolerance {r.tolerance})" if r.tolerance else ""
                notes.append(Text(f"[{i}] {r.note}{tol}"))
        return Group(table, *notes)


def _read_json(path: Path, default: Any) -> Any:
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return default


def _plain(value: Any) -> Any:
    """numpy scalars -> Python numbers, so verdict.json stays plain JSON."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value
    return str(value)
