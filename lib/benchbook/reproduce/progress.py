"""What ``benchbook reproduce --all`` tells as it goes: how long an entry is expected to take (from the run
records of its earlier runs), the one line of an entry's outcome, and for an inconclusive entry the plan it ran
and the runs a decisive answer would need.

    expected_duration_s(entry, runs_dir)   (seconds, how it was estimated)
    outcome_line(result)                   "inconclusive, 2 of 3 claims hold"
    plan_line(result)                      "plan: 3 runs per arm (3 arms), 4 m 12 s; a decisive answer needs
                                            about 14 runs per arm"
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from benchbook.experiment.record import RECORD_NAME, iter_run_dirs
from benchbook.experiment.repetitions import SUMMARY_FILE
from benchbook.reproduce.registry import FigureEntry
from benchbook.reproduce.run import EntryResult, read_json_object
from benchbook.reproduce.sequential import duration_text, needed_runs, undecided
from benchbook.reproduce.verdict import VERDICT_FILE

# Without an earlier run of the entry: a guess by kind (the published-data notebooks here take 10-40 s, the
# measured ones one to several minutes).
DEFAULT_DURATION_S = {"published-data": 30.0, "measured": 120.0}
RECENT_RUNS = 3   # the estimate is the median duration of this many latest comparable runs


def expected_duration_s(entry: FigureEntry, runs_dir: Path) -> tuple[float, str]:
    """How long reproducing ``entry`` is expected to take: the median ``duration_s`` of its latest complete runs
    under ``runs_dir/<entry>/`` that ran once with the entry's plan (not extended by --until-decisive, not a
    calibration, not a dry run), else DEFAULT_DURATION_S by mode; with the words saying which."""
    durations = []
    for run_dir in reversed(list(iter_run_dirs(Path(runs_dir) / entry.id))):   # newest first (ids start with time)
        rec = read_json_object(run_dir / RECORD_NAME)
        if rec is None or rec.get("status") != "complete" or not isinstance(rec.get("duration_s"), (int, float)):
            continue
        params = rec.get("parameters") or {}
        if rec.get("executions") or params.get("dry_run") or params.get("calibrate"):
            continue
        durations.append(float(rec["duration_s"]))
        if len(durations) == RECENT_RUNS:
            break
    if durations:
        return statistics.median(durations), f"{len(durations)} earlier run{'s' * (len(durations) > 1)}"
    kind = "published-data" if entry.mode == "published-data" else "measured"
    return DEFAULT_DURATION_S[kind], "a default"


def _verdict(result: EntryResult) -> dict[str, Any] | None:
    return read_json_object(result.run_dir / VERDICT_FILE) if result.run_dir is not None else None


def outcome_line(result: EntryResult) -> str:
    """The outcome and, in a few words, why: how many claims hold (entries with [[claims]]), else the verdict's
    summary or the reason it failed or was skipped."""
    verdict = _verdict(result)
    claims = (verdict or {}).get("claims") or []
    if claims:
        holds = sum(c.get("verdict") == "holds" for c in claims)
        undecided_claims = sum(c.get("verdict") == "inconclusive" for c in claims)
        text = f"{holds} of {len(claims)} claim{'s' * (len(claims) > 1)} hold"
        if undecided_claims:
            text += f", {undecided_claims} inconclusive"
        return f"{result.outcome}, {text}"
    detail = result.detail.split("; principal claim")[0] if result.outcome != "failed" else result.detail
    detail = detail.strip().splitlines()[0] if detail.strip() else ""
    return f"{result.outcome}, {detail}" if detail else result.outcome


def plan_line(result: EntryResult) -> str | None:
    """For a run of repeated runs: the plan it ran (runs per arm, arms, its duration) and, when something is
    inconclusive that more runs could decide, the most runs per arm its rows and claims name."""
    if result.run_dir is None:
        return None
    summary = read_json_object(result.run_dir / SUMMARY_FILE)
    if summary is None:
        return None
    plan = summary.get("plan", {})
    arms = len(plan.get("arms", {}))
    record = read_json_object(result.run_dir / RECORD_NAME) or {}
    took = record.get("duration_s")
    text = (f"plan: {plan.get('repetitions')} runs per arm ({arms} arm{'s' * (arms != 1)}, "
            f"{summary.get('counts', {}).get('valid', '?')} valid runs)"
            + (f", {duration_text(float(took))}" if isinstance(took, (int, float)) else ""))
    items = undecided(_verdict(result) or {})
    if items:
        need = needed_runs(items)
        text += (f"; a decisive answer needs about {need} runs per arm (benchbook reproduce {result.id} --runs "
                 f"{need}, or --until-decisive)" if need is not None else
                 f"; {len(items)} inconclusive row(s)/claim(s) that more runs do not decide")
    return text


__all__ = ["DEFAULT_DURATION_S", "expected_duration_s", "outcome_line", "plan_line"]
