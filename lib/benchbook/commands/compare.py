"""`benchbook compare A... --vs B...`: two sets of runs, statistic by statistic: the per-run values, Delta (log
ratio of medians, or a difference for bounded statistics) with its 90 % and 95 % intervals from a bootstrap over
runs, and the verdict equivalent / different / inconclusive / not resolvable against --margin. The rules are
benchbook.analysis.run_comparison's (docs/statistics.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import NoReturn

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    # `A... --vs B...`: click has no option with a variable number of values, so --vs stays in the arguments
    app.command("compare", context_settings={"ignore_unknown_options": True})(compare)


def compare(
    runs: list[str] = typer.Argument(..., metavar="A... --vs B...", help="the runs of set A, then --vs and the runs "
                                     "of set B, one run per argument: .hlog, MoonGen histogram CSV, `benchbook "
                                     "latency` directory, iperf3 -J JSON or `benchbook tcp` directory"),
    stat: str | None = typer.Option(None, "--stat", help="statistics, comma-separated: pP (p50, p99.9), max, min, "
                                    "mean for latency runs (default p50,p99,p99.9,max,mean); throughput, jain for "
                                    "throughput runs (default throughput,jain)"),
    margin: str = typer.Option("5%", "--margin", help="equivalence margin declared before the runs: relative for "
                               "ratio statistics (5%: the ratio of medians within [1/1.05, 1.05]), absolute for "
                               "Jain's index (5% = 0.05)"),
    as_json: bool = typer.Option(False, "--json", help="print {\"statistics\": [...]} as JSON"),
    plot: Path | None = typer.Option(None, "--plot", help="write an HDR percentile plot with run-level bands "
                                     "(latency runs) to this .html file"),
    seed: int = typer.Option(0, "--seed", help="seed of the bootstrap (recorded in the output)"),
) -> None:
    """Compare two sets of runs: per statistic equivalent, different, inconclusive or not resolvable.

    The run is the unit: each argument is one run, and intervals come from the spread between runs.
    Fewer than 6 runs per set give no interval ("inconclusive", with the runs that would likely decide).
    Exit status: 0 compared (whatever the verdicts), 1 an unreadable run, 2 a usage error."""
    from benchbook.analysis.equivalence import parse_margin
    from benchbook.analysis.run_sets import (
        LATENCY_DEFAULT,
        THROUGHPUT_DEFAULT,
        RunInputError,
        load_run,
        parse_statistics,
    )

    runs_a, runs_b = _split_runs(runs)
    if plot is not None and plot.suffix.lower() != ".html":
        _usage(f"--plot {plot}: expected a file name ending in .html")
    try:
        parse_margin(margin, "log-ratio")
    except ValueError as exc:
        _usage(str(exc))
    from benchbook.tools.iperf3 import Iperf3Error, read_report
    from benchbook.tools.moongen_histogram import read_moongen_histogram

    loaded: dict[str, list] = {"A": [], "B": []}
    for arm, paths in (("A", runs_a), ("B", runs_b)):
        for p in paths:
            try:
                loaded[arm].append(load_run(p, read_moongen_histogram, read_report))
            except (RunInputError, Iperf3Error) as exc:
                typer.echo(f"benchbook compare: error: {exc}", err=True)
                raise typer.Exit(1) from None
    kinds = {r.kind for r in loaded["A"] + loaded["B"]}
    if len(kinds) > 1:
        _usage("the runs mix latency runs and throughput runs: compare like with like")
    kind = kinds.pop()
    try:
        stats = parse_statistics(stat or (LATENCY_DEFAULT if kind == "latency" else THROUGHPUT_DEFAULT))
    except ValueError as exc:
        _usage(str(exc))
    wrong = [s.name for s in stats if s.kind != kind]
    if wrong:
        _usage(f"--stat {','.join(wrong)}: not a statistic of {kind} runs")
    if plot is not None and kind != "latency":
        _usage("--plot draws latency runs (an HDR percentile plot); these are throughput runs")
    for r in loaded["A"] + loaded["B"]:
        for note in r.notes:
            typer.echo(f"benchbook compare: note: {note}", err=True)
    from benchbook.analysis import run_comparison as rc

    results = rc.compare_run_sets(loaded["A"], loaded["B"], stats, margin, seed=seed)
    if plot is not None:
        _write_plot(plot, loaded["A"], loaded["B"])
    if as_json:
        sys.stdout.write(json.dumps(rc.document(results), indent=2, allow_nan=False) + "\n")
    else:
        typer.echo(rc.text(results, [str(p) for p in runs_a], [str(p) for p in runs_b]))
        if plot is not None:
            typer.echo(f"wrote {plot}")


def _split_runs(args: list[str]) -> tuple[list[Path], list[Path]]:
    """The runs before and after the one --vs; a usage error for anything else that looks like an option."""
    unknown = [a for a in args if a.startswith("-") and a != "--vs"]
    if unknown:
        _usage(f"no such option: {unknown[0]} (options: --vs, --stat, --margin, --json, --plot, --seed)")
    if args.count("--vs") != 1:
        _usage("give the runs of A, then --vs and the runs of B (--vs once)")
    i = args.index("--vs")
    a, b = args[:i], args[i + 1:]
    if not a or not b:
        _usage("both sets need at least one run: A... --vs B...")
    return [Path(x) for x in a], [Path(x) for x in b]


def _usage(message: str) -> NoReturn:
    typer.echo(f"benchbook compare: error: {message}", err=True)
    raise typer.Exit(2)


def _write_plot(plot: Path, runs_a, runs_b) -> None:
    from benchbook.analysis.run_comparison import percentile_bands
    from benchbook.figures import hdr_run_bands_plot, save_figure

    empty = [str(r.path) for r in runs_a + runs_b if r.samples == 0]
    if empty:
        typer.echo(f"benchbook compare: error: --plot: no latencies in {', '.join(empty)}", err=True)
        raise typer.Exit(1)
    b = percentile_bands(runs_a, runs_b)
    fig = hdr_run_bands_plot(b.percent, b.median, b.low, b.high, b.band_label, b.flips, b.limit_percent,
                             title=f"{len(runs_a)} runs (A) against {len(runs_b)} runs (B)")
    made = save_figure(fig, plot.parent, plot.stem, formats=("html",), html_plotlyjs="embed")
    if not made.get("html", "").endswith(".html"):
        typer.echo(f"benchbook compare: error: --plot {plot}: {made.get('html')}", err=True)
        raise typer.Exit(1)
