"""`benchbook tcp CAPTURE... -o DIR`: flows, per-interval throughput/goodput, retransmissions and RTT of TCP traces;
with --each, one analysis per capture in DIR/<capture name>/, on the local or the dask engine."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from benchbook.engine.options import ENGINE_OPTION, SCHEDULER_OPTION, SSH_CLUSTER_OPTION


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.command("tcp")(tcp)


def tcp(
    captures: list[Path] = typer.Argument(..., help="pcap/pcapng captures (.zst ok), read in order as one trace"),
    out: Path = typer.Option(..., "-o", "--out", help="output directory"),
    bin_ms: float = typer.Option(100.0, "--bin-ms", min=0.001, help="interval length in ms (e.g. 100, 300, 1000)"),
    rule: str = typer.Option("zeek", "--rule", help="retransmission rule: zeek | wireshark | tcptrace"),
    no_html: bool = typer.Option(False, "--no-html", help="skip report.html"),
    probe: Path | None = typer.Option(None, "--probe", help="the kernel's tcp:tcp_probe records (`perf script` text "
                                      "or perf.data) to match to the flows: cwnd.parquet and a cwnd panel"),
    each: bool = typer.Option(False, "--each", help="one analysis per capture, in DIR/<capture name>/ (the file "
                              "name without .zst, .pcap, .pcapng)"),
    engine: str | None = ENGINE_OPTION,
    scheduler: str | None = SCHEDULER_OPTION,
    ssh_cluster: Path | None = SSH_CLUSTER_OPTION,
) -> None:
    """Write flows.parquet, intervals.parquet, rtt.parquet, report.html and summary.json to DIR.

    With --each, DIR/<name>/ holds exactly what `benchbook tcp CAPTURE -o DIR/<name>` writes, whichever
    --engine runs the analyses."""
    for p in captures:
        if not p.is_file():
            typer.echo(f"error: {p}: no such file", err=True)
            raise typer.Exit(2)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")  # returns freed memory: flat peak RSS
    from benchbook.analysis.tcp_rules import RULES

    if rule not in RULES:
        raise typer.BadParameter(f"unknown rule {rule!r}: expected one of {', '.join(RULES)}", param_hint="--rule")
    from benchbook.analysis.tcp_report import analyze_tcp, format_flows

    records = None
    if probe is not None:
        if each:
            typer.echo("error: --probe applies to one analysis, not --each", err=True)
            raise typer.Exit(2)
        from benchbook.tools.host import LocalHost
        from benchbook.tools.tcp_probe import read_records

        records = read_records(probe, LocalHost())
    if each:
        _tcp_each(captures, out, bin_ms, rule, not no_html, engine, scheduler, ssh_cluster)
        return
    if engine or scheduler or ssh_cluster:
        typer.echo("error: --engine, --scheduler and --ssh-cluster apply to --each", err=True)
        raise typer.Exit(2)
    summary, _flows, messages = analyze_tcp([str(p) for p in captures], out, bin_ms=bin_ms, rule=rule,
                                            html=not no_html, probe=records)
    for m in messages:
        typer.echo(f"warning: {m}", err=True)
    typer.echo(format_flows(summary))
    if "cwnd" in summary:
        c = summary["cwnd"]
        typer.echo(f"cwnd: {c['matched']} of {c['records']} tcp_probe records matched ({c['clock']})")
    cwnd_file = "" if records is None else " cwnd.parquet"
    typer.echo(f"wrote {out}/: flows.parquet intervals.parquet rtt.parquet{cwnd_file} summary.json"
               + ("" if no_html else " report.html"))


def capture_name(path: Path) -> str:
    """A capture's report folder name: its file name without .zst, then without .pcap/.pcapng/.cap."""
    name = path.name.removesuffix(".zst") if path.name != ".zst" else path.name
    for x in (".pcapng", ".pcap", ".cap"):
        if name.endswith(x) and len(name) > len(x):
            return name[: -len(x)]
    return name


def capture_task(capture: str, final: str, bin_ms: float, rule: str, html: bool) -> dict:
    """One capture's analysis (on the local engine or a Dask worker), written into a fresh attempt directory
    beside ``final``."""
    from benchbook.analysis.tcp_report import analyze_tcp
    from benchbook.engine.tasks import attempt_dir

    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    work = attempt_dir(final)
    summary, _flows, messages = analyze_tcp([capture], work, bin_ms=bin_ms, rule=rule, html=html)
    return {"attempt": str(work), "summary": summary, "messages": messages}


def _tcp_each(captures: list[Path], out: Path, bin_ms: float, rule: str, html: bool, engine: str | None,
              scheduler: str | None, ssh_cluster: Path | None) -> None:
    from benchbook.analysis.tcp_report import OUTPUT_FILES, format_flows
    from benchbook.engine import EngineError, Task, engine_spec, run_installed_or_exit

    names = [capture_name(p) for p in captures]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        typer.echo(f"error: --each: captures share the report name(s) {', '.join(dup)}; rename or analyse them "
                   "apart", err=True)
        raise typer.Exit(2)
    try:
        spec = engine_spec(engine, scheduler, ssh_cluster)
    except EngineError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    out = out.absolute()
    finals = {n: out / n for n in names}
    tasks = [Task(n, capture_task, (str(p.absolute()), str(finals[n]), bin_ms, rule, html))
             for n, p in zip(names, captures, strict=True)]
    done, failed = run_installed_or_exit(spec, tasks, finals, OUTPUT_FILES, "captures")
    for n in names:
        if n in done:
            for m in done[n]["messages"]:
                typer.echo(f"warning: {n}: {m}", err=True)
            typer.echo(f"== {n}\n{format_flows(done[n]['summary'])}")
        else:
            typer.echo(f"error: {n}: {failed[n]} ({finals[n]} left unchanged)", err=True)
    typer.echo(f"wrote {out}/: {len(done)} of {len(names)} capture folders")
    if failed:
        raise typer.Exit(1)
