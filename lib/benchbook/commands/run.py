"""`benchbook run NOTEBOOK -p name=v1,v2 ... [--repeat N] [--resume] [--shuffle] [--experiment NAME]
[--fresh-kernel]`: a Cartesian sweep through papermill, one run record per point (benchbook.experiment.sweep),
the points in one shared kernel (benchbook.experiment.jupyter_session) unless --fresh-kernel."""

from __future__ import annotations

from pathlib import Path

import typer

from benchbook.engine.options import ENGINE_OPTION, SCHEDULER_OPTION, SSH_CLUSTER_OPTION


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""

    @app.command("run")
    def run_cmd(
        notebook: Path = typer.Argument(..., help="papermill notebook (a cell tagged `parameters`)"),
        param: list[str] = typer.Option([], "-p", "--param", help="NAME=V1[,V2...]: one sweep axis; repeatable. "
                                        "Each value a JSON literal (1, 0.5, true, null, \"a,b\", [1,2]) or a bare "
                                        "string; commas inside brackets or quotes do not split; NaN/inf refused"),
        repeat: int = typer.Option(1, "--repeat", "-r", help="repetitions per grid point"),
        resume: bool = typer.Option(False, "--resume", help="continue the experiment's sweep: skip complete "
                                    "points, redo the others (their directories are kept under .attempts/)"),
        shuffle: bool = typer.Option(False, "--shuffle", help="randomise run order (seed recorded in sweep.json)"),
        seed: int | None = typer.Option(None, "--seed", help="seed for --shuffle (default: random, recorded)"),
        experiment: str | None = typer.Option(None, "--experiment", "-e", help="experiment name "
                                                 "(default: the notebook's stem)"),
        runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run records go "
                                                "(default: data/runs or $BENCHBOOK_RUNS)"),
        no_progress: bool = typer.Option(False, "--no-progress", help="no progress bar"),
        fresh_kernel: bool = typer.Option(False, "--fresh-kernel", help="start a new kernel for every point "
                                          "(default: one kernel for the sweep, reset to a fresh kernel's state "
                                          "before each point, and one browser for static figures)"),
        engine: str | None = ENGINE_OPTION,
        scheduler: str | None = SCHEDULER_OPTION,
        ssh_cluster: Path | None = SSH_CLUSTER_OPTION,
    ) -> None:
        """Run NOTEBOOK over the Cartesian grid of -p values x --repeat, one run record per point."""
        import signal
        from contextlib import ExitStack

        from benchbook.engine import EngineError, engine_spec, open_engine
        from benchbook.experiment.lock import ExperimentLocked
        from benchbook.experiment.sweep import SweepError, parse_grid, run_sweep
        from benchbook.reproduce.notebook_params import ParameterError, prepare_parameters

        def _term(signum, frame):  # SIGTERM ends the sweep like Ctrl-C: the current run is recorded
            raise KeyboardInterrupt(f"signal {signum}")

        signal.signal(signal.SIGTERM, _term)
        try:
            if not notebook.is_file():
                raise SweepError(f"{notebook}: no such notebook")
            if repeat < 1:
                raise SweepError(f"--repeat {repeat}: expected at least 1")
            grid = parse_grid(param)
            grid = {name: [prepare_parameters(notebook, {name: v})[name] for v in values]
                    for name, values in grid.items()}
            spec = engine_spec(engine, scheduler, ssh_cluster)
            with ExitStack() as stack:
                # points are measurements: a worker lost mid-point ends that point (KilledWorker), never a rerun
                eng = stack.enter_context(open_engine(spec, allowed_failures=0)) if spec.engine == "dask" else None
                outcome = run_sweep(notebook, grid, repeat=repeat, experiment=experiment, runs_dir=runs_dir,
                                    resume=resume, shuffle=shuffle, seed=seed, progress=not no_progress,
                                    shared_kernel=not fresh_kernel, engine=eng)
        except (SweepError, ParameterError, ExperimentLocked, FileNotFoundError, ValueError, EngineError) as exc:
            typer.echo(f"benchbook run: error: {exc}", err=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            typer.echo("benchbook run: interrupted; the current run is recorded as interrupted. "
                       "Continue with --resume.", err=True)
            raise typer.Exit(130) from None
        m = outcome.manifest
        if outcome.stale_lock:
            typer.echo(f"note: took over a stale lock left by pid {outcome.stale_lock.get('pid')} "
                       f"({outcome.stale_lock.get('command', '?')})", err=True)
        for rid in outcome.moved_aside:
            typer.echo(f"note: incomplete run {rid} moved to {outcome.experiment_dir / '.attempts'} (kept)", err=True)
        n = len(m["points"])
        typer.echo(f"experiment {m['experiment']}: {outcome.count('complete')}/{n} points complete "
                   f"({len(outcome.ran)} run now, {len(outcome.skipped)} already complete), "
                   f"{outcome.count('failed')} failed"
                   + (f"; order shuffled with seed {m['seed']}" if m.get("shuffle") else ""))
        typer.echo(f"records: {outcome.experiment_dir} (sweep.json lists every point)")
        failed = [p for p in m["points"] if p["status"] != "complete"]
        for p in failed:
            why = _run_error(outcome.experiment_dir, p["run_id"])
            typer.echo(f"  {p['key']} {p['parameters']}: {p['status']} (run {p['run_id']})"
                       + (f": {why}" if why else ""), err=True)
        if failed:
            raise typer.Exit(1)


def _run_error(experiment_dir: Path, run_id: str | None) -> str | None:
    """The error a run record gives (the failing cell and its exception), if it can be read."""
    if not run_id:
        return None
    from benchbook.experiment.record import RunRecordError, read_record

    try:
        return read_record(experiment_dir / run_id).get("error")
    except RunRecordError:
        return None
