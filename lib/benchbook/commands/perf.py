"""`benchbook perf FILE... [--json] [--report N]`: counters of `perf stat` output files, any format perf writes
(-x CSV with any separator, with or without -r, -A/--per-core/-I; the human-readable report in any locale),
one record per report when a file holds several (appended runs, shell logs); the rules are
benchbook.tools.perf_reports'."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import typer


def perf(
    files: list[Path] = typer.Argument(..., help="files perf stat wrote (its stderr or -o FILE; several runs "
                                       "appended, or a shell log around them)"),
    as_json: bool = typer.Option(False, "--json", help="print a list of reports (file, report number, lines, "
                                 "number format, counters, footer) as JSON"),
    report: int | None = typer.Option(None, "--report", min=1, help="only report N of each file (1-based, "
                                      "as numbered in the output)"),
    decimal: str | None = typer.Option(None, "--decimal", help="decimal mark of the numbers in every report, "
                                       "'.' or ',' (default: told from each report)"),
) -> None:
    """Counters of perf stat outputs, one record per report: value, unit, variation over -r runs, enabled %,
    metric; <not supported>/<not counted> shown as missing, never as zero. A report that cannot be read is an
    error naming it and its line; the others are still printed. Exit 1 when any report could not be read."""
    from benchbook.tools.perf_reports import PerfError, PerfReportError, read_perf_reports

    if decimal not in (None, ".", ","):
        typer.echo(f"benchbook perf: error: --decimal {decimal!r}: expected '.' or ','", err=True)
        raise typer.Exit(2)
    docs: list[dict[str, Any]] = []
    failed = False
    for f in files:
        try:
            parsed = read_perf_reports(f, decimal)
        except PerfError as exc:
            typer.echo(f"benchbook perf: error: {exc}", err=True)
            failed = True
            continue
        items: list[Any] = sorted(parsed.reports + parsed.errors, key=lambda x: x.report)
        if report is not None:
            items = [x for x in items if x.report == report]
            if not items:
                typer.echo(f"benchbook perf: error: {f}: --report {report}: the file holds {parsed.count} "
                           f"report(s)", err=True)
                failed = True
                continue
        for x in items:
            if isinstance(x, PerfReportError):
                typer.echo(f"benchbook perf: error: {x}", err=True)
                failed = True
                docs.append({"file": str(f), "report": x.report, "of": parsed.count, "error": str(x),
                             "line": x.line})
            else:
                docs.append({"file": str(f), "of": parsed.count, **asdict(x)})
    if as_json:
        sys.stdout.write(json.dumps(docs, indent=2, allow_nan=False) + "\n")
    else:
        for doc in docs:
            _print_report(doc)
    if failed:
        raise typer.Exit(1)


def _print_report(r: dict[str, Any]) -> None:
    where = f"{r['file']}: report {r['report']} of {r['of']}"
    if "error" in r:
        typer.echo(f"{where}: not read (line {r['line']}; the error is above)")
        return
    how = f"-x {r['separator']!r} CSV" if r["format"] == "csv" else "human-readable"
    extra = (" -I intervals" if r["interval"] else "") + (f", {r['runs']} runs" if r["runs"] else "")
    extra += f", digit grouping {r['grouping']!r}" if r["grouping"] else ""
    extra += f", command {r['command']!r}" if r["command"] else ""
    typer.echo(f"{where} (lines {r['first_line']}-{r['last_line']}): perf stat {how}, decimal mark "
               f"{r['decimal']!r}{extra}")
    aggr = max((len(c["aggregate"]) for c in r["counters"] if c["aggregate"]), default=0)
    aggr = aggr and max(aggr, len("aggregate"))
    head = (f"{'time s':>14} " if r["interval"] else "") + (f"{'aggregate':<{aggr}} " if aggr else "")
    typer.echo(f"  {head}{'event':<32} {'value':>20} {'unit':<6} {'+-%':>7} {'enabled%':>9}  metric")
    for c in r["counters"]:
        value = f"<{c['status']}>" if c["value"] is None else f"{c['value']:,.2f}".rstrip("0").rstrip(".")
        sd = "" if c["stddev_pct"] is None else f"{c['stddev_pct']:.2f}"
        en = "" if c["enabled_pct"] is None else f"{c['enabled_pct']:.2f}"
        metric = "" if c["metric_value"] is None else f"{c['metric_value']:g} {c['metric_unit']}".rstrip()
        lead = (f"{c['time_s']:>14.9f} " if r["interval"] else "") + (f"{c['aggregate'] or '':<{aggr}} " if aggr
                                                                       else "")
        typer.echo(f"  {lead}{c['event']:<32} {value:>20} {c['unit']:<6} {sd:>7} {en:>9}  {metric}")
    for label, v in (("seconds time elapsed", r["elapsed_s"]), ("seconds user", r["user_s"]),
                     ("seconds sys", r["sys_s"])):
        if v is not None:
            sd = f" +- {r['elapsed_stddev_s']:g}" if label.endswith("elapsed") and r["elapsed_stddev_s"] else ""
            typer.echo(f"  {v:g}{sd} {label}")


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("perf")(perf)
