"""Cleanup of what benchbook runs leave on this host: finding it (`leftovers`) and removing it
(`sweep_leftovers`, `sweep_containers`).

Only names that match benchbook's pattern ``bb-<6 hex>-<role>`` are considered, and only
those whose run token has no live owner (see :mod:`benchbook.testbed.state`): network
namespaces (their processes are killed first), stray veths in the root namespace, cgroups
(v1 hierarchies and the cgroup2 mount; their tasks are moved back to the parent),
processes recorded in dead runs' state files, DPDK runtime directories, LXC containers
(their processes found through LXC's cgroups, so also when the monitor is gone), and host
settings recorded with their previous values are put back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.testbed import state as run_state
from benchbook.testbed.names import PREFIX, token_of
from benchbook.tools.host import LocalHost
from benchbook.tools.lxc import Lxc

CGROUP_ROOT = Path("/sys/fs/cgroup")
DPDK_RUNTIME_DIR = Path("/var/run/dpdk")


@dataclass
class SweepReport:
    removed: list[str] = field(default_factory=list)
    kept_live: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _dead(name: str, live: set[str]) -> bool:
    tok = token_of(name)
    return tok is not None and tok not in live


def benchbook_netns(host: LocalHost | None = None) -> list[str]:
    r = (host or LocalHost(name="cleanup")).run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.split() and token_of(line.split()[0])]


def benchbook_links(host: LocalHost | None = None) -> list[str]:
    r = (host or LocalHost(name="cleanup")).run(["ip", "-o", "link", "show"], check=False)
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
        # os.walk, not Path.rglob: other processes create and remove cgroups all the time, and rglob raises
        # FileNotFoundError for a directory removed while it walks; os.walk skips it
        for parent, dirs, _ in os.walk(hier):
            found += [Path(parent, d) for d in dirs if d.startswith(PREFIX) and token_of(d)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def remove_cgroup(d: Path, attempts: int = 50) -> None:
    """Move d's tasks to the hierarchy root, then rmdir d (children first). A task forked inside d while the
    others moved keeps it busy (rmdir: EBUSY; a housekeeping cpuset holds every task of the machine), so the
    move and the rmdir are repeated, up to `attempts` times 20 ms apart, as the recipes' own teardown does
    (tools.cgroups.remove_argv); the last rmdir's error is raised when it never empties."""
    for child in sorted((c for c in d.rglob("*") if c.is_dir()), key=lambda p: len(p.parts), reverse=True):
        remove_cgroup(child, attempts)
    hier_root = d
    while hier_root.parent != CGROUP_ROOT:
        hier_root = hier_root.parent
    procs_file = "tasks" if (d / "tasks").exists() else "cgroup.procs"
    for attempt in range(1, attempts + 1):
        try:
            pids = (d / procs_file).read_text().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                (hier_root / procs_file).write_text(pid)
            except OSError:
                pass  # exited meanwhile
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == attempts:
                raise
        time.sleep(0.02)


def sweep_leftovers(host: LocalHost | None = None) -> SweepReport:
    """Remove dead benchbook runs' leftovers; never touches non-benchbook or live resources.
    Commands run on ``host`` (this machine; its log records them)."""
    host = host or LocalHost(name="cleanup")
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

    for ns in benchbook_netns(host):
        if not _dead(ns, live):
            rep.kept_live.append(f"netns {ns}")
            continue
        r = host.run(["ip", "netns", "pids", ns], check=False)
        for pid in r.stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        r = host.run(["ip", "netns", "del", ns], check=False)
        if r.returncode == 0:
            rep.removed.append(f"netns {ns}")
        else:
            rep.errors.append(f"netns {ns}: {r.stderr.strip()}")

    for name in benchbook_links(host):
        if _dead(name, live):
            r = host.run(["ip", "link", "del", name], check=False)
            if r.returncode == 0:
                rep.removed.append(f"link {name}")

    if shutil.which("lxc-ls"):
        lxc = Lxc(host=host)
        for name in lxc.list():
            if _dead(name, live):
                rep.removed.extend(sweep_containers(lxc, prefix=name))

    for d in benchbook_cgroups():
        if not d.exists() or not _dead(d.name, live):
            continue
        try:
            remove_cgroup(d)
            rep.removed.append(f"cgroup {d}")
        except OSError as exc:
            rep.errors.append(f"cgroup {d}: {exc}")

    if DPDK_RUNTIME_DIR.is_dir():
        for d in DPDK_RUNTIME_DIR.iterdir():
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


