"""One writer per experiment: an fcntl.flock on ``<runs>/<experiment>/.lock`` naming its holder.

The kernel releases a flock when its holder dies (even by SIGKILL), so a lock left by a killed sweep
never blocks the next one; its holder record stays in the file and is reported as stale when the
next sweep takes over. A live holder is named in the error (pid, host, start, command).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError


class ExperimentLocked(BenchbookError, RuntimeError):
    """Another process holds the experiment's lock."""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ExperimentLock:
    def __init__(self, experiment_dir: Path) -> None:
        self.path = Path(experiment_dir) / ".lock"
        self.fd: int | None = None
        self.stale_holder: dict[str, Any] | None = None

    def _holder(self) -> dict[str, Any] | None:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError:
            return None
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return {"raw": text[:200]}

    def acquire(self) -> "ExperimentLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = self._holder() or {}
            pid = holder.get("pid")
            if isinstance(pid, int) and holder.get("host") == socket.gethostname() and not _pid_alive(pid):
                why = (f"pid {pid} named in it is no longer running, so a process that inherited its "
                       f"descriptor still holds it")
            else:
                why = f"held by pid {pid} on {holder.get('host')} since {holder.get('started')}"
            raise ExperimentLocked(
                f"{self.path}: experiment {self.path.parent.name!r} is locked by another sweep ({why}; "
                f"command: {holder.get('command', '?')}). Wait for it to finish or use another --experiment."
            ) from None
        previous = self._holder()
        if previous:
            self.stale_holder = previous  # its holder died without releasing (e.g. SIGKILL)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv)[:500],
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        os.fsync(fd)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        finally:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "ExperimentLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
