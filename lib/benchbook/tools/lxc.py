"""LXC: build a container's configuration and the lxc-* command lines, run them, parse their output.

Every command run through `Lxc` is recorded (argv, return code, stdout/stderr tails, seconds) in
``Lxc.log`` so a run record can show exactly what was done to the host. Only containers whose
name starts with ``bb-`` belong to benchbook; `sweep_containers` removes leftovers of killed runs
and never touches anything else.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "bb-"
LXC_PATH = Path("/var/lib/lxc")


class LxcError(RuntimeError):
    """An lxc-* command failed; the message holds the command line and its output."""


@dataclass(frozen=True)
class PhysNic:
    """A host interface moved into the container (lxc.net.N.type = phys)."""

    link: str
    name: str | None = None  # name inside the container (default: same)


@dataclass
class ContainerConfig:
    """The parts of an LXC config benchbook sets; `render()` gives the config file text."""

    name: str
    rootfs: str  # e.g. "overlay:<lower>:<upper>" or a directory
    init_cmd: Sequence[str]
    nics: Sequence[PhysNic] = ()
    cpus: str | None = None  # cpuset, e.g. "1"
    mems: str | None = "0"
    cgroup_mode: str = "v1"  # "v1" -> lxc.cgroup.*, "v2" -> lxc.cgroup2.*
    halt_signal: str = "SIGINT"  # testpmd prints its totals and exits on SIGINT
    console_log: str | None = None
    include_common: bool = True
    extra: Mapping[str, str] = field(default_factory=dict)

    def render(self) -> str:
        lines = [f"# benchbook container {self.name} (written by benchbook.tools.lxc)"]
        if self.include_common and Path("/usr/share/lxc/config/common.conf").exists():
            lines.append("lxc.include = /usr/share/lxc/config/common.conf")
        lines += [
            f"lxc.uts.name = {self.name}",
            f"lxc.rootfs.path = {self.rootfs}",
            "lxc.apparmor.profile = unconfined",
            "lxc.mount.auto = proc:mixed sys:mixed",
            "lxc.autodev = 1",
            "lxc.tty.max = 0",
            "lxc.pty.max = 4",
            f"lxc.signal.halt = {self.halt_signal}",
            "lxc.init.cmd = " + " ".join(_quote_init(a) for a in self.init_cmd),
        ]
        if self.console_log:
            lines.append(f"lxc.console.logfile = {self.console_log}")
        prefix = {"v1": "lxc.cgroup", "v2": "lxc.cgroup2"}.get(self.cgroup_mode)
        if prefix is None:
            raise ValueError(f"cgroup_mode must be 'v1' or 'v2', not {self.cgroup_mode!r}")
        if self.cpus is not None:
            lines.append(f"{prefix}.cpuset.cpus = {self.cpus}")
            if self.mems is not None:
                lines.append(f"{prefix}.cpuset.mems = {self.mems}")
        if not self.nics:
            lines.append("lxc.net.0.type = empty")
        for i, nic in enumerate(self.nics):
            lines += [
                f"lxc.net.{i}.type = phys",
                f"lxc.net.{i}.link = {nic.link}",
                f"lxc.net.{i}.name = {nic.name or nic.link}",
                f"lxc.net.{i}.flags = up",
            ]
        for key, value in self.extra.items():
            lines.append(f"{key} = {value}")
        return "\n".join(lines) + "\n"


def _quote_init(arg: str) -> str:
    # lxc.init.cmd is split on whitespace by LXC; arguments must not contain blanks.
    if not arg or re.search(r"\s", arg):
        raise ValueError(f"lxc.init.cmd argument {arg!r} must be non-empty and contain no blanks")
    return arg


@dataclass
class CommandRecord:
    argv: list[str]
    returncode: int
    seconds: float
    stdout: str
    stderr: str

    def as_dict(self) -> dict:
        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "seconds": round(self.seconds, 3),
            "stdout": self.stdout[-2000:],
            "stderr": self.stderr[-2000:],
        }


@dataclass
class Lxc:
    """Runs lxc-* commands (optionally inside a network namespace) and records each one."""

    lxcpath: Path = LXC_PATH
    netns: str | None = None  # run lxc-start inside `ip netns exec NETNS` (phys NICs live there)
    log: list[CommandRecord] = field(default_factory=list)

    def _argv(self, tool: str, *args: str, in_netns: bool = False) -> list[str]:
        argv = [tool, "-P", str(self.lxcpath), *args]
        if in_netns and self.netns:
            argv = ["ip", "netns", "exec", self.netns, *argv]
        return argv

    def run(self, argv: list[str], check: bool = True, timeout: float = 60) -> CommandRecord:
        t0 = time.monotonic()
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
            rec = CommandRecord(argv, proc.returncode, time.monotonic() - t0, proc.stdout, proc.stderr)
        except subprocess.TimeoutExpired as exc:
            rec = CommandRecord(argv, -9, time.monotonic() - t0, _s(exc.stdout), _s(exc.stderr) + "\n[timeout]")
        self.log.append(rec)
        if check and rec.returncode != 0:
            raise LxcError(
                f"{' '.join(argv)} failed with exit {rec.returncode}:\n{rec.stderr.strip() or rec.stdout.strip()}"
            )
        return rec

    # --- lifecycle -----------------------------------------------------------------------
    def create(self, name: str, config_file: Path) -> None:
        self.run(self._argv("lxc-create", "-n", name, "-t", "none", "-f", str(config_file)))

    def start(self, name: str, logfile: Path | None = None) -> None:
        args = ["-n", name, "-d"]
        if logfile is not None:
            args += ["-o", str(logfile), "-l", "INFO"]
        self.run(self._argv("lxc-start", *args, in_netns=True))

    def wait(self, name: str, state: str, timeout_s: float = 20) -> bool:
        rec = self.run(
            self._argv("lxc-wait", "-n", name, "-s", state, "-t", str(int(timeout_s))),
            check=False,
            timeout=timeout_s + 5,
        )
        return rec.returncode == 0

    def info(self, name: str) -> dict[str, str]:
        rec = self.run(self._argv("lxc-info", "-n", name), check=False)
        return parse_lxc_info(rec.stdout)

    def stop(self, name: str, timeout_s: int = 10, kill: bool = False) -> bool:
        args = ["-n", name, "-k"] if kill else ["-n", name, "-t", str(timeout_s)]
        return self.run(self._argv("lxc-stop", *args), check=False, timeout=timeout_s + 10).returncode == 0

    def destroy(self, name: str) -> bool:
        ok = self.run(self._argv("lxc-destroy", "-n", name, "-f"), check=False).returncode == 0
        leftover = self.lxcpath / name
        if leftover.exists() and name.startswith(PREFIX):
            # lxc-destroy with a custom rootfs path leaves the directory; it is ours by prefix.
            shutil.rmtree(leftover, ignore_errors=True)
        return ok and not leftover.exists()

    def list(self) -> list[str]:
        rec = self.run(self._argv("lxc-ls", "-1"), check=False)
        return [line.strip() for line in rec.stdout.splitlines() if line.strip()]


def _s(x: bytes | str | None) -> str:
    if x is None:
        return ""
    return x.decode(errors="replace") if isinstance(x, bytes) else x


def parse_lxc_info(text: str) -> dict[str, str]:
    """`lxc-info -n NAME` output ("State:          RUNNING" lines) as a dict with lower-case keys."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out.setdefault(key.strip().lower(), value.strip())
    return out


