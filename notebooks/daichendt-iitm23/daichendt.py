"""Daichendt, Wiedner, Andre (IITM SS23) Figs. 3-5 and Table 1: what the verdict shows beside the judged claims.

Imported by cgroups-v1-v2-latency.ipynb beside it. The measurement is benchbook's generic
:mod:`benchbook.experiment.cgroup_latency`: every repetition of a mode x rate is one run of the repetition runner,
whose statistics (p50, p99, p99.9, p99.99 and the maximum of the run's matched packets, N = matched packets, a
percentile the run's N cannot resolve null with the reason; the DuT's perf counters, a counter perf cannot count
null) are judged across runs by ``verdict.judge_runs`` against the entries' [[claims]] and [[published]] values.
This module adds the context rows (never judged, ``verdict.add_run_summary``): per mode the median over runs of
each statistic with its 95 % order-statistic interval, the observed maximum over r x N, and why an arm, a
percentile or a counter is missing.

Published numbers come only from the entry TOMLs of this folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbook.experiment import cgroup_latency as lp

PAPER_RATES_PPS = (1.52e6, 6.24e6)           # the paper's two packet rates (Figs. 3 and 4)
TABLE1_EVENTS = ("instructions", "branches", "cpu-migrations")
LATENCY_STATISTICS = ("p50_latency", "p99_latency", "p99.9_latency", "p99.99_latency")
PART_RATE = {"fig3": min, "fig4": max, "fig5": min, "table1": min}   # which of the run's rates each part reads


def rate_note(params: lp.ExperimentParams) -> dict[str, str]:
    """The capability line saying how the rates relate to the paper's."""
    paper = params.backend != "local" and sorted(params.rates_pps) == sorted(PAPER_RATES_PPS)
    return {"capability": "packet rates", "status": "present" if paper else "substituted",
            "detail": f"paper {' and '.join(f'{r / 1e6:g}' for r in PAPER_RATES_PPS)} Mpkt/s -> "
                      f"{', '.join(f'{r:g}' for r in params.rates_pps)} pkt/s"}


def part_rate(result: dict[str, Any], part: str) -> float:
    """The packet rate a part's verdict reads (Figs. 3 and 5, Table 1: the lower; Fig. 4: the higher)."""
    return float(PART_RATE[part](result["params"]["rates_pps"]))


def add_info_rows(verdict: Any, result: dict[str, Any], output_dir: Path | str, part: str) -> None:
    """The context rows of one part, after ``verdict.judge_runs(output_dir)``: per mode at the part's rate the
    latency statistics (Figs. 3-5) or the perf counters (Table 1) over runs, the observed maximum, and every
    mode that could not run here with its reason. Never judged: the claims and published values are."""
    rate = part_rate(result, part)
    for mode in result["params"]["isolation_modes"]:
        arm = result["arms"].get(mode, {})
        if not arm.get("runnable", True):
            verdict.add(f"cgroup {mode}: not runnable here", None, None, "", "", "info", arm.get("reason", ""))
            continue
        name = lp.arm_name(mode, rate)
        if part == "table1":
            for event in (*TABLE1_EVENTS, "task-clock", "context-switches"):
                verdict.add_run_summary(f"{mode}: {event} per run at {rate:g} pkt/s", output_dir, name, event)
            continue
        for stat in (*LATENCY_STATISTICS, "max_latency"):
            what = "observed maximum" if stat == "max_latency" else stat.removesuffix("_latency")
            verdict.add_run_summary(f"{mode}: {what} latency at {rate:g} pkt/s", output_dir, name, stat, 1e-3, "us")
    if part == "fig5":
        verdict.figure_redrawn("Fig. 5: 5000 worst-case latencies over time",
                               note="the worst run (largest maximum) per mode, as the paper shows; the paper's 5000 "
                                    "worst of a run at 1.52 Mpkt/s (about 91 M packets in 60 s) lie above its p99.994, "
                                    "here the 5000 worst of a run's N are a far wider slice (the claims read p99.99, "
                                    "the highest percentile a run here resolves)")
