"""Where a command runs: the Host protocol, the one command log, and the local host.

A host runs an argv to completion (``run``), starts one in the background (``start``: a
`RunningCommand`, stopped with SIGINT then wait, as tcpdump and testpmd print their statistics on
SIGINT) and copies a file from where it runs to this machine (``fetch``). Every tool module in
:mod:`benchbook.tools` takes a host and builds its own argv; the host only decides where it runs
(this machine, a network namespace on it, or another machine over ssh in :mod:`benchbook.testbed`).

Every command goes into the host's `CommandLog`, one format for all of them. With a directory
(a run's ``raw/``) the log keeps::

    <dir>/commands.jsonl        one JSON object per finished command:
                                {"n", "host", "argv", "exit_code", "seconds", "stdout", "stderr", "what"}
    <dir>/cmd/<n>.stdout        what the command printed (paths in the JSON are relative to <dir>)
    <dir>/cmd/<n>.stderr

Without a directory the records stay in memory (the output is in the returned result). A file of
the log that cannot be written (a full disk) never stops a command or a teardown: the record stays in
memory and ``CommandLog.write_errors`` names the file and the error.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from benchbook.errors import BenchbookError

TIMEOUT_EXIT = -9


class CommandError(BenchbookError, RuntimeError):
    """A host command failed; the message names the command, its exit code and stderr."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str, host: str = "") -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.stderr = stderr
        where = f" on {host}" if host else ""
        super().__init__(f"command failed{where} (exit {returncode}): {shlex.join(self.argv)}\n{stderr.strip()}")


def describe_exit(code: int | None) -> str:
    """How a process ended, from its return code: "exit 3", or "killed by signal SIGKILL (9)" for a
    negative code (subprocess's convention), or "still running" for None."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "an unknown signal"
        return f"killed by signal {name} ({-code})"
    return f"exit {code}"


@dataclass
class CommandRecord:
    """One command in the log: argv as run on this machine, exit code, seconds, output files."""

    n: int
    host: str
    argv: list[str]
    what: str = ""
    exit_code: int | None = None
    seconds: float | None = None
    stdout: str | None = None       # file path relative to the log directory
    stderr: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if self.seconds is not None:
            d["seconds"] = round(self.seconds, 3)
        return d

    @property
    def command_line(self) -> str:
        return shlex.join(self.argv)


class CommandLog:
    """Every command of a run, in order (see the module docstring for the files)."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.records: list[CommandRecord] = []
        self.write_errors: list[str] = []   # "<file>: [Errno n] <reason>" for each log file not written
        self._lock = threading.Lock()
        if self.directory is not None:
            (self.directory / "cmd").mkdir(parents=True, exist_ok=True)

    def begin(self, host: str, argv: Sequence[str], what: str = "") -> CommandRecord:
        with self._lock:
            rec = CommandRecord(n=len(self.records) + 1, host=host, argv=list(argv), what=what)
            if self.directory is not None:
                rec.stdout, rec.stderr = f"cmd/{rec.n}.stdout", f"cmd/{rec.n}.stderr"
            self.records.append(rec)
            return rec

    def path(self, rel: str | None) -> Path | None:
        return None if rel is None or self.directory is None else self.directory / rel

    def end(self, rec: CommandRecord, exit_code: int, seconds: float) -> None:
        rec.exit_code, rec.seconds = exit_code, seconds
        if self.directory is None:
            return
        path = self.directory / "commands.jsonl"
        with self._lock:
            try:
                with open(path, "a") as fh:
                    fh.write(json.dumps(rec.as_dict()) + "\n")
            except OSError as exc:
                self.write_errors.append(_write_error(path, exc))

    def write_output(self, rel: str | None, text: str) -> None:
        """A command's output file (cmd/<n>.stdout|stderr), when the log has a directory."""
        p = self.path(rel)
        if p is not None:
            try:
                p.write_text(text)
            except OSError as exc:
                self.note_write_error(p, exc)

    def note_write_error(self, path: Path, exc: OSError) -> None:
        with self._lock:
            self.write_errors.append(_write_error(path, exc))

    @property
    def commands(self) -> list[str]:
        """Every command line, shell-quoted, in order."""
        return [r.command_line for r in self.records]

    def since(self, n: int) -> list[CommandRecord]:
        """Records after the first ``n`` (e.g. ``len(log.records)`` taken before a step)."""
        return self.records[n:]


def _write_error(path: Path, exc: OSError) -> str:
    return f"{path}: [Errno {exc.errno}] {exc.strerror}"


