"""Task functions of the engine tests; a module of its own so Dask workers import it by name (tests/ is on
their sys.path as on the test runner's)."""

from __future__ import annotations

import os
import time

from benchbook.engine import attempt_dir


def write_slowly(final: str, log: str, key: str, sleep_s: float) -> dict:
    """Log the start (key and pid), write half the output, sleep, then finish it."""
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"{key} {os.getpid()}\n")
    work = attempt_dir(final)
    work.mkdir()
    (work / "first.txt").write_text(key)
    time.sleep(sleep_s)
    (work / "done.txt").write_text(key)
    return {"attempt": str(work)}


def exit_worker() -> None:
    """End the worker process at once, as a crashing native library would."""
    os._exit(3)


def slow_first_start(final: str, log: str, key: str, first_s: float, again_s: float) -> dict:
    """Like write_slowly, but only the first start of ``key`` (by the log) is slow: a rerun finishes soon."""
    again = os.path.exists(log) and any(line.split()[0] == key for line in open(log, encoding="utf-8"))
    return write_slowly(final, log, key, again_s if again else first_s)
