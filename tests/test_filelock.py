"""benchbook.filelock.FileLock between real processes: holder named, waits, kernel release on death."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from benchbook.errors import BenchbookError
from benchbook.filelock import FileLock, LockBusy, read_holder

HOLDER = """
import sys, time
from benchbook.filelock import FileLock
lock = FileLock(sys.argv[1], description="test holder").acquire()
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def _hold(path: Path, seconds: float) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@contextmanager
def _held(path: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """Another process holding the lock at ``path`` for ``seconds``; killed when the block ends."""
    proc = _hold(path, seconds)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_non_blocking_conflict_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.lock"
    with _held(path, 60) as proc:
        with pytest.raises(LockBusy) as info:
            FileLock(path, blocking=False).acquire()
        assert isinstance(info.value, BenchbookError)
        assert info.value.holder["pid"] == proc.pid
        assert f"held by pid {proc.pid}" in str(info.value) and "test holder" in str(info.value)
        with pytest.raises(LockBusy, match="locked for 0.3 s"):
            FileLock(path, timeout_s=0.3).acquire()


def test_blocking_waits_for_release(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with _held(path, 1.0):
        with pytest.raises(LockBusy):
            FileLock(path, blocking=False).acquire()
        with FileLock(path, description="second") as lock:
            assert lock.previous_holder is None  # the first holder released cleanly before we got it
            holder = json.loads(path.read_text())
            assert holder["pid"] == os.getpid() and holder["description"] == "second"
        assert path.read_text() == ""


def test_killed_holder_releases_and_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    proc = _hold(path, 60)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with FileLock(path, blocking=False) as lock:
        assert lock.previous_holder is not None and lock.previous_holder["pid"] == proc.pid
        assert read_holder(path)["pid"] == os.getpid()
    assert read_holder(path) is None
