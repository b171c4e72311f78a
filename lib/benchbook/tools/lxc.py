"""LXC: build a container's configuration and the lxc-* command lines, run them on a host, parse
their output.

The ``*_argv`` functions build each lxc-* command line (the ssh backend's plan uses them too);
`Lxc` runs them on a host, whose command log records every one. Only containers whose name
starts with ``bb-`` belong to benchbook (the leftovers of killed runs are removed by
:mod:`benchbook.testbed.cleanup`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.errors import BenchbookError
from benchbook.tools.host import CommandResult, Host, LocalHost

PREFIX = "bb-"
LXC_PATH = Path("/var/lib/lxc")


class LxcError(BenchbookError, RuntimeError):
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


def _argv(tool: str, name: str, lxcpath: Path | str | None, *args: str) -> list[str]:
    return [tool, *(["-P", str(lxcpath)] if lxcpath is not None else []), "-n", name, *args]


def create_argv(name: str, *, lxcpath: Path | str | None = LXC_PATH, config_file: Path | str | None = None,
                template: str = "none", template_args: Sequence[str] = ()) -> list[str]:
    args = ["-t", template]
    if config_file is not None:
        args += ["-f", str(config_file)]
    if template_args:
        args += ["--", *template_args]
    return _argv("lxc-create", name, lxcpath, *args)


def start_argv(name: str, *, lxcpath: Path | str | None = LXC_PATH, logfile: Path | str | None = None,
               log_level: str = "INFO") -> list[str]:
    args = ["-d"]
    if logfile is not None:
        args += ["-o", str(logfile), "-l", log_level]
    return _argv("lxc-start", name, lxcpath, *args)


def wait_argv(name: str, state: str, *, lxcpath: Path | str | None = LXC_PATH, timeout_s: float = 20) -> list[str]:
    return _argv("lxc-wait", name, lxcpath, "-s", state, "-t", str(int(timeout_s)))


def info_argv(name: str, *, lxcpath: Path | str | None = LXC_PATH, pid_only: bool = False) -> list[str]:
    return _argv("lxc-info", name, lxcpath, *(["-pH"] if pid_only else []))


def stop_argv(name: str, *, lxcpath: Path | str | None = LXC_PATH, kill: bool = False,
              timeout_s: int = 10) -> list[str]:
    return _argv("lxc-stop", name, lxcpath, *(["-k"] if kill else ["-t", str(timeout_s)]))


def destroy_argv(name: str, *, lxcpath: Path | str | None = LXC_PATH, force: bool = True) -> list[str]:
    return _argv("lxc-destroy", name, lxcpath, *(["-f"] if force else []))


def ls_argv(*, lxcpath: Path | str | None = LXC_PATH) -> list[str]:
    return ["lxc-ls", *(["-P", str(lxcpath)] if lxcpath is not None else []), "-1"]


@dataclass
class Lxc:
    """Runs lxc-* commands on a host (its command log records each one)."""

    lxcpath: Path = LXC_PATH
    host: Host = field(default_factory=lambda: LocalHost(name="lxc"))

    def run(self, argv: list[str], check: bool = True, timeout_s: float = 60) -> CommandResult:
        r = self.host.run(argv, check=False, timeout_s=timeout_s, what=argv[0])
        if check and r.exit_code != 0:
            raise LxcError(f"{' '.join(argv)} failed with exit {r.exit_code}:\n{r.stderr.strip() or r.stdout.strip()}")
        return r

    # --- lifecycle -----------------------------------------------------------------------
    def create(self, name: str, config_file: Path) -> None:
        self.run(create_argv(name, lxcpath=self.lxcpath, config_file=config_file))

    def start(self, name: str, logfile: Path | None = None) -> None:
        self.run(start_argv(name, lxcpath=self.lxcpath, logfile=logfile))

    def wait(self, name: str, state: str, timeout_s: float = 20) -> bool:
        rec = self.run(wait_argv(name, state, lxcpath=self.lxcpath, timeout_s=timeout_s), check=False,
                       timeout_s=timeout_s + 5)
        return rec.exit_code == 0

    def info(self, name: str) -> dict[str, str]:
        return parse_lxc_info(self.run(info_argv(name, lxcpath=self.lxcpath), check=False).stdout)

    def stop(self, name: str, timeout_s: int = 10, kill: bool = False) -> bool:
        return self.run(stop_argv(name, lxcpath=self.lxcpath, kill=kill, timeout_s=timeout_s), check=False,
                        timeout_s=timeout_s + 10).exit_code == 0

    def destroy(self, name: str) -> bool:
        ok = self.run(destroy_argv(name, lxcpath=self.lxcpath), check=False).exit_code == 0
        leftover = self.lxcpath / name
        if leftover.exists() and name.startswith(PREFIX):
            # lxc-destroy with a custom rootfs path leaves the directory; it is ours by prefix.
            shutil.rmtree(leftover, ignore_errors=True)
        return ok and not leftover.exists()

    def list(self) -> list[str]:
        r = self.run(ls_argv(lxcpath=self.lxcpath), check=False)
        return [line.strip() for line in r.stdout.splitlines() if line.strip()]


def parse_lxc_info(text: str) -> dict[str, str]:
    """`lxc-info -n NAME` output ("State:          RUNNING" lines) as a dict with lower-case keys."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out.setdefault(key.strip().lower(), value.strip())
    return out


def lxc_version(host: Host | None = None) -> str | None:
    if host is None and shutil.which("lxc-start") is None:
        return None
    r = (host or LocalHost()).run(["lxc-start", "--version"], check=False, what="lxc version")
    return r.stdout.strip() or None


def lxc_capability() -> tuple[bool, str]:
    """Can benchbook start an LXC container here? (ok, reason)."""
    if os.geteuid() != 0:
        return False, "LXC containers need root"
    for tool in ("lxc-create", "lxc-start", "lxc-stop", "lxc-destroy", "lxc-info"):
        if shutil.which(tool) is None:
            return False, f"{tool} not installed (apt-get install lxc)"
    return True, f"lxc {lxc_version()}"