# --- LXC containers ------------------------------------------------------------------------------
def cgroup_hierarchies() -> list[Path]:
    """Mount points of every cgroup (v1) and cgroup2 hierarchy."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        p = line.split()
        if len(p) >= 3 and p[2] in ("cgroup", "cgroup2"):
            out.append(Path(p[1]))
    return out


def lxc_cgroup_dirs(name: str, *parents: str | None) -> list[Path]:
    """Every cgroup directory LXC makes for container `name` (default and custom layouts),
    plus the given parent directories (which LXC creates in every hierarchy when missing)."""
    found: list[Path] = []
    rels = (f"lxc.payload.{name}", f"lxc.monitor.{name}", f"{name}.monitor", name)
    for h in cgroup_hierarchies():
        bases = [h] + [h / p for p in parents if p]
        for base in bases:
            if base != h and base.is_dir():
                found.append(base)
            for rel in rels:
                if (base / rel).is_dir():
                    found.append(base / rel)
        found.extend(d for d in h.glob(f"*/{name}.monitor") if d.is_dir())
        found.extend(d for d in h.glob(f"*/{name}") if d.is_dir())
    return sorted(set(found))


def container_pids(name: str) -> list[int]:
    """Host pids of processes in container `name`'s cgroups (any benchbook layout)."""
    pids: set[int] = set()
    for d in lxc_cgroup_dirs(name):
        for sub in [d, *[p for p in d.rglob("*") if p.is_dir()]]:
            with contextlib.suppress(OSError, ValueError):
                pids.update(int(x) for x in (sub / "cgroup.procs").read_text().split())
    return sorted(pids)


def monitor_pids(name: str) -> list[int]:
    """Pids of LXC monitor processes (``[lxc monitor] <lxcpath> <name>``) and hooks for `name`."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in args if a]
        if not words:
            continue
        if (words[0].startswith("[lxc monitor]") and words[-1] == name) or \
                (len(words) > 2 and words[0] in ("/bin/sh", "sh") and name in words and "lxc" in words):
            pids.append(int(d.name))
    return pids


def kill_container_processes(name: str, wait_s: float = 5.0) -> None:
    """SIGKILL the container's processes and its monitor; wait until its cgroups are empty."""
    for pid in container_pids(name) + monitor_pids(name):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + wait_s  # SIGKILL is asynchronous
    while (container_pids(name) or monitor_pids(name)) and time.monotonic() < deadline:
        time.sleep(0.05)


def remove_container_cgroups(name: str, dirs: list[Path] | None = None) -> tuple[list[str], list[str]]:
    """rmdir the cgroups LXC made for `name` (deepest first; the monitor may take a moment to
    leave its cgroup). Returns (removed, errors)."""
    removed: list[str] = []
    errors: list[str] = []
    if dirs is None:
        dirs = [d for d in lxc_cgroup_dirs(name) if d.name.startswith(("lxc.", name))]
    for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
        for attempt in range(20):
            try:
                d.rmdir()
                removed.append(f"cgroup {d}")
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if attempt == 19:
                    errors.append(f"cgroup {d}: {exc}")
                time.sleep(0.05)
    return removed, errors


def sweep_containers(lxc: Lxc | None = None, prefix: str = PREFIX, include_live: bool = False) -> list[str]:
    """Remove leftover benchbook containers (``bb-`` names): kill their processes, lxc-stop -k,
    lxc-destroy, rmdir their cgroups. Containers of runs whose owner still lives are kept unless
    include_live. Returns what was removed. Other containers are never touched."""
    if not prefix.startswith(PREFIX):
        raise ValueError(f"sweep prefix must start with {PREFIX!r} (only benchbook's own containers)")
    lxc = lxc or Lxc(host=LocalHost(name="cleanup"))
    if shutil.which("lxc-destroy") is None:
        return []
    names: set[str] = set()
    if lxc.lxcpath.is_dir():
        names |= {p.name for p in lxc.lxcpath.iterdir() if p.is_dir() and p.name.startswith(prefix)}
    names |= {n for n in lxc.list() if n.startswith(prefix)}
    for h in cgroup_hierarchies():
        for d in h.glob(f"lxc.payload.{prefix}*"):
            names.add(d.name[len("lxc.payload."):])
        for d in h.glob(f"*/{prefix}*"):
            if d.is_dir() and (d / "cgroup.procs").exists() and not d.name.endswith(".monitor") \
                    and (lxc.lxcpath / d.name).is_dir():
                names.add(d.name)
    live = set() if include_live else run_state.live_tokens()
    names = {n for n in names if include_live or token_of(n) not in live or token_of(n) is None}
    removed: list[str] = []
    for name in sorted(names):
        kill_container_processes(name)
        lxc.stop(name, kill=True)
        lxc.destroy(name)
        removed.append(f"container {name}")
        removed += remove_container_cgroups(name)[0]
    return removed


# --- what is left ---------------------------------------------------------------------------------
def leftovers(tokens: set[str] | None = None) -> dict[str, list[str]]:
    """benchbook-owned namespaces, links, cgroups and DPDK dirs on this host whose run is over
    (resources of runs still in progress in other processes are not leftovers); with tokens:
    only those of these runs."""
    live = run_state.live_tokens()

    def dead(names: list[str]) -> list[str]:
        return [n for n in names if token_of(Path(n).name) not in live
                and (tokens is None or token_of(Path(n).name) in tokens)]

    dpdk = DPDK_RUNTIME_DIR
    return {
        "netns": dead(benchbook_netns()), "links": dead(benchbook_links()),
        "cgroups": dead([str(p) for p in benchbook_cgroups()]),
        "dpdk": dead([p.name for p in dpdk.iterdir() if p.name.startswith(PREFIX)]) if dpdk.is_dir() else [],
    }
