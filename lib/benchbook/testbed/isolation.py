"""CPU isolation recipes for the DuT core (cgroup v1 and v2 cpusets), as context managers.

- ``none``: the DuT only gets its own cpuset (a plain cgroup pinned to the DuT core);
  everything else keeps running where it likes.
- ``v1``: cgroup v1 cpuset recipe (after Weisbecker): a housekeeping cpuset on the other
  cores, the DuT cpuset with ``cpuset.sched_load_balance=0`` (and the root's load balancing
  off so the two become separate scheduling domains), every movable task of the root
  cpuset moved into housekeeping (pid 1 stays, per-CPU kernel threads cannot move: both
  counted), verified by reading the files back.
- ``v2``: cgroup v2 recipe: a DuT cgroup with ``cpuset.cpus.partition=root`` (or
  ``isolated``), and ``AllowedCPUs=`` for the system slices via systemctl. Needs the cpuset
  controller on the cgroup2 hierarchy; where it is not (hybrid hosts like this one) the
  recipe raises :class:`NotRunnable` with the reason - it is never emulated.

Every change is recorded in the run's state file with its previous value and undone on
exit (also on errors and signals); the start-up sweep undoes it if the process was killed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.filelock import FileLock, LockBusy, describe_holder
from benchbook.testbed import state as run_state
from benchbook.testbed.capabilities import NotRunnable, probe_cgroup_v2_cpuset
from benchbook.testbed.cleanup import sweep_leftovers
from benchbook.testbed.names import make_name
from benchbook.testbed.signals import deferred_signals
from benchbook.tools import cgroups as cg
from benchbook.tools.host import LocalHost

MODES = ("none", "v1", "v2")
__all__ = ["MODES", "NotRunnable", "IsolationInfo", "Isolation", "isolation", "mode_status", "v1_cpuset_status",
           "v2_cpuset_status"]


@dataclass
class IsolationInfo:
    mode: str
    dut_cpus: str
    housekeeping_cpus: str
    dut_procs_file: Path | None          # write a pid here to put a process into the DuT cgroup
    report: dict[str, Any] = field(default_factory=dict)


def _cpu_split(dut_cpu: int) -> tuple[str, str]:
    cpus = cg.online_cpus()
    if dut_cpu not in cpus:
        raise NotRunnable(f"DuT cpu {dut_cpu} is not online (online: {cpus})")
    hk = [c for c in cpus if c != dut_cpu]
    if not hk:
        raise NotRunnable("isolation needs at least two online CPUs (one for housekeeping)")
    return str(dut_cpu), ",".join(map(str, hk))


def v2_cpuset_status() -> tuple[bool, str]:
    """Is the v2 recipe runnable here? (the cgroup-v2-cpuset capability probe, plus a cgroup2 mount)"""
    cap = probe_cgroup_v2_cpuset()
    if not cap.ok:
        return False, f"cgroup v2 cpuset controller not available: {cap.detail}"
    root = cg.v2_root()
    if root is None:
        return False, "no cgroup2 mount"
    return True, f"cpuset controller on the cgroup2 hierarchy at {root}"


def v1_cpuset_status() -> tuple[bool, str]:
    root = cg.v1_hierarchy("cpuset")
    if root is None:
        return False, "no cgroup v1 cpuset hierarchy mounted"
    return True, f"cgroup v1 cpuset hierarchy at {root}"


def mode_status(mode: str) -> tuple[bool, str]:
    """(runnable, reason) for an isolation mode on this host."""
    if mode not in MODES:
        return False, f"unknown isolation mode {mode!r}; known: {', '.join(MODES)}"
    if os.geteuid() != 0:
        return False, "cgroup isolation needs root"
    if len(cg.online_cpus()) < 2:
        return False, "needs at least two online CPUs"
    if mode == "v2":
        return v2_cpuset_status()
    return v1_cpuset_status()  # "none" also uses a v1 cpuset (pure-v2 hosts: not implemented)


class Isolation:
    """Base: subclasses implement _apply/_undo; __exit__ always undoes."""

    mode = "base"

    def __init__(self, token: str, dut_cpu: int = 1) -> None:
        self.token = token
        self.dut_cpu = dut_cpu
        self._state: run_state.RunState | None = None
        self._undo: list[Any] = []
        self.info: IsolationInfo | None = None
        self.notes: dict[str, str] = {}
        self._lock: FileLock | None = None
        self.lock_timeout_s = 300.0

    def _set(self, path: Path, value: str) -> None:
        """Write a host setting, recording its previous value for undo (also by the sweep)."""
        previous = cg.read(path)
        assert self._state is not None
        self._state.add_restore(str(path), previous)
        cg.write(path, value)
        self._undo.append(lambda: (cg.write(path, previous), self._state and self._state.drop_restore(str(path))))

    def __enter__(self) -> IsolationInfo:
        ok, why = mode_status(self.mode)
        if not ok:
            raise NotRunnable(why)
        self._lock = _host_lock(self.lock_timeout_s)
        try:
            # a killed earlier run may have left its recipe applied: undo it before recording
            # "previous" values of our own
            sweep_leftovers()
            self._state = run_state.acquire(self.token)
            self.info = self._apply()
        except BaseException:
            self._restore()
            raise
        return self.info

    def _restore(self) -> list[str]:
        problems: list[str] = []
        with deferred_signals():
            while self._undo:
                fn = self._undo.pop()
                try:
                    res = fn()
                    if isinstance(res, list):
                        problems.extend(res)
                except Exception as exc:  # noqa: BLE001 - undo everything we can
                    problems.append(str(exc))
            if self._state is not None:
                run_state.release(self.token)
                self._state = None
            if self._lock is not None:
                self._lock.release()  # the host-wide isolation lock
                self._lock = None
        return problems

    def __exit__(self, *exc: object) -> None:
        problems = self._restore()
        if self.info is not None:
            self.info.report["restore_problems"] = problems

    def _apply(self) -> IsolationInfo:  # pragma: no cover - abstract
        raise NotImplementedError


class V1CpusetBase(Isolation):
    def _root(self) -> Path:
        root = cg.v1_hierarchy("cpuset")
        if root is None:
            raise NotRunnable("no cgroup v1 cpuset hierarchy")
        return root

    def _mkcg(self, role: str, cpus: str, mems: str, **kw: Any) -> Path:
        root = self._root()
        name = make_name(self.token, role)
        assert self._state is not None
        self._state.add_resource("cgroup", str(root / name))
        d = cg.make_v1_cgroup(root, name)
        self._undo.append(lambda: cg.remove_cgroup(d, root))
        self.notes.update({f"{role}.{k}": v for k, v in cg.configure_v1_cpuset(d, cpus, mems, **kw).items()})
        return d


class NoIsolation(V1CpusetBase):
    mode = "none"

    def _apply(self) -> IsolationInfo:
        dut, hk = _cpu_split(self.dut_cpu)
        root = self._root()
        mems = cg.read(root / "cpuset.mems")
        d = self._mkcg("dut", dut, mems)
        return IsolationInfo("none", dut, hk, d / "cgroup.procs",
                             report={"cgroup": str(d), "note": "DuT pinned by its own cpuset; no housekeeping set"})


class V1Isolation(V1CpusetBase):
    mode = "v1"

    def _apply(self) -> IsolationInfo:
        dut, hk = _cpu_split(self.dut_cpu)
        root = self._root()
        mems = cg.read(root / "cpuset.mems")
        hk_cg = self._mkcg("hk", hk, mems)
        dut_cg = self._mkcg("dut", dut, mems, cpu_exclusive=True, sched_load_balance=False)
        self._set(root / "cpuset.sched_load_balance", "0")
        moved: list[int] = []
        failed: dict[str, int] = {}
        # move every movable task of the root cpuset (threads one by one: v1 allows it); repeat
        # while tasks forked meanwhile by not-yet-moved parents keep appearing in the root
        not_movable: set[int] = set()
        passes = 0
        for _ in range(10):
            passes += 1
            moved_now = 0
            for pid in cg.tasks(root, "tasks"):
                if pid == 1 or pid in not_movable:
                    continue
                why = cg.move_task(pid, hk_cg, "tasks")
                if why is None:
                    moved.append(pid)
                    moved_now += 1
                elif why != "exited":
                    not_movable.add(pid)
                    failed[why] = failed.get(why, 0) + 1
            if moved_now == 0:
                break
        kept_init = 1 if 1 in cg.tasks(root, "tasks") else 0

        def move_back() -> list[str]:
            probs = []
            for pid in cg.tasks(hk_cg, "tasks"):
                why = cg.move_task(pid, root, "tasks")
                if why not in (None, "exited"):
                    probs.append(f"task {pid}: {why}")
            return probs

        self._undo.append(move_back)
        # verify by reading back
        in_hk = set(cg.tasks(hk_cg, "tasks"))
        exited = [p for p in moved if p not in in_hk and not Path(f"/proc/{p}").exists()]
        still_root = [p for p in cg.tasks(root, "tasks") if p != 1]
        root_user = [p for p in still_root if not cg.is_kernel_thread(p)]
        report = {
            "housekeeping_cgroup": str(hk_cg), "dut_cgroup": str(dut_cg),
            "housekeeping_cpus": cg.read(hk_cg / "cpuset.cpus"), "dut_cpus": cg.read(dut_cg / "cpuset.cpus"),
            "dut_sched_load_balance": cg.read(dut_cg / "cpuset.sched_load_balance"),
            "root_sched_load_balance": cg.read(root / "cpuset.sched_load_balance"),
            "dut_cpu_exclusive": cg.read(dut_cg / "cpuset.cpu_exclusive"),
            "tasks_moved": len(moved), "tasks_verified_in_housekeeping": len(in_hk & set(moved)),
            "tasks_exited_since_move": len(exited),
            "tasks_not_movable": failed, "left_in_root": len(still_root),
            "left_in_root_user_tasks": len(root_user), "init_kept_in_root": kept_init,
            "self_pid": os.getpid(), "notes": dict(self.notes), "move_passes": passes,
        }
        if report["dut_sched_load_balance"] != "0" or report["dut_cpus"] != dut:
            raise cg.CgroupError(f"v1 recipe did not take: read back {report}")
        return IsolationInfo("v1", dut, hk, dut_cg / "cgroup.procs", report=report)


class V2Isolation(Isolation):
    mode = "v2"

    def __init__(self, token: str, dut_cpu: int = 1, partition: str = "root",
                 slices: tuple[str, ...] = ("user.slice", "system.slice", "init.scope")) -> None:
        super().__init__(token, dut_cpu)
        self.partition = partition
        self.slices = slices

    def _apply(self) -> IsolationInfo:
        dut, hk = _cpu_split(self.dut_cpu)
        root = cg.v2_root()
        if root is None:
            raise NotRunnable("no cgroup2 mount")
        sub = root / "cgroup.subtree_control"
        if "cpuset" not in cg.read(sub).split():
            self._set(sub, "+cpuset")
        name = make_name(self.token, "dut")
        assert self._state is not None
        self._state.add_resource("cgroup", str(root / name))
        d = cg.make_v1_cgroup(root, name)  # plain mkdir; works on the cgroup2 mount too
        self._undo.append(lambda: cg.remove_cgroup(d, root, "cgroup.procs"))
        cg.write(d / "cpuset.cpus", dut)
        cg.write(d / "cpuset.cpus.partition", self.partition)
        part = cg.read(d / "cpuset.cpus.partition")
        slices_set = []
        if shutil.which("systemctl"):
            host = LocalHost(name="isolation")
            for unit in self.slices:
                r = host.run(["systemctl", "set-property", "--runtime", unit, f"AllowedCPUs={hk}"], check=False)
                if r.exit_code == 0:
                    slices_set.append(unit)
                    self._undo.append(lambda u=unit: host.run(
                        ["systemctl", "set-property", "--runtime", u, "AllowedCPUs="], check=False) and None)
        if not part.startswith(self.partition):
            raise cg.CgroupError(f"{d}/cpuset.cpus.partition reads {part!r}, expected {self.partition!r}")
        return IsolationInfo("v2", dut, hk, d / "cgroup.procs",
                             report={"dut_cgroup": str(d), "partition": part, "allowed_cpus_slices": slices_set})


def _host_lock(timeout_s: float) -> FileLock:
    """One CPU isolation at a time on a host (two recipes would fight over the same tasks and
    settings): a FileLock on <state dir>/cpu-isolation.lock, released by release() or when the
    process dies."""
    lock = FileLock(run_state.STATE_DIR / "cpu-isolation.lock", timeout_s=timeout_s, description="CPU isolation")
    try:
        return lock.acquire()
    except LockBusy as exc:
        raise NotRunnable(f"another benchbook run kept the CPU isolation lock for {timeout_s:g} s "
                          f"({describe_holder(exc.holder)})") from None


RECIPES = {"none": NoIsolation, "v1": V1Isolation, "v2": V2Isolation}


def isolation(mode: str, token: str, dut_cpu: int = 1) -> Isolation:
    try:
        return RECIPES[mode](token, dut_cpu)
    except KeyError:
        raise NotRunnable(f"unknown isolation mode {mode!r}; known: {', '.join(MODES)}") from None
