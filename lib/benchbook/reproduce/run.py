"""Reproducing registry entries: prepare an entry, execute its notebook into a run directory, judge the run by
the verdict it wrote; serially here, or the entries from published data as tasks on an engine.

    reproduce_entry(entry)           one entry -> EntryResult (outcome, detail, run directory, verdict)
    reproduce_entries(entries, spec) every entry, in order, in one shared kernel; on a dask engine the
                                     published-data ones as tasks
    prepare_entry / judge_run        the two halves around the notebook run (the engine path runs it elsewhere)

Outcomes: "reproduced" | "figure redrawn" | "partial" | "inconclusive" | "mismatch" | "failed" (from the verdict,
benchbook.reproduce.verdict, and the run's status), "skipped" (the entry cannot run here; the detail says why),
"dry run" (dry_run=True: the notebook wrote its commands into dry-run.txt, in EntryResult.plan).
`benchbook reproduce` (benchbook.commands.reproduce) prints what these return and exits with the outcome.

Entries run one after another share one Jupyter kernel (benchbook.experiment.jupyter_session, as a sweep's
points do): it is reset to a fresh kernel's state before each entry (empty namespace, execution count 1, the
paper's own modules imported afresh), while the imported libraries and the headless browser of static figure
exports stay; that saves the kernel's start, its imports and the browser's start per entry (seconds each).
``shared_kernel=False`` starts a kernel per entry. A run record does not depend on which it was.

What a reproduction tells on the way (a dataset verified, a notebook starting, the engine it runs on) goes to
the ``progress`` callback as a Progress; results go to ``on_result`` as each entry ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.engine import EngineSpec, open_engine
from benchbook.experiment.engine_runs import finish_record, notebook_run_task
from benchbook.experiment.jupyter_session import JupyterSession
from benchbook.experiment.record import mark_abandoned
from benchbook.experiment.runner import DRY_RUN_FILE, new_run_id, run_notebook
from benchbook.paths import RUNS_DIR
from benchbook.reproduce.capabilities import entry_blockers
from benchbook.reproduce.datasets import DatasetError, verify_dataset
from benchbook.reproduce.notebook_params import prepare_parameters
from benchbook.reproduce.registry import FigureEntry
from benchbook.reproduce.verdict import VERDICT_FILE, Verdict


@dataclass
class EntryResult:
    """How the reproduction of one entry ended."""

    id: str
    mode: str
    outcome: str = ""  # reproduced | figure redrawn | partial | inconclusive | mismatch | failed | skipped | dry run
    detail: str = ""
    run_dir: Path | None = None
    verdict: Verdict | None = None
    plan: str | None = None  # dry run: the text of dry-run.txt


@dataclass(frozen=True)
class Progress:
    """A step worth telling: kind "dataset" (verified), "executing" (a notebook starts) or "engine" (started)."""

    kind: str
    text: str
    entry_id: str | None = None

    def __str__(self) -> str:
        return f"{self.entry_id}: {self.text}" if self.entry_id else self.text


ProgressFn = Callable[[Progress], None]
ResultFn = Callable[[EntryResult], None]


def _quiet(_: Any) -> None:
    pass


def prepare_entry(entry: FigureEntry, overrides: Mapping[str, Any] | None = None, dry_run: bool = False,
                  progress: ProgressFn | None = None
                  ) -> tuple[EntryResult, dict[str, Any] | None, list[Path]]:
    """The result so far, the notebook parameters and the inputs of an entry; parameters None when the entry
    cannot run (the result then says why: skipped, or failed when its dataset does not verify).

    Raises benchbook.reproduce.notebook_params.ParameterError for an override the notebook does not declare."""
    result = EntryResult(id=entry.id, mode=entry.mode)
    blockers = entry_blockers(entry)
    if dry_run:  # nothing is measured: only a missing notebook or dataset stops it
        blockers = [b for b in blockers if b.startswith(("notebook ", "dataset "))]
    if blockers:
        result.outcome, result.detail = "skipped", "; ".join(blockers)
        return result, None, []
    params: dict[str, Any] = dict(entry.parameters)
    params.update(figure_id=entry.id, paper_dir=str(entry.folder.resolve()))
    inputs = [entry.source]
    if entry.dataset_dir is not None:
        try:
            ds = verify_dataset(entry.dataset_dir)
        except DatasetError as exc:
            result.outcome, result.detail = "failed", f"dataset verification failed: {exc}"
            return result, None, []
        (progress or _quiet)(Progress("dataset", f"dataset {entry.dataset}: {ds.n_files} files, "
                                                 f"{ds.n_bytes / 1e6:.1f} MB, SHA256SUMS verified"))
        params["dataset_dir"] = str(entry.dataset_dir.resolve())
    params.update(prepare_parameters(entry.notebook_path, dict(overrides or {}), injected=[*params, "dry_run"]))
    if dry_run:
        params["dry_run"] = True
    return result, params, inputs


def judge_run(entry: FigureEntry, result: EntryResult, run_dir: Path, status: str, error: str | None,
              dry_run: bool = False) -> EntryResult:
    """The outcome of an entry's finished run from its status and the verdict.json (or, for a dry run, the
    dry-run.txt) it wrote into ``run_dir``."""
    result.run_dir = Path(run_dir)
    if dry_run:
        plan = result.run_dir / DRY_RUN_FILE
        if status != "complete":
            result.outcome, result.detail = "failed", f"notebook {status}: {error}"
        elif not plan.is_file():
            result.outcome = "failed"
            result.detail = f"the notebook wrote no {DRY_RUN_FILE} into {run_dir} (does it honour dry_run?)"
        else:
            result.outcome, result.detail = "dry run", f"commands in {plan}"
            result.plan = plan.read_text(encoding="utf-8")
        return result
    vpath = result.run_dir / VERDICT_FILE
    if vpath.is_file():
        try:
            verdict = Verdict.load(vpath)
        except (ValueError, KeyError, TypeError) as exc:
            result.outcome, result.detail = "failed", f"{vpath}: unreadable verdict: {exc}"
            return result
        if not verdict.claim_text and entry.claim:
            verdict.claim_text, verdict.claim_rows = entry.claim, tuple(entry.claim_rows)
        result.verdict = verdict
    if status != "complete":
        result.outcome, result.detail = "failed", f"notebook {status}: {error}"
    elif result.verdict is None:
        result.outcome, result.detail = "failed", f"the notebook wrote no {VERDICT_FILE} into {run_dir}"
    else:
        result.outcome, result.detail = result.verdict.outcome, result.verdict.summary()
        if result.verdict.outcome in ("partial", "inconclusive") or result.verdict.claim_text or \
                result.verdict.claims:
            result.detail += f"; principal claim: {result.verdict.claim_status()}"
    return result


def reproduce_entry(entry: FigureEntry, runs_dir: Path | None = None, overrides: Mapping[str, Any] | None = None,
                    dry_run: bool = False, progress: ProgressFn | None = None,
                    kernel: JupyterSession | None = None) -> EntryResult:
    """Execute one entry's notebook into a new run directory under ``runs_dir`` (default data/runs, or
    BENCHBOOK_RUNS) and judge it; an entry that cannot run here comes back "skipped" without a run. With
    ``kernel`` the notebook runs in that session's kernel (reset for it), else in a kernel of its own."""
    result, params, inputs = prepare_entry(entry, overrides, dry_run, progress)
    if params is None:
        return result
    (progress or _quiet)(Progress("executing", f"executing {entry.notebook_path} ...", entry.id))
    try:
        run = run_notebook(entry.notebook_path, params, experiment=entry.id, runs_dir=runs_dir, inputs=inputs,
                           kernel=kernel)
    except (OSError, ValueError, RuntimeError) as exc:  # could not even start the run
        result.outcome = "failed"
        result.detail = f"could not run {entry.notebook}: {type(exc).__name__}: {exc}"
        return result
    return judge_run(entry, result, run.run_dir, run.status, run.error, dry_run)


