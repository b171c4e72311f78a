"""`benchbook reproduce`: rerun registered paper figures and compare with the published numbers.

    benchbook reproduce ID        execute the figure's notebook into a run directory, print the
                                  verdict table; exit 1 on any mismatch or failure
    benchbook reproduce --list    every registry entry, its mode and whether it can run here
    benchbook reproduce --all     every entry that can run here (the others: skipped, with why)

Exit status: 0 every reproduced value matched (or there was nothing to compare), 1 a mismatch or a
failed run (including a dataset whose SHA256SUMS do not verify), 2 bad usage or a malformed
registry entry, 3 the entry cannot run on this machine (the reason is printed).
Options: --figures-dir (or BENCHBOOK_FIGURES) selects another registry directory, --runs-dir
where run directories go (default data/runs, or BENCHBOOK_RUNS), -p key=value overrides a notebook
parameter (values are parsed as JSON when they can be).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer

EXIT_OK = 0
EXIT_MISMATCH_OR_FAILURE = 1
EXIT_BAD_USAGE = 2
EXIT_CANNOT_RUN = 3


def _console():
    from rich.console import Console

    # Piped into a log (make reproduce, CI) there is no terminal width: keep output paths whole.
    return Console() if sys.stdout.isatty() else Console(width=160)


def _parse_overrides(items: list[str]) -> dict[str, Any]:
    import json

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected key=value, got {item!r}", param_hint="--param")
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def reproduce_entry(entry, figures_dir: Path, runs_dir: Path | None, overrides: dict[str, Any],
                    console) -> dict[str, Any]:
    """Run one entry; return {"id", "outcome", "detail", "run_dir", "verdict"}.

    outcome: "ok" | "mismatch" | "failed" | "skipped".
    """
    from benchbook.experiment.runner import run_notebook
    from benchbook.reproduce.capabilities import entry_blockers
    from benchbook.reproduce.datasets import DatasetError, dataset_path, verify_dataset
    from benchbook.reproduce.verdict import VERDICT_FILE, Verdict

    result: dict[str, Any] = {"id": entry.id, "mode": entry.mode, "run_dir": None, "verdict": None}
    blockers = entry_blockers(entry)
    if blockers:
        result.update(outcome="skipped", detail="; ".join(blockers))
        return result
    params: dict[str, Any] = dict(entry.parameters)
    params.update(figure_id=entry.id, registry_dir=str(Path(figures_dir).resolve()))
    inputs = [entry.source]
    if entry.dataset:
        folder = dataset_path(entry.dataset)
        try:
            ds = verify_dataset(folder)
        except DatasetError as exc:
            result.update(outcome="failed", detail=f"dataset verification failed: {exc}")
            return result
        console.print(f"[dim]dataset {entry.dataset}: {ds.n_files} files, {ds.n_bytes / 1e6:.1f} MB, "
                      f"SHA256SUMS verified[/]")
        params["dataset_dir"] = str(folder.resolve())
    params.update(overrides)
    console.print(f"[bold]{entry.id}[/]: executing {entry.notebook} ...")
    try:
        run = run_notebook(entry.notebook_path, params, experiment=entry.id, runs_dir=runs_dir, inputs=inputs)
    except (OSError, ValueError, RuntimeError) as exc:  # could not even start the run
        result.update(outcome="failed", detail=f"could not run {entry.notebook}: {type(exc).__name__}: {exc}")
        return result
    result["run_dir"] = str(run.run_dir)
    vpath = run.run_dir / VERDICT_FILE
    verdict = None
    if vpath.is_file():
        try:
            verdict = Verdict.load(vpath)
        except (ValueError, KeyError, TypeError) as exc:
            result.update(outcome="failed", detail=f"{vpath}: unreadable verdict: {exc}")
            return result
        result["verdict"] = verdict
    if run.status != "complete":
        result.update(outcome="failed", detail=f"notebook {run.status}: {run.error}")
    elif verdict is None:
        result.update(outcome="failed", detail=f"the notebook wrote no {VERDICT_FILE} into {run.run_dir}")
    elif not verdict.ok:
        result.update(outcome="mismatch", detail=verdict.summary())
    else:
        result.update(outcome="ok", detail=verdict.summary())
    return result


def _print_result(res: dict[str, Any], console) -> None:
    verdict = res.get("verdict")
    if verdict is not None:
        console.print(verdict.rich_table())
        for stem, exports in verdict.figures.items():
            shown = ", ".join(f"{fmt}: {path}" for fmt, path in exports.items())
            console.print(f"  figure [bold]{stem}[/]: {shown}")
    style = {"ok": "green", "mismatch": "bold red", "failed": "bold red", "skipped": "yellow"}[res["outcome"]]
    console.print(f"[{style}]{res['id']}: {res['outcome']}[/] - {res['detail']}")
    if res.get("run_dir"):
        console.print(f"  outputs: {res['run_dir']}")


def _list_entries(entries, console) -> None:
    from rich.table import Table

    from benchbook.reproduce.capabilities import entry_blockers

    table = Table(title=f"{len(entries)} registered figures")
    table.add_column("id", overflow="fold")
    table.add_column("mode", no_wrap=True)
    table.add_column("published", justify="right", no_wrap=True)
    table.add_column("here", no_wrap=True)
    why: list[tuple[str, list[str]]] = []
    for entry in entries.values():
        blockers = entry_blockers(entry)
        table.add_row(entry.id, entry.mode, str(len(entry.published)),
                      "[green]yes[/]" if not blockers else "[yellow]no[/]")
        if blockers:
            why.append((entry.id, blockers))
    console.print(table)
    for entry in entries.values():
        console.print(f"[bold]{entry.id}[/]: {entry.title}", highlight=False)
    for figure_id, blockers in why:
        console.print(f"[yellow]{figure_id} cannot run here[/]: " + "; ".join(blockers), highlight=False)


def register(app: typer.Typer) -> None:
    """Add `benchbook reproduce` to the app."""

    @app.command("reproduce")
    def reproduce(
        figure_id: Optional[str] = typer.Argument(None, help="registry id, e.g. wiedner-itc23-table3"),
        list_: bool = typer.Option(False, "--list", help="list every entry and whether it can run here"),
        all_: bool = typer.Option(False, "--all", help="reproduce every entry that can run here"),
        figures_dir: Optional[Path] = typer.Option(
            None, "--figures-dir", envvar="BENCHBOOK_FIGURES", help="registry directory (default: built in)"
        ),
        runs_dir: Optional[Path] = typer.Option(None, "--runs-dir", help="where run directories go"),
        param: list[str] = typer.Option([], "--param", "-p", help="override a notebook parameter: key=value"),
    ) -> None:
        """Rerun a paper figure from its data and compare with the published numbers."""
        from benchbook.reproduce.registry import RegistryError, figures_dir as resolve_dir, load_entry, load_registry

        console = _console()
        folder = resolve_dir(figures_dir)
        if sum(bool(x) for x in (figure_id, list_, all_)) != 1:
            console.print("give exactly one of: ID, --list, --all")
            raise typer.Exit(EXIT_BAD_USAGE)
        overrides = _parse_overrides(param)
        try:
            if list_:
                _list_entries(load_registry(folder), console)
                raise typer.Exit(EXIT_OK)
            if figure_id:
                entry = load_entry(figure_id, folder)
                res = reproduce_entry(entry, folder, runs_dir, overrides, console)
                _print_result(res, console)
                code = {"ok": EXIT_OK, "skipped": EXIT_CANNOT_RUN}.get(res["outcome"], EXIT_MISMATCH_OR_FAILURE)
                raise typer.Exit(code)
            entries = load_registry(folder)
        except RegistryError as exc:
            console.print(f"[bold red]registry error[/]: {exc}")
            raise typer.Exit(EXIT_BAD_USAGE)
        results = []
        for entry in entries.values():
            res = reproduce_entry(entry, folder, runs_dir, overrides, console)
            if res["outcome"] != "skipped":
                _print_result(res, console)
            results.append(res)
        _summary(results, console)
        bad = [r for r in results if r["outcome"] in ("mismatch", "failed")]
        raise typer.Exit(EXIT_MISMATCH_OR_FAILURE if bad else EXIT_OK)


def _summary(results: list[dict[str, Any]], console) -> None:
    from rich.table import Table

    table = Table(title="benchbook reproduce --all")
    for col in ("id", "mode", "outcome", "detail", "outputs"):
        table.add_column(col, overflow="fold", no_wrap=col == "id")
    styles = {"ok": "green", "mismatch": "bold red", "failed": "bold red", "skipped": "yellow"}
    for r in results:
        table.add_row(r["id"], r["mode"], f"[{styles[r['outcome']]}]{r['outcome']}[/]", r["detail"],
                      r["run_dir"] or "-")
    console.print(table)