def read_command_log(directory: Path | str) -> list[dict[str, Any]]:
    """The records of a command log directory (commands.jsonl), in order."""
    p = Path(directory) / "commands.jsonl"
    out = []
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        try:
            out.append(json.loads(line))
        except ValueError as exc:
            raise BenchbookError(f"{p}: line {lineno}: not a JSON command record ({exc})") from exc
    return out


@dataclass
class CommandResult:
    """A finished command: its record in the log and what it printed."""

    argv: list[str]
    exit_code: int
    seconds: float
    stdout: str
    stderr: str
    record: CommandRecord | None = None

    @property
    def returncode(self) -> int:
        return self.exit_code


class RunningCommand:
    """A command started in the background; its output is read as it comes (and kept in the log)."""

    def __init__(self, argv: list[str], proc: subprocess.Popen[str], log: CommandLog, record: CommandRecord,
                 merge_stderr: bool = False) -> None:
        self.argv = argv
        self.proc = proc
        self.log = log
        self.record = record
        self._t0 = time.monotonic()
        self._text: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._changed = threading.Condition()
        self._open_streams = 0
        self._readers: list[threading.Thread] = []
        self._ended = False
        streams = [("stdout", proc.stdout)] + ([] if merge_stderr else [("stderr", proc.stderr)])
        for name, stream in streams:
            if stream is None:
                continue
            self._open_streams += 1
            out_path = log.path(getattr(record, name))
            t = threading.Thread(target=self._read, args=(name, stream, out_path), daemon=True)
            t.start()
            self._readers.append(t)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self, name: str, stream: IO[str], out_path: Path | None) -> None:
        fh: IO[str] | None = None
        try:
            fh = open(out_path, "w") if out_path is not None else None
        except OSError as exc:
            self._write_failed(out_path, exc, None)
        try:
            for line in stream:  # read to the end even when the file cannot be written: the pipe must not fill
                if fh is not None:
                    try:
                        fh.write(line)
                        fh.flush()
                    except OSError as exc:
                        fh = self._write_failed(out_path, exc, fh)
                with self._changed:
                    self._text[name].append(line)
                    self._changed.notify_all()
        finally:
            if fh is not None:
                try:
                    fh.close()
                except OSError as exc:
                    self._write_failed(out_path, exc, None)
            with self._changed:
                self._open_streams -= 1
                self._changed.notify_all()

    def _write_failed(self, path: Path | None, exc: OSError, fh: IO[str] | None) -> None:
        """Note a log file that could not be written; close it without writing more."""
        self.log.note_write_error(Path(str(path)), exc)
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass  # its buffered data cannot be written either
        return None

    def output(self, stream: str = "stdout") -> str:
        """What the command printed on ``stream`` so far."""
        with self._changed:
            return "".join(self._text[stream])

    def lines(self, stream: str = "stdout") -> list[str]:
        with self._changed:
            return list(self._text[stream])

    def wait_for(self, text: str, stream: str = "stdout", timeout_s: float = 10.0) -> bool:
        """Wait until ``text`` appears on ``stream``; False when the output ended or time ran out."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                if text in "".join(self._text[stream]):
                    return True
                left = deadline - time.monotonic()
                if left <= 0 or self._open_streams == 0:
                    return False
                self._changed.wait(min(left, 0.1))

    def poll(self) -> int | None:
        return self.proc.poll()

    def _finish(self) -> int:
        for t in self._readers:
            t.join(timeout=5)
        if not self._ended:
            self._ended = True
            self.log.end(self.record, self.proc.returncode, time.monotonic() - self._t0)
        return self.proc.returncode

    def wait(self, timeout_s: float | None = None) -> int:
        """Wait for the end (subprocess.TimeoutExpired after timeout_s) and log it."""
        self.proc.wait(timeout=timeout_s)
        return self._finish()

    def interrupt(self) -> None:
        """SIGINT to the command (tcpdump and testpmd print their statistics on it)."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass

    def kill(self) -> int:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        return self._finish()

    def interrupt_and_wait(self, timeout_s: float) -> int:
        """SIGINT, wait up to ``timeout_s`` seconds, kill if it has not ended; returns the exit code."""
        self.interrupt()
        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self._finish()


class Host(Protocol):
    """Where commands run. ``argv`` gives the command line as it is run from this machine."""

    name: str
    log: CommandLog

    def argv(self, argv: Sequence[str]) -> list[str]: ...

    def run(self, argv: Sequence[str], *, check: bool = True, timeout_s: float | None = 60.0,
            input_text: str | None = None, what: str = "", cwd: str | None = None) -> CommandResult: ...

    def start(self, argv: Sequence[str], *, what: str = "", stdin_open: bool = False, merge_stderr: bool = False,
              join_cgroup: str | None = None, cwd: str | None = None) -> RunningCommand: ...

    def fetch(self, remote: str, local: Path | str) -> Path: ...


