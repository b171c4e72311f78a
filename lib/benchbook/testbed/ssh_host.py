"""A host reached over ssh: the `Host` of :mod:`benchbook.tools.host` for real testbed machines.

Commands run as ``ssh -p PORT [-i KEY] [-J JUMP] OPTIONS user@address 'REMOTE'``, files come back
with ``scp -r`` and go out with ``scp``; every one is recorded in the host's command log exactly
as it was run on this machine. ``REMOTE`` is the shell-quoted argv; an argv of the form
``["sh", "-c", SCRIPT]`` is sent as SCRIPT itself (the remote login shell runs it), so plans can
use redirections and ``$(...)`` where they need them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.tools.host import CommandLog, CommandResult, RunningCommand, run_logged, start_logged

PID_MARK = "BB-REMOTE-PID"
_PID_RE = re.compile(rf"^{PID_MARK} (\d+)$", re.M)


def remote_command(argv: Sequence[str], cwd: str | None = None) -> str:
    """The command line the remote shell runs for argv (see the module docstring)."""
    argv = list(argv)
    cmd = argv[2] if len(argv) == 3 and argv[:2] == ["sh", "-c"] else shlex.join(argv)
    return f"cd {shlex.quote(cwd)} && {cmd}" if cwd else cmd


class SshRunningCommand(RunningCommand):
    """A remote command started in the background: its first output line is its remote pid, so
    ``interrupt`` sends SIGINT to the remote process (not just to the local ssh client)."""

    host: SshHost | None = None

    def remote_pid(self) -> int | None:
        self.wait_for(PID_MARK, "stdout", timeout_s=5)
        m = _PID_RE.search(self.output("stdout"))
        return int(m.group(1)) if m else None

    def interrupt(self) -> None:
        pid = self.remote_pid() if self.proc.poll() is None else None
        if pid is not None and self.host is not None:
            self.host.run(["kill", "-INT", str(pid)], check=False, timeout_s=30, what="interrupt")
        else:
            super().interrupt()


@dataclass
class SshHost:
    """A machine reached with ssh/scp with an inventory's options."""

    name: str
    address: str
    user: str = "root"
    port: int = 22
    identity_file: str | None = None
    proxy_jump: str | None = None
    options: tuple[str, ...] = ()
    log: CommandLog = field(default_factory=CommandLog)

    @property
    def target(self) -> str:
        return f"{self.user}@{self.address}"

    def _common(self, port_flag: str) -> list[str]:
        argv = [port_flag, str(self.port)]
        if self.identity_file:
            argv += ["-i", self.identity_file]
        if self.proxy_jump:
            argv += ["-J", self.proxy_jump]
        return argv + list(self.options)

    def ssh_argv(self) -> list[str]:
        """``ssh`` with this host's options, up to (not including) the target."""
        return ["ssh", *self._common("-p")]

    def argv(self, argv: Sequence[str], cwd: str | None = None) -> list[str]:
        return [*self.ssh_argv(), self.target, remote_command(argv, cwd)]

    def run(self, argv: Sequence[str], *, check: bool = True, timeout_s: float | None = 60.0,
            input_text: str | None = None, what: str = "", cwd: str | None = None) -> CommandResult:
        return run_logged(self.name, self.log, self.argv(argv, cwd), check=check, timeout_s=timeout_s,
                          input_text=input_text, what=what)

    def start(self, argv: Sequence[str], *, what: str = "", stdin_open: bool = False, merge_stderr: bool = False,
              join_cgroup: str | None = None, cwd: str | None = None) -> RunningCommand:
        script = f"echo {PID_MARK} $$; "
        if join_cgroup:
            script += f"echo $$ > {shlex.quote(join_cgroup)} && "
        script += "exec " + shlex.join(list(argv))
        full = self.argv(["sh", "-c", script], cwd)
        rc = start_logged(self.name, self.log, full, what=what or argv[0], stdin_open=stdin_open,
                          merge_stderr=merge_stderr, command_class=SshRunningCommand)
        assert isinstance(rc, SshRunningCommand)
        rc.host = self
        return rc

    def fetch(self, remote: str, local: Path | str, check: bool = True) -> Path:
        """Copy a remote file or directory to ``local`` (scp -r: a directory is copied as ``local``
        when ``local`` does not exist yet)."""
        dst = Path(local)
        dst.parent.mkdir(parents=True, exist_ok=True)
        run_logged(self.name, self.log, self.fetch_argv(remote, str(dst)), check=check, timeout_s=None,
                   input_text=None, what="fetch")
        return dst

    def fetch_argv(self, remote: str, local: str) -> list[str]:
        return ["scp", "-r", *self._common("-P"), f"{self.target}:{remote}", local]

    def put_argv(self, local: str, remote: str) -> list[str]:
        return ["scp", *self._common("-P"), local, f"{self.target}:{remote}"]

    def put(self, local: Path | str, remote: str, check: bool = True) -> CommandResult:
        return run_logged(self.name, self.log, self.put_argv(str(local), remote), check=check, timeout_s=None,
                          input_text=None, what="put")


__all__ = ["PID_MARK", "SshHost", "SshRunningCommand", "remote_command"]
