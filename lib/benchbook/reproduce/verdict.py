"""The verdict of a figure reproduction: one row per published number, the claims, the entry's outcome.

A notebook gets a Verdict for its entry (``open_entry`` returns ``Verdict.for_entry(entry)``), fills it and writes
``verdict.json`` into its output directory; ``benchbook reproduce`` reads that file back, prints the table and
exits with the entry's outcome. The words are defined in benchbook.reproduce.verdict_rows and
docs/statistics.md ("Verdict words").

Published-data entries (exact print rules): ``verdict.check(name, computed)`` per published number -> ``match``,
``mismatch`` or ``not derivable``; ``figure_redrawn`` for a figure with nothing to compare; ``add`` for ``info``
rows. Outcome: ``mismatch`` if any row is a mismatch; else ``partial`` if a published value is not derivable
here ("claim" says whether the principal claim -- entry fields claim, claim_rows -- was reproduced); else
``figure redrawn`` when no published value was compared; else ``reproduced``.

Measured entries (judged across runs): ``verdict.judge_runs(output_dir)`` judges every [[published]] value and
every [[claims]] test from the runner's run-statistics.parquet (benchbook.reproduce.judge) -> rows
``reproduced``, ``mismatch``, ``inconclusive``, ``not comparable``, ``not derivable``; the notebook adds ``info``
and ``figure redrawn`` rows. Outcome: ``mismatch`` if any judged row is a mismatch or a principal claim fails;
else ``inconclusive`` if any judged row or principal claim is inconclusive; else ``figure redrawn`` when nothing
was to be judged; else ``partial`` if a row or principal claim is not derivable / not comparable; else
``reproduced``. With m judged rows the verdict reports "k of m reproduced" beside m * alpha, the mismatches
expected by chance (V9).

Claim status ("claim": {"text", "rows", "status"}): measured entries with [[claims]]: ``reproduced`` if every
principal claim holds, ``mismatch`` if one fails, ``not derivable`` if one cannot be derived, else
``inconclusive``. Otherwise over the claim rows (all rows when claim_rows is empty): ``mismatch`` if any is a
mismatch, else ``not derivable`` if any is not derivable or missing, else ``figure redrawn`` when none was
compared, else ``reproduced``.

A measured-mode entry that is not judged across runs (declaring no values or claims at all, e.g. counts checked
against a generator's known truth) has kind
``exact-measured`` and the published-data rules.

``failed`` (the notebook did not complete or wrote no verdict) is set by ``benchbook reproduce``.
verdict.json has schema ``benchbook.verdict/2``; ``Verdict.load`` also reads ``/1`` files ("figure only" rows
read as "figure redrawn"; their kind is published-data).
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text

from benchbook.analysis.multiplicity import ALPHA, k_of_m
from benchbook.atomic_write import write_json_atomic
from benchbook.reproduce.judge import RunStatistics, judge_entry, summarise_runs
from benchbook.reproduce.registry import FigureEntry, PublishedValue, StatisticRef
from benchbook.reproduce.verdict_rows import (
    FAILS,
    FIGURE_REDRAWN,
    HOLDS,
    INCONCLUSIVE,
    INFO,
    JUDGED_STATUSES,
    MATCH,
    MEASURED_STATUSES,
    MISMATCH,
    NOT_COMPARABLE,
    NOT_DERIVABLE,
    OUTCOMES,
    PARTIAL,
    PUBLISHED_DATA_STATUSES,
    REPRODUCED,
    STATUSES,
    ClaimResult,
    MeasuredRow,
    VerdictRow,
    fmt_interval,
    fmt_value,
    row_from_dict,
)

VERDICT_FILE = "verdict.json"
SCHEMA = "benchbook.verdict/2"
SCHEMAS = ("benchbook.verdict/1", SCHEMA)   # readable
# kinds: exact print rules (published data), judged across runs, or a measured-mode entry under exact rules (one
# declaring no values: e.g. counts checked against a generator's known truth)
PUBLISHED_DATA, MEASURED, EXACT_MEASURED = "published-data", "measured", "exact-measured"
_STYLES = {MATCH: "green", REPRODUCED: "green", MISMATCH: "bold red", NOT_DERIVABLE: "yellow",
           INCONCLUSIVE: "magenta", NOT_COMPARABLE: "yellow", FIGURE_REDRAWN: "cyan", INFO: "dim",
           HOLDS: "green", FAILS: "bold red"}


def _fmt(value: Any, unit: str = "") -> str:
    return fmt_value(value, unit)


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
    kind: str = PUBLISHED_DATA
    claims: list[ClaimResult] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    noise_floor: str | None = None
    alpha: float = ALPHA

    # -- building -------------------------------------------------------------------------------
    @classmethod
    def for_entry(cls, entry: FigureEntry) -> Verdict:
        kind = MEASURED if entry.measured else PUBLISHED_DATA if entry.mode == "published-data" else EXACT_MEASURED
        v = cls(figure_id=entry.id, title=entry.title, citation=entry.citation, entry=entry, kind=kind,
                claim_text=entry.claim, claim_rows=tuple(entry.claim_rows))
        if entry.notes:
            v.notes.append(entry.notes)
        return v

    @property
    def measured(self) -> bool:
        return self.kind == MEASURED

    def _allowed(self) -> tuple[str, ...]:
        return MEASURED_STATUSES if self.measured else PUBLISHED_DATA_STATUSES

    def add(self, name: str, published: Any, computed: Any, unit: str = "", runs: str = "",
            status: str = "info", note: str = "", tolerance: str = "") -> VerdictRow:
        row = VerdictRow(name, _plain(published), _plain(computed), unit, runs, status, note, tolerance)
        if row.status not in self._allowed():
            raise ValueError(f"verdict status {status!r} is not one of {', '.join(self._allowed())} (the statuses "
                             f"of a {self.kind} entry)")
        if self.measured and row.status not in (INFO, FIGURE_REDRAWN):
            raise ValueError(f"{self.figure_id}: a measured entry's {status!r} rows come from judge_runs(output_dir); "
                             "add only info and figure redrawn rows")
        self.rows.append(row)
        return row

    def _published(self, published: PublishedValue | str, what: str) -> PublishedValue:
        if isinstance(published, str):
            if self.entry is None:
                raise ValueError(f"{what}() by name needs a Verdict created with Verdict.for_entry(entry)")
            published = self.entry.published_value(published)
        return published

    def check(self, published: PublishedValue | str, computed: float | None, runs: str = "",
              note: str = "") -> VerdictRow:
        """Compare a computed value with a published one (by registry name or PublishedValue), by the exact
        print rules of published-data entries."""
        if self.measured:
            raise ValueError(f"{self.figure_id}: a measured entry's values are judged across runs against their "
                             "margins: call verdict.judge_runs(output_dir), not check()")
        pv = self._published(published, "check")
        # numpy's floats too (np.float32 is no float): a NaN or inf computed is "not derivable", never a mismatch
        if computed is None or (isinstance(computed, numbers.Real) and not math.isfinite(float(computed))):
            status = NOT_DERIVABLE
            computed = None
        else:
            status = MATCH if pv.matches(computed) else MISMATCH
        full_note = "; ".join(x for x in (note, pv.note) if x)
        return self.add(pv.name, pv.value, computed, pv.unit, runs, status, full_note, pv.tolerance_text())

    def not_derivable(self, published: PublishedValue | str, reason: str, runs: str = "") -> VerdictRow:
        pv = self._published(published, "not_derivable")
        if self.measured:
            row: VerdictRow = MeasuredRow(pv.name, pv.value, None, pv.unit, 0, NOT_DERIVABLE, pv.note,
                                          pv.tolerance_text(), arm=pv.arm, run_statistic=pv.run_statistic,
                                          reason=reason, alpha=self.alpha)
            self.rows.append(row)
            return row
        return self.add(pv.name, pv.value, None, pv.unit, runs, NOT_DERIVABLE, reason, pv.tolerance_text())

    def figure_redrawn(self, name: str, note: str = "no published numbers to compare: the figure is redrawn",
                       runs: str = "") -> VerdictRow:
        return self.add(name, None, None, "", runs, FIGURE_REDRAWN, note)

    figure_only = figure_redrawn   # the name verdict/1 notebooks use

    def judge_runs(self, output_dir: Path | str, alpha: float | None = None, **options: Any) -> Verdict:
        """Judge every [[published]] value and [[claims]] test of this measured entry from the runs in
        ``output_dir`` (benchbook.reproduce.judge.judge_entry; ``options`` go to it) at error rate ``alpha``
        (default the verdict's, 0.05; the notebook passes its ``alpha`` parameter, which ``benchbook reproduce
        --until-decisive`` sets to alpha / K) and add the rows; returns the verdict, so a notebook's verdict
        cell is ``verdict.judge_runs(output_dir, alpha=alpha)`` plus its info rows."""
        if alpha is not None:
            self.alpha = float(alpha)
        if self.entry is None or not self.measured:
            raise ValueError(f"{self.figure_id}: judge_runs() judges a measured entry across runs; this verdict is "
                             f"of kind {self.kind} (use check())")
        j = judge_entry(self.entry, output_dir, alpha=self.alpha, **options)
        have = {r.name for r in self.rows}
        twice = [r.name for r in j.rows if r.name in have]
        if twice:
            raise ValueError(f"{self.figure_id}: rows {twice} exist already; judge_runs adds every published value")
        self.rows.extend(j.rows)
        self.claims = j.claims
        self.plan, self.noise_floor = j.plan, j.noise_floor
        return self

    def add_run_summary(self, name: str, output_dir: Path | str, arm: str, statistic: str, scale: float = 1.0,
                        unit: str | None = None, note: str = "") -> VerdictRow:
        """An ``info`` row (context, never judged) with the median over the valid runs of ``arm:statistic`` and
        the 95 % interval of that median, the observed extreme for a maximum or minimum (V11), or why there is no
        value (a percentile no run resolves, V2; an arm that did not run); ``scale`` converts for display in
        ``unit`` (judge.summarise_runs)."""
        got = summarise_runs(RunStatistics(output_dir), StatisticRef(arm, statistic), scale, unit)
        return self.add(name, None, got.value, got.unit, arm, INFO, "; ".join(x for x in (got.text, note) if x))

    def add_figure(self, stem: str, exports: dict[str, str]) -> None:
        """Record what save_figure produced: format -> path or 'unavailable: <reason>'."""
        self.figures[stem] = {k: str(v) for k, v in exports.items()}

    def finalize(self) -> None:
        """Published values of the entry that no row covers become 'not derivable' rows; so do the [[claims]] of a
        measured entry that judge_runs did not judge (a claims-only entry would otherwise end "figure redrawn")."""
        if self.entry is None:
            return
        covered = {r.name for r in self.rows}
        for pv in self.entry.published:
            if pv.name not in covered:
                self.not_derivable(pv, "the notebook did not compute this value"
                                   + (" (judge_runs was not called)" if self.measured else ""))
        if self.measured:
            judged = {c.id for c in self.claims}
            self.claims.extend(
                ClaimResult(id=c.id, text=c.text, principal=c.principal, test=c.test, verdict=NOT_DERIVABLE,
                            a=None if c.a is None else str(c.a), b=None if c.b is None else str(c.b),
                            within=None if c.within is None else list(c.within), note=c.note,
                            successes=None if c.successes is None else str(c.successes),
                            trials=None if c.trials is None else str(c.trials), q=c.q,
                            reason="the notebook did not judge this claim (judge_runs was not called)")
                for c in self.entry.claims if c.id not in judged)

    # -- reading --------------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in self._allowed()}
        for r in self.rows:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def claim_counts(self) -> dict[str, int]:
        out = {v: 0 for v in (HOLDS, FAILS, INCONCLUSIVE, NOT_DERIVABLE)}
        for c in self.claims:
            out[c.verdict] += 1
        return out

    @property
    def ok(self) -> bool:
        """No mismatch (and, measured, no principal claim that fails)."""
        return not any(r.status == MISMATCH for r in self.rows) and self.claim_status() != MISMATCH

    @property
    def outcome(self) -> str:
        """reproduced | figure redrawn | partial | inconclusive | mismatch (a verdict that exists did not fail)."""
        c = self.counts()
        if not self.measured:
            if c[MISMATCH]:
                return MISMATCH
            if c[NOT_DERIVABLE]:
                return PARTIAL
            return FIGURE_REDRAWN if not c[MATCH] else REPRODUCED
        principal = self._principal_status()
        if c[MISMATCH] or principal == MISMATCH:
            return MISMATCH
        if c[INCONCLUSIVE] or principal == INCONCLUSIVE:
            return INCONCLUSIVE
        if not (c[REPRODUCED] or c[NOT_DERIVABLE] or c[NOT_COMPARABLE] or self.claims):
            return FIGURE_REDRAWN
        if c[NOT_DERIVABLE] or c[NOT_COMPARABLE] or principal == NOT_DERIVABLE:
            return PARTIAL
        return REPRODUCED

    def _principal_status(self) -> str | None:
        """From the principal [[claims]]: reproduced | mismatch | not derivable | inconclusive (None: no claims)."""
        verdicts = {c.verdict for c in self.claims if c.principal}
        if not verdicts:
            return None
        if FAILS in verdicts:
            return MISMATCH
        if NOT_DERIVABLE in verdicts:
            return NOT_DERIVABLE
        if INCONCLUSIVE in verdicts:
            return INCONCLUSIVE
        return REPRODUCED

    def claim_status(self) -> str:
        """The principal claim: from the principal [[claims]] when there are any, else over the claim rows (all
        rows if none named): mismatch | not derivable | figure redrawn (nothing compared) | reproduced."""
        principal = self._principal_status()
        if principal is not None:
            return principal
        by_name = {r.name: r for r in self.rows}
        if self.claim_rows:
            missing = [n for n in self.claim_rows if n not in by_name]
            rows = [by_name[n] for n in self.claim_rows if n in by_name]
        else:
            missing, rows = [], self.rows
        statuses = {r.status for r in rows}
        if MISMATCH in statuses:
            return MISMATCH
        if missing or NOT_DERIVABLE in statuses:
            return NOT_DERIVABLE
        if INCONCLUSIVE in statuses:
            return INCONCLUSIVE
        if not statuses & {MATCH, REPRODUCED}:
            return FIGURE_REDRAWN
        return REPRODUCED

    def claim(self) -> dict[str, Any]:
        text = self.claim_text or "; ".join(c.text for c in self.claims if c.principal)
        out: dict[str, Any] = {"text": text, "rows": list(self.claim_rows), "status": self.claim_status()}
        if self.claims:
            out["claims"] = [c.id for c in self.claims if c.principal]
        return out

    def multiplicity(self) -> dict[str, Any] | None:
        """k of m judged rows reproduced beside m * alpha, the mismatches expected by chance (V9); None without
        judged rows."""
        c = self.counts()
        m = sum(c.get(s, 0) for s in JUDGED_STATUSES)
        if not self.measured or m == 0:
            return None
        km = k_of_m(c[MISMATCH], m, self.alpha)
        return {"k": c[REPRODUCED], "m": m, "mismatches": c[MISMATCH], "inconclusive": c[INCONCLUSIVE],
                "alpha": self.alpha, "expected_mismatches": km.expected, "p_chance": km.p_chance,
                "text": f"{c[REPRODUCED]} of {m} reproduced; m·α = {km.expected:.2g} mismatches expected by chance "
                        f"at α = {self.alpha:g}" + (f" ({c[MISMATCH]} observed, P(at least {c[MISMATCH]}) = "
                                                     f"{km.p_chance:.2g})" if c[MISMATCH] else "")}

    def summary(self) -> str:
        c = self.counts()
        if not self.measured:
            checked = c[MATCH] + c[MISMATCH]
            parts = [f"{c[MATCH]}/{checked} published values matched"]
            for s in (MISMATCH, NOT_DERIVABLE, FIGURE_REDRAWN, INFO):
                if c[s]:
                    parts.append(f"{c[s]} {s}")
            return ", ".join(parts)
        mult = self.multiplicity()
        parts = [f"{mult['k']} of {mult['m']} reproduced (m·α = {mult['expected_mismatches']:.2g})" if mult
                 else "no value judged"]
        for s in (MISMATCH, INCONCLUSIVE, NOT_COMPARABLE, NOT_DERIVABLE, FIGURE_REDRAWN, INFO):
            if c[s]:
                parts.append(f"{c[s]} {s}")
        if self.claims:
            cc = self.claim_counts()
            parts.append(f"claims: {cc[HOLDS]} of {len(self.claims)} hold"
                         + "".join(f", {cc[v]} {v}" for v in (FAILS, INCONCLUSIVE, NOT_DERIVABLE) if cc[v]))
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schema": SCHEMA,
            "kind": self.kind,
            "figure_id": self.figure_id,
            "title": self.title,
            "citation": self.citation,
            "ok": self.ok,
            "outcome": self.outcome,
            "claim": self.claim(),
            "counts": self.counts(),
            "summary": self.summary(),
            "rows": [r.as_dict() for r in self.rows],
            "figures": self.figures,
            "notes": self.notes,
        }
        if self.measured:
            out.update({"alpha": self.alpha, "multiplicity": self.multiplicity(),
                        "claims": [c.as_dict() for c in self.claims], "claim_counts": self.claim_counts(),
                        "plan": self.plan, "noise_floor": self.noise_floor})
        return out

    def to_frame(self) -> pd.DataFrame:
        """The rows as a table: for measured rows the estimate, its 95 % interval, the margin and the runs."""
        if not self.measured:
            return pd.DataFrame([{"name": r.name, "published": _fmt(r.published, r.unit), "computed":
                                  _fmt(r.computed, r.unit), "runs": r.runs, "status": r.status, "note": r.note}
                                 for r in self.rows])
        return pd.DataFrame([_measured_cells(r) | {"status": r.status, "note": _row_note(r)} for r in self.rows])

    def claims_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"claim": c.id, "principal": c.principal, "test": c.relation(), "Delta": _delta_text(c),
                              "95 % interval": _claim_interval(c), "runs": c.runs, "verdict": c.verdict,
                              "reason": c.reason} for c in self.claims])

    def _repr_html_(self) -> str:
        html = (f"<p><b>{self.figure_id}</b>: {self.outcome}: {self.summary()}</p>"
                + self.to_frame().to_html(index=False))
        if self.measured:
            mult = self.multiplicity()
            if mult:
                html += f"<p>{mult['text']}</p>"
            if self.claims:
                html += (f"<p>principal claim: <b>{self.claim_status()}</b></p>"
                         + self.claims_frame().to_html(index=False))
        return html

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
            metrics["verdict"] = {"ok": self.ok, "outcome": self.outcome, **self.counts()}
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
        v = cls(figure_id=data["figure_id"], title=data.get("title", ""), citation=data.get("citation", ""),
                kind=data.get("kind", PUBLISHED_DATA))
        v.rows = [row_from_dict(r) for r in data.get("rows", [])]
        v.figures = dict(data.get("figures", {}))
        v.notes = list(data.get("notes", []))
        claim = data.get("claim") or {}
        v.claim_text = claim.get("text", "")
        v.claim_rows = tuple(claim.get("rows", ()))
        v.claims = [ClaimResult.from_dict(c) for c in data.get("claims") or []]
        v.plan, v.noise_floor = data.get("plan"), data.get("noise_floor")
        v.alpha = float(data.get("alpha", ALPHA))
        return v

    @classmethod
    def load(cls, path: Path | str) -> Verdict:
        """verdict.json (of schema benchbook.verdict/2 or /1) from a file or its run directory."""
        path = Path(path)
        if path.is_dir():
            path = path / VERDICT_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
        if data.get("schema") not in SCHEMAS:
            raise ValueError(f"{path}: expected schema {' or '.join(map(repr, SCHEMAS))}, got {data.get('schema')!r}")
        problem = _shape_problem(data)
        if problem:
            raise ValueError(f"{path}: {problem}")
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:    # a field of the right shape with a value no row takes
            raise ValueError(f"{path}: not a verdict: {exc}") from exc

    def rich_table(self) -> Group:
        """A rich renderable: the verdict table (measured: estimate, 95 % interval, margin, runs), the claims,
        k of m beside m * alpha, then the numbered notes its rows refer to."""
        title = f"{self.figure_id}: {self.summary()}"
        table = Table(title=title, show_lines=False, expand=False)
        notes: list[Text] = []
        if not self.measured:
            for col in ("#", "published value", "published", "computed", "run(s)", "status"):
                table.add_column(col, overflow="fold", no_wrap=col in ("#", "published", "computed", "status"))
            for i, r in enumerate(self.rows, start=1):
                table.add_row(str(i), r.name, _fmt(r.published, r.unit), _fmt(r.computed, r.unit), str(r.runs),
                              f"[{_STYLES[r.status]}]{r.status}[/]")
                if r.note:
                    tol = f" (tolerance {r.tolerance})" if r.tolerance else ""
                    notes.append(Text(f"[{i}] {r.note}{tol}"))
            return Group(table, *notes)
        for col in ("#", "published value", "published", "estimate", "95 % interval", "margin", "runs", "status"):
            table.add_column(col, overflow="fold", no_wrap=col in ("#", "status"))
        for i, r in enumerate(self.rows, start=1):
            cells = _measured_cells(r)
            table.add_row(str(i), r.name, cells["published"], cells["estimate"], cells["95 % interval"],
                          cells["margin"], cells["runs"], f"[{_STYLES[r.status]}]{r.status}[/]")
            note = _row_note(r)
            if note:
                notes.append(Text(f"[{i}] {note}"))
        parts: list[Any] = [table]
        mult = self.multiplicity()
        if mult:
            parts.append(Text(mult["text"]))
        if self.claims:
            ct = Table(title=f"claims (principal claim: {self.claim_status()})", expand=False)
            for col in ("claim", "test", "Delta", "95 % interval", "runs", "verdict"):
                ct.add_column(col, overflow="fold", no_wrap=col == "verdict")
            for c in self.claims:
                ct.add_row(c.id + (" *" if c.principal else ""), c.relation(), _delta_text(c), _claim_interval(c),
                           str(c.runs if c.runs is not None else "-"), f"[{_STYLES[c.verdict]}]{c.verdict}[/]")
            parts.append(ct)
            parts += [Text(f"{c.id}: {c.reason}") for c in self.claims if c.reason]
        return Group(*parts, *notes)


def _measured_cells(r: VerdictRow) -> dict[str, str]:
    """The printed cells of a measured verdict's row (info and figure rows are plain VerdictRows)."""
    if not isinstance(r, MeasuredRow):
        return {"name": r.name, "published": _fmt(r.published, r.unit), "estimate": _fmt(r.computed, r.unit),
                "95 % interval": "-", "margin": r.tolerance or "-", "runs": str(r.runs or "-")}
    runs = f"{r.runs}" + (f" ({r.arm})" if r.arm else "") if r.runs else "0"
    return {"name": r.name, "published": _fmt(r.published, r.unit), "estimate": _fmt(r.estimate, r.unit),
            "95 % interval": fmt_interval(r.ci95_value, r.unit), "margin": r.margin.get("text", "-") or "-",
            "runs": runs}


