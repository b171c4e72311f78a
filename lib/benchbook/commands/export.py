"""`benchbook export RUN|FIGURE -o DIR`: a run as a Workflow Run RO-Crate."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""

    @app.command("export")
    def export_cmd(
        ref: str = typer.Argument(..., help="run directory, <experiment>/<run-id>, run id, or a figure "
                                  "registry id (its newest complete run)"),
        out: Path = typer.Option(..., "-o", "--output", help="directory to write the RO-Crate into (empty or new)"),
    ) -> None:
        """Export a run record (notebook, parameters, inputs/outputs with SHA-256, host fingerprint) as
        a Workflow Run RO-Crate.

        Exit status: 0 written, 1 the run record cannot be read (not a file, not valid JSON, not the
        schema), 2 a usage error (no such run, an ambiguous run id, an output directory that is not empty)."""
        from benchbook.experiment.record import RunRecordError, find_run
        from benchbook.experiment.rocrate_export import export_run, newest_run
        from benchbook.paths import RUNS_DIR

        try:
            run_dir = find_run(ref, RUNS_DIR)
        except RunRecordError as exc:
            if not (RUNS_DIR / ref).is_dir():
                _fail(exc, 2)
            try:
                run_dir = newest_run(RUNS_DIR / ref)
            except RunRecordError as bad:
                _fail(bad, 1)
            except FileNotFoundError as none:
                _fail(none, 2)
        try:
            crate = export_run(run_dir, out)
        except RunRecordError as exc:  # the record is there but unreadable: a data problem
            _fail(exc, 1)
        except (FileNotFoundError, FileExistsError) as exc:
            _fail(exc, 2)
        typer.echo(f"RO-Crate of {run_dir} written to {crate} (ro-crate-metadata.json)")


def _fail(exc: Exception, code: int) -> NoReturn:
    typer.echo(f"benchbook export: {exc}", err=True)
    raise typer.Exit(code) from None
