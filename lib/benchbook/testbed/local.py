"""The local emulated testbed: roles in network namespaces joined by veth pairs.

    with LocalBackend().topology() as tb:        # sweeps dead runs' leftovers first
        tb.host("dut").run(["ip", "link"])        # inside bb-<token>-dut
        p = tb.host("ts").start(["tcpdump", ...]) # tracked, interrupted at teardown
    # namespaces, veths, tracked processes and DPDK runtime dirs are gone here,
    # also when the body raised, on Ctrl-C and on SIGTERM.

Each role is a `LocalHost` inside its namespace; all of them share the testbed's command log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchbook.testbed import state as run_state
from benchbook.testbed.names import make_name, new_token
from benchbook.testbed.signals import deferred_signals, terminate_raises
from benchbook.testbed.topology import BUILTIN, Topology
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


class LocalTestbed:
    """A topology brought up on this host. Use as a context manager."""

    def __init__(self, topology: Topology, token: str | None = None, log: CommandLog | None = None) -> None:
        topology.validate()
        self.topology = topology
        self.token = token or new_token()
        self.log = log or CommandLog()
        self._procs: list[RunningCommand] = []
        self._state: run_state.RunState | None = None
        self._guard: Any = None
        self._created_ns: list[str] = []

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
        """The host of a role (inside its namespace; None: this machine's namespaces). Processes
        it starts are tracked and stopped at teardown."""
        return LocalHost(name=role or "local", netns=self.netns(role) if role else None, log=self.log,
                         on_start=self._track)

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

    def up(self) -> LocalTestbed:
        self._state = run_state.acquire(self.token)
        try:
            for role, argv, check in self.setup_commands():
                if argv[:3] == ["ip", "netns", "add"]:
                    self._state.add_resource("netns", argv[3])
                    self.run(None, argv)
                    self._created_ns.append(argv[3])
                else:
                    self.run(role, argv, check=check)
        except BaseException:
            self.down()
            raise
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

    def down(self) -> list[str]:
        """Remove everything; returns the errors met (teardown never stops half-way)."""
        errors: list[str] = []
        with deferred_signals():
            try:
                self.stop_processes()
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                errors.append(f"stopping processes: {exc}")
            root = self.host(None)
            for ns in reversed(self._created_ns):
                _kill_netns_pids(root, ns)
                r = root.run(["ip", "netns", "del", ns], check=False)
                if r.returncode != 0 and Path(f"/run/netns/{ns}").exists():
                    errors.append(f"ip netns del {ns}: {r.stderr.strip()}")
            self._created_ns.clear()
            for d in Path("/var/run/dpdk").glob(f"bb-{self.token}-*"):
                shutil.rmtree(d, ignore_errors=True)
            if self._state is not None:
                run_state.release(self.token)
                self._state = None
        return errors

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


def _kill_netns_pids(host: LocalHost, ns: str) -> None:
    r = host.run(["ip", "netns", "pids", ns], check=False)
    for tok in r.stdout.split():
        try:
            os.kill(int(tok), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


class LocalBackend:
    """Backend "local": builds topologies on this host."""

    name = "local"

    def __init__(self, sweep: bool = True, log: CommandLog | None = None) -> None:
        self.sweep = sweep
        self.log = log or CommandLog()

    def probe(self) -> dict[str, Any]:
        return probe_local()

    def topology(self, topology: Topology | str = "loadgen-dut-timestamper", token: str | None = None) -> LocalTestbed:
        if isinstance(topology, str):
            if topology in BUILTIN:
                topology = BUILTIN[topology]()
            else:
                topology = Topology.from_toml(Path(topology))
        if self.sweep:
            from benchbook.testbed.cleanup import sweep_leftovers

            sweep_leftovers(LocalHost(name="cleanup", log=self.log))
        return LocalTestbed(topology, token=token, log=self.log)
