"""`benchbook perf FILE... [--json]`: counters of `perf stat` output files, any format perf writes
(-x CSV with any separator, with or without -r; the human-readable report in any locale)."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import typer


def perf(
    files: list[Path] = typer.Argument(..., help="files perf stat wrote (its stderr or -o FILE)"),
    as_json: bool = typer.Option(False, "--json", help="print every counter and the footer as JSON"),
    decimal: str | None = typer.Option(None, "--decimal", help="decimal mark of the numbers, '.' or ',' "
                                       "(default: told from the report)"),
) -> None:
    """Counters of perf stat outputs: value, unit, variation over -r runs, enabled %, metric;
    <not supported>/<not counted> shown as missing, never as zero. Exit 1 on a malformed file."""
    from benchbook.tools.perf import PerfError, read_perf_file

    if decimal not in (None, ".", ","):
        typer.echo(f"benchbook perf: error: --decimal {decimal!r}: expected '.' or ','", err=True)
        raise typer.Exit(2)
    reports = []
    for f in files:
        try:
            reports.append((f, read_perf_file(f, decimal)))
        except PerfError as exc:
            typer.echo(f"benchbook perf: error: {exc}", err=True)
            raise typer.Exit(1) from None
    if as_json:
        doc = [{"file": str(f), **asdict(r)} for f, r in reports]
        sys.stdout.write(json.dumps(doc if len(doc) > 1 else doc[0], indent=2, allow_nan=False) + "\n")
        return
    for f, r in reports:
        how = f"-x {r.separator!r} CSV" if r.format == "csv" else "human-readable"
        extra = (f", {r.runs} runs" if r.runs else "") + (f", command {r.command!r}" if r.command else "")
        typer.echo(f"{f}: perf stat {how}, decimal mark {r.decimal!r}{extra}")
        typer.echo(f"  {'event':<32} {'value':>20} {'unit':<6} {'+-%':>7} {'enabled%':>9}  metric")
        for c in r.counters:
            value = f"<{c.status}>" if c.value is None else f"{c.value:,.2f}".rstrip("0").rstrip(".")
            sd = "" if c.stddev_pct is None else f"{c.stddev_pct:.2f}"
            en = "" if c.enabled_pct is None else f"{c.enabled_pct:.2f}"
            metric = "" if c.metric_value is None else f"{c.metric_value:g} {c.metric_unit}".rstrip()
            typer.echo(f"  {c.event:<32} {value:>20} {c.unit:<6} {sd:>7} {en:>9}  {metric}")
        for label, v in (("seconds time elapsed", r.elapsed_s), ("seconds user", r.user_s),
                         ("seconds sys", r.sys_s)):
            if v is not None:
                sd = f" +- {r.elapsed_stddev_s:g}" if label.endswith("elapsed") and r.elapsed_stddev_s else ""
                typer.echo(f"  {v:g}{sd} {label}")


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("perf")(perf)