def _row_note(r: VerdictRow) -> str:
    if not isinstance(r, MeasuredRow):
        return r.note
    parts = [r.reason]
    if r.status in JUDGED_STATUSES and r.margin:
        parts.append(f"margin {r.margin['text']} from {', '.join(r.margin.get('sources', []))}"
                     + (f": {r.margin['note']}" if r.margin.get("note") else ""))
    parts.append(r.note)
    return "; ".join(p for p in parts if p)


def _delta_text(c: ClaimResult) -> str:
    if c.test == "share >=":
        return "-" if c.share is None else f"{c.counts[0]} of {c.counts[1]} = {c.share:.3f}" if c.counts else "-"
    if c.delta is None:
        return "-"
    if c.test == "a / b within":
        return f"a / b = {math.exp(c.delta):.4g}"
    return f"{math.expm1(c.delta) * 100:+.2f} %" if c.scale == "log-ratio" else f"{c.delta:+.4g}"


def _claim_interval(c: ClaimResult) -> str:
    """The 95 % interval as the claim reads: of the share, of a / b, of a vs b in percent, or of a - b."""
    if c.ci95 is None:
        return "-"
    if c.test == "share >=" or c.scale != "log-ratio":
        return f"[{c.ci95[0]:.4g}, {c.ci95[1]:.4g}]"
    if c.test == "a / b within":
        return f"[{math.exp(c.ci95[0]):.4g}, {math.exp(c.ci95[1]):.4g}]"
    return f"[{math.expm1(c.ci95[0]) * 100:+.2f} %, {math.expm1(c.ci95[1]) * 100:+.2f} %]"


