"""`benchbook reproduce ID --runs N` and `--until-decisive` on a measured entry whose verdict is decided by a known
number of runs (tests/data/sequential-paper: inconclusive at 6 runs per arm, reproduced from 12; at alpha / 3
inconclusive at 7, reproduced at 14): the looks double the runs on one run directory without rerunning a finished
run, each judged at alpha / K; the budget stops the looks; --runs sets the notebook's repetitions and is refused
for a published-data entry. The sequential rule itself (Bonferroni over looks keeps the family-wise error at
alpha) is checked by simulation with known truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from benchbook.analysis.intervals import equal_tailed_ranks
from benchbook.cli import build_app
from benchbook.commands.reproduce import EXIT_BAD_USAGE
from benchbook.reproduce.sequential import (
    LookPlan,
    SequentialError,
    alpha_mismatch,
    judged_items,
    look_plan,
    look_schedule,
    parse_duration,
    undecided,
)
from conftest import REPO_ROOT

PAPER = REPO_ROOT / "tests" / "data" / "sequential-paper"   # its notebook: until_decisive.ipynb
ENTRY = "sequential-demo"


def reproduce(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), COLUMNS="200")
    env.pop("BENCHBOOK_PAPERS", None)
    return subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", ENTRY, "--papers", str(PAPER), *args],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)


def the_run(tmp_path: Path) -> Path:
    (run,) = (tmp_path / "runs" / ENTRY).iterdir()
    return run


def test_durations_and_the_look_plan() -> None:
    assert parse_duration("20m") == 1200 and parse_duration("1h30m") == 5400 and parse_duration("90s") == 90
    assert parse_duration(" 2m30s ") == 150 and parse_duration("1.5h") == 5400
    for bad in ("", "20", "m", "1h-5m", "0s", "5 minutes"):
        with pytest.raises(SequentialError, match="expected"):
            parse_duration(bad)
    assert look_schedule(6, 24) == (6, 12, 24) and look_schedule(3, 20) == (6, 12, 20) and look_schedule(8, 8) == (8,)
    with pytest.raises(SequentialError, match="at least the first look's 6 runs"):
        look_schedule(2, 5)
    plan = look_plan(3)
    assert plan.runs == (7, 14, 28) and plan.looks == 3 and plan.alpha_per_look == pytest.approx(0.05 / 3)
    # the first look is raised to the fewest runs whose interval of a median exists at 1 - alpha/K (equal tails)
    assert look_plan(6, 24).runs == (7, 14, 24) and look_plan(6, 48).runs == (8, 16, 32, 48)
    assert look_plan(6, 8).runs == (7, 8) and look_plan(6, 6).runs == (6,) and look_plan(6, 7).runs == (7,)
    assert look_plan(12).runs == (12, 24, 48)
    for first, top in ((1, None), (6, 24), (6, 48), (6, 8), (6, 100), (9, 300)):
        p = look_plan(first, top)
        assert equal_tailed_ranks(p.runs[0], 0.5, 1 - p.alpha_per_look) is not None, p
        assert equal_tailed_ranks(p.runs[0] - 1, 0.5, 1 - p.alpha_per_look) is None or p.runs[0] == max(first, 6), p
    assert plan.as_dict()["runs_per_look"] == [7, 14, 28]


def test_undecided_items_and_the_alpha_they_were_judged_at() -> None:
    verdict = {"rows": [{"name": "a", "kind": "measured", "status": "inconclusive", "runs_needed": 14, "alpha": 0.025},
                        {"name": "b", "kind": "measured", "status": "reproduced", "runs_needed": None, "alpha": 0.025},
                        {"name": "c", "status": "info"}],
               "claims": [{"id": "k", "verdict": "inconclusive", "runs_needed": None, "alpha": 0.025,
                           "reason": "not resolvable"}, {"id": "h", "verdict": "holds", "alpha": 0.025}]}
    items = undecided(verdict)
    assert [(i.kind, i.name, i.runs_needed) for i in items] == [("row", "a", 14), ("claim", "k", None)]
    assert alpha_mismatch(verdict, 0.025) is None
    assert "judged at 0.025, not at this look's alpha / K = 0.0125" in alpha_mismatch(verdict, 0.0125)
    del verdict["claims"][1]["alpha"]
    assert "the sequential rule would not hold" in alpha_mismatch(verdict, 0.025)
    assert [x.get("name") or x.get("id") for x in judged_items(verdict)] == ["a", "b", "k", "h"]
    legacy = {"rows": [{"name": "a", "status": "match"}, {"name": "b", "status": "info", "kind": "measured"}]}
    assert judged_items(legacy) == [] and alpha_mismatch(legacy, 0.01) is None


def _sequential_false_decisions(alpha_per_look: float, schedule: tuple[int, ...], trials: int,
                                rng: np.random.Generator) -> float:
    """Share of simulated A/A sequences (true median of the per-run differences 0) in which some look calls the
    directional claim "a > b" or "a < b" decided: the 1 - alpha_per_look equal-tailed order-statistic interval of
    the median of the per-run differences (the judge's ranks, analysis.intervals.equal_tailed_ranks) lies wholly
    on one side of 0 at any look (the looks share their runs)."""
    d = rng.standard_normal((trials, schedule[-1]))
    wrong = np.zeros(trials, dtype=bool)
    for r in schedule:
        ranks = equal_tailed_ranks(r, 0.5, 1 - alpha_per_look)
        if ranks is None:       # too few runs for an interval at this level: that look decides nothing
            continue
        j, k, _coverage = ranks
        s = np.sort(d[:, :r], axis=1)
        wrong |= (s[:, j - 1] > 0) | (s[:, k - 1] < 0)
    return float(wrong.mean())


def test_bonferroni_over_looks_keeps_the_family_wise_error_at_alpha() -> None:
    """Known truth: no effect. Looks at the planned runs each judged at alpha / K decide wrongly in at most alpha
    of the sequences; judging every look at alpha (the bug the rule prevents) exceeds alpha."""
    plan = look_plan(6, 192)                    # 8, 16, 32, 64, 128, 192: K = 6
    rng = np.random.default_rng(20240521)
    split = _sequential_false_decisions(plan.alpha_per_look, plan.runs, 20_000, rng)
    unsplit = _sequential_false_decisions(plan.alpha, plan.runs, 20_000, rng)
    # binomial sd of a share near 0.05 over 20,000 sequences is 0.0015
    assert split <= 0.05, split                 # 0.032: Bonferroni is conservative
    assert unsplit > 0.08, unsplit              # 0.107 when every look is judged at alpha
    assert split < unsplit


@pytest.mark.timeout(600)
def test_until_decisive_extends_the_run_look_by_look_until_decisive(tmp_path: Path) -> None:
    r = reproduce(tmp_path, "--until-decisive", "--max-runs", "24")
    out = r.stdout + r.stderr
    assert "looks after 7, 14, 24 runs per arm, each judged at alpha = 0.05 / 3 = 0.01667" in out, out[-3000:]
    run = the_run(tmp_path)
    record = json.loads((run / "run.json").read_text())
    seq = record["sequential"]
    assert [look["runs_per_arm"] for look in seq["looks"]] == [7, 14], out[-3000:]
    assert seq["stopped"].startswith("decisive at look 2") and seq["looks_planned"] == 3
    first, second = seq["looks"]
    assert [u["name"] for u in first["undecided"]] == ["x: rate"]    # [85, 115]: 98.3 % over 7 runs is [X(1), X(7)]
    assert second["undecided"] == [] and first["alpha"] == second["alpha"] == pytest.approx(0.05 / 3)
    verdict = json.loads((run / "verdict.json").read_text())
    (row,) = verdict["rows"]
    assert row["status"] == "reproduced" and row["runs"] == 14 and row["alpha"] == pytest.approx(0.05 / 3)
    # one run directory: the plan extended, the first look's runs kept, the seeded order unchanged
    summary = json.loads((run / "repetitions.json").read_text())
    assert summary["plan"]["repetitions"] == 14 and [(e["from"], e["to"]) for e in summary["extensions"]] == [(7, 14)]
    seed = summary["plan"]["seed"]
    rng = np.random.default_rng(seed)
    order = [["x", "y"][i] for _ in range(14) for i in rng.permutation(2)]
    assert [o["arm"] for o in summary["order"]] == order
    for slot in summary["order"]:
        rec = json.loads((run / slot["dir"] / "repetition.json").read_text())
        assert rec["previous_attempts"] == [] and rec["position"] == slot["position"]
    started = [json.loads((run / s["dir"] / "repetition.json").read_text())["started"] for s in summary["order"]]
    assert started == sorted(started)          # runs 1-14 ran once each, in order: none of look 1 was rerun
    executions = record["executions"]
    assert len(executions) == 2 and executions[1]["parameters"] == {"repetitions": 14, "seed": seed}
    assert record["parameters"]["repetitions"] == 14 and record["status"] == "complete"
    assert record["duration_s"] == pytest.approx(sum(e["duration_s"] for e in executions), abs=0.01)
    assert "look 1: 7 runs per arm" in out and "look 2: 14 runs per arm" in out and "stopped: decisive" in out


@pytest.mark.timeout(600)
def test_until_decisive_stops_when_the_budget_is_spent_and_runs_sets_the_plan(tmp_path: Path) -> None:
    # any look takes longer than a second (a kernel starts): after the first, the second would overrun
    r = reproduce(tmp_path, "--until-decisive", "--runs", "6", "--budget", "1s")
    seq = json.loads((the_run(tmp_path) / "run.json").read_text())["sequential"]
    assert [look["runs_per_arm"] for look in seq["looks"]] == [7], r.stdout[-3000:]
    assert seq["stopped"].startswith("budget spent: look 2 (14 runs per arm) would take about")
    assert seq["budget_s"] == 1 and "stopped: budget spent" in r.stdout

    other = tmp_path / "other"
    r = reproduce(other, "--runs", "7")
    run = the_run(other)
    assert json.loads((run / "repetitions.json").read_text())["plan"]["repetitions"] == 7, r.stdout[-3000:]
    record = json.loads((run / "run.json").read_text())
    assert record["parameters"]["repetitions"] == 7 and "sequential" not in record
    assert json.loads((run / "verdict.json").read_text())["rows"][0]["runs"] == 7


def test_runs_are_refused_for_a_published_data_entry_and_badly_combined_options(tmp_path: Path,
                                                                                monkeypatch) -> None:
    monkeypatch.setenv("BENCHBOOK_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("BENCHBOOK_PAPERS", raising=False)
    app = build_app(("reproduce",))

    def cli(*args: str):
        return CliRunner().invoke(app, ["reproduce", *args], env={"COLUMNS": "200"})

    r = cli("wiedner-itc23-table3", "--runs", "6")
    assert r.exit_code == EXIT_BAD_USAGE
    assert "--runs applies to measured entries; wiedner-itc23-table3 is a published-data entry" in r.output
    r = cli("wiedner-itc23-table3", "--until-decisive")
    assert r.exit_code == EXIT_BAD_USAGE and "--until-decisive applies to measured entries" in r.output
    assert cli("--all", "--runs", "6").exit_code == EXIT_BAD_USAGE
    r = cli("geist-iitm19-fig1", "--budget", "1h")
    assert r.exit_code == EXIT_BAD_USAGE and "apply to --until-decisive" in r.output
    r = cli("geist-iitm19-fig1", "--until-decisive", "--budget", "soon")
    assert r.exit_code == EXIT_BAD_USAGE and "duration 'soon': expected hours, minutes" in r.output
    r = cli("geist-iitm19-fig1", "--runs", "6", "-p", "repetitions=7")
    assert r.exit_code == EXIT_BAD_USAGE and "--runs N or -p repetitions=N" in r.output
    assert not (tmp_path / "runs").exists()     # nothing ran


def test_a_look_plan_is_fixed_before_the_first_run() -> None:
    plan = LookPlan((6, 12), 0.05, None)
    assert plan.alpha_per_look == 0.025 and plan.as_dict()["looks_planned"] == 2
