"""What `benchbook reproduce --all` prints as it goes: the expected duration of an entry from the records of its
earlier runs, the one-line outcome, the plan of an inconclusive entry with the runs a decisive answer needs, and
(end to end, output to a pipe as in CI) plain lines without a progress bar's redraws."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from benchbook.experiment.record import write_record
from benchbook.experiment.repetitions import Statistic, run_repetitions
from benchbook.reproduce.progress import DEFAULT_DURATION_S, expected_duration_s, outcome_line, plan_line
from benchbook.reproduce.registry import load_entry
from benchbook.reproduce.run import EntryResult
from conftest import REPO_ROOT

PAPER = REPO_ROOT / "tests" / "data" / "sequential-paper"
ENTRY = "sequential-demo"


def earlier_run(runs: Path, run_id: str, duration_s: float, status: str = "complete", **extra) -> Path:
    """A run record as benchbook.experiment.runner leaves one (the fields the schema requires)."""
    run_dir = runs / ENTRY / run_id
    run_dir.mkdir(parents=True)
    write_record(run_dir, {"schema_version": 1, "id": run_id, "experiment": ENTRY,
                           "notebook": str(PAPER / "until_decisive.ipynb"), "parameters": extra.pop("parameters", {}),
                           "repetition": 0, "status": status,
                           "start": "2024-05-01T10:00:00.000+00:00", "end": "2024-05-01T10:01:40.000+00:00",
                           "duration_s": duration_s, **extra})
    return run_dir


def test_expected_duration_is_the_median_of_the_latest_comparable_runs(tmp_path: Path) -> None:
    entry = load_entry(ENTRY, papers=[PAPER])
    runs = tmp_path / "runs"
    assert expected_duration_s(entry, runs) == (DEFAULT_DURATION_S["measured"], "a default")
    earlier_run(runs, "20240501T100000Z-aaaaaa", 900.0)                   # the oldest: not among the latest 3
    earlier_run(runs, "20240502T100000Z-bbbbbb", 100.0)
    earlier_run(runs, "20240503T100000Z-cccccc", 50.0)
    earlier_run(runs, "20240504T100000Z-dddddd", 300.0)
    earlier_run(runs, "20240505T100000Z-eeeeee", 5.0, status="failed")    # not comparable: failed,
    earlier_run(runs, "20240506T100000Z-ffffff", 4000.0, executions=[    # extended by --until-decisive,
        {"parameters": {}, "start": None, "end": None, "duration_s": 1.0, "status": "complete"}])
    earlier_run(runs, "20240507T100000Z-gggggg", 7.0, parameters={"dry_run": True})         # a dry run,
    earlier_run(runs, "20240508T100000Z-hhhhhh", 7.0, parameters={"calibrate": True})       # a calibration
    assert expected_duration_s(entry, runs) == (100.0, "3 earlier runs")


def test_the_outcome_line_and_the_plan_of_an_inconclusive_entry(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_repetitions(run_dir, {"cubic": {}, "bbr": {}}, 3, lambda ctx: [Statistic("x", 1.0, 10, "", "d")],
                    seed=1, progress=None)
    write_record(run_dir, {"schema_version": 1, "id": "r", "experiment": "e", "notebook": "n.ipynb",
                           "parameters": {}, "repetition": 0, "status": "complete", "start": "2024-05-01T10:00:00Z",
                           "end": "2024-05-01T10:04:12Z",
                           "duration_s": 252.4})
    (run_dir / "verdict.json").write_text(json.dumps({
        "schema": "benchbook.verdict/2", "outcome": "inconclusive",
        "rows": [{"name": "share", "kind": "measured", "status": "inconclusive", "runs_needed": 14},
                 {"name": "rtt", "kind": "measured", "status": "inconclusive", "runs_needed": 9},
                 {"name": "p99.999", "kind": "measured", "status": "inconclusive", "runs_needed": None}],
        "claims": [{"id": "a", "verdict": "holds"}, {"id": "b", "verdict": "holds"},
                   {"id": "c", "verdict": "inconclusive", "runs_needed": 12}]}))
    res = EntryResult("turkovic-diss-table5-1", "local-measurement", "inconclusive", "x", run_dir)
    assert outcome_line(res) == "inconclusive, 2 of 3 claims hold, 1 inconclusive"
    assert plan_line(res) == ("plan: 3 runs per arm (2 arms, 6 valid runs), 4 m 12 s; a decisive answer needs about "
                              "14 runs per arm (benchbook reproduce turkovic-diss-table5-1 --runs 14, or "
                              "--until-decisive)")
    (run_dir / "verdict.json").write_text(json.dumps({"rows": [], "claims": []}))
    assert plan_line(res) == "plan: 3 runs per arm (2 arms, 6 valid runs), 4 m 12 s"
    published = EntryResult("wiedner-itc23-table3", "published-data", "reproduced",
                            "8/8 published values matched; principal claim: reproduced")
    assert outcome_line(published) == "reproduced, 8/8 published values matched" and plan_line(published) is None


def test_all_prints_a_line_per_entry_start_and_end_without_redraws_in_a_log(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    earlier_run(runs, "20240502T100000Z-bbbbbb", 100.0)
    env = dict(os.environ, BENCHBOOK_RUNS=str(runs), COLUMNS="200")
    env.pop("BENCHBOOK_PAPERS", None)
    r = subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", "--all", "--papers", str(PAPER),
                        "--paper", "sequential-paper"], cwd=REPO_ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout
    lines = out.splitlines()
    assert "reproducing 1 entries here; about 1 m 40 s from the durations of earlier runs" in lines[0], out
    assert f"[1/1] {ENTRY} … expected 1 m 40 s (1 earlier run); about 1 m 40 s left" in out
    ended = rf"\[1/1\] {ENTRY} … \d+ s: inconclusive, 0 of 1 reproduced .+"
    end = [line for line in lines if re.fullmatch(ended, line)]
    assert len(end) == 1, out                           # 2 runs per arm (the notebook's plan) decide nothing
    plan = "    plan: 2 runs per arm (2 arms, 4 valid runs), "
    assert lines[lines.index(end[0]) + 1].startswith(plan) and "a decisive answer needs about" in out
    assert r.returncode == 6 and "inconclusive:\n  sequential-demo: plan: 2 runs per arm" in out
    assert re.search(r"^outcomes: 1 \w+", out, re.M) and f"run records: {runs}/<entry>/<run>/" in out
    assert "\r" not in out and "\x1b[" not in out       # a log gets plain lines: no bar, no colour codes
    assert "Table" not in out and "published value" not in out   # the verdict tables only with -v
    assert len(lines) < 15
