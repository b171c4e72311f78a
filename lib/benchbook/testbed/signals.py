"""Turning SIGTERM/SIGHUP into an exception so that `finally` blocks (teardown) run."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGHUP arrives inside a guarded block."""


def _raise(signum: int, frame: object) -> None:
    raise Terminated(f"received signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """Within the block, SIGTERM/SIGHUP raise Terminated (SIGINT already raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Ignore SIGINT/SIGTERM/SIGHUP for the block (teardown must not be cut short)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {s: signal.signal(s, signal.SIG_IGN) for s in sigs}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
