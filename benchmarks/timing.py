"""Timing helpers shared by the benchmark modules (benchmarks/run.py puts this folder on sys.path)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path


def best_of(fn: Callable[[], object], repeat: int = 2) -> float:
    """Best wall time of ``repeat`` calls, in seconds (the least disturbed run on a shared machine)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def child_run(cmd: list[str]) -> dict:
    """Run cmd in a fresh child process: {"s": wall s, "cpu": user + system s, "rss": peak RSS KiB, "out": stdout}."""
    probe = (
        "import resource, subprocess, sys, time, json\n"
        "t = time.perf_counter()\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "dt = time.perf_counter() - t\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(json.dumps({'s': dt, 'cpu': u.ru_utime + u.ru_stime, 'rss': u.ru_maxrss, 'rc': r.returncode,"
        " 'out': r.stdout, 'err': r.stderr[-2000:]}))\n"
    )
    res = json.loads(subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True,
                                    check=True).stdout)
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd[:3]} failed: {res['err']}")
    return res


def row(name, ours, other, tool, unit, note, higher_is_better=True) -> dict:
    """One BENCHMARKS.md row; ratio = benchbook's advantage (higher is better for benchbook)."""
    ratio = (ours / other if higher_is_better else other / ours) if ours and other else float("nan")
    return {"name": name, "benchbook": ours, "other": other, "other_tool": tool, "unit": unit,
            "ratio": ratio, "note": note}


def kernels_mode() -> str:
    """Which kernels the timed `benchbook` commands run: the AOT build, or numba's JIT and why."""
    out = subprocess.run([str(Path(sys.executable).with_name("benchbook")), "kernels", "status"],
                         capture_output=True, text=True).stdout.strip()
    return "AOT build" if out.startswith("AOT build") else f"numba JIT: {out}"
