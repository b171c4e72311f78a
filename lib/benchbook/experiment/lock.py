"""One writer per experiment: a :class:`benchbook.filelock.FileLock` on ``<runs>/<experiment>/.lock``.

A lock left by a killed sweep never blocks the next one (the kernel released it); its holder record
is reported as ``stale_holder`` when the next sweep takes over. A live holder is named in the error
(pid, host, start, command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbook.errors import BenchbookError
from benchbook.filelock import FileLock, LockBusy, describe_holder


class ExperimentLocked(BenchbookError, RuntimeError):
    """Another process holds the experiment's lock."""


class ExperimentLock:
    """Non-blocking exclusive lock of one experiment directory (a context manager)."""

    def __init__(self, experiment_dir: Path) -> None:
        self.path = Path(experiment_dir) / ".lock"
        self._lock = FileLock(self.path, blocking=False, description=f"sweep of experiment {self.path.parent.name}")
        self.stale_holder: dict[str, Any] | None = None

    def acquire(self) -> ExperimentLock:
        try:
            self._lock.acquire()
        except LockBusy as exc:
            raise ExperimentLocked(
                f"{self.path}: experiment {self.path.parent.name!r} is locked by another sweep "
                f"({describe_holder(exc.holder)}). Wait for it to finish or use another --experiment."
            ) from None
        self.stale_holder = self._lock.previous_holder
        return self

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> ExperimentLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
