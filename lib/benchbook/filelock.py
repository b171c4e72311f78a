"""One file lock: an ``fcntl.flock`` on a file that names its holder.

The kernel releases a flock when its holder dies (even by SIGKILL), so a lock left by a killed
process never blocks the next one; the dead holder's record stays in the file and is reported as
``previous_holder`` when the next process takes the lock. A live holder is named in
:class:`LockBusy` (pid, host, start, command, what it is doing).

    with FileLock(path, blocking=False, description="sweep of experiment x") as lock:
        ...                       # lock.previous_holder: a dead holder's record, or None
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError

POLL_INTERVAL_S = 0.1


class LockBusy(BenchbookError, RuntimeError):
    """Another process holds the lock (at once when non-blocking, or until the timeout)."""

    def __init__(self, message: str, path: Path, holder: dict[str, Any]) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder


def read_holder(path: str | os.PathLike) -> dict[str, Any] | None:
    """The holder record in a lock file (None when empty or absent; {"raw": ...} when not JSON)."""
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text:
        return None
    try:
        holder = json.loads(text)
    except json.JSONDecodeError:
        return {"raw": text[:200]}
    return holder if isinstance(holder, dict) else {"raw": text[:200]}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def describe_holder(holder: dict[str, Any]) -> str:
    """'held by pid P on HOST since T; what; command: C', or why a holder that is gone still holds it."""
    pid = holder.get("pid")
    if isinstance(pid, int) and holder.get("host") == socket.gethostname() and not _pid_alive(pid):
        text = f"pid {pid} named in it is no longer running, so a process that inherited its descriptor still holds it"
    else:
        text = f"held by pid {pid} on {holder.get('host')} since {holder.get('started')}"
    what = f"{holder['description']}; " if holder.get("description") else ""
    return f"{text}; {what}command: {holder.get('command', '?')}"


class FileLock:
    """An exclusive flock on `path` (created with its directory), holding a JSON holder record.

    blocking: wait for the lock (up to timeout_s when given, then LockBusy); non-blocking: raise
    LockBusy at once. description: what the holder does, written into the record beside its pid,
    host, start time and command line. Released by :meth:`release`, on leaving the ``with`` block,
    or by the kernel when the process dies.
    """

    def __init__(self, path: str | os.PathLike, *, blocking: bool = True, timeout_s: float | None = None,
                 description: str = "") -> None:
        self.path = Path(path)
        self.blocking = blocking
        self.timeout_s = timeout_s
        self.description = description
        self.previous_holder: dict[str, Any] | None = None
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _busy(self, fd: int, waited_s: float | None) -> LockBusy:
        os.close(fd)
        holder = read_holder(self.path) or {}
        waited = f" for {waited_s:g} s" if waited_s is not None else ""
        return LockBusy(f"{self.path}: locked{waited}, {describe_holder(holder)}", self.path, holder)

    def acquire(self) -> FileLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: this FileLock is held already")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            if self.blocking and self.timeout_s is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                deadline = time.monotonic() + (self.timeout_s or 0.0)
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if not self.blocking:
                            raise self._busy(fd, None) from None
                        if time.monotonic() >= deadline:
                            raise self._busy(fd, self.timeout_s) from None
                        time.sleep(POLL_INTERVAL_S)
        except LockBusy:
            raise
        except BaseException:
            os.close(fd)
            raise
        self.previous_holder = read_holder(self.path)  # a holder that died without releasing
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:500],
            "description": self.description,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Empty the holder record and unlock (a no-op when not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["FileLock", "LockBusy", "describe_holder", "read_holder"]