def reproduce_entries(entries: Mapping[str, FigureEntry], runs_dir: Path | None = None,
                      overrides: Mapping[str, Any] | None = None, spec: EngineSpec | None = None,
                      progress: ProgressFn | None = None, on_result: ResultFn | None = None,
                      shared_kernel: bool = True) -> list[EntryResult]:
    """Every entry (skipped ones included), in the entries' order. ``on_result`` gets each entry that ran as it
    ends. On the local engine (default) one after another, in one kernel unless not ``shared_kernel``; on dask
    see reproduce_on_engine.

    Raises benchbook.engine.EngineError when the engine cannot be opened or fails."""
    if spec is not None and spec.engine != "local":
        return reproduce_on_engine(entries, spec, runs_dir, overrides, progress, on_result, shared_kernel)
    return _reproduce_here(list(entries.values()), runs_dir, overrides, progress, on_result or _quiet, shared_kernel)


def _reproduce_here(entries: list[FigureEntry], runs_dir: Path | None, overrides: Mapping[str, Any] | None,
                    progress: ProgressFn | None, told: ResultFn, shared_kernel: bool) -> list[EntryResult]:
    """``entries`` one after another in this process (the session's kernel starts with the first that runs)."""
    results = []
    with JupyterSession() if shared_kernel else contextlib.nullcontext() as kernel:
        for entry in entries:
            res = reproduce_entry(entry, runs_dir, overrides, progress=progress, kernel=kernel)
            if res.outcome != "skipped":
                told(res)
            results.append(res)
    return results


