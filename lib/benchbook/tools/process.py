"""Stopping a tool process the way its summary gets printed: SIGINT, then wait, then kill."""

from __future__ import annotations

import signal
import subprocess


def interrupt_and_wait(proc: subprocess.Popen, timeout: float) -> int:
    """SIGINT ``proc`` (tcpdump and testpmd print their statistics on it), wait up to ``timeout``
    seconds, kill it if it has not ended; returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode
