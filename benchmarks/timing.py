"""Timing helpers shared by the benchmark modules (benchmarks/run.py puts this folder on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(fn: Callable[[], object], repeat: int = 2) -> float:
    """Best wall time of ``repeat`` calls, in seconds (the least disturbed run on a shared machine)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best