def reproduce_on_engine(entries: Mapping[str, FigureEntry], spec: EngineSpec, runs_dir: Path | None = None,
                        overrides: Mapping[str, Any] | None = None, progress: ProgressFn | None = None,
                        on_result: ResultFn | None = None, shared_kernel: bool = True) -> list[EntryResult]:
    """Every entry from published data as an analysis task on the engine (its run installed and recorded by
    this process, with the engine); then the measuring entries here, one after another, once the cluster is
    stopped. Results in the entries' order."""
    tell, told = progress or _quiet, on_result or _quiet
    runs = (Path(runs_dir) if runs_dir is not None else RUNS_DIR).resolve()
    results: dict[str, EntryResult] = {}
    tasks, finals, pending, measuring = [], {}, {}, []
    for entry in entries.values():
        if entry.mode != "published-data":
            measuring.append(entry)
            continue
        result, params, inputs = prepare_entry(entry, overrides, progress=progress)
        if params is None:
            results[entry.id] = result
            continue
        mark_abandoned(runs / entry.id, noticed_by="benchbook reproduce --all")
        run_id = new_run_id()
        finals[entry.id] = runs / entry.id / run_id
        pending[entry.id] = (entry, result, params)
        tasks.append(notebook_run_task(entry.id, entry.notebook_path, params, entry.id, runs, run_id, "analysis",
                                       inputs=tuple(str(p) for p in inputs)))
    with open_engine(spec) as eng:
        described = eng.describe()
        tell(Progress("engine", f"engine: {spec.describe()}, {described['workers']} workers: {len(tasks)} entries "
                                f"from published data there; {len(measuring)} measuring entries here afterwards"))
        for o in eng.run(tasks):
            entry, result, params = pending.pop(o.key)
            run = finish_record(finals[o.key], o, entry.notebook_path, entry.id, params, 0, None, described)
            results[o.key] = judge_run(entry, result, finals[o.key], run.status, run.error)
            told(results[o.key])
    for res in _reproduce_here(measuring, runs_dir, overrides, progress, told, shared_kernel):
        results[res.id] = res
    return [results[e] for e in entries]
