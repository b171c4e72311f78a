"""Plans as data: a backend turns one measurement into an ordered list of `Step`s; one executor runs them.

A `Step` is one command on the host of a role (``run`` to completion, ``start`` in the background,
``stop`` what a ``start`` step started), or one action on this machine (``wait``, ``file``: write a file,
``put``/``fetch``: copy a file to or from the role's host). It says what it produces (files, and run-time
values later steps use) and whether it is a cleanup step (``teardown``). A dry run prints the steps; the
executor (`execute`) runs the same steps on each role's `Host`, every command through the one
`CommandLog`:

- the steps run in order; after a failed step (or Ctrl-C / SIGTERM) only the ``always`` steps still
  run (stopping what was started, collecting what was measured), then every ``teardown`` step runs,
  with signals deferred, whatever happened before; Ctrl-C is raised again once everything is cleaned up;
- a value known only at run time appears in the plan as a placeholder (`RUNTIME_VALUES`, e.g.
  ``DUT_PID``), set by the step that produces it (a started process's pid, or what a ``run`` step
  printed) and substituted into later steps; a step whose placeholder has no value is skipped (its
  producer did not run);
- a step with a ``tool`` is run with that program's own handling from :mod:`benchbook.tools` (tcpdump
  waits until it listens and checks its file, testpmd until it forwards, bb-loadgen's report is parsed,
  perf's counters are read), with the same argv.

Names on the hosts carry the run token; a dry run shows `DRY_RUN_TOKEN`.
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.testbed.procinfo import cpus_allowed
from benchbook.testbed.signals import deferred_signals
from benchbook.testbed.ssh_host import remote_command
from benchbook.tools import loadgen, perf, tcpdump, testpmd
from benchbook.tools.host import CommandError, CommandLog, Host, RunningCommand, describe_exit

KINDS = ("run", "start", "stop", "wait", "file", "put", "fetch")
DRY_RUN_TOKEN = "000000"      # the run token a dry run shows (a real run draws a fresh one)
DRY_RUN_DIR = "RUN"           # the output directory as a dry run shows it

# placeholders for values known only at run time: name -> what it stands for
RUNTIME_VALUES: dict[str, str] = {
    "DUT_PID": "the pid of the DuT process (known once it started)",
    "DUT_INGRESS_MAC": "the MAC address of the DuT's ingress interface (the load generator's destination)",
    "SINK_MAC": "the MAC address of the sink's interface (the ip-forward DuT's static neighbour)",
    "ROOT_SCHED_LOAD_BALANCE": "the v1 root cpuset's sched_load_balance before the recipe (written back after)",
    "V2_CPUSET_CONTROLLER": "'enabled' when the v2 recipe enabled the cpuset controller of the cgroup2 root "
                            "(disabled again after), 'kept' when it was on already",
}
_PLACEHOLDER_RE = re.compile(r"\b(" + "|".join(sorted(RUNTIME_VALUES, key=len, reverse=True)) + r")\b")


class PlanError(RuntimeError):
    """A plan is malformed (an unknown step kind, a stop without its start)."""


@dataclass
class Step:
    """One step of a plan (see the module docstring).

    kind: ``run`` (argv on the role's host; ``["sh", "-c", SCRIPT]`` for shell lines), ``start`` (argv in
    the background, named ``name``), ``stop`` (the process started as ``name``), ``put`` (copy ``local``
    to ``remote`` on the host), ``fetch`` (copy ``remote`` to ``local``), ``file`` (write ``content`` to
    ``local`` on this machine) or ``wait`` (``seconds``). role "" is this machine without a host."""

    kind: str
    role: str = ""
    argv: list[str] = field(default_factory=list)
    note: str = ""
    check: bool = True
    teardown: bool = False        # a cleanup step: runs after the others, also after a failure or Ctrl-C
    seconds: float = 0.0
    content: str = ""
    local: str = ""
    remote: str = ""
    always: bool = False          # runs also after a failed step (collection, stopping what was started)
    name: str = ""                # start/stop: the process; run: the key of its output in Execution.outputs
    produces: tuple[str, ...] = ()  # files it writes, and the RUNTIME_VALUES it sets
    tool: str = ""                # run/start/stop with that program's handling: tcpdump, testpmd, perf, bb-loadgen
    options: dict[str, Any] = field(default_factory=dict)  # join_cgroup, ready, what, timeout_s, restore, open

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PlanError(f"step kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    @property
    def remote_line(self) -> str:
        """What the host's shell gets (kind ``run``/``start``)."""
        return remote_command(self.argv)

    def placeholders(self) -> set[str]:
        """The run-time values this step needs (RUNTIME_VALUES named in its argv, content or restore)."""
        text = " ".join([*self.argv, self.content, *map(str, self.options.get("restore", ()))])
        return set(_PLACEHOLDER_RE.findall(text))

    def runtime_values(self) -> list[str]:
        """The run-time values this step sets."""
        return [p for p in self.produces if p in RUNTIME_VALUES]

    def comment(self) -> str:
        """How a dry run shows a step that is not a command line."""
        if self.kind == "wait":
            return f"# wait {self.seconds:g} s" + (f": {self.note}" if self.note else "")
        if self.kind == "stop":
            return f"# stop {self.name}" + (f": {self.note}" if self.note else "")
        return f"# {self.note}" if self.note else "#"