def lxc_version() -> str | None:
    if shutil.which("lxc-start") is None:
        return None
    proc = subprocess.run(["lxc-start", "--version"], capture_output=True, text=True)
    return proc.stdout.strip() or None


def lxc_capability() -> tuple[bool, str]:
    """Can benchbook start an LXC container here? (ok, reason)."""
    if os.geteuid() != 0:
        return False, "LXC containers need root"
    for tool in ("lxc-create", "lxc-start", "lxc-stop", "lxc-destroy", "lxc-info"):
        if shutil.which(tool) is None:
            return False, f"{tool} not installed (apt-get install lxc)"
    return True, f"lxc {lxc_version()}"


def cgroup_v2_cpuset_available(unified: Path | None = None) -> tuple[bool, str]:
    """Whether lxc.cgroup2.cpuset.* can work: the cpuset controller must be on a cgroup2 mount."""
    candidates = [unified] if unified else [Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")]
    for root in candidates:
        ctrl = root / "cgroup.controllers"
        if ctrl.is_file():
            controllers = ctrl.read_text().split()
            if "cpuset" in controllers:
                return True, f"cpuset is enabled on the cgroup2 hierarchy at {root}"
            return False, (
                f"the cgroup2 hierarchy at {root} offers only [{', '.join(controllers) or 'none'}]; "
                "cpuset is bound to a cgroup v1 hierarchy (hybrid layout) and cannot be rebound at run "
                "time, so the v2 arm (lxc.cgroup2.cpuset.cpus) cannot run on this host"
            )
    return False, "no cgroup2 hierarchy is mounted"


def sweep_containers(lxc: Lxc | None = None, prefix: str = PREFIX) -> list[str]:
    """Stop and destroy every container named `prefix`* (leftovers of killed runs). Returns names."""
    if not prefix.startswith(PREFIX):
        raise ValueError(f"sweep prefix must start with {PREFIX!r} (only benchbook's own containers)")
    lxc = lxc or Lxc()
    if not lxc.lxcpath.is_dir() or shutil.which("lxc-destroy") is None:
        return []
    names = sorted(
        {p.name for p in lxc.lxcpath.iterdir() if p.is_dir() and p.name.startswith(prefix)}
        | {n for n in lxc.list() if n.startswith(prefix)}
    )
    for name in names:
        lxc.stop(name, kill=True)
        lxc.destroy(name)
    return names
