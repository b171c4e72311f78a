"""CPU isolation recipes for the DuT core (cgroup v1 and v2 cpusets), written once as steps on a Host.

`recipe(mode, ...)` returns the steps that apply a mode on a host and the teardown steps that undo it;
every step is a command (:mod:`benchbook.tools.cgroups` builds them) run by a Host: the local backend
runs them on this machine, the ssh backend on the DuT host, both through the one command log. The modes are
registered by name in :data:`ISOLATION_MODES` (a :class:`benchbook.plugins.Registry` of :class:`IsolationMode`:
how the recipe is built, whether this host can run it, what it reports); docs/extending.md adds one.

- ``none``: the DuT only gets its own cpuset (a plain v1 cgroup pinned to the DuT core);
  everything else keeps running where it likes.
- ``v1``: cgroup v1 cpuset recipe (after Weisbecker): a housekeeping cpuset on the other
  cores, the DuT cpuset with ``cpuset.sched_load_balance=0`` (and the root's load balancing
  off so the two become separate scheduling domains), every movable task of the root
  cpuset moved into housekeeping (pid 1 stays, per-CPU kernel threads cannot move: both
  counted), verified by reading the files back.
- ``v2``: cgroup v2 recipe: a DuT cgroup with ``cpuset.cpus.partition=root``, and ``AllowedCPUs=``
  for the system slices via systemctl. Needs the cpuset controller on the cgroup2 hierarchy; where
  it is not (hybrid hosts like this one) the mode is not runnable, with the reason (`mode_status`) -
  it is never emulated.
- ``cset_shield`` (the ssh backend's v1 where the DuT host has cset, as in the paper) and the
  DuT's cgroup alone (`dut_cpuset`, `v2_partition`) are the pieces the ssh backend composes.

On this machine, `Isolation` (a context manager) runs a recipe's steps: the previous value of a host
setting is recorded in the run's state file before it changes, and the teardown steps run on exit (also
on errors and signals); the start-up sweep undoes a recipe whose process was killed. Only one recipe
at a time runs on a host (`host_lock`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.filelock import FileLock, LockBusy, describe_holder
from benchbook.plugins import Registry
from benchbook.testbed import state as run_state
from benchbook.testbed.capabilities import NotRunnable, probe_cgroup_v2_cpuset
from benchbook.testbed.cleanup import sweep_leftovers
from benchbook.testbed.names import make_name
from benchbook.testbed.plan import Execution, Executor, Step, StepEnv
from benchbook.testbed.signals import deferred_signals
from benchbook.tools import cgroups as cg
from benchbook.tools.host import CommandLog, Host, LocalHost

V2_SLICES = ("user.slice", "system.slice", "init.scope")
__all__ = ["ISOLATION_MODES", "IsolationMode", "NotRunnable", "IsolationInfo", "Isolation", "Recipe", "CgroupLayout",
           "recipe", "isolation", "mode_status", "v1_cpuset_status", "v2_cpuset_status", "cpu_split", "host_lock"]


@dataclass
class IsolationInfo:
    mode: str
    dut_cpus: str
    housekeeping_cpus: str
    dut_procs_file: Path | None          # write a pid here to put a process into the DuT cgroup
    report: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CgroupLayout:
    """Where a host has its cgroup hierarchies, and whether it has systemctl."""

    v1_cpuset: str = "/sys/fs/cgroup/cpuset"
    v2_root: str = "/sys/fs/cgroup"
    systemctl: bool = True

    @classmethod
    def here(cls) -> CgroupLayout:
        """This machine's (the usual places where a hierarchy is not mounted)."""
        v1, v2 = cg.v1_hierarchy("cpuset"), cg.v2_root()
        return cls(v1_cpuset=str(v1 or cls.v1_cpuset), v2_root=str(v2 or cls.v2_root),
                   systemctl=shutil.which("systemctl") is not None)


def cpu_split(dut_cpu: int, online: list[int]) -> tuple[str, str]:
    """(DuT cpus, housekeeping cpus) for the DuT core among the online CPUs."""
    if dut_cpu not in online:
        raise NotRunnable(f"DuT cpu {dut_cpu} is not online (online: {online})")
    hk = [c for c in online if c != dut_cpu]
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
    if mode not in ISOLATION_MODES:
        return False, ISOLATION_MODES.unknown(mode)
    if os.geteuid() != 0:
        return False, "cgroup isolation needs root"
    if len(cg.online_cpus()) < 2:
        return False, "needs at least two online CPUs"
    return ISOLATION_MODES.get(mode).status()


