"""cgroup file-system operations (v1 cpuset hierarchy and the cgroup2 mount): reading this machine's
mounts, and the command lines that change a cgroup on a host (run by a Host: this machine or one over ssh).

Only small primitives live here; the isolation recipes that combine them (and undo them) are in
:mod:`benchbook.testbed.isolation`. The command lines are ``sh -c`` scripts over the cgroup files; each
prints what it read back as ``key=value`` lines (`parse_key_values`).
"""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError

CGROUP_ROOT = Path("/sys/fs/cgroup")


class CgroupError(BenchbookError, RuntimeError):
    pass


def read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError as exc:
        raise CgroupError(f"reading {path}: {exc.strerror}") from exc


def write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as fh:
            fh.write(value)
    except OSError as exc:
        raise CgroupError(f"writing {value!r} to {path}: {exc.strerror}") from exc


def mounts() -> list[tuple[str, str, str]]:
    """(mount point, fstype, options) of every cgroup/cgroup2 mount."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        p = line.split()
        if len(p) >= 4 and p[2] in ("cgroup", "cgroup2"):
            out.append((p[1], p[2], p[3]))
    return out


def v1_hierarchy(controller: str) -> Path | None:
    """Mount point of the v1 hierarchy holding controller, if any."""
    for mnt, fstype, opts in mounts():
        if fstype == "cgroup" and controller in opts.split(","):
            return Path(mnt)
    return None


def v2_root() -> Path | None:
    for mnt, fstype, _ in mounts():
        if fstype == "cgroup2":
            return Path(mnt)
    return None


def v2_controllers(root: Path | None = None) -> set[str]:
    root = root or v2_root()
    if root is None:
        return set()
    try:
        return set(read(root / "cgroup.controllers").split())
    except CgroupError:
        return set()


def parse_cpu_list(text: str) -> list[int]:
    """'0-2,5' -> [0, 1, 2, 5]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def online_cpus() -> list[int]:
    return parse_cpu_list(Path("/sys/devices/system/cpu/online").read_text())


def _q(path: str | Path) -> str:
    return shlex.quote(str(path))


def mkdir_argv(d: str | Path) -> list[str]:
    """Create a cgroup (a plain mkdir on either hierarchy)."""
    return ["mkdir", str(d)]


def write_argv(*settings: tuple[str | Path, str]) -> list[str]:
    """Write each (file, value) in order, stopping at the first that fails."""
    return ["sh", "-c", " && ".join(f"echo {shlex.quote(v)} > {_q(f)}" for f, v in settings)]


def v1_cpuset_argv(d: str | Path, cpus: str, root: str | Path) -> list[str]:
    """A v1 cpuset's cpus, and its mems copied from the hierarchy's root (both are required)."""
    return ["sh", "-c", f"echo {shlex.quote(cpus)} > {_q(Path(d) / 'cpuset.cpus')} && "
                        f"cat {_q(Path(root) / 'cpuset.mems')} > {_q(Path(d) / 'cpuset.mems')}"]


def remove_argv(d: str | Path, parent: str | Path, procs_file: str = "tasks", attempts: int = 50) -> list[str]:
    """Move a cgroup's tasks back to ``parent`` and remove it; nothing to do (exit 0) when it is gone. A task
    forked inside the cgroup while the others moved keeps it busy (rmdir: EBUSY), so the move and the rmdir are
    repeated, up to ``attempts`` times 20 ms apart; the last rmdir's error is the step's when it never empties."""
    dq, pq = _q(d), _q(parent)
    move = f"for p in $(cat {dq}/{procs_file} 2>/dev/null); do echo $p > {pq}/{procs_file} 2>/dev/null; done"
    return ["sh", "-c", f"test -d {dq} || exit 0; i=1; while [ $i -lt {int(attempts)} ]; do {move}; "
                        f"rmdir {dq} 2>/dev/null && exit 0; test -d {dq} || exit 0; sleep 0.02; i=$((i+1)); done; "
                        f"{move}; rmdir {dq}"]


def move_back_argv(src: str | Path, dest: str | Path) -> list[str]:
    """Move every task of ``src`` to ``dest`` (v1 ``tasks``); prints ``not_moved=<pid>: <reason>`` for each task
    that is still there and could not move."""
    s, d = _q(src), _q(dest)
    return ["sh", "-c", f"test -d {s} || exit 0; for p in $(cat {s}/tasks); do echo $p 2>/dev/null > {d}/tasks || "
                        f"{{ test -d /proc/$p && echo \"not_moved=$p: $(/bin/echo $p 2>&1 > {d}/tasks)\"; }}; "
                        "done; true"]


