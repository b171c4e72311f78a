"""Running host commands with their exact command lines recorded (Flent's discipline)."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchbook.errors import BenchbookError


class CommandError(BenchbookError, RuntimeError):
    """A host command failed; the message names the command, its exit code and stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"command failed (exit {returncode}): {shlex.join(self.argv)}\n{stderr.strip()}")


@dataclass
class CommandLog:
    """Every command run, in order, as shell-quoted strings (goes into the run record)."""

    commands: list[str] = field(default_factory=list)

    def add(self, argv: Sequence[str]) -> None:
        self.commands.append(shlex.join(list(argv)))


def run(argv: Sequence[str], *, check: bool = True, log: CommandLog | None = None,
        timeout: float | None = 60.0, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run argv, capture text output; raise CommandError on failure when check."""
    if log is not None:
        log.add(argv)
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise CommandError(argv, proc.returncode, proc.stderr)
    return proc


def netns_argv(netns: str | None, argv: Sequence[str]) -> list[str]:
    """argv prefixed to run inside a network namespace (ip execs the program: same pid)."""
    return list(argv) if netns is None else ["ip", "netns", "exec", netns, *argv]
