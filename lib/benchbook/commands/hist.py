"""`benchbook hist FILE...`: the latency distribution of HdrHistogram interval logs (.hlog) and
MoonGen histogram CSVs, merged, printed like HdrHistogram's HistogramLogProcessor (or as JSON, or
as MoonGen's own summary line). The rules are benchbook.analysis.hist_report's.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer

from benchbook.analysis.hist_report import UNITS, HistInputError, load_histograms, percentile_text, summary_json


def hist(
    files: list[Path] = typer.Argument(..., help=".hlog interval logs and/or MoonGen histogram CSVs (merged)."),
    as_json: bool = typer.Option(False, "--json", help="Print count, min/max/mean/stddev (population) and "
                                 "percentiles 50..99.999 in ns as JSON (exact for MoonGen CSVs)."),
    moongen_summary: bool = typer.Option(False, "--moongen-summary", help="Print MoonGen's own summary line "
                                         "(Samples, Average, StdDev (sample), Quartiles) for MoonGen CSVs."),
    unit: str = typer.Option("ms", "--unit", help="Unit of the printed values: ns, us, ms (default, as "
                             "HistogramLogProcessor) or s; inputs are in ns."),
    tag: str | None = typer.Option(None, "--tag", help="Only interval histograms with this tag "
                                      "(default: untagged ones, as HistogramLogProcessor)."),
    all_tags: bool = typer.Option(False, "--all-tags", help="Merge interval histograms of every tag."),
    start: float = typer.Option(0.0, "--start", help="Skip intervals starting before this many seconds after "
                                "the log's StartTime (--start=-inf keeps all)."),
    end: float = typer.Option(math.inf, "--end", help="Stop at the first interval starting after this many "
                              "seconds after StartTime."),
    significant_digits: int | None = typer.Option(None, "--significant-digits", min=1, max=5,
                                                     help="Accumulate interval logs into a histogram with this "
                                                     "many significant digits (default: the first interval's "
                                                     "layout, as HistogramLogProcessor)."),
    ticks_per_half: int = typer.Option(5, "--ticks-per-half", help="Percentile ticks per half distance."),
    csv: bool = typer.Option(False, "--csv", help="Percentile distribution as CSV."),
) -> None:
    """Percentile distribution of latency histograms, HistogramLogProcessor style."""
    if unit not in UNITS:
        typer.echo(f"benchbook hist: error: --unit must be one of {', '.join(UNITS)}, not {unit!r}", err=True)
        raise typer.Exit(2)
    if not 1 <= ticks_per_half <= 1000:
        typer.echo(f"benchbook hist: error: --ticks-per-half {ticks_per_half}: expected 1..1000", err=True)
        raise typer.Exit(2)
    if math.isnan(start) or math.isnan(end) or start > end:
        typer.echo(f"benchbook hist: error: --start {start} --end {end}: expected numbers with start <= end",
                   err=True)
        raise typer.Exit(2)
    try:
        from benchbook.tools.moongen_histogram import read_moongen_histogram

        loaded = load_histograms(list(files), read_moongen_histogram, tag=tag, all_tags=all_tags, start_s=start,
                                 end_s=end, significant_digits=significant_digits)
    except HistInputError as exc:
        typer.echo(f"benchbook hist: error: {exc}", err=True)
        raise typer.Exit(1) from None
    for note in loaded.notes:
        typer.echo(f"benchbook hist: warning: {note}", err=True)
    summary_line = None
    if moongen_summary:
        if loaded.moongen is None:
            logs = [f["path"] for f in loaded.files if f["kind"] == "hlog"]
            typer.echo(f"benchbook hist: error: --moongen-summary needs MoonGen histogram CSVs only; "
                       f"interval log(s): {', '.join(logs)}", err=True)
            raise typer.Exit(1)
        from benchbook.analysis.moongen_stats import moongen_summary as _summary

        summary_line = _summary(loaded.moongen)
    if as_json:
        doc = summary_json(loaded)
        if summary_line is not None:
            doc["moongen_summary"] = summary_line
        sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
        return
    if summary_line is not None:
        sys.stdout.write(summary_line + "\n")
        return
    sys.stdout.write(percentile_text(loaded, unit=unit, ticks_per_half=ticks_per_half, csv=csv))


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("hist")(hist)