# -------------------------------------------------------------------------------------------------
# the pieces, as steps on the host of `role`
# -------------------------------------------------------------------------------------------------
def dut_cpuset(role: str, d: str, cpus: str, root: str, *, exclusive: bool = False, load_balance: bool = True,
               readback_to: str | None = None, note: str = "") -> tuple[list[Step], list[Step]]:
    """A v1 cpuset of its own for the DuT (cpus, mems as the root's; optionally exclusive and without load
    balancing), read back; and its removal (tasks back to the root first)."""
    settings = [] if load_balance else [(f"{d}/cpuset.sched_load_balance", "0")]
    steps = [Step("run", role, cg.mkdir_argv(d), note=note or f"the DuT's cpuset {Path(d).name} on CPU {cpus}"),
             Step("run", role, cg.v1_cpuset_argv(d, cpus, root), note="its CPUs, and the root's memory nodes")]
    if settings:
        steps.append(Step("run", role, cg.write_argv(*settings), note="no load balancing inside the DuT's cpuset"))
    if exclusive:  # fails with EINVAL while a sibling cpuset overlaps (e.g. lxc.pivot): read back, not required
        steps.append(Step("run", role, cg.write_argv((f"{d}/cpuset.cpu_exclusive", "1")), check=False,
                          note="the DuT's CPU exclusive to it (where no sibling cpuset overlaps)"))
    files = ["cpuset.cpus", "cpuset.mems"] + ([] if load_balance else ["cpuset.sched_load_balance"])
    files += ["cpuset.cpu_exclusive"] if exclusive else []
    expect = {"cpuset.cpus": cpus, **({} if load_balance else {"cpuset.sched_load_balance": "0"})}
    steps.append(Step("run", role, cg.readback_argv(d, files, expect, to=readback_to), name="isolation.dut",
                      note="read the DuT's cpuset back"))
    tear = [Step("run", role, cg.remove_argv(d, root), teardown=True, check=False, name="isolation.remove.dut",
                 note=f"remove the DuT's cgroup {Path(d).name}")]
    return steps, tear


def housekeeping_cpuset(role: str, root: str, hk_dir: str, cpus: str) -> tuple[list[Step], list[Step]]:
    """The housekeeping cpuset on the other CPUs, the root's load balancing off, every movable task of the
    root moved into housekeeping (read back); undone: tasks back to the root, load balancing as before."""
    lb = f"{root}/cpuset.sched_load_balance"
    steps = [Step("run", role, cg.mkdir_argv(hk_dir), note=f"the housekeeping cpuset {Path(hk_dir).name}"),
             Step("run", role, cg.v1_cpuset_argv(hk_dir, cpus, root), note=f"housekeeping on CPUs {cpus}"),
             Step("run", role, ["cat", lb], produces=("ROOT_SCHED_LOAD_BALANCE",),
                  note="the root's load balancing before the recipe"),
             Step("run", role, cg.write_argv((lb, "0")), options={"restore": (lb, "ROOT_SCHED_LOAD_BALANCE")},
                  note="no load balancing in the root: housekeeping and the DuT become separate scheduling domains"),
             Step("run", role, cg.move_tasks_argv(root, hk_dir), name="isolation.moved",
                  note="every movable task of the root cpuset into housekeeping; read back"),
             Step("run", role, cg.readback_argv(hk_dir, ["cpuset.cpus"]), name="isolation.hk",
                  note="read the housekeeping cpuset back"),
             Step("run", role, cg.readback_argv(root, ["cpuset.sched_load_balance"],
                                                {"cpuset.sched_load_balance": "0"}),
                  name="isolation.root", note="read the root's load balancing back")]
    tear = [Step("run", role, cg.move_back_argv(hk_dir, root), name="isolation.move_back",
                 note="every task of housekeeping back to the root cpuset"),
            Step("run", role, cg.write_argv((lb, "ROOT_SCHED_LOAD_BALANCE")),
                 note="the root's load balancing as before"),
            Step("run", role, cg.remove_argv(hk_dir, root), name="isolation.remove.hk",
                 note=f"remove the housekeeping cgroup {Path(hk_dir).name}")]
    for s in tear:
        s.teardown, s.check = True, False
    return steps, tear


