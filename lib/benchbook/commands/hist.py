"""`benchbook hist FILE...`: the latency distribution of HdrHistogram interval logs (.hlog) and
MoonGen histogram CSVs, merged, printed like HdrHistogram's HistogramLogProcessor (or as JSON, or
as MoonGen's own summary line). The rules are benchbook.analysis.hist_report's.
`benchbook hist LOG... --merged-dir DIR --pair-name NAME...`: DIR/merged.hlog and DIR/merged.json of pairs'
latency.hlog files, as `benchbook latency --pairs` writes them (benchbook.analysis.hlog_merge).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import typer


def hist(
    files: list[Path] = typer.Argument(..., help=".hlog interval logs and/or MoonGen histogram CSVs (merged)."),
    as_json: bool = typer.Option(False, "--json", help="Print count, min/max/mean/stddev (population) and "
                                 "percentiles 50..99.999 in ns as JSON (exact for MoonGen CSVs; null, with the "
                                 "reason, where the count cannot resolve one)."),
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
    all_percentiles: bool = typer.Option(False, "--all-percentiles", help="Print every percentile row, also those "
                                         "the sample count cannot resolve (N < ln(0.025)/ln(p)), as "
                                         "HistogramLogProcessor does; by default they are left out and named."),
    merged_dir: Path | None = typer.Option(None, "--merged-dir", help="Instead of printing a distribution, write "
                                           "DIR/merged.hlog and DIR/merged.json from the pairs' latency.hlog FILEs, "
                                           "byte for byte as `benchbook latency --pairs` does."),
    pair_names: list[str] | None = typer.Option(None, "--pair-name", help="With --merged-dir: the pair name of "
                                                "each FILE, one per FILE, in order."),
    max_latency_ms: float | None = typer.Option(None, "--max-latency-ms", help="With --merged-dir: the "
                                                "--max-latency-ms the pairs were analysed with (default 5000, "
                                                "as benchbook latency)."),
) -> None:
    """Percentile distribution of latency histograms, HistogramLogProcessor style.

    With --merged-dir: the merged histogram of `benchbook latency --pairs` (every interval of every log added).
    Exit status: 0 ok, 1 an unreadable or malformed input, 2 a usage error."""
    if merged_dir is not None or pair_names or max_latency_ms is not None:
        given = {"--json": as_json, "--moongen-summary": moongen_summary, "--tag": tag is not None,
                 "--all-tags": all_tags, "--start": start != 0.0, "--end": end != math.inf,
                 "--significant-digits": significant_digits is not None, "--csv": csv,
                 "--all-percentiles": all_percentiles}
        _write_merged(list(files), merged_dir, pair_names or [], max_latency_ms, [k for k, v in given.items() if v])
        return
    from benchbook.analysis.hist_report import UNITS, HistInputError, load_histograms, percentile_text, summary_json

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
    sys.stdout.write(percentile_text(loaded, unit=unit, ticks_per_half=ticks_per_half, csv=csv,
                                     all_percentiles=all_percentiles))


def _write_merged(files: list[Path], merged_dir: Path | None, names: list[str], max_latency_ms: float | None,
                  distribution_options: list[str]) -> None:
    from benchbook.analysis import hlog_merge

    max_latency_ms = hlog_merge.DEFAULT_MAX_LATENCY_MS if max_latency_ms is None else max_latency_ms
    if merged_dir is None:
        problem = "--pair-name and --max-latency-ms apply to --merged-dir DIR"
    elif distribution_options:
        problem = f"--merged-dir adds every interval of each log; it takes no {', '.join(distribution_options)}"
    elif merged_dir.exists() and not merged_dir.is_dir():
        problem = f"--merged-dir {merged_dir}: exists and is not a directory"
    else:
        problem = hlog_merge.max_latency_problem(max_latency_ms) or hlog_merge.pairs_problem(names, len(files))
    if problem:
        typer.echo(f"benchbook hist: error: {problem}", err=True)
        raise typer.Exit(2)
    assert merged_dir is not None
    merged_dir.mkdir(parents=True, exist_ok=True)
    try:
        doc = hlog_merge.write_merged(merged_dir, list(zip(names, files, strict=True)), round(max_latency_ms * 1e6))
    except hlog_merge.HlogMergeError as exc:
        typer.echo(f"benchbook hist: error: {exc} (nothing written)", err=True)
        raise typer.Exit(1) from None
    typer.echo(hlog_merge.merged_line(doc))
    typer.echo(f"wrote {merged_dir}/: merged.hlog, merged.json")


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("hist")(hist)
