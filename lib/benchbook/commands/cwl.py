"""`benchbook cwl export|job|run`: benchbook's analysis steps as Common Workflow Language documents.

    benchbook cwl export -o cwl/                               # CommandLineTools + Workflows (CWL v1.2)
    benchbook cwl job --pairs pairs.csv --id-offset 42 -o job.json
    cwltool --no-container cwl/latency-pipeline.cwl job.json   # any CWL runner
    benchbook cwl run cwl/latency-pipeline.cwl job.json        # cwltool + provenance crate + run record

The documents are built by benchbook.provenance.cwl; `run` by benchbook.experiment.cwl_run.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import typer

cwl_app = typer.Typer(help="benchbook's steps as CWL tools and workflows: export, job files, runs with provenance.",
                      no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.add_typer(cwl_app, name="cwl")


@cwl_app.command("export")
def export(out: Path = typer.Option(..., "-o", "--out", help="directory for the .cwl files (created)")) -> None:
    """Write latency.cwl, tcp.cwl, fairness.cwl, hist.cwl, perf.cwl, notebook.cwl, latency-pipeline.cwl,
    tcp-pipeline.cwl and benchbook.ttl (the vocabulary of benchbook's environment hint) into OUT."""
    from benchbook.provenance.cwl import CwlExportError, write_documents

    try:
        written = write_documents(out)
    except CwlExportError as exc:
        typer.echo(f"benchbook cwl export: error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"wrote {out}/: " + " ".join(p.name for p in written))
    typer.echo(f"validate: cwltool --validate {out}/latency-pipeline.cwl")


@cwl_app.command("job")
def job(
    pairs: Path = typer.Option(..., "--pairs", help="CSV with the header pre,post,name: one capture pair a line "
                               "(paths relative to the CSV)"),
    out: Path = typer.Option(..., "-o", "--out", help="the job file to write (JSON)"),
    id_offset: int | None = typer.Option(None, "--id-offset", help="frame offset of the packet id"),
    id_width: int | None = typer.Option(None, "--id-width", help="id width in bytes (1..8)"),
    id_big_endian: bool = typer.Option(False, "--id-big-endian", help="id is big-endian (default little)"),
    content_key: bool = typer.Option(False, "--content-key", help="MoonSniff/pos key: bytes 12-64, checksums zeroed"),
    max_latency_ms: float | None = typer.Option(None, "--max-latency-ms", help="latencies must be below this"),
    window: int | None = typer.Option(None, "--window", help="matching window in pre packets (power of two)"),
    no_html: bool = typer.Option(False, "--no-html", help="skip hdr.html"),
) -> None:
    """Write the input object of latency-pipeline.cwl for the capture pairs in PAIRS (same options as
    `benchbook latency`)."""
    from benchbook.provenance.cwl import CwlExportError, dump_job, latency_job, read_pairs

    if (id_offset is None) == (not content_key):
        typer.echo("benchbook cwl job: error: give exactly one of --id-offset N or --content-key", err=True)
        raise typer.Exit(2)
    try:
        found = read_pairs(pairs)
    except CwlExportError as exc:
        typer.echo(f"benchbook cwl job: error: {exc}", err=True)
        raise typer.Exit(1) from None
    options = {"id_offset": id_offset, "id_width": id_width, "max_latency_ms": max_latency_ms, "window": window,
               "id_big_endian": id_big_endian or None, "content_key": content_key or None, "no_html": no_html or None}
    text = dump_job(latency_job(found, options))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    typer.echo(f"wrote {out}: {len(found)} pair(s)")


@cwl_app.command("run")
def run(
    workflow: Path = typer.Argument(..., help="a .cwl workflow or tool (e.g. from benchbook cwl export)"),
    job_file: Path = typer.Argument(..., help="its input object (YAML or JSON)"),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="where run directories go (default data/runs)"),
    experiment: str = typer.Option("cwl", "--experiment", help="experiment name (the run directory's parent)"),
    parallel: bool = typer.Option(False, "--parallel", help="let cwltool run independent steps in parallel"),
    inventory: Path | None = typer.Option(None, "--inventory", help="run cwltool over ssh on a host of this "
                                          "testbed inventory (e.g. from benchbook testbed emulate)"),
    role: str = typer.Option("timestamper", "--role", help="with --inventory: the host's role"),
    remote_bin: str | None = typer.Option(None, "--remote-bin", help="with --inventory: folder of cwltool and "
                                          "benchbook on that host (default: this venv's, for hosts sharing this "
                                          "file system such as emulated ones)"),
    ready_timeout_s: float = typer.Option(30.0, "--ready-timeout", min=0.0, help="with --inventory: seconds to "
                                          "wait for a real ssh login to the host"),
) -> None:
    """Run WORKFLOW with cwltool (--no-container --provenance) into a run directory: outputs/, provenance/,
    crate/ (Workflow Run RO-Crate) and run.json linking them under cwl_provenance. With --inventory, cwltool
    runs on that host over ssh (pinned host keys; a real login as readiness check) and the results are copied
    back. Exit 1 when the run failed."""
    from benchbook.experiment.cwl_run import RemoteError, RemoteTarget, run_workflow

    for what, p in (("workflow", workflow), ("job", job_file)):
        if not p.is_file():
            typer.echo(f"benchbook cwl run: error: {p}: {what} not found", err=True)
            raise typer.Exit(2)
    bindir = Path(sys.executable).parent
    if shutil.which("benchbook") is None and (bindir / "benchbook").exists():
        os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"  # the steps run benchbook
    cwltool = str(bindir / "cwltool") if (bindir / "cwltool").exists() else "cwltool"
    remote = None
    if inventory is not None:
        from benchbook.testbed.inventory import Inventory, InventoryError

        try:
            Inventory.from_toml(inventory).role(role)
        except (InventoryError, KeyError) as exc:
            typer.echo(f"benchbook cwl run: error: {str(exc).strip(chr(39))}", err=True)
            raise typer.Exit(2) from None
        remote = RemoteTarget(inventory=inventory.resolve(), role=role, bin_dir=remote_bin or str(bindir),
                              ready_timeout_s=ready_timeout_s)
    try:
        result = run_workflow(workflow, job_file, runs_dir=runs_dir, experiment=experiment, cwltool=cwltool,
                              extra_args=("--parallel",) if parallel else (), remote=remote)
    except ValueError as exc:
        typer.echo(f"benchbook cwl run: error: {exc}", err=True)
        raise typer.Exit(2) from None
    except RemoteError as exc:
        typer.echo(f"benchbook cwl run: error: {exc}", err=True)
        raise typer.Exit(1) from None
    prov = result.record.get("cwl_provenance", {})
    typer.echo(f"{result.status}: {result.run_dir}")
    typer.echo(f"  outputs: {result.run_dir / 'outputs'}")
    if prov.get("crate"):
        typer.echo(f"  provenance: {result.run_dir / prov['research_object']}  crate: {result.run_dir / prov['crate']}")
    if result.error:
        typer.echo(f"benchbook cwl run: error: {result.error}", err=True)
        raise typer.Exit(1)
