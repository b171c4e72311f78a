"""cgroup file-system operations (v1 cpuset hierarchy and the cgroup2 mount), with clear errors.

Only small primitives live here; the isolation recipes that combine them (and undo them)
are in :mod:`benchbook.testbed.isolation`.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

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


def make_v1_cgroup(parent: Path, name: str) -> Path:
    d = parent / name
    try:
        d.mkdir()
    except OSError as exc:
        raise CgroupError(f"creating cgroup {d}: {exc.strerror}") from exc
    return d


def configure_v1_cpuset(d: Path, cpus: str, mems: str, *, cpu_exclusive: bool = False,
                        sched_load_balance: bool | None = None) -> dict[str, str]:
    """Set cpus/mems (required) and the optional flags; returns notes on flags that did not take
    (cpu_exclusive fails with EINVAL while a sibling cpuset overlaps, e.g. lxc.pivot)."""
    notes: dict[str, str] = {}
    write(d / "cpuset.cpus", cpus)
    write(d / "cpuset.mems", mems)
    if cpu_exclusive:
        try:
            write(d / "cpuset.cpu_exclusive", "1")
        except CgroupError as exc:
            notes["cpu_exclusive"] = f"not set: {exc}"
    if sched_load_balance is not None:
        write(d / "cpuset.sched_load_balance", "1" if sched_load_balance else "0")
    return notes


def tasks(cg: Path, procs_file: str = "tasks") -> list[int]:
    try:
        return [int(x) for x in read(cg / procs_file).split()]
    except CgroupError:
        return []


def move_task(pid: int, cg: Path, procs_file: str = "tasks") -> str | None:
    """Move one task; None on success, else the reason (e.g. a per-CPU kernel thread: EINVAL)."""
    try:
        with open(cg / procs_file, "w") as fh:
            fh.write(str(pid))
        return None
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return "exited"
        return errno.errorcode.get(exc.errno or 0, str(exc.errno))


def remove_cgroup(cg: Path, back_to: Path, procs_file: str = "tasks") -> list[str]:
    """Move cg's tasks to back_to and rmdir cg; returns the problems met."""
    problems = []
    for pid in tasks(cg, procs_file):
        why = move_task(pid, back_to, procs_file)
        if why not in (None, "exited"):
            problems.append(f"task {pid} could not be moved back to {back_to}: {why}")
    try:
        os.rmdir(cg)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"rmdir {cg}: {exc.strerror}")
    return problems


def is_kernel_thread(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes() == b"" and pid != 1
    except OSError:
        return False
