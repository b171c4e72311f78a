"""Which runs a site publishes, and what the site says about each: its record, verdict, paper and badge."""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.experiment.record import RECORD_NAME, RunRecordError, find_run, iter_run_dirs, read_record
from benchbook.reproduce.registry import RegistryError, load_registry
from benchbook.reproduce.verdict import VERDICT_FILE

PUBLISHED_STATUSES = ("complete", "failed", "interrupted")


class PublishError(BenchbookError):
    """A site cannot be built as asked (message names the run, file or argument)."""


@dataclass
class FigureInfo:
    """What the registry says about a figure id (defaults when the id is not a registered entry)."""

    id: str
    title: str = ""
    citation: str = ""
    mode: str = ""
    paper_id: str = "other runs"
    paper_title: str = "runs that are not registered paper figures"
    claim: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class PublishedRun:
    run_dir: Path
    record: dict[str, Any]
    verdict: dict[str, Any] | None
    figure: FigureInfo
    notes: list[str] = field(default_factory=list)

    @property
    def experiment(self) -> str:
        return self.record["experiment"]

    @property
    def run_id(self) -> str:
        return self.record["id"]

    @property
    def start(self) -> str:
        return self.record["start"]

    @property
    def date(self) -> str:
        return self.start[:16].replace("T", " ") + " UTC"

    @property
    def outcome(self) -> str:
        """reproduced | figure redrawn | partial | inconclusive | mismatch | failed (registry runs), else
        complete/failed/interrupted."""
        if self.record["status"] != "complete":
            return "failed" if self.verdict is not None or self.figure.mode else self.record["status"]
        if self.verdict is not None:
            outcome = str(self.verdict.get("outcome", "failed"))
            if outcome == "reproduced" and self._v1 and not self.verdict.get("counts", {}).get("match"):
                return "figure redrawn"   # verdict/1 said "reproduced" when nothing was compared
            return outcome
        return "failed" if self.figure.mode else "complete"

    @property
    def _v1(self) -> bool:
        """The verdict is a benchbook.verdict/1 file (or older, without a schema)."""
        return (self.verdict or {}).get("schema", "benchbook.verdict/1") == "benchbook.verdict/1"

    @property
    def badge(self) -> str:
        """A short text for the outcome badge: "8/8 values match", "partial: 5/8 match, 3 not derivable" ..."""
        outcome = self.outcome
        if self.verdict is None:
            return {"complete": "ran (no verdict)", "failed": "failed", "interrupted": "interrupted"}.get(
                outcome, outcome)
        c = self.verdict.get("counts", {})
        if outcome == "failed":
            return "failed"
        if self.verdict.get("kind") == "measured":
            return _measured_badge(outcome, self.verdict)
        match, mismatch, nd = c.get("match", 0), c.get("mismatch", 0), c.get("not derivable", 0)
        total = match + mismatch + nd
        if total == 0:
            drawn = c.get("figure redrawn", 0) or c.get("figure only", 0)
            return "figure redrawn" if drawn or outcome == "figure redrawn" else "no published values to compare"
        if outcome == "reproduced":
            return f"{match}/{total} values match"
        if outcome == "partial":
            return f"partial: {match}/{total} match, {nd} not derivable"
        return f"mismatch: {mismatch} of {total} differ"

    @property
    def executed_notebook(self) -> Path | None:
        name = self.record.get("executed_notebook")
        if not name:
            return None
        path = self.run_dir / name
        return path if path.is_file() else None

    @property
    def environment_text(self) -> str:
        env = self.record.get("environment", {})
        host = self.record.get("host", {})
        kernel = (host.get("kernel") or {}).get("release", "?")
        git = (env.get("git_commit") or "?")[:10] + (" (dirty)" if env.get("git_dirty") else "")
        return f"{host.get('hostname', '?')}, Linux {kernel}, git {git}"


