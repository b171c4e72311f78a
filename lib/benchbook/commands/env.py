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
    """The guix time-machine command for a run, and the benchbook command it runs inside.

    Inside the pinned shell the Python packages come from the hashed pip lock (manifests/exceptions.toml
    says why), installed into a venv on the manifest's interpreter; benchbook runs from the tree."""
    import shlex

    from benchbook.paths import REPO_ROOT

    figure = record.get("figure") or record["experiment"]
    try:
        from benchbook.reproduce.registry import load_registry

        registered = figure in load_registry()
    except Exception:  # a broken paper folder must not hide the rebuild command
        registered = False
    if registered:
        inner = ["benchbook", "reproduce", figure]
    else:
        nb = Path(record["notebook"])
        try:
            nb = nb.relative_to(REPO_ROOT)
        except ValueError:
            pass
        inner = ["benchbook", "run", str(nb)]
        for k, v in record["parameters"].items():
            if k == "output_dir":
                continue
            inner += ["-p", f"{k}={str(v).lower() if isinstance(v, bool) else v}"]
        inner += ["--experiment", f"{record['experiment']}-rebuild"]
    from benchbook.provenance.environment import guix_rebuild_argv

    cmd = guix_rebuild_argv(str(run_dir / "channels.scm"), str(run_dir / "manifest.scm"), inner[1:])
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
    from benchbook.provenance.environment import GUIX_VENV

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
    env = record.get("environment") or {}
    pinned = env.get("guix_channel_commit")
    typer.echo(f"# run {run_dir.name}: guix commit {pinned}, git commit {env.get('git_commit')}"
               f"{' (dirty)' if env.get('git_dirty') else ''}, pip lock sha256 {env.get('lock_sha256')}")
    if env.get("git_commit"):
        typer.echo(f"# first, in a clone of this repository: git checkout {env['git_commit']}")
    typer.echo(shlex.join(cmd))
    typer.echo(f"# inside the shell: the hashed pip lock into {GUIX_VENV}, then `{inner}` from the tree")
    if not execute:
        return
    if shutil.which("guix") is None:
        typer.echo("# guix is not installed here: printed only", err=True)
        return
    raise typer.Exit(subprocess.call(cmd, cwd=REPO_ROOT))


@env_app.command("guix-index")
def guix_index(
    guix_git: Path = typer.Option(..., "--guix-git", help="git directory of a GNU Guix copy (a clone or mirror)"),
    commit: str = typer.Option(..., "--commit", help="the Guix commit to index (the pin of channels.scm)"),
    output: Path = typer.Option(..., "-o", "--output", help="TSV to write (manifests/guix-index-<commit[:8]>.tsv)"),
    name: list[str] = typer.Option([], "--name", help="index this Guix package name too (repeatable)"),
) -> None:
    """Write the index of what COMMIT defines for every name the manifests and the pip lock use."""
    import os
    import shlex

    from benchbook.paths import REPO_ROOT
    from benchbook.provenance.guix_index import build_index, format_index
    from benchbook.provenance.guix_source import GuixSourceError

    try:
        idx, comments = build_index(guix_git, commit, REPO_ROOT, list(name))
    except GuixSourceError as exc:
        typer.echo(f"benchbook env guix-index: {exc}", err=True)
        raise typer.Exit(2) from None
    out = output if output.is_absolute() else Path.cwd() / output
    try:
        shown = out.relative_to(REPO_ROOT)
    except ValueError:
        shown = out
    command = shlex.join(["benchbook", "env", "guix-index", "--guix-git", "GUIX_GIT", "--commit", idx.commit[:8],
                          "-o", str(shown), *(a for n in name for a in ("--name", n))])
    text = format_index(idx, comments, command + "   # GUIX_GIT: git directory of a Guix clone")
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, out)
    absent = [r.name for r in idx.rows.values() if not r.defined]
    typer.echo(f"{out}: {len(idx.rows)} names at {idx.commit[:12]} ({idx.header.get('date')}): "
               f"{len(idx.rows) - len(absent)} defined, {len(absent)} absent ({', '.join(absent) or '-'})")


@env_app.command("guix-pin")
def guix_pin(
    guix_git: Path = typer.Option(..., "--guix-git", help="git directory of a GNU Guix copy (a clone or mirror)"),
    channels: Path | None = typer.Option(None, "--channels", help="channels.scm to check (default: this checkout's)"),
) -> None:
    """Check the pinned Guix commit against a Guix copy: on master, after the channel introduction,
    signed with a keyring key authorised by its parents' .guix-authorizations."""
    from benchbook.paths import REPO_ROOT
    from benchbook.provenance.guix_pin import verify_pin
    from benchbook.provenance.scheme import channel_commits, channel_introductions

    path = channels or REPO_ROOT / "channels.scm"
    commit = channel_commits(path)["guix"]
    intro = channel_introductions(path).get("guix")
    if not intro:
        typer.echo(f"benchbook env guix-pin: {path} has no channel introduction for 'guix'", err=True)
        raise typer.Exit(2)
    rep = verify_pin(guix_git, commit, intro)
    typer.echo(f"pinned guix commit (channels.scm): {commit}")
    for line in rep.findings:
        typer.echo(f"ok: {line}")
    for line in rep.problems:
        typer.echo(f"FAILED: {line}")
    typer.echo(f"guix pin: {'OK' if rep.ok else 'FAILED'}")
    if not rep.ok:
        raise typer.Exit(1)


@env_app.command("guix-eval")
def guix_eval(
    guix_git: Path = typer.Option(..., "--guix-git", help="git directory of a GNU Guix copy (a clone or mirror)"),
    timeout_s: float = typer.Option(900.0, "--timeout-s", help="give up after this many seconds"),
) -> None:
    """Evaluate manifests/*.scm with Guile and the Guix source at the pin (no Guix, nothing built) and
    compare every resolved package with the Guix index."""
    import shutil
    import tempfile

    from benchbook.paths import MANIFESTS_DIR, REPO_ROOT
    from benchbook.provenance.guix_eval import evaluate, prepare_tree
    from benchbook.provenance.guix_index import index_path, read_index
    from benchbook.provenance.scheme import channel_commits

    if shutil.which("guile") is None:
        typer.echo("benchbook env guix-eval: guile is not installed", err=True)
        raise typer.Exit(2)
    commit = channel_commits(REPO_ROOT / "channels.scm")["guix"]
    idx = read_index(index_path(MANIFESTS_DIR, commit))
    manifests = [MANIFESTS_DIR / "analysis.scm", MANIFESTS_DIR / "testbed.scm"]
    tree = Path(tempfile.mkdtemp(prefix="benchbook-guix-src-"))
    try:
        for note in prepare_tree(guix_git, commit, tree):
            typer.echo(f"# {note}")
        res = evaluate(tree, manifests, timeout_s=timeout_s)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    for line in res.log:
        typer.echo(line)
    bad = []
    for manifest, name, version, file in res.entries:
        row = idx.rows.get(name)
        same = row is not None and row.defined and row.version == version and row.module == file
        typer.echo(f"{manifest}\t{name}\t{version}\t{file}\t{'= index' if same else 'DIFFERS from the index'}")
        if not same:
            bad.append(name)
    typer.echo(f"guix eval: {len(res.entries)} entries in {res.elapsed_s:.0f} s (guile exit {res.returncode}); "
               f"{len(bad)} differ from the index{': ' + ', '.join(bad) if bad else ''}")
    if res.returncode != 0 or bad or not res.entries:
        typer.echo(res.stderr, err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to the benchbook app."""
    app.add_typer(env_app, name="env")