def run_logged(host_name: str, log: CommandLog, full: list[str], *, check: bool, timeout_s: float | None,
               input_text: str | None, what: str, cwd: str | None = None,
               preexec_fn: Callable[[], None] | None = None) -> CommandResult:
    """Run ``full`` on this machine to completion, with its record and output in ``log``."""
    rec = log.begin(host_name, full, what)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(full, stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                                cwd=cwd, preexec_fn=preexec_fn)
    except OSError as exc:
        log.end(rec, 127, time.monotonic() - t0)
        if check:
            raise CommandError(full, 127, f"{exc}", host_name) from exc
        return CommandResult(full, 127, time.monotonic() - t0, "", str(exc), rec)
    try:
        out, err = proc.communicate(input=input_text, timeout=timeout_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err = (err or "") + f"\n[benchbook] killed after the timeout of {timeout_s:g} s\n"
        code = TIMEOUT_EXIT
    except BaseException:
        proc.kill()
        proc.wait()
        log.end(rec, -9, time.monotonic() - t0)
        raise
    seconds = time.monotonic() - t0
    for rel, text in ((rec.stdout, out), (rec.stderr, err)):
        log.write_output(rel, text or "")
    log.end(rec, code, seconds)
    if check and code != 0:
        raise CommandError(full, code, err or "", host_name)
    return CommandResult(full, code, seconds, out or "", err or "", rec)


def start_logged(host_name: str, log: CommandLog, full: list[str], *, what: str, stdin_open: bool,
                 merge_stderr: bool, cwd: str | None = None, preexec_fn: Callable[[], None] | None = None,
                 command_class: type[RunningCommand] | None = None) -> RunningCommand:
    """Start ``full`` on this machine, its record in ``log`` (output streamed into its files)."""
    rec = log.begin(host_name, full, what)
    if merge_stderr:
        rec.stderr = None
    try:
        proc = subprocess.Popen(full, stdin=subprocess.PIPE if stdin_open else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
                                text=True, errors="replace", cwd=cwd, preexec_fn=preexec_fn)
    except OSError as exc:
        log.end(rec, 127, 0.0)
        raise CommandError(full, 127, str(exc), host_name) from exc
    return (command_class or RunningCommand)(full, proc, log, rec, merge_stderr=merge_stderr)


def _join_cgroup(procs_file: str | None) -> Callable[[], None] | None:
    if procs_file is None:
        return None

    def join() -> None:  # runs in the child between fork and exec
        with open(procs_file, "w") as fh:
            fh.write(str(os.getpid()))

    return join


@dataclass
class LocalHost:
    """This machine, optionally inside a network namespace (``ip netns exec NS``: same pid)."""

    name: str = "local"
    netns: str | None = None
    log: CommandLog = field(default_factory=CommandLog)
    on_start: Callable[[RunningCommand], None] | None = None   # e.g. a testbed tracking its processes

    def argv(self, argv: Sequence[str]) -> list[str]:
        return list(argv) if self.netns is None else ["ip", "netns", "exec", self.netns, *argv]

    def run(self, argv: Sequence[str], *, check: bool = True, timeout_s: float | None = 60.0,
            input_text: str | None = None, what: str = "", cwd: str | None = None) -> CommandResult:
        return run_logged(self.name, self.log, self.argv(argv), check=check, timeout_s=timeout_s,
                          input_text=input_text, what=what, cwd=cwd)

    def start(self, argv: Sequence[str], *, what: str = "", stdin_open: bool = False, merge_stderr: bool = False,
              join_cgroup: str | None = None, cwd: str | None = None) -> RunningCommand:
        """Start argv; with join_cgroup (a cgroup.procs file) it enters that cgroup before it runs."""
        rc = start_logged(self.name, self.log, self.argv(argv), what=what or argv[0], stdin_open=stdin_open,
                          merge_stderr=merge_stderr, cwd=cwd, preexec_fn=_join_cgroup(join_cgroup))
        if self.on_start is not None:
            self.on_start(rc)
        return rc

    def fetch(self, remote: str, local: Path | str) -> Path:
        """Copy a file of this host to ``local`` (a no-op when it is the same file)."""
        src, dst = Path(remote), Path(local)
        if dst.is_dir():
            dst = dst / src.name
        if src.resolve() != dst.resolve():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
        return dst


__all__ = ["CommandError", "CommandLog", "CommandRecord", "CommandResult", "Host", "LocalHost", "RunningCommand",
           "describe_exit", "read_command_log"]