def _measured_badge(outcome: str, verdict: dict[str, Any]) -> str:
    """A measured entry's badge: "3 of 4 reproduced, m·α = 0.2 mismatches expected, 2 of 2 claims hold",
    "inconclusive: 1 of 3 reproduced, m·α = 0.15 mismatches expected" ..."""
    mult = verdict.get("multiplicity") or {}
    k, m = mult.get("k", 0), mult.get("m", 0)
    expected = mult.get("expected_mismatches", m * float(mult.get("alpha", verdict.get("alpha", 0.05))))
    claims = verdict.get("claim_counts") or {}
    n_claims = sum(claims.values())
    held = f"{claims.get('holds', 0)} of {n_claims} claims hold" if n_claims else ""
    rows = f"{k} of {m} reproduced, m·α = {expected:.2g} mismatches expected" if m else ""
    text = ", ".join(x for x in (rows, held) if x) or "nothing judged"
    if outcome in ("reproduced", "figure redrawn"):
        return text if m or n_claims else outcome
    return f"{outcome}: {text}"


def _figure_infos(papers: list[Path]) -> dict[str, FigureInfo]:
    try:
        entries = load_registry(papers)
    except RegistryError:
        return {}
    out = {}
    for e in entries.values():
        out[e.id] = FigureInfo(id=e.id, title=e.title, citation=e.citation, mode=e.mode,
                               paper_id=e.paper.id if e.paper else e.folder.name,
                               paper_title=e.paper.title if e.paper else e.folder.name, claim=e.claim,
                               parameters=dict(e.parameters))
    return out


def _load(run_dir: Path, infos: dict[str, FigureInfo]) -> PublishedRun:
    record = read_record(run_dir)
    verdict = None
    vpath = run_dir / VERDICT_FILE
    if vpath.is_file():
        try:
            verdict = json.loads(vpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise PublishError(f"{vpath}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
    info = infos.get(record["experiment"])
    if info is None:
        info = FigureInfo(id=record["experiment"])
        if verdict is not None:
            info.title, info.citation = verdict.get("title", ""), verdict.get("citation", "")
    return PublishedRun(run_dir=run_dir, record=record, verdict=verdict, figure=info)


def _parse_since(since: str) -> str:
    try:
        when = _dt.datetime.fromisoformat(since.replace("Z", "+00:00"))
    except ValueError:
        raise PublishError(f"--since {since!r}: expected an ISO date-time such as 2026-11-22T16:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return when.astimezone(_dt.UTC).isoformat(timespec="milliseconds")


def select_runs(refs: list[str], all_runs: bool, runs_dir: Path, papers: list[Path] = (),
                since: str | None = None) -> list[PublishedRun]:
    """The runs to publish, sorted by figure then start time.

    A ref is a registry id or experiment name (every run of it under ``runs_dir``), a run directory,
    "<experiment>/<run-id>" or a run id. ``all_runs``: every run under ``runs_dir``. Runs still
    "running" are left out. ``since`` keeps runs that started at or after that time.
    """
    runs_dir = Path(runs_dir)
    if bool(refs) == bool(all_runs):
        raise PublishError("give run or figure ids, or --all (not both)")
    dirs: list[Path] = []
    if all_runs:
        if not runs_dir.is_dir():
            raise PublishError(f"{runs_dir}: no runs directory (run `benchbook reproduce` first)")
        for exp in sorted(p for p in runs_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            dirs.extend(iter_run_dirs(exp))
    for ref in refs:
        if (runs_dir / ref).is_dir() and not (runs_dir / ref / RECORD_NAME).is_file():
            found = list(iter_run_dirs(runs_dir / ref))
            if not found:
                raise PublishError(f"{ref}: no run records under {runs_dir / ref}")
            dirs.extend(found)
            continue
        try:
            dirs.append(find_run(ref, runs_dir))
        except RunRecordError as exc:
            raise PublishError(str(exc)) from None
    infos = _figure_infos(list(papers))
    seen: set[Path] = set()
    runs: list[PublishedRun] = []
    cutoff = _parse_since(since) if since else None
    for d in dirs:
        key = d.resolve()
        if key in seen:
            continue
        seen.add(key)
        try:
            run = _load(d, infos)
        except RunRecordError as exc:
            raise PublishError(str(exc)) from None
        if run.record["status"] not in PUBLISHED_STATUSES:
            continue
        if cutoff is not None and _parse_since(run.start) < cutoff:
            continue
        runs.append(run)
    if not runs:
        raise PublishError("no finished runs to publish" + (f" since {since}" if since else "")
                           + f" (looked under {runs_dir})")
    runs.sort(key=lambda r: (r.figure.paper_id, r.experiment, r.start, r.run_id))
    return runs