def move_tasks_argv(root: str | Path, dest: str | Path, passes: int = 10) -> list[str]:
    """Move every movable task of the v1 hierarchy's root cpuset into ``dest`` (threads one by one, as v1 allows;
    pid 1 stays), repeating while tasks forked meanwhile keep appearing (at most ``passes`` passes), then read
    back where the moved ones are. Prints ``moved=<pid>``, ``not_movable=<pid>: <reason>`` (the task still
    exists; per-CPU kernel threads cannot move), ``passes=``, ``verified=`` (moved and now in ``dest``),
    ``exited=`` (moved and gone since, or exited and not yet reaped: a zombie has left its cgroup but keeps its
    /proc entry), and what is left in the root: ``left_in_root=``,
    ``left_in_root_user_tasks=`` (with a command line: not a kernel thread), ``init_kept_in_root=``."""
    r, d = _q(Path(root) / "tasks"), _q(Path(dest) / "tasks")
    script = (
        f'moved=" "; bad=" "; n=0; '
        f"while [ $n -lt {passes} ]; do n=$((n+1)); now=0; "
        f"for p in $(cat {r}); do [ $p = 1 ] && continue; case \"$bad\" in *\" $p \"*) continue;; esac; "
        f"if echo $p 2>/dev/null > {d}; then moved=\"$moved$p \"; now=$((now+1)); echo moved=$p; "
        f"elif test -d /proc/$p; then bad=\"$bad$p \"; echo \"not_movable=$p: $(/bin/echo $p 2>&1 > {d})\"; fi; "
        f"done; [ $now = 0 ] && break; done; echo passes=$n; "
        f"hk=\" $(cat {d} | tr '\\n' ' ') \"; v=0; x=0; for p in $moved; do case \"$hk\" in *\" $p \"*) v=$((v+1));; "
        f"*) s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1); case \"$s\" in ''|Z|X) x=$((x+1));; esac;; "
        f"esac; done; echo verified=$v; echo exited=$x; "
        f"left=0; user=0; init=0; for p in $(cat {r}); do if [ $p = 1 ]; then init=1; continue; fi; "
        f"left=$((left+1)); c=; read -r c 2>/dev/null < /proc/$p/cmdline; [ -n \"$c\" ] && user=$((user+1)); done; "
        f"echo left_in_root=$left; echo left_in_root_user_tasks=$user; echo init_kept_in_root=$init")
    return ["sh", "-c", script]


def readback_argv(d: str | Path, files: list[str], expect: dict[str, str] | None = None,
                  to: str | None = None) -> list[str]:
    """Print ``<file>=<content>`` for each cgroup file of ``d`` (into the file ``to`` on the host when given);
    fails (exit 1) when one of ``expect`` (file -> value it must start with) reads otherwise."""
    dq = _q(d)
    body = f"for f in {' '.join(files)}; do echo $f=$(cat {dq}/$f); done"
    script = f"{body} > {_q(to)}" if to else body
    for f, want in (expect or {}).items():
        script += (f"; case \"$(cat {dq}/{f})\" in {shlex.quote(want)}*) ;; *) echo \"{d}/{f} reads "
                   f"$(cat {dq}/{f}), expected {want}\" >&2; exit 1;; esac")
    return ["sh", "-c", script]


def parse_key_values(text: str) -> dict[str, Any]:
    """``key=value`` lines into a dict; a key printed more than once keeps its values in a list."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            continue
        if key in out:
            out[key] = (out[key] if isinstance(out[key], list) else [out[key]]) + [value]
        else:
            out[key] = value
    return out


def move_report(text: str) -> dict[str, Any]:
    """The counts of move_tasks_argv's output (the v1 recipe's report)."""
    kv = parse_key_values(text)

    def listed(key: str) -> list[str]:
        v = kv.get(key, [])
        return v if isinstance(v, list) else [v]

    reasons = Counter(x.split(": ", 1)[1].rsplit(": ", 1)[-1] if ": " in x else "unknown"
                      for x in listed("not_movable"))
    return {"tasks_moved": len(listed("moved")), "tasks_verified_in_housekeeping": int(kv.get("verified", 0)),
            "tasks_exited_since_move": int(kv.get("exited", 0)), "tasks_not_movable": dict(reasons),
            "left_in_root": int(kv.get("left_in_root", 0)),
            "left_in_root_user_tasks": int(kv.get("left_in_root_user_tasks", 0)),
            "init_kept_in_root": int(kv.get("init_kept_in_root", 0)), "move_passes": int(kv.get("passes", 0))}