def substitute(text: str, values: dict[str, str]) -> str:
    """text with every placeholder that has a value replaced by it."""
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(1)), text)


@dataclass
class Measurement:
    """One latency point, as every backend plans it: what the cgroup-latency experiment varies, the DuT,
    and where its files go (``run_dir``: the point's directory on this machine)."""

    run_id: str
    cgroup_mode: str = "v2"             # isolation recipe: "none" | "v1" | "v2"
    rate_pps: float = 1.52e6
    frame_size: int = 64                # bytes incl. FCS, as MoonGen counts
    duration_s: float = 60
    repetition: int = 0
    perf_events: tuple[str, ...] = ("instructions", "branches", "cpu-migrations", "context-switches", "task-clock")
    container: str = "bb-dut"           # ssh: the DuT's LXC container
    timestamper: str = "moonsniff"      # ssh: "moonsniff" (DPDK, hardware timestamps) | "tcpdump" (kernel NICs)
    token: str = ""                     # run token of what the plan names on the hosts ("": DRY_RUN_TOKEN)
    run_dir: str = "RUN_DIR"            # the point's directory on this machine
    dut_kind: str = "testpmd"           # local: a kind of benchbook.testbed.dut
    dut_cpu: int = 1                    # local: the DuT core
    perf_repeats: int = 3               # local: perf stat -r
    settle_s: float = 0.5               # local: wait after sending before the captures stop

    def rate_mbit(self) -> float:
        """l2-load-latency takes Mbit/s; MoonGen's rate counts the frame with its 4-byte CRC
        (size + 4 bytes), not preamble and gap. Recorded with the run."""
        return round(self.rate_pps / 1e6 * (self.frame_size + 4) * 8, 3)

    @property
    def run_token(self) -> str:
        return self.token or DRY_RUN_TOKEN


@dataclass
class Plan:
    """The steps of one measurement on one backend, and what the plan was made from."""

    backend: str
    measurement: Measurement
    steps: list[Step]
    facts: dict[str, Any] = field(default_factory=dict)   # what it was made from (ssh: choices; local: recipe, DuT)

    def __iter__(self) -> Any:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)


class StepEnv:
    """Where a plan's steps run: the host of each role and the one command log. Backends override
    ``host``; ``note_restore`` records a host setting's previous value (the local backend keeps it in the
    run's state file, so the start-up sweep can write it back after a SIGKILL); ``stop_processes`` stops
    whatever is still running before the teardown steps."""

    log: CommandLog

    def host(self, role: str) -> Host:  # pragma: no cover - abstract
        raise NotImplementedError

    def note_restore(self, path: str, value: str) -> None:
        return None

    def stop_processes(self) -> None:
        return None


