"""`benchbook tcp CAPTURE... -o DIR`: flows, per-interval throughput/goodput, retransmissions and RTT of TCP traces."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("tcp")(tcp)


def tcp(
    captures: list[Path] = typer.Argument(..., help="pcap/pcapng captures (.zst ok), read in order as one trace"),
    out: Path = typer.Option(..., "-o", "--out", help="output directory"),
    bin_ms: float = typer.Option(100.0, "--bin-ms", min=0.001, help="interval length in ms (e.g. 100, 300, 1000)"),
    rule: str = typer.Option("zeek", "--rule", help="retransmission rule: zeek | wireshark | tcptrace"),
    no_html: bool = typer.Option(False, "--no-html", help="skip report.html"),
) -> None:
    """Write flows.parquet, intervals.parquet, rtt.parquet, report.html and summary.json to DIR."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # returns freed memory: flat peak RSS
    if "scipy" not in sys.modules and "numba" not in sys.modules:
        # numba imports SciPy (0.3 s) for BLAS support the kernels do not use: hide it while numba loads, then
        # let a later `import scipy` in the same process (a notebook, a test runner) work as usual
        sys.modules["scipy"] = None  # type: ignore[assignment]
        try:
            import numba  # noqa: F401
        finally:
            if sys.modules.get("scipy", 0) is None:
                del sys.modules["scipy"]
    from benchbook.analysis.tcp_rules import RULES

    if rule not in RULES:
        raise typer.BadParameter(f"unknown rule {rule!r}: expected one of {', '.join(RULES)}", param_hint="--rule")
    for p in captures:
        if not p.is_file():
            typer.echo(f"error: {p}: no such file", err=True)
            raise typer.Exit(2)
    from benchbook.analysis.tcp_report import analyze_tcp, format_flows

    summary, _flows, messages = analyze_tcp([str(p) for p in captures], out, bin_ms=bin_ms, rule=rule,
                                            html=not no_html)
    for m in messages:
        typer.echo(f"warning: {m}", err=True)
    typer.echo(format_flows(summary))
    typer.echo(f"wrote {out}/: flows.parquet intervals.parquet rtt.parquet summary.json"
               + ("" if no_html else " report.html"))