def v2_partition(role: str, d: str, cpus: str, *, create: bool = True, root: str = "",
                 readback_to: str | None = None) -> tuple[list[Step], list[Step]]:
    """The DuT's cgroup (created unless it exists, e.g. LXC's payload cgroup) as a cpuset partition root on its
    CPUs; with ``create``, the cpuset controller enabled on the cgroup2 root first and the cgroup removed after."""
    settings = [(f"{d}/cpuset.cpus", cpus), (f"{d}/cpuset.cpus.partition", "root")]
    if not create:
        return [Step("run", role, cg.write_argv(*settings),
                     note="cgroup v2: the container's cpuset becomes a partition root")], []
    sub = f"{root}/cgroup.subtree_control"
    steps = [Step("run", role, ["sh", "-c", f"if grep -qw cpuset {sub}; then echo kept; else echo +cpuset > {sub} && "
                                            "echo enabled; fi"], produces=("V2_CPUSET_CONTROLLER",),
                  note="cgroup v2: the cpuset controller for the root's children"),
             Step("run", role, cg.mkdir_argv(d), note=f"cgroup v2: the DuT's cgroup {Path(d).name}"),
             Step("run", role, cg.write_argv(*settings), note=f"a cpuset partition root on CPU {cpus}"),
             Step("run", role, cg.readback_argv(d, ["cpuset.cpus", "cpuset.cpus.partition", "cpuset.cpus.effective"],
                                                {"cpuset.cpus.partition": "root"}, to=readback_to),
                  name="isolation.dut", note="read the partition back")]
    tear = [Step("run", role, cg.remove_argv(d, root, "cgroup.procs"), name="isolation.remove.dut",
                 note=f"remove the DuT's cgroup {Path(d).name}"),
            Step("run", role, ["sh", "-c", f"test V2_CPUSET_CONTROLLER = enabled || exit 0; echo -cpuset > {sub}"],
                 note="the cpuset controller of the cgroup2 root as before")]
    for s in tear:
        s.teardown, s.check = True, False
    return steps, tear


def systemd_slices(role: str, hk_cpus: str, units: tuple[str, ...] = V2_SLICES) -> tuple[list[Step], list[Step]]:
    """systemd's units kept off the DuT core (AllowedCPUs=), and back to every CPU after."""
    steps = [Step("run", role, ["systemctl", "set-property", "--runtime", u, f"AllowedCPUs={hk_cpus}"],
                  name=f"isolation.slice.{u}", note=f"cgroup v2: {u} off the DuT core") for u in units]
    tear = [Step("run", role, ["systemctl", "set-property", "--runtime", u, "AllowedCPUs="], teardown=True,
                 check=False, note=f"{u} on every CPU again") for u in units]
    return steps, tear


def cset_shield(role: str, cpu: int, readback_to: str) -> tuple[list[Step], list[Step]]:
    """cgroup v1 with cset (the paper's tool): a shield on the DuT core, kernel threads moved off it, no load
    balancing in the shield (read back); undone by ``cset shield --reset``."""
    lb = "/sys/fs/cgroup/cpuset/user/cpuset.sched_load_balance"
    return ([Step("run", role, ["cset", "shield", f"--cpu={cpu}", "--kthread=on"],
                  note="cgroup v1: housekeeping cpuset, kernel threads moved off the DuT core (cset)"),
             Step("run", role, cg.write_argv((lb, "0")),
                  note="cgroup v1: no load balancing on the DuT set; read back below"),
             Step("run", role, ["sh", "-c", f"cat {lb} > {readback_to}"])],
            [Step("run", role, ["cset", "shield", "--reset"], teardown=True, check=False, note="undo the v1 shield")])


# -------------------------------------------------------------------------------------------------
# the recipes of the modes
# -------------------------------------------------------------------------------------------------
@dataclass
class Recipe:
    """The steps of an isolation mode on a host, the teardown steps that undo it, and where the DuT goes."""

    mode: str
    dut_cpus: str
    housekeeping_cpus: str
    dut_cgroup: str
    steps: list[Step]
    teardown: list[Step]
    housekeeping_cgroup: str | None = None
    procs_file: str = "cgroup.procs"

    @property
    def dut_procs_file(self) -> str:
        return f"{self.dut_cgroup}/{self.procs_file}"

    def report(self, execution: Execution) -> dict[str, Any]:
        """What the recipe read back, from its steps' outputs in an execution (its mode's report)."""
        return ISOLATION_MODES.get(self.mode).report(self, execution)

    def restore_problems(self, execution: Execution) -> list[str]:
        """What the teardown steps could not undo (tasks that could not move back, failed steps)."""
        names = {s.name for s in self.teardown if s.name}
        notes = {s.note for s in self.teardown}
        problems = [e["problem"] for e in execution.steps
                    if e.get("teardown") and "problem" in e and (e.get("name") in names or e["note"] in notes)]
        moved_back = cg.parse_key_values(execution.outputs.get("isolation.move_back", {}).get("stdout", ""))
        stuck = moved_back.get("not_moved", [])
        problems += [f"task {x}" for x in (stuck if isinstance(stuck, list) else [stuck])]
        return problems

    def info(self, execution: Execution) -> IsolationInfo:
        return IsolationInfo(self.mode, self.dut_cpus, self.housekeeping_cpus, Path(self.dut_procs_file),
                             report=self.report(execution))