def _shape_problem(data: dict[str, Any]) -> str:
    """What in a verdict.json's top level is not as the schema says (empty when nothing): the figure id, the
    lists of rows and claims and the objects in them, the claim, the figures, notes and plan."""
    if not isinstance(data.get("figure_id"), str) or not data["figure_id"]:
        return f"figure_id: expected a non-empty string, got {data.get('figure_id')!r}"
    for key in ("rows", "claims", "notes"):
        items = data.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            return f"{key}: expected a list, got {type(items).__name__}"
        want = str if key == "notes" else dict
        for i, item in enumerate(items):
            if not isinstance(item, want):
                return (f"{key}[{i}]: expected {'a string' if want is str else 'an object'}, got "
                        f"{type(item).__name__ if item is not None else 'null'}")
            if want is dict and not isinstance(item.get("name" if key == "rows" else "id"), str):
                return f"{key}[{i}]: expected a string {'name' if key == 'rows' else 'id'}"
    for key in ("claim", "figures", "plan"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            return f"{key}: expected an object or null, got {type(data[key]).__name__}"
    return ""


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


__all__ = ["EXACT_MEASURED", "MEASURED", "OUTCOMES", "PUBLISHED_DATA", "SCHEMA", "SCHEMAS", "STATUSES", "VERDICT_FILE",
           "ClaimResult", "MeasuredRow", "Verdict", "VerdictRow"]
