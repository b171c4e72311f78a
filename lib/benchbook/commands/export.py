"""`benchbook export RUN|FIGURE -o DIR`: a run as a Workflow Run RO-Crate."""

from __future__ import annotations

from pathlib import Path

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
        a Workflow Run RO-Crate."""
        from benchbook.experiment.record import RunRecordError, find_run
        from benchbook.experiment.rocrate_export import export_run, newest_run
        from benchbook.paths import RUNS_DIR

        try:
            try:
                run_dir = find_run(ref, RUNS_DIR)
            except RunRecordError:
                if (RUNS_DIR / ref).is_dir():
                    run_dir = newest_run(RUNS_DIR / ref)
                else:
                    raise
            crate = export_run(run_dir, out)
        except (RunRecordError, FileNotFoundError, FileExistsError) as exc:
            typer.echo(f"benchbook export: {exc}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"RO-Crate of {run_dir} written to {crate} (ro-crate-metadata.json)")