@dataclass(frozen=True)
class IsolationMode:
    """One isolation mode: ``build(name, dut_cpus, hk_cpus, layout, role)`` returns its Recipe on the host of
    ``role`` (cgroup names from ``name(role_of_cgroup)``); ``status()`` says whether this host can run it (after
    the checks every mode shares: root, two online CPUs); ``report(recipe, execution)`` is what it read back."""

    build: Callable[[Callable[[str], str], str, str, CgroupLayout, str], Recipe]
    status: Callable[[], tuple[bool, str]]
    report: Callable[[Recipe, Execution], dict[str, Any]]


def _read(execution: Execution, name: str) -> dict[str, Any]:
    return cg.parse_key_values(execution.outputs.get(name, {}).get("stdout", ""))


def _build_none(name: Callable[[str], str], dut: str, hk_cpus: str, layout: CgroupLayout, role: str) -> Recipe:
    d = f"{layout.v1_cpuset}/{name('dut')}"
    steps, tear = dut_cpuset(role, d, dut, layout.v1_cpuset)
    return Recipe("none", dut, hk_cpus, d, steps, tear, procs_file="tasks")


def _report_none(rec: Recipe, execution: Execution) -> dict[str, Any]:
    return {"cgroup": rec.dut_cgroup, "note": "DuT pinned by its own cpuset; no housekeeping set",
            "read_back": _read(execution, "isolation.dut")}


def _build_v1(name: Callable[[str], str], dut: str, hk_cpus: str, layout: CgroupLayout, role: str) -> Recipe:
    hk_dir, d = f"{layout.v1_cpuset}/{name('hk')}", f"{layout.v1_cpuset}/{name('dut')}"
    hk_steps, hk_tear = housekeeping_cpuset(role, layout.v1_cpuset, hk_dir, hk_cpus)
    dut_steps, dut_tear = dut_cpuset(role, d, dut, layout.v1_cpuset, exclusive=True, load_balance=False)
    # the housekeeping set first (the DuT's exclusive CPU must not overlap it), its tasks moved last
    steps = hk_steps[:2] + dut_steps + hk_steps[2:]
    tear = hk_tear[:2] + dut_tear + hk_tear[2:]
    return Recipe("v1", dut, hk_cpus, d, steps, tear, housekeeping_cgroup=hk_dir, procs_file="tasks")


def _report_v1(rec: Recipe, execution: Execution) -> dict[str, Any]:
    dut = _read(execution, "isolation.dut")
    rep: dict[str, Any] = {
        "housekeeping_cgroup": rec.housekeeping_cgroup, "dut_cgroup": rec.dut_cgroup,
        "housekeeping_cpus": _read(execution, "isolation.hk").get("cpuset.cpus"), "dut_cpus": dut.get("cpuset.cpus"),
        "dut_sched_load_balance": dut.get("cpuset.sched_load_balance"),
        "root_sched_load_balance": _read(execution, "isolation.root").get("cpuset.sched_load_balance"),
        "dut_cpu_exclusive": dut.get("cpuset.cpu_exclusive"),
        **cg.move_report(execution.outputs.get("isolation.moved", {}).get("stdout", "")), "self_pid": os.getpid(),
    }
    rep["notes"] = {} if rep["dut_cpu_exclusive"] == "1" else {
        "dut.cpu_exclusive": "not set (a sibling cpuset overlaps the DuT's CPU, e.g. lxc.pivot)"}
    return rep


def _build_v2(name: Callable[[str], str], dut: str, hk_cpus: str, layout: CgroupLayout, role: str) -> Recipe:
    d = f"{layout.v2_root}/{name('dut')}"
    steps, tear = v2_partition(role, d, dut, root=layout.v2_root)
    if layout.systemctl:
        sl_steps, sl_tear = systemd_slices(role, hk_cpus)
        steps, tear = steps + sl_steps, sl_tear + tear
    return Recipe("v2", dut, hk_cpus, d, steps, tear)


