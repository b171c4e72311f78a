"""`benchbook calibrate ENTRY [--runs N] [--arm ARM]`: the noise floor of this testbed for a measured entry, from
an A/A calibration (one arm's configuration as two interleaved arms, through the entry's own notebook), stored
under data/calibration/<entry>/<host key>.json where the judge finds it (benchbook.reproduce.calibration;
docs/statistics.md, "The noise floor").

Exit status: 0 calibrated, 1 the runs gave no noise floor (why is printed), 2 usage (a published-data entry, an
unknown entry or arm)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add `benchbook calibrate` to the app."""
    app.command("calibrate")(calibrate)


def calibrate(
    entry_id: str = typer.Argument(..., metavar="ENTRY", help="registry id of a measured entry"),
    runs: int | None = typer.Option(None, "--runs", min=6, help="runs per arm, at least 6 (default: the entry's "
                                                                "plan, at least 6)"),
    arm: str | None = typer.Option(None, "--arm", help="the arm run against itself (default: the first of the plan)"),
    papers: list[Path] = typer.Option([], "--papers", help="add a paper folder (or a folder of paper folders)"),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where the run directory goes"),
    param: list[str] = typer.Option([], "--param", "-p", help="override a notebook parameter: key=value"),
) -> None:
    """Run one arm of a measured entry A/A and store the smallest effect this testbed can detect per statistic."""
    from rich.console import Console
    from rich.table import Table

    from benchbook.reproduce.calibration import CalibrationFailed, calibrate_entry
    from benchbook.reproduce.notebook_params import ParameterError, parse_overrides
    from benchbook.reproduce.registry import RegistryError, load_entry
    from benchbook.reproduce.run import NotMeasured

    # piped into a log there is no terminal width: keep output paths whole
    console = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        entry = load_entry(entry_id, papers=papers)
        res = calibrate_entry(entry, runs, arm, runs_dir, overrides=parse_overrides(param),
                              progress=lambda step: console.print(str(step), highlight=False, markup=False,
                                                                  soft_wrap=True))
    except (RegistryError, ParameterError, NotMeasured) as exc:
        console.print(f"[bold red]usage[/]: {exc}", highlight=False)
        raise typer.Exit(2) from exc
    except CalibrationFailed as exc:
        console.print(f"[bold red]calibration failed[/]: {exc}", highlight=False)
        raise typer.Exit(1) from exc
    table = Table(title=f"{entry.id}: noise floor from {res.runs} runs per arm (A/A)")
    for col in ("arm:statistic", "runs", "Delta A/A", "95 % interval", "MDE"):
        table.add_column(col, overflow="fold", no_wrap=col != "arm:statistic")
    for key, f in res.floors.items():
        rel = f["scale"] == "log-ratio"
        show = (lambda x: f"{x * 100:+.2f} %") if rel else (lambda x: f"{x:+.4g}")
        table.add_row(key, f"{f['runs'][0]} + {f['runs'][1]}", show(f["estimate"]),
                      f"[{show(f['ci95'][0])}, {show(f['ci95'][1])}]",
                      (f"{f['mde'] * 100:.2f} % (log ratio)" if rel else f"{f['mde']:.4g} {f['unit']}".strip()))
    console.print(table)
    for key, why in res.missing.items():
        console.print(f"  {key}: no noise floor: {why}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"stored: {res.path}", highlight=False, markup=False, soft_wrap=True)
    console.print(f"runs: {res.run_dir}", highlight=False, markup=False, soft_wrap=True)