@dataclass
class Execution:
    """What running a plan did: per step its exit code, seconds and commands (their numbers in the command
    log), the run-time values, the outputs of named steps, and the first failure."""

    status: str = "complete"                # complete | failed | interrupted
    error: str | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    not_collected: list[str] = field(default_factory=list)
    cleanup_problems: list[str] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        rec = {"status": self.status, "error": self.error, "steps": self.steps, "values": dict(self.values)}
        if self.not_collected:
            rec["not_collected"] = list(self.not_collected)
        if self.cleanup_problems:
            rec["cleanup_problems"] = list(self.cleanup_problems)
        return rec


class Executor:
    """Runs the steps of a plan on ``env`` (see the module docstring for the order and the failure rules)."""

    def __init__(self, env: StepEnv, step_timeout_s: float = 60.0,
                 describe: Callable[[Step, list[str]], str] | None = None) -> None:
        self.env = env
        self.step_timeout_s = step_timeout_s
        self.describe = describe or (lambda s, argv: shlex.join(env.host(s.role).argv(argv)))
        self.execution = Execution()
        self._started: dict[str, Any] = {}
        self._interrupt: BaseException | None = None

    # --- the two phases ---------------------------------------------------------------
    def run(self, steps: list[Step]) -> None:
        """The steps that are not teardown steps, in order."""
        ex = self.execution
        for n, s in enumerate(steps, 1):
            if s.teardown or (ex.error is not None and not s.always):
                continue
            try:
                problem = self._step(n, s)
            except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM inside terminate_raises (Terminated)
                self._interrupt = self._interrupt or exc
                if ex.error is None:
                    ex.status, ex.error = "interrupted", f"interrupted at step {n} ({s.note or s.kind}): {exc!r}"
                continue
            if problem is None:
                continue
            if s.check and ex.error is None:
                ex.status, ex.error = "failed", problem
            elif s.always and ex.error is None:
                ex.status, ex.error = "failed", problem
            elif s.always:
                ex.not_collected.append(f"{s.role or 'local'}: {s.note or s.kind} ({problem})")

    def cleanup(self, steps: list[Step]) -> None:
        """Whatever still runs is stopped, then every teardown step runs (signals deferred); a Ctrl-C met
        in run() is raised again afterwards."""
        with deferred_signals():
            for name, handle in list(self._started.items()):
                if isinstance(handle, _Context):
                    self._stop_context(name, handle)
            try:
                self.env.stop_processes()
            except Exception as exc:  # keep cleaning up
                self.execution.cleanup_problems.append(f"stopping processes: {exc}")
            for n, s in enumerate(steps, 1):
                if not s.teardown:
                    continue
                try:
                    problem = self._step(n, s)
                except Exception as exc:  # every teardown step runs
                    problem = f"{type(exc).__name__}: {exc}"
                if problem is not None:
                    self.execution.cleanup_problems.append(problem)
        if self._interrupt is not None:
            raise self._interrupt

    # --- one step -------------------------------------------------------------------------
    def _step(self, n: int, s: Step) -> str | None:
        ex = self.execution
        entry: dict[str, Any] = {"n": n, "kind": s.kind, "role": s.role, "note": s.note}
        if s.name:
            entry["name"] = s.name
        if s.teardown:
            entry["teardown"] = True
        missing = sorted(p for p in s.placeholders() if p not in ex.values)
        if missing:
            entry["skipped"] = f"no value for {', '.join(missing)} (the step producing it did not run)"
            ex.steps.append(entry)
            return None if s.teardown else entry["skipped"]
        argv = [substitute(a, ex.values) for a in s.argv]
        if "restore" in s.options:
            path, value = s.options["restore"]
            self.env.note_restore(path, substitute(value, ex.values))
        log = self.env.log
        first = len(log.records)
        t0 = time.monotonic()
        rc: int | None = 0
        problem: str | None = None
        try:
            rc, problem = getattr(self, f"_{s.kind}")(n, s, argv)
        finally:
            entry.update(exit_code=rc, seconds=round(time.monotonic() - t0, 3),
                         commands=[r.n for r in log.since(first)])
            if problem is not None:
                entry["problem"] = problem
            ex.steps.append(entry)
        return problem

    def _failed(self, n: int, s: Step, argv: list[str], rc: int, stderr: str = "") -> str:
        where = f"; see {self.env.log.directory}/cmd/" if self.env.log.directory is not None else ""
        last = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        tail = f": {last[-1].strip()}" if last else ""
        return f"step {n} ({self.describe(s, argv)}) failed with {describe_exit(rc)}{tail}{where}"

    def _wait(self, n: int, s: Step, argv: list[str]) -> tuple[int, None]:
        time.sleep(s.seconds)
        return 0, None

    def _file(self, n: int, s: Step, argv: list[str]) -> tuple[int, None]:
        Path(s.local).parent.mkdir(parents=True, exist_ok=True)
        Path(s.local).write_text(substitute(s.content, self.execution.values))
        return 0, None

    def _put(self, n: int, s: Step, argv: list[str]) -> tuple[int, str | None]:
        r = self.env.host(s.role).put(s.local, s.remote, check=False)  # type: ignore[attr-defined]
        return r.exit_code, None if r.exit_code == 0 else self._failed(n, s, argv, r.exit_code, r.stderr)

    def _fetch(self, n: int, s: Step, argv: list[str]) -> tuple[int, str | None]:
        host = self.env.host(s.role)
        host.fetch(s.remote, s.local, check=False)  # type: ignore[call-arg]
        rec = self.env.log.records[-1]
        rc = rec.exit_code or 0
        return rc, None if rc == 0 else self._failed(n, s, argv, rc)

    def _run(self, n: int, s: Step, argv: list[str]) -> tuple[int, str | None]:
        host = self.env.host(s.role)
        timeout_s = s.options.get("timeout_s", self.step_timeout_s)
        if s.tool == "bb-loadgen":
            try:
                self.execution.outputs[s.name or "loadgen"] = loadgen.run_argv(host, argv, timeout_s)
            except loadgen.LoadgenError as exc:
                return self.env.log.records[-1].exit_code or 1, str(exc)
            return 0, None
        r = host.run(argv, check=False, timeout_s=timeout_s, what=s.options.get("what", s.note))
        if s.name:
            self.execution.outputs[s.name] = {"exit_code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr}
        if r.exit_code != 0:
            return r.exit_code, self._failed(n, s, argv, r.exit_code, r.stderr)
        for value in s.runtime_values():
            self.execution.values[value] = r.stdout.strip()
        return 0, None

    def _start(self, n: int, s: Step, argv: list[str]) -> tuple[int | None, str | None]:
        host = self.env.host(s.role)
        name = s.name or argv[0]
        out: dict[str, Any] = {"argv": host.argv(argv)}
        try:
            if s.tool == "tcpdump":
                handle: Any = tcpdump.start_capture(host, argv, s.produces[0], what=s.options.get("what", "tcpdump"))
                pid = handle.command.pid
            elif s.tool == "testpmd":
                handle = testpmd.start_testpmd(host, argv, join_cgroup=s.options.get("join_cgroup"))
                pid = handle.pid
            elif s.tool == "perf":
                handle = perf.start_argv(host, argv)
                pid = handle.command.pid
            elif s.tool == "context":   # a DuT kind that runs itself (its commands go to the log as they run)
                handle = _Context(s.options["open"](self.env))
                running = handle.enter()
                pid = running.pid
                out.update(handle.describe())
                if running.dst_mac:
                    self.execution.values["DUT_INGRESS_MAC"] = running.dst_mac
            else:
                handle = host.start(argv, what=s.options.get("what", ""), join_cgroup=s.options.get("join_cgroup"))
                pid = handle.pid
                ready = s.options.get("ready")
                if ready and not handle.wait_for(ready[1], ready[0], s.options.get("ready_timeout_s", 20.0)):
                    handle.kill()
                    return None, f"step {n}: {name} did not print {ready[1]!r}: {handle.output(ready[0])[-500:]}"
        except (CommandError, tcpdump.CaptureError, testpmd.TestpmdError, perf.PerfError, OSError) as exc:
            self.execution.outputs[name] = {**out, "error": str(exc)}
            return None, str(exc)
        except Exception as exc:  # a DuT kind's own error (NotRunnable, LxcError, ...)
            self.execution.outputs[name] = {**out, "error": f"{type(exc).__name__}: {exc}"}
            return None, f"{type(exc).__name__}: {exc}"
        self._started[name] = handle
        out["pid"] = pid
        if pid is not None:
            out["cpus_allowed"] = cpus_allowed(pid)   # where it may run (its cgroup's CPUs)
        self.execution.outputs[name] = out
        for value in s.runtime_values():
            if value.endswith("_PID") and pid is not None:   # a started process's value is its pid
                self.execution.values[value] = str(pid)
        return None, None

    def _stop(self, n: int, s: Step, argv: list[str]) -> tuple[int | None, str | None]:
        handle = self._started.pop(s.name, None)
        if handle is None:
            return None, None           # never started (an earlier step failed): nothing to stop
        out = self.execution.outputs.setdefault(s.name, {})
        if isinstance(handle, tcpdump.Capture):
            out.update(handle.stop())
            return out.get("exit_code"), handle.problem()
        if isinstance(handle, testpmd.TestpmdProcess):
            ended = handle.command.poll()   # not None: testpmd ended before it was stopped
            stats = handle.stop()
            out["stats"] = {**stats, "log_tail": "".join(handle.lines[-60:])}
            if ended is None:
                return stats.get("exit_code"), None
            path = handle.command.log.path(handle.command.record.stdout)
            return ended, (f"dpdk-testpmd (pid {handle.pid}) ended during the measurement ({describe_exit(ended)})"
                           + (f"; its output: {path}" if path is not None else ""))
        if isinstance(handle, perf.PerfRun):
            out.update(status="run", **handle.finish())
            return out.get("exit_code"), None
        if isinstance(handle, _Context):
            return None, self._stop_context(s.name, handle)
        assert isinstance(handle, RunningCommand)
        code = handle.interrupt_and_wait(s.options.get("timeout_s", 20.0))
        out["exit_code"] = code
        return code, None

    def _stop_context(self, name: str, handle: _Context) -> str | None:
        self._started.pop(name, None)
        out = self.execution.outputs.setdefault(name, {})
        problem = handle.exit()
        out["stats"] = handle.stats()
        return problem


class _Context:
    """A DuT kind that runs itself: a context manager yielding a RunningDuT (benchbook.testbed.dut)."""

    def __init__(self, cm: Any) -> None:
        self.cm = cm
        self.running: Any = None

    def enter(self) -> Any:
        self.running = self.cm.__enter__()
        return self.running

    def describe(self) -> dict[str, Any]:
        return {"description": dict(self.running.description)} if self.running is not None else {}

    def stats(self) -> dict[str, Any]:
        return dict(self.running.stats) if self.running is not None else {}

    def exit(self) -> str | None:
        try:
            self.cm.__exit__(None, None, None)
        except Exception as exc:  # the DuT's failure is the step's problem
            return f"{type(exc).__name__}: {exc}"
        return None


def execute(steps: list[Step], env: StepEnv, step_timeout_s: float = 60.0,
            describe: Callable[[Step, list[str]], str] | None = None) -> Execution:
    """Run every step on ``env``; the teardown steps run whatever happened (see the module docstring)."""
    ex = Executor(env, step_timeout_s, describe)
    try:
        ex.run(steps)
    finally:
        ex.cleanup(steps)
    return ex.execution