def _report_v2(rec: Recipe, execution: Execution) -> dict[str, Any]:
    out = execution.outputs
    slices = [s for s in V2_SLICES if out.get(f"isolation.slice.{s}", {}).get("exit_code") == 0]
    return {"dut_cgroup": rec.dut_cgroup, "partition": _read(execution, "isolation.dut").get("cpuset.cpus.partition"),
            "allowed_cpus_slices": slices}


ISOLATION_MODES: Registry[IsolationMode] = Registry("isolation mode", {
    # "none" also uses a v1 cpuset (pure-v2 hosts: not implemented)
    "none": IsolationMode(_build_none, v1_cpuset_status, _report_none),
    "v1": IsolationMode(_build_v1, v1_cpuset_status, _report_v1),
    "v2": IsolationMode(_build_v2, v2_cpuset_status, _report_v2),
})


def recipe(mode: str, name: Callable[[str], str], dut_cpu: int, hk_cpus: str, layout: CgroupLayout,
           role: str = "") -> Recipe:
    """The steps of ``mode`` on the host of ``role`` (names of its cgroups from ``name(role_of_cgroup)``)."""
    if mode not in ISOLATION_MODES:
        raise NotRunnable(ISOLATION_MODES.unknown(mode))
    return ISOLATION_MODES.get(mode).build(name, str(dut_cpu), hk_cpus, layout, role)


# -------------------------------------------------------------------------------------------------
# running a recipe on this machine
# -------------------------------------------------------------------------------------------------
class _ThisMachine(StepEnv):
    def __init__(self, state: run_state.RunState, log: CommandLog) -> None:
        self.log = log
        self.state = state
        self._host = LocalHost(name="isolation", log=log)

    def host(self, role: str) -> Host:
        return self._host

    def note_restore(self, path: str, value: str) -> None:
        self.state.add_restore(path, value)


class Isolation:
    """A recipe applied on this machine for the duration of a with-block; its IsolationInfo reports what
    was read back, and after the block ``restore_problems``."""

    def __init__(self, mode: str, token: str, dut_cpu: int = 1, log: CommandLog | None = None) -> None:
        if mode not in ISOLATION_MODES:
            raise NotRunnable(ISOLATION_MODES.unknown(mode))
        self.mode = mode
        self.token = token
        self.dut_cpu = dut_cpu
        self.log = log or CommandLog()
        self.lock_timeout_s = 300.0
        self.info: IsolationInfo | None = None
        self._executor: Executor | None = None
        self._recipe: Recipe | None = None
        self._lock: FileLock | None = None
        self._state: run_state.RunState | None = None

    def __enter__(self) -> IsolationInfo:
        ok, why = mode_status(self.mode)
        if not ok:
            raise NotRunnable(why)
        self._lock = host_lock(self.lock_timeout_s)
        try:
            # a killed earlier run may have left its recipe applied: undo it before reading "previous" values
            sweep_leftovers()
            self._state = run_state.acquire(self.token)
            _, hk = cpu_split(self.dut_cpu, cg.online_cpus())
            self._recipe = recipe(self.mode, lambda r: make_name(self.token, r), self.dut_cpu, hk, CgroupLayout.here())
            self._executor = Executor(_ThisMachine(self._state, self.log))
            self._executor.run(self._recipe.steps)
            error = self._executor.execution.error
            if error is not None:
                raise cg.CgroupError(f"isolation {self.mode}: {error}")
            self.info = self._recipe.info(self._executor.execution)
        except BaseException:
            self._restore()
            raise
        return self.info

    def _restore(self) -> list[str]:
        problems: list[str] = []
        with deferred_signals():
            try:
                if self._executor is not None and self._recipe is not None:
                    self._executor.cleanup(self._recipe.teardown)
                    problems = self._recipe.restore_problems(self._executor.execution)
            finally:
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


def host_lock(timeout_s: float = 300.0) -> FileLock:
    """One CPU isolation at a time on this machine (two recipes would fight over the same tasks and
    settings): a FileLock on <state dir>/cpu-isolation.lock, released by release() or when the
    process dies."""
    lock = FileLock(run_state.STATE_DIR / "cpu-isolation.lock", timeout_s=timeout_s, description="CPU isolation")
    try:
        return lock.acquire()
    except LockBusy as exc:
        raise NotRunnable(f"another benchbook run kept the CPU isolation lock for {timeout_s:g} s "
                          f"({describe_holder(exc.holder)})") from None


def isolation(mode: str, token: str, dut_cpu: int = 1) -> Isolation:
    return Isolation(mode, token, dut_cpu)
