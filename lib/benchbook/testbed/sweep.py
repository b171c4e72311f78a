"""Start-up sweep: remove what killed benchbook runs left behind on this host.

Only names that match benchbook's pattern ``bb-<6 hex>-<role>`` are considered, and only
those whose run token has no live owner (see :mod:`benchbook.testbed.state`): network
namespaces (their processes are killed first), stray veths in the root namespace, cgroups
(v1 hierarchies and the cgroup2 mount; their tasks are moved back to the parent),
processes recorded in dead runs' state files, DPDK runtime directories, LXC containers,
and host settings recorded with their previous values are put back.
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.testbed import state as run_state
from benchbook.testbed.names import token_of
from benchbook.testbed.shell import CommandLog, run

CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    kept_live: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _dead(name: str, live: set[str]) -> bool:
    tok = token_of(name)
    return tok is not None and tok not in live


def benchbook_netns() -> list[str]:
    r = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.split() and token_of(line.split()[0])]


def benchbook_links() -> list[str]:
    r = run(["ip", "-o", "link", "show"], check=False)
    names = []
    for line in r.stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if token_of(name):
                names.append(name)
    return names


def benchbook_cgroups() -> list[Path]:
    """bb-* cgroup directories, deepest first, in every mounted hierarchy."""
    found: list[Path] = []
    if not CGROUP_ROOT.is_dir():
        return found
    for hier in CGROUP_ROOT.iterdir():
        if not hier.is_dir():
            continue
        for d in hier.rglob("bb-*"):
            if d.is_dir() and token_of(d.name):
                found.append(d)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def remove_cgroup(d: Path) -> None:
    """Move d's tasks to the hierarchy root, then rmdir d (children first)."""
    for child in sorted((c for c in d.rglob("*") if c.is_dir()), key=lambda p: len(p.parts), reverse=True):
        remove_cgroup(child)
    hier_root = d
    while hier_root.parent != CGROUP_ROOT:
        hier_root = hier_root.parent
    procs_file = "tasks" if (d / "tasks").exists() else "cgroup.procs"
    try:
        pids = (d / procs_file).read_text().split()
    except OSError:
        pids = []
    for pid in pids:
        try:
            (hier_root / procs_file).write_text(pid)
        except OSError:
            pass  # exited meanwhile
    d.rmdir()


def sweep_leftovers(log: CommandLog | None = None) -> SweepReport:
    """Remove dead benchbook runs' leftovers; never touches non-benchbook or live resources."""
    rep = SweepReport()
    live = run_state.live_tokens()
    states = run_state.load_all()

    # processes recorded by dead runs (pid + start time must both match: no recycled pid is hit)
    for tok, data in states.items():
        if tok in live:
            continue
        for pid, start, what in data.get("pids", []):
            if run_state.process_alive(int(pid), start):
                try:
                    os.kill(int(pid), signal.SIGKILL)
                    rep.removed.append(f"process {pid} ({what})")
                except ProcessLookupError:
                    pass

    for ns in benchbook_netns():
        if not _dead(ns, live):
            rep.kept_live.append(f"netns {ns}")
            continue
        r = run(["ip", "netns", "pids", ns], check=False, log=log)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        r = run(["ip", "netns", "del", ns], check=False, log=log)
        (rep.removed if r.returncode == 0 else rep.errors).append(f"netns {ns}" + ("" if r.returncode == 0 else f": {r.stderr.strip()}"))

    for name in benchbook_links():
        if _dead(name, live):
            r = run(["ip", "link", "del", name], check=False, log=log)
            if r.returncode == 0:
                rep.removed.append(f"link {name}")

    if shutil.which("lxc-ls"):
        r = run(["lxc-ls", "-1"], check=False, log=log)
        for name in r.stdout.split():
            if not _dead(name, live):
                continue
            try:  # engineer F2's container sweep also empties LXC's cgroups and waits for the monitor
                from benchbook.testbed.lxc_dut import sweep as lxc_sweep

                rep.removed.extend(lxc_sweep(prefix=name))
            except Exception as exc:  # noqa: BLE001 - fall back to plain lxc-stop/destroy
                run(["lxc-stop", "-k", "-n", name], check=False, log=log)
                r2 = run(["lxc-destroy", "-n", name], check=False, log=log)
                (rep.removed if r2.returncode == 0 else rep.errors).append(
                    f"container {name}" + ("" if r2.returncode == 0 else f" ({exc})"))

    for d in benchbook_cgroups():
        if not d.exists() or not _dead(d.name, live):
            continue
        try:
            remove_cgroup(d)
            rep.removed.append(f"cgroup {d}")
        except OSError as exc:
            rep.errors.append(f"cgroup {d}: {exc}")

    dpdk = Path("/var/run/dpdk")
    if dpdk.is_dir():
        for d in dpdk.iterdir():
            if _dead(d.name, live):
                shutil.rmtree(d, ignore_errors=True)
                rep.removed.append(f"dpdk runtime dir {d}")

    # settings changed by dead runs, back to their recorded values; then their state files
    held_by_live = {path for tok, data in states.items() if tok in live for path, _ in data.get("restore", [])}
    for tok, data in states.items():
        if tok in live:
            continue
        failed = False
        for path, previous in reversed(data.get("restore", [])):
            if path in held_by_live:
                rep.kept_live.append(f"setting {path} (a live run changed it too and will restore it)")
                failed = True  # keep the record: retried by a later sweep
                continue
            try:
                Path(path).write_text(previous)
                rep.removed.append(f"restored {path}")
            except OSError as exc:
                failed = True
                rep.errors.append(f"restore {path}: {exc} (kept for the next sweep)")
        if not failed:
            try:
                (run_state.STATE_DIR / f"{tok}.json").unlink()
            except FileNotFoundError:
                pass
    return rep
