"""Interactive runs: a notebook run by hand in a kernel (JupyterLab's "Run All", a console) instead of by
papermill, still into a fresh run directory ``<runs>/<experiment>/<run id>/`` with its run record.

``start_interactive_run`` makes the directory (``raw/``, ``analysis/``) and writes run.json as the runner
does (status "running", owner = the kernel's process), marked ``"interactive": true`` and without an executed
notebook (the cells live in the kernel's client). In an IPython kernel the record is then rewritten after every
cell the kernel runs: the notebook's metrics.json and capabilities.json folded in, the outputs hashed, and the
status from what the run directory holds and how the last cell ended:

    failed        the cell raised (the error names the cell; every failed cell stays in "warnings")
    interrupted   the cell was interrupted (KeyboardInterrupt), or the kernel ended, or the notebook started a
                  newer run, before the run was done
    complete      the run directory holds one of ``done_when`` (what the notebook writes last, e.g. verdict.json)
    running       otherwise (more cells to come)

Cells may run out of order or be edited between runs; the record says so in its note.
"""

from __future__ import annotations

import atexit
import copy
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from IPython import get_ipython

from benchbook.experiment.record import RECORD_NAME, mark_abandoned
from benchbook.experiment.runner import begin_record, end_record, new_run_id, notebook_error
from benchbook.paths import RUNS_DIR
from benchbook.provenance.checksums import hash_tree, iter_files

INTERACTIVE_NOTE = ("interactive run: its cells ran in a kernel by hand (JupyterLab, a console), not by papermill; "
                    "they may have run out of order or been edited in between, and the executed notebook is not "
                    "kept; the record was rewritten after every cell")


@dataclass
class InteractiveRun:
    run_dir: Path
    record: dict[str, Any]  # as begin_record wrote it; every refresh finishes a copy
    started_s: float  # time.monotonic() at the start
    done_when: tuple[str, ...] = ()
    status: str = "running"
    failed_cells: list[str] = field(default_factory=list)
    _listing: list[tuple[str, int, int]] | None = field(default=None, repr=False)
    _outputs: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def _hashed_outputs(self) -> list[dict[str, Any]]:
        """The outputs' entries, hashed again only when a file was added, removed or changed since the last
        refresh (a measured run's raw data need not be read again after every cell)."""
        files = iter_files(self.run_dir, skip=(RECORD_NAME,))
        listing = [(str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        if listing != self._listing:
            self._outputs, self._listing = hash_tree(self.run_dir, skip=(RECORD_NAME,)), listing
        return self._outputs

    def refresh(self, error: str | None = None, interrupted: str | None = None) -> str:
        """Rewrite run.json after a cell: ``error`` when the cell raised, ``interrupted`` (the reason) when the
        run was stopped before it was done. Returns the status written."""
        if error is not None:
            self.failed_cells.append(error)
        if interrupted is not None:
            self.status, error = "interrupted", f"interrupted: {interrupted}"
        elif error is not None:
            self.status = "failed"
        else:
            done = any((self.run_dir / name).is_file() for name in self.done_when)
            self.status = "complete" if done else "running"
        record = copy.deepcopy(self.record)
        record["warnings"].extend(self.failed_cells)
        end_record(self.run_dir, record, self.status, error, self.started_s, outputs=self._hashed_outputs())
        return self.status

    def stop(self, reason: str) -> None:
        """The run ends here (the process exits, or a newer run starts): one not done is recorded interrupted."""
        if self.status in ("running", "interrupted") and (self.run_dir / RECORD_NAME).is_file():
            self.refresh(interrupted=reason)


_following: list[tuple[Any, Any, InteractiveRun]] = []  # (shell, post_run_cell callback, run): at most one


def end_interactive_run(reason: str = "the notebook ended its interactive run") -> None:
    """Stop following the cells: the run this process started last is recorded as it stands, interrupted (with
    ``reason``) when it was not done."""
    while _following:
        shell, callback, run = _following.pop()
        if shell is not None:
            shell.events.unregister("post_run_cell", callback)
        run.stop(reason)


atexit.register(end_interactive_run, "the kernel (or process) ended before the notebook was done")


def _after_cell(run: InteractiveRun):
    def post_run_cell(result: Any) -> None:
        exc = result.error_in_exec or result.error_before_exec
        if isinstance(exc, KeyboardInterrupt):
            run.refresh(interrupted=f"cell In [{result.execution_count}] was interrupted (KeyboardInterrupt)")
        elif exc is not None:
            run.refresh(error=f"cell In [{result.execution_count}] raised {notebook_error(exc)}")
        else:
            run.refresh()

    return post_run_cell


def start_interactive_run(notebook: Path, parameters: dict[str, Any], experiment: str,
                          runs_dir: Path | None = None, inputs: Iterable[Path] = (),
                          done_when: Iterable[str] = (), warnings: Iterable[str] = ()) -> InteractiveRun:
    """A new interactive run of ``notebook`` under ``<runs_dir>/<experiment>/`` (default data/runs, or
    BENCHBOOK_RUNS), its record written; in an IPython kernel it follows every cell from now on. A run this
    process started before and had not finished is recorded interrupted."""
    end_interactive_run("the kernel started a newer interactive run before this one was done")
    runs = (Path(runs_dir) if runs_dir is not None else RUNS_DIR).resolve()
    run_id = new_run_id(tag="interactive")
    abandoned = mark_abandoned(runs / experiment, noticed_by=f"interactive run {run_id}")
    run_dir = runs / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    (run_dir / "raw").mkdir()
    (run_dir / "analysis").mkdir()
    started = time.monotonic()
    record = begin_record(run_dir, Path(notebook).resolve(), parameters, experiment, run_id, abandoned=abandoned,
                          inputs=inputs, executed_notebook=None, interactive=True, note=INTERACTIVE_NOTE)
    record["warnings"].extend(warnings)
    run = InteractiveRun(run_dir, record, started, tuple(done_when))
    run.refresh()
    shell = get_ipython()
    callback = _after_cell(run)
    if shell is not None:
        shell.events.register("post_run_cell", callback)
    _following.append((shell, callback, run))
    return run
