"""`benchbook env show|check|rebuild`: host fingerprint, pinned-environment consistency, and the
`guix time-machine` command that rebuilds a run's environment."""

from __future__ import annotations

from pathlib import Path

import typer

env_app = typer.Typer(help="Host fingerprint and pinned environments (pip lock, conda, Guix).",
                      no_args_is_help=True)


@env_app.command("show")
def show(as_json: bool = typer.Option(False, "--json", help="print the whole fingerprint as JSON")) -> None:
    """Print this host's fingerprint (what every run record stores)."""
    import json

    from benchbook.provenance.fingerprint import host_fingerprint

    fp = host_fingerprint()
    if as_json:
        typer.echo(json.dumps(fp, indent=2, default=str))
        return
    k, c, cg, env = fp.get("kernel", {}), fp.get("cpu", {}), fp.get("cgroups", {}), fp.get("environment", {})
    lines = [
        f"host            {fp.get('hostname')} (euid {fp.get('euid')})",
        f"kernel          {k.get('release')}  cmdline: {str(k.get('cmdline'))[:100]}",
        f"cpu             {c.get('model')} x{c.get('count')}; isolated: {c.get('isolated') or '-'}; "
        f"SMT: {c.get('smt')}; governor: {c.get('frequency_governor')}",
        f"memory          {fp.get('memory', {}).get('MemTotal')} kB",
        f"cgroups         {cg.get('mode')}: " + ", ".join(f"{a}={b}" for a, b in (cg.get('controllers') or {}).items()),
        f"tcp             available {fp.get('tcp', {}).get('available_congestion_control')}, "
        f"default {fp.get('tcp', {}).get('default_congestion_control')}",
        f"netem           {fp.get('netem')};  hardware perf counters: {fp.get('perf_hw_counters')}",
    ]
    for dev, info in (fp.get("nics") or {}).items():
        if isinstance(info, dict):
            q = ",".join(x.get("kind", "?") for x in info.get("qdiscs", []) if isinstance(x, dict))
            lines.append(f"nic {dev:<11} driver {info.get('driver')}, {info.get('operstate')}, mtu {info.get('mtu')}, "
                         f"qdisc {q or '-'}, {len(info.get('offloads') or {})} offload flags")
    for name, t in (fp.get("tools") or {}).items():
        if isinstance(t, dict):
            v = t.get("version") or t.get("debian_package") or t.get("reason") or t.get("version_error")
            lines.append(f"tool {name:<10} {v}")
    for cap in fp.get("capabilities") or []:
        lines.append(f"capability {cap['capability']:<18} {cap['status']:<8} {cap.get('detail', '')[:90]}")
    guix_describe = env.get("guix_describe") or {}
    lines += [
        f"pip lock        sha256 {env.get('lock_sha256')}",
        f"guix channel    {env.get('guix_channel_commit')}; guix describe: "
        f"{'yes' if guix_describe.get('available') else guix_describe.get('reason')}",
        f"git             {env.get('git_commit')} dirty={env.get('git_dirty')}",
    ]
    typer.echo("\n".join(lines))


@env_app.command("check")
def check(
    root: Path | None = typer.Option(None, "--root", help="repository root to check (default: this checkout)"),
    no_running: bool = typer.Option(False, "--files-only", help="skip comparing the running interpreter with the lock"),
) -> None:
    """Verify environment.yml, manifests/*.scm and the pip lock agree (exceptions: manifests/exceptions.toml)
    and that the running environment has exactly the lock's versions."""
    from benchbook.paths import REPO_ROOT
    from benchbook.provenance.envcheck import check_environment

    rep = check_environment(root or REPO_ROOT, running=not no_running)
    for note in rep.notes:
        typer.echo(f"note: {note}")
    if rep.ok:
        typer.echo(f"env check: OK ({len(rep.checked)} direct dependencies agree across the pip lock, "
                   f"environment.yml and the Guix manifests, documented exceptions included)")
        return
    for p in rep.problems:
        typer.echo(f"env check: {p}", err=True)
    typer.echo(f"env check: FAILED ({len(rep.problems)} problem(s))", err=True)
    raise typer.Exit(1)


def rebuild_command(run_dir: Path, record: dict) -> tuple[list[str], str]:
    """The guix time-machine command for a run, and the benchbook command it runs inside."""
    import shlex

    from benchbook.paths import PACKAGE_DIR, REPO_ROOT

    figure = record.get("figure") or record["experiment"]
    registry = PACKAGE_DIR / "reproduce" / "figures" / f"{figure}.toml"
    if registry.is_file():
        inner = ["benchbook", "reproduce", figure]
    else:
        nb = Path(record["notebook"])
        try:
            nb = nb.relative_to(REPO_ROOT)
        except ValueError:
            pass
        inner = ["benchbook", "run", str(nb)]
        for k, v in record["parameters"].items():
            inner += ["-p", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
        inner += ["--experiment", f"{record['experiment']}-rebuild"]
    cmd = ["guix", "time-machine", "-C", str(run_dir / "channels.scm"), "--", "shell", "-m",
           str(run_dir / "manifest.scm"), "--", *inner]
    return cmd, shlex.join(inner)


@env_app.command("rebuild")
def rebuild(
    run: str = typer.Argument(..., help="run directory, <experiment>/<run-id> or run id"),
    execute: bool = typer.Option(True, "--execute/--print-only", help="run the command when guix is installed"),
) -> None:
    """Print (and run, where `guix` exists) the command that rebuilds RUN's environment and reruns it."""
    import shlex
    import shutil
    import subprocess

    from benchbook.experiment.record import RunRecordError, find_run, read_record
    from benchbook.paths import REPO_ROOT, RUNS_DIR

    try:
        run_dir = find_run(run, RUNS_DIR)
        record = read_record(run_dir)
    except RunRecordError as exc:
        typer.echo(f"benchbook env rebuild: {exc}", err=True)
        raise typer.Exit(2) from None
    missing = [n for n in ("channels.scm", "manifest.scm") if not (run_dir / n).is_file()]
    if missing:
        typer.echo(f"benchbook env rebuild: {run_dir} lacks {', '.join(missing)} (recorded before benchbook "
                   f"stored them); cannot rebuild its exact environment", err=True)
        raise typer.Exit(2)
    cmd, inner = rebuild_command(run_dir, record)
    typer.echo(shlex.join(cmd))
    typer.echo(f"# Python packages Guix lacks come from the pip lock ({record['environment'].get('lock_sha256')}): "
               f"inside the shell, `python -m venv .venv && .venv/bin/pip install --require-hashes --no-deps "
               f"-r manifests/requirements.lock` before `{inner}`; "
               f"git commit {record['environment'].get('git_commit')}")
    if not execute:
        return
    if shutil.which("guix") is None:
        typer.echo("# guix is not installed here: printed only", err=True)
        return
    raise typer.Exit(subprocess.call(cmd, cwd=REPO_ROOT))


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.add_typer(env_app, name="env")
