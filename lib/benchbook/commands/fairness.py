"""`benchbook fairness FILE... [--json]`: Jain's index, both variants, from per-flow throughput series.

Inputs (kind by content/name): benchbook's own ``intervals.parquet`` (``benchbook tcp``), iperf3 ``-J``
reports (one flow per stream; several reports, e.g. one client per congestion control started
together, are aligned by interval) and Flent data files (``.flent.gz``, netperf-wrapper's ``.json.gz``;
data-format versions 1 to 4, upgraded as Flent does). Every series not counted as a flow is named with
the reason. The rules are :mod:`benchbook.analysis.fairness`'s.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from benchbook.analysis.fairness import (
    VARIANT_LABELS,
    FairnessError,
    FlowSeries,
    combine,
    flent_series,
    intervals_parquet_series,
    summarize,
)
from benchbook.errors import BenchbookError

PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"


def load_series(path: Path, metric: str = "goodput_bps") -> FlowSeries:
    """The per-flow series of one file, by its content: Parquet, gzip (Flent) or JSON (iperf3 or Flent)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise FairnessError(f"{path}: {exc.strerror or exc}") from exc
    if head == PARQUET_MAGIC:
        return intervals_parquet_series(path, metric=metric)
    if head[:2] == GZIP_MAGIC or path.name.endswith((".flent", ".bz2", ".flnt")):
        return flent_series(path)
    try:
        doc = json.loads(path.read_text())
    except (UnicodeDecodeError, ValueError) as exc:
        raise FairnessError(f"{path}: neither Parquet, gzip nor JSON ({exc}); expected intervals.parquet, an "
                            "iperf3 -J report or a .flent.gz file") from exc
    if isinstance(doc, dict) and {"metadata", "x_values", "results"} <= set(doc):
        return flent_series(path)
    from benchbook.tools.iperf3 import Iperf3Error, flow_series, parse_report

    try:
        return flow_series(parse_report(path.read_text(), source=str(path)))
    except Iperf3Error as exc:
        raise FairnessError(str(exc)) from exc


def _mbps(v: float | None) -> str:
    return "-" if v is None else f"{v / 1e6:.3f}"


def _idx(v: float | None) -> str:
    return "-" if v is None else f"{v:.4f}"


def fairness(
    files: list[Path] = typer.Argument(..., help="intervals.parquet, iperf3 -J reports or .flent.gz files; several "
                                       "are aligned by interval (flows started together)."),
    as_json: bool = typer.Option(False, "--json", help="Print {flows, intervals, jain_of_means, "
                                 "jain_mean_of_intervals, jain_min_interval, left_out, notes} as JSON."),
    metric: str = typer.Option("goodput_bps", "--metric", help="intervals.parquet column to use: goodput_bps "
                               "(default) or throughput_bps."),
) -> None:
    """Jain's fairness index of per-flow means and the mean/minimum of per-interval indices."""
    if metric not in ("goodput_bps", "throughput_bps"):
        typer.echo(f"benchbook fairness: error: --metric {metric!r}: expected goodput_bps or throughput_bps", err=True)
        raise typer.Exit(2)
    try:
        series = combine([load_series(Path(f), metric) for f in files])
        out = summarize(series)
    except BenchbookError as exc:
        typer.echo(f"benchbook fairness: error: {exc}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(out, indent=1))
        return
    typer.echo(f"{len(series.flows)} flows, {len(out['intervals'])} intervals of "
               f"{(series.interval_ns or 0) / 1e6:g} ms ({out['intervals_counted']} with every flow present)")
    width = max(len(f["flow"]) for f in out["flows"])
    typer.echo(f"{'flow':<{width}}  {'intervals':>9}  {'mean Mbit/s':>11}  {'min':>9}  {'max':>9}")
    for f in out["flows"]:
        typer.echo(f"{f['flow']:<{width}}  {f['intervals']:>9}  {_mbps(f['mean_bps']):>11}  "
                   f"{_mbps(f['min_bps']):>9}  {_mbps(f['max_bps']):>9}")
    for key in ("jain_of_means", "jain_mean_of_intervals", "jain_min_interval"):
        typer.echo(f"{VARIANT_LABELS[key]:<45} {_idx(out[key])}")
    if out["left_out"]:
        typer.echo(f"left out ({len(out['left_out'])}, not counted as competing flows):")
        for x in out["left_out"]:
            typer.echo(f"  {x['flow']}: {x['reason']}")
    for note in out["notes"]:
        typer.echo(f"note: {note}")


def register(app: typer.Typer) -> None:
    app.command("fairness")(fairness)
