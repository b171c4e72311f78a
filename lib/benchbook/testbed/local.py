"""The local emulated testbed: roles in network namespaces joined by veth pairs, and the ``local`` backend.

    with LocalBackend().topology() as tb:        # sweeps dead runs' leftovers first
        tb.host("dut").run(["ip", "link"])        # inside bb-<token>-dut
        p = tb.host("ts").start(["tcpdump", ...]) # tracked, interrupted at teardown
    # namespaces, veths, tracked processes and DPDK runtime dirs are gone here,
    # also when the body raised, on Ctrl-C and on SIGTERM.

Each role is a `LocalHost` inside its namespace; all of them share the testbed's command log. The
topology's bring-up and teardown are steps (`LocalTestbed.steps`), run by the plan executor of
:mod:`benchbook.testbed.plan` - on their own (``up``/``down``) or as part of a latency point's plan
(`LocalBackend.plan`, built by :mod:`benchbook.testbed.local_point`; `LocalBackend.execute`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.testbed import local_point
from benchbook.testbed import state as run_state
from benchbook.testbed.cleanup import leftovers, sweep_leftovers
from benchbook.testbed.isolation import host_lock, mode_status
from benchbook.testbed.names import make_name, new_token
from benchbook.testbed.plan import Executor, Measurement, Plan, PlanError, Step, StepEnv, execute
from benchbook.testbed.signals import deferred_signals, terminate_raises
from benchbook.testbed.topology import BUILTIN, Topology, loadgen_dut_timestamper
from benchbook.tools import loadgen, perf
from benchbook.tools.host import CommandLog, CommandResult, LocalHost, RunningCommand


def probe_local() -> dict[str, Any]:
    """What the local backend needs: root, `ip` with netns support, veth."""
    out: dict[str, Any] = {"root": os.geteuid() == 0, "ip": shutil.which("ip") is not None}
    out["runnable"] = out["root"] and out["ip"]
    if not out["root"]:
        out["reason"] = "local testbed needs root (network namespaces, veth)"
    elif not out["ip"]:
        out["reason"] = "iproute2 (`ip`) not installed"
    return out


JOINS = "   # in cgroup "   # a rendered start step's process enters the cgroup of this cgroup.procs file first


class TestbedError(BenchbookError, RuntimeError):
    """The local topology could not be brought up; the message names the step that failed."""


class LocalTestbed(StepEnv):
    """A topology brought up on this host. Use as a context manager (or run its steps in a plan)."""

    def __init__(self, topology: Topology, token: str | None = None, log: CommandLog | None = None) -> None:
        topology.validate()
        self.topology = topology
        self.token = token or new_token()
        self.log = log or CommandLog()
        self._procs: list[RunningCommand] = []
        self._state: run_state.RunState | None = None
        self._guard: Any = None
        self._executor: Executor | None = None

    # names -------------------------------------------------------------------------------
    def netns(self, role: str) -> str:
        if role not in self.topology.roles:
            raise KeyError(f"topology {self.topology.name!r} has no role {role!r}")
        return make_name(self.token, role)

    def ifname(self, short: str) -> str:
        self.topology.endpoint(short)
        return make_name(self.token, short, interface=True)

    def role_of(self, short: str) -> str:
        return self.topology.endpoint(short).role

    def mac(self, short: str) -> str:
        info = json.loads(self.run(self.role_of(short), ["ip", "-j", "link", "show", self.ifname(short)]).stdout)
        return str(info[0]["address"])

    def describe(self) -> dict[str, Any]:
        return {
            "backend": "local", "token": self.token, "topology": self.topology.name,
            "namespaces": {r: self.netns(r) for r in self.topology.roles},
            "links": [[f"{ln.a.role}:{self.ifname(ln.a.ifname)}", f"{ln.b.role}:{self.ifname(ln.b.ifname)}"]
                      for ln in self.topology.links],
        }

    # commands ----------------------------------------------------------------------------
    def host(self, role: str | None) -> LocalHost:
        """The host of a role (inside its namespace; None or "": this machine's namespaces). Processes
        it starts are tracked and stopped at teardown."""
        return LocalHost(name=role or "local", netns=self.netns(role) if role else None, log=self.log,
                         on_start=self._track)

    def note_restore(self, path: str, value: str) -> None:
        if self._state is not None:
            self._state.add_restore(path, value)

    def _track(self, cmd: RunningCommand) -> None:
        self._procs.append(cmd)
        if self._state is not None:
            self._state.add_pid(cmd.pid, cmd.record.what or cmd.argv[0])

    def run(self, role: str | None, argv: Sequence[str], check: bool = True,
            timeout_s: float | None = 60.0) -> CommandResult:
        return self.host(role).run(argv, check=check, timeout_s=timeout_s)

    # life cycle --------------------------------------------------------------------------
    def setup_commands(self) -> list[tuple[str | None, list[str], bool]]:
        """(role or None for this machine's namespaces, argv, check) that bring the topology up, in order."""
        cmds: list[tuple[str | None, list[str], bool]] = []
        for role in self.topology.roles:
            cmds.append((None, ["ip", "netns", "add", self.netns(role)], True))
            cmds.append((role, ["ip", "link", "set", "lo", "up"], True))
        for link in self.topology.links:
            a, b = self.ifname(link.a.ifname), self.ifname(link.b.ifname)
            cmds.append((None, ["ip", "link", "add", a, "netns", self.netns(link.a.role), "type", "veth",
                                "peer", "name", b, "netns", self.netns(link.b.role)], True))
            for ep, name in ((link.a, a), (link.b, b)):
                # no IPv6 autoconfiguration chatter on the measured links
                cmds.append((ep.role, ["sysctl", "-q", "-w", f"net.ipv6.conf.{name}.disable_ipv6=1"], False))
                if ep.address:
                    cmds.append((ep.role, ["ip", "addr", "add", ep.address, "dev", name], True))
                if ep.promisc:
                    cmds.append((ep.role, ["ip", "link", "set", name, "promisc", "on"], True))
                cmds.append((ep.role, ["ip", "link", "set", name, "up"], True))
        return cmds

    def steps(self) -> tuple[list[Step], list[Step]]:
        """The steps that bring the topology up, and the teardown steps that remove it (the processes left in
        a namespace killed first; nothing to do for a namespace that is not there)."""
        setup = [Step("run", role or "", argv, check=check) for role, argv, check in self.setup_commands()]
        teardown = []
        for role in reversed(self.topology.roles):
            ns = self.netns(role)
            teardown.append(Step("run", "", ["sh", "-c", f"test ! -e /run/netns/{ns} || "
                                                         f"{{ kill -KILL $(ip netns pids {ns}) 2>/dev/null; "
                                                         f"ip netns del {ns}; }}"],
                                 teardown=True, check=False, note=f"namespace {ns} removed, its processes killed"))
        return setup, teardown

    def up(self) -> LocalTestbed:
        self._state = run_state.acquire(self.token)
        self._executor = Executor(self)
        setup, _ = self.steps()
        try:
            self._executor.run(setup)
        except BaseException:
            self.down()
            raise
        error = self._executor.execution.error
        if error is not None:
            self.down(reraise=True)
            raise TestbedError(f"topology {self.topology.name!r} could not be brought up: {error}")
        return self

    def stop_processes(self, grace_s: float = 3.0) -> None:
        for cmd in self._procs:
            cmd.interrupt()
        deadline = time.monotonic() + grace_s
        for cmd in self._procs:
            try:
                cmd.wait(timeout_s=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                cmd.kill()
        self._procs.clear()

    def down(self, reraise: bool = False) -> list[str]:
        """Remove everything; returns the errors met (teardown never stops half-way). With reraise, a Ctrl-C
        met while bringing it up is raised again once everything is removed."""
        with deferred_signals():
            executor, self._executor = self._executor or Executor(self), None
            _, teardown = self.steps()
            try:
                executor.cleanup(teardown)   # stops the processes, then removes the namespaces
            except KeyboardInterrupt:
                if reraise:
                    raise
            finally:
                self._release()
        return list(executor.execution.cleanup_problems)

    def _release(self) -> None:
        for d in Path("/var/run/dpdk").glob(f"bb-{self.token}-*"):
            shutil.rmtree(d, ignore_errors=True)
        if self._state is not None:
            run_state.release(self.token)
            self._state = None

    @contextlib.contextmanager
    def session(self) -> Iterator[LocalTestbed]:
        """Owning the run token while a plan's steps run here (SIGTERM raises, as Ctrl-C does); afterwards
        whatever still runs is stopped, the DPDK runtime files are removed and the token is released."""
        with terminate_raises():
            self._state = run_state.acquire(self.token)
            try:
                yield self
            finally:
                with deferred_signals():
                    try:
                        self.stop_processes()
                    finally:
                        self._release()

    def __enter__(self) -> LocalTestbed:
        self._guard = terminate_raises()
        self._guard.__enter__()
        try:
            return self.up()
        except BaseException:
            self._guard.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.down()
        finally:
            self._guard.__exit__(None, None, None)


class LocalBackend:
    """Backend "local": builds topologies on this host, and plans and executes latency points there."""

    name = "local"

    def __init__(self, sweep: bool = True, log: CommandLog | None = None, dry_run: bool = False,
                 inventory: str | None = None, probe: bool = False) -> None:
        if inventory is not None:
            raise ValueError(f"backend 'local' runs on this machine: it takes no inventory (got {inventory!r}); "
                             "backend 'testbed' runs on an inventory's hosts")
        self.sweep = sweep
        self.log = log or CommandLog()
        self.dry_run = dry_run
        self.substitutions: list[dict[str, str]] = []      # of the last plan

    def probe(self) -> dict[str, Any]:
        return probe_local()

    def topology(self, topology: Topology | str = "loadgen-dut-timestamper", token: str | None = None) -> LocalTestbed:
        if isinstance(topology, str):
            if topology in BUILTIN:
                topology = BUILTIN[topology]()
            else:
                topology = Topology.from_toml(Path(topology))
        if self.sweep:
            sweep_leftovers(LocalHost(name="cleanup", log=self.log))
        return LocalTestbed(topology, token=token, log=self.log)

    # --- the latency point: plan, dry run, execution ------------------------------------
    def mode_status(self, modes: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Per isolation mode: runnable on this machine? (with the reason)"""
        return {m: dict(zip(("runnable", "reason"), mode_status(m), strict=True)) for m in modes}

    def plan(self, m: Measurement) -> Plan:
        """Every step of one latency point on this machine (see benchbook.testbed.local_point)."""
        tb = LocalTestbed(loadgen_dut_timestamper(), token=m.run_token, log=self.log)
        plan = local_point.plan_point(tb, m)
        self.substitutions = plan.facts["substitutions"]
        return plan

    def render(self, plan: Plan) -> dict[str, list[str]]:
        """Per host ("local": this machine's namespaces), its command lines as run from here, in order; steps
        that are not commands (waiting, stopping a started process) as comments."""
        tb = LocalTestbed(loadgen_dut_timestamper(), token=plan.measurement.run_token)
        out: dict[str, list[str]] = {"local": [], "lg": [], "dut": [], "ts": []}
        for s in plan.steps:
            line = shlex.join(tb.host(s.role).argv(s.argv)) if s.kind in ("run", "start") and s.argv else s.comment()
            if s.options.get("join_cgroup"):
                line += f"{JOINS}{s.options['join_cgroup']}"
            out[s.role or "local"].append(line)
        return out

    def execute(self, plan: Plan, log: CommandLog) -> dict[str, Any]:
        """Run the plan on this machine (its commands into ``log``): dead runs' leftovers swept first, one CPU
        isolation at a time on this host, the teardown steps also after a failure, Ctrl-C or SIGTERM."""
        if self.dry_run:
            raise RuntimeError("LocalBackend is in dry-run mode: use render(), or dry_run=False to execute")
        m = plan.measurement
        if not m.token:
            raise PlanError("a plan to execute needs its run token (Measurement.token); a dry run's has none")
        if any(s.tool == "bb-loadgen" for s in plan.steps):
            loadgen.ensure_binary()
        tb = LocalTestbed(loadgen_dut_timestamper(), token=m.token, log=log)
        lock = host_lock() if plan.facts.get("recipe") else None
        try:
            if self.sweep:   # not a step of the plan: what it removed is recorded with the point
                swept = sweep_leftovers(LocalHost(name="cleanup"))
            with tb.session():
                execution = execute(plan.steps, tb, step_timeout_s=max(60.0, 3.0 * m.duration_s + 60.0))
        finally:
            if lock is not None:
                lock.release()
        record = local_point.point_record(plan, execution)
        record["testbed"] = tb.describe()
        if self.sweep and swept.removed:
            record["swept_before"] = swept.removed
        return record

    def capability_lines(self, m: Measurement | None = None) -> list[dict[str, str]]:
        """perf's hardware counters here, and what this backend substitutes for the paper's set-up (for ``m``,
        else for the last plan)."""
        hw = perf.hardware_counters_supported()
        return [{"capability": "perf hardware counters (instructions, branches)",
                 "status": "present" if hw else "missing", "detail": "perf stat -e instructions counts" if hw
                 else "perf stat reports <not supported>: recorded as missing, not zero"},
                *(local_point.substitutions(m.dut_kind) if m is not None else self.substitutions)]

    def leftovers(self, tokens: set[str]) -> dict[str, list[str]]:
        """What of these runs is left on this machine (namespaces, links, cgroups, DPDK files)."""
        return leftovers(tokens)
