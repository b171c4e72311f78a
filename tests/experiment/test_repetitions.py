"""benchbook.experiment.repetitions with run functions that need no root: the seeded interleaved order, one
directory and record per run, the tidy table, resuming after Ctrl-C and after SIGKILL without running a
finished run twice, a changed plan refused, invalid runs excluded by a recorded rule."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from benchbook.experiment.repetitions import (
    LOCK_FILE,
    RECORD_FILE,
    SUMMARY_FILE,
    TABLE_FILE,
    PlanMismatch,
    Rule,
    RunContext,
    RunsFailed,
    Statistic,
    base_arm,
    run_repetitions,
)
from benchbook.filelock import FileLock, LockBusy
from benchbook.provenance.checksums import hash_tree
from benchbook.testbed.capabilities import NotRunnable

ARMS = {"a": {"rate_pps": 10}, "b": {"rate_pps": 20}, "c": {"rate_pps": 30}}


@dataclass(frozen=True)
class Config:
    duration_s: int
    ccas: tuple[str, ...]


class Recorder:
    """A run function that notes each call, writes a file into the run's directory and returns two statistics
    (value: the arm's rate times the repetition; n: 100 times the position)."""

    def __init__(self, fail_at: int | None = None, interrupt_at: int | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail_at, self.interrupt_at = fail_at, interrupt_at

    def __call__(self, ctx: RunContext) -> list[Statistic]:
        self.calls.append((ctx.arm, ctx.repetition))
        (ctx.directory / "raw.txt").write_text(f"{ctx.arm} {ctx.repetition} {ctx.position}\n")
        ctx.metrics["position_seen"] = ctx.position
        ctx.capabilities.append({"capability": "program:true", "status": "present", "detail": "/bin/true"})
        if ctx.position == self.interrupt_at:
            raise KeyboardInterrupt
        if ctx.position == self.fail_at:
            raise ValueError("the tool printed nothing")
        rate = ctx.config["rate_pps"]
        return [Statistic("achieved_pps", np.float64(rate * ctx.repetition), np.int64(100 * ctx.position), "pkt/s",
                          "packets received / seconds of the run"),
                Statistic("p99_ms", None, 0, "ms", "not resolvable at this N")]


def expected_order(arms: list[str], repetitions: int, seed: int) -> list[tuple[str, int]]:
    """The documented order, recomputed: per round a permutation of the arms from one default_rng(seed)."""
    rng = np.random.default_rng(seed)
    return [(arms[i], rnd) for rnd in range(1, repetitions + 1) for i in rng.permutation(len(arms))]


def test_order_is_the_seeded_interleaving_and_each_run_has_its_own_record(tmp_path: Path) -> None:
    fn = Recorder()
    res = run_repetitions(tmp_path, ARMS, 4, fn, seed=12345, progress=None)
    order = expected_order(list(ARMS), 4, 12345)
    assert fn.calls == order
    for rnd in range(4):                              # arms alternate: every round runs each arm once
        assert sorted(a for a, _ in order[3 * rnd:3 * rnd + 3]) == ["a", "b", "c"]
    assert order != expected_order(list(ARMS), 4, 54321)
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["plan"]["seed"] == 12345 and summary["plan"]["repetitions"] == 4
    assert [(o["arm"], o["repetition"]) for o in summary["order"]] == order
    assert summary["counts"]["complete"] == summary["counts"]["valid"] == 12 and summary["excluded"] == []
    started = []
    for pos, (arm, rep) in enumerate(order, 1):
        d = tmp_path / "raw" / arm / f"rep{rep}"
        rec = json.loads((d / RECORD_FILE).read_text())
        assert (rec["arm"], rec["repetition"], rec["position"], rec["round"]) == (arm, rep, pos, rep)
        assert rec["status"] == "complete" and rec["valid"] is True and rec["invalid_by"] == []
        assert rec["config"] == ARMS[arm] and rec["seed"] == 12345 and rec["metrics"] == {"position_seen": pos}
        assert rec["started"] <= rec["ended"] and rec["duration_s"] >= 0
        assert (d / "raw.txt").read_text() == f"{arm} {rep} {pos}\n" and (d / "cmd").is_dir()
        started.append(rec["started"])
    assert started == sorted(started)
    table = pd.read_parquet(tmp_path / TABLE_FILE)
    assert list(table.columns) == ["arm", "statistic", "run", "position", "value", "n", "unit", "definition",
                                   "valid"]
    pps = table[table["statistic"] == "achieved_pps"].sort_values("position")
    assert list(pps["value"]) == [ARMS[a]["rate_pps"] * r for a, r in order]
    assert list(pps["n"]) == [100 * p for p in range(1, 13)] and pps["valid"].all()
    assert table[table["statistic"] == "p99_ms"]["value"].isna().all()
    pd.testing.assert_frame_equal(res.statistics(), table)
    assert res.capabilities() == [{"capability": "program:true", "status": "present", "detail": "/bin/true"}]


def test_ctrl_c_inside_a_run_resumes_without_running_a_finished_run_twice(tmp_path: Path) -> None:
    arms = {"x": Config(5, ("cubic",)), "y": Config(5, ("bbr", "cubic"))}
    first = Recorder(interrupt_at=3)
    first_cfg = {k: {"rate_pps": 1, **v.__dict__} for k, v in arms.items()}
    with pytest.raises(KeyboardInterrupt):
        run_repetitions(tmp_path, first_cfg, 3, first, seed=7, progress=None)
    order = expected_order(list(arms), 3, 7)
    assert first.calls == order[:3]
    arm3, rep3 = order[2]
    rec = json.loads((tmp_path / "raw" / arm3 / f"rep{rep3}" / RECORD_FILE).read_text())
    assert rec["status"] == "interrupted" and rec["valid"] is False and "KeyboardInterrupt" in rec["reason"]
    before = {(a, r): json.loads((tmp_path / "raw" / a / f"rep{r}" / RECORD_FILE).read_text())["started"]
              for a, r in order[:2]}
    counts = json.loads((tmp_path / SUMMARY_FILE).read_text())["counts"]
    assert (counts["complete"], counts["interrupted"], counts["pending"]) == (2, 1, 3)

    second = Recorder()
    res = run_repetitions(tmp_path, first_cfg, 3, second, progress=None)   # seed None: the recorded one
    assert second.calls == order[2:]
    assert [(r["arm"], r["repetition"]) for r in res.records] == order
    assert all(r["status"] == "complete" for r in res.records)
    for (a, r), t in before.items():
        assert json.loads((tmp_path / "raw" / a / f"rep{r}" / RECORD_FILE).read_text())["started"] == t
    redone = json.loads((tmp_path / "raw" / arm3 / f"rep{rep3}" / RECORD_FILE).read_text())
    (attempt,) = redone["previous_attempts"]
    assert attempt["dir"] == f"raw/{arm3}/rep{rep3}.attempt1" and attempt["status"] == "interrupted"
    kept = tmp_path / attempt["dir"]
    assert (kept / "raw.txt").read_text() == f"{arm3} {rep3} 3\n"
    assert json.loads((kept / RECORD_FILE).read_text())["status"] == "interrupted"
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["counts"]["complete"] == 6 and summary["runs"][2]["attempts"] == 2
    assert len(pd.read_parquet(tmp_path / TABLE_FILE)) == 12


def test_a_changed_plan_is_refused_and_the_same_plan_runs_nothing(tmp_path: Path) -> None:
    arms = {"x": Config(5, ("cubic",)), "y": Config(5, ("bbr",))}
    run_repetitions(tmp_path, arms, 2, ConfigRecorder(), seed=3, progress=None)
    snapshot = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != SUMMARY_FILE}
    again = ConfigRecorder()
    res = run_repetitions(tmp_path, arms, 2, again, seed=3, progress=None)
    assert again.calls == [] and len(res.records) == 4
    changed = [
        ({**arms, "x": Config(30, ("cubic",))}, 2, 3, "arm 'x' configured differently (duration_s: 5 there, 30 here)"),
        (arms, 1, 3, "repetitions 2 there, 1 here (a plan is extended, never shortened)"),
        (arms, 2, 4, "seed 3 there, 4 here"),
        ({"y": arms["y"], "x": arms["x"]}, 2, 3, "arms ['x', 'y'] there, ['y', 'x'] here"),
    ]
    for new_arms, reps, seed, message in changed:
        with pytest.raises(PlanMismatch, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            run_repetitions(tmp_path, new_arms, reps, again, seed=seed, progress=None)
    with pytest.raises(PlanMismatch, match="validity rules"):
        run_repetitions(tmp_path, arms, 2, again, seed=3, rules=[Rule("r", "d", lambda rec: None)], progress=None)
    assert again.calls == []
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and p.name != SUMMARY_FILE} == snapshot


def test_more_repetitions_extend_the_plan_in_the_seeded_order_without_rerunning(tmp_path: Path) -> None:
    first = Recorder()
    run_repetitions(tmp_path, ARMS, 2, first, seed=99, progress=None)
    order = expected_order(list(ARMS), 5, 99)
    assert first.calls == order[:6]                     # the first rounds of a longer plan are the same
    started = {(a, r): json.loads((tmp_path / "raw" / a / f"rep{r}" / RECORD_FILE).read_text())["started"]
               for a, r in order[:6]}
    said: list[str] = []
    more = Recorder()
    res = run_repetitions(tmp_path, ARMS, 3, more, progress=said.append)   # seed None: the recorded one
    assert more.calls == order[6:9]                     # only the new round runs
    assert "plan extended from 2 to 3 repetitions" in said[0]
    again = Recorder()
    res = run_repetitions(tmp_path, ARMS, 5, again, seed=99, progress=None)
    assert again.calls == order[9:]
    assert [(r["arm"], r["repetition"]) for r in res.records] == order
    for (a, r), t in started.items():                   # nothing of the first plan was rerun
        assert json.loads((tmp_path / "raw" / a / f"rep{r}" / RECORD_FILE).read_text())["started"] == t
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["plan"]["repetitions"] == 5 and summary["counts"]["complete"] == 15
    assert [(e["from"], e["to"]) for e in summary["extensions"]] == [(2, 3), (3, 5)]
    assert summary["extensions"][0]["at"] <= summary["extensions"][1]["at"]
    assert [(o["arm"], o["repetition"]) for o in summary["order"]] == order
    table = pd.read_parquet(tmp_path / TABLE_FILE)
    assert len(table[table["statistic"] == "achieved_pps"]) == 15
    assert run_repetitions(tmp_path, ARMS, 5, Recorder(), progress=None).summary["extensions"] == summary["extensions"]


def test_an_aa_calibration_runs_one_arm_as_two_interleaved_arms(tmp_path: Path) -> None:
    fn = Recorder()
    res = run_repetitions(tmp_path, ARMS, 3, fn, seed=5, progress=None, calibrate="b")
    assert fn.calls == expected_order(["b", "b@aa"], 3, 5)
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert summary["plan"]["arms"] == {"b": ARMS["b"], "b@aa": ARMS["b"]}
    assert summary["plan"]["calibration"] == {"b@aa": "b"}
    assert {r["arm"] for r in res.records} == {"b", "b@aa"} and all(r["config"] == ARMS["b"] for r in res.records)
    with pytest.raises(PlanMismatch, match="A/A calibration"):
        run_repetitions(tmp_path, ARMS, 3, Recorder(), progress=None, calibrate="c")
    with pytest.raises(ValueError, match="calibrate: no arm 'z' in this plan"):
        run_repetitions(tmp_path / "other", ARMS, 3, Recorder(), progress=None, calibrate=["z"])
    first = Recorder()
    run_repetitions(tmp_path / "first", ARMS, 2, first, seed=5, progress=None, calibrate=True)
    assert first.calls == expected_order(["a", "a@aa"], 2, 5) and base_arm("a@aa") == "a" == base_arm("a")


class ConfigRecorder(Recorder):
    """A Recorder for dataclass configurations."""

    def __call__(self, ctx: RunContext) -> list[Statistic]:
        self.calls.append((ctx.arm, ctx.repetition))
        assert isinstance(ctx.config, Config)
        return [Statistic("duration_s", ctx.config.duration_s, None, "s", "configured")]


def test_invalid_runs_are_excluded_by_a_recorded_rule_never_silently(tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []

    def run(ctx: RunContext) -> list[Statistic]:
        calls.append((ctx.arm, ctx.repetition))
        if ctx.arm == "nokernel":
            raise NotRunnable("the kernel has no tcp_vegas")
        if ctx.arm == "crash" and ctx.repetition == 2:
            raise ValueError("iperf3 printed no JSON")
        return [Statistic("loss", 0.02 * ctx.repetition, 1000, "", "lost / sent")]

    rule = Rule("loss", "runs that lost more than 3 % of the packets sent", lambda rec: f"lost "
                f"{rec['statistics'][0]['value']:.0%}" if rec["statistics"][0]["value"] > 0.03 else None)
    arms = {"ok": {}, "nokernel": {}, "crash": {}}
    with pytest.raises(RunsFailed, match="1 of 9 runs failed.*raw/crash/rep2: ValueError: iperf3 printed no JSON"
                       ) as err:
        run_repetitions(tmp_path, arms, 3, run, seed=11, rules=[rule], progress=None)
    res = err.value.result
    assert calls.count(("nokernel", 1)) == 1 and not any(a == "nokernel" and r > 1 for a, r in calls)
    by = {(r["arm"], r["repetition"]): r for r in res.records}
    for rep in (2, 3):
        rec = by[("nokernel", rep)]
        assert rec["status"] == "not runnable" and rec["valid"] is False
        assert "repetition 1 of arm nokernel was not runnable: the kernel has no tcp_vegas" in rec["reason"]
    assert by[("ok", 1)]["valid"] is True
    assert by[("ok", 2)]["invalid_by"] == [{"rule": "loss", "reason": "lost 4%"}]
    assert by[("ok", 2)]["status"] == "complete" and by[("ok", 2)]["valid"] is False
    crash = by[("crash", 2)]
    assert crash["status"] == "failed" and "Traceback" in crash["reason"] and crash["invalid_by"][0]["rule"] == \
        "completed"
    summary = json.loads((tmp_path / SUMMARY_FILE).read_text())
    assert {r["name"] for r in summary["plan"]["rules"]} == {"completed", "not runnable here", "loss"}
    excluded = {(x["arm"], x["repetition"], x["rule"]) for x in summary["excluded"]}
    assert excluded == {("ok", 2, "loss"), ("ok", 3, "loss"), ("crash", 2, "completed"), ("crash", 3, "loss"),
                        ("nokernel", 1, "completed"), ("nokernel", 2, "completed"), ("nokernel", 3, "completed")}
    table = pd.read_parquet(tmp_path / TABLE_FILE)
    assert sorted(map(tuple, table[["arm", "run", "valid"]].itertuples(index=False))) == [
        ("crash", 1, True), ("crash", 3, False), ("ok", 1, True), ("ok", 2, False), ("ok", 3, False)]
    assert res.not_runnable() == {"nokernel": "the kernel has no tcp_vegas"}

    calls.clear()         # calling again redoes the failed run only, its first attempt kept aside
    res = run_repetitions(tmp_path, arms, 3, lambda ctx: run(ctx) if ctx.repetition != 2 or ctx.arm != "crash" else
                          [Statistic("loss", 0.0, 1000, "", "lost / sent")], seed=11, rules=[rule], progress=None)
    assert calls == []
    rec = next(r for r in res.records if (r["arm"], r["repetition"]) == ("crash", 2))
    assert rec["valid"] is True and rec["previous_attempts"][0]["status"] == "failed"
    assert (tmp_path / "raw" / "crash" / "rep2.attempt1" / RECORD_FILE).is_file()


def test_a_plan_in_progress_elsewhere_and_bad_arms_are_refused(tmp_path: Path) -> None:
    with FileLock(tmp_path / ".repetitions.lock", blocking=False, description="another runner"):
        with pytest.raises(LockBusy, match="another runner"):
            run_repetitions(tmp_path, ARMS, 1, Recorder(), progress=None)
    with pytest.raises(ValueError, match="arm name 'a/b'"):
        run_repetitions(tmp_path, {"a/b": {}}, 1, Recorder(), progress=None)
    with pytest.raises(ValueError, match="not 'completed'"):
        run_repetitions(tmp_path, ARMS, 1, Recorder(), rules=[Rule("completed", "", lambda r: None)], progress=None)
    assert not (tmp_path / SUMMARY_FILE).exists()


KILLED_SCRIPT = """
import sys, time
from pathlib import Path
from benchbook.experiment.repetitions import Statistic, run_repetitions

out = Path(sys.argv[1])

def run(ctx):
    with open(out.parent / "calls.log", "a") as fh:
        fh.write(f"{ctx.arm} {ctx.repetition}\\n")
    (ctx.directory / "partial.txt").write_text("written before the kill")
    if ctx.position == 3:
        (out.parent / "at-3").write_text("")
        time.sleep(120)
    return [Statistic("x", ctx.position, 1, "", "position")]

run_repetitions(out, {"a": {}, "b": {}}, 3, run, seed=99, progress=None)
"""


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_sigkilled_process_is_resumed_and_its_unfinished_run_redone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(KILLED_SCRIPT))
    proc = subprocess.Popen([sys.executable, str(script), str(out)])
    deadline = time.monotonic() + 90
    while not (tmp_path / "at-3").exists():
        assert proc.poll() is None, "the runner ended before its third run"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    order = expected_order(["a", "b"], 3, 99)
    killed = out / "raw" / order[2][0] / f"rep{order[2][1]}"
    assert json.loads((killed / RECORD_FILE).read_text())["status"] == "running"

    def run(ctx: RunContext) -> list[Statistic]:
        with open(tmp_path / "calls.log", "a") as fh:
            fh.write(f"{ctx.arm} {ctx.repetition}\n")
        return [Statistic("x", ctx.position, 1, "", "position")]

    res = run_repetitions(out, {"a": {}, "b": {}}, 3, run, progress=None)
    calls = [tuple(line.split()) for line in (tmp_path / "calls.log").read_text().splitlines()]
    assert calls == [(a, str(r)) for a, r in [*order[:3], *order[2:]]]     # the killed run twice, nothing else
    assert [r["status"] for r in res.records] == ["complete"] * 6
    (attempt,) = json.loads((killed / RECORD_FILE).read_text())["previous_attempts"]
    assert attempt["status"] == "interrupted" and f"pid {proc.pid}" in attempt["reason"]
    assert (out / attempt["dir"] / "partial.txt").read_text() == "written before the kill"
    assert json.loads((out / attempt["dir"] / RECORD_FILE).read_text())["status"] == "interrupted"


def test_records_hold_numbers_as_json_numbers(tmp_path: Path) -> None:
    res = run_repetitions(tmp_path, {"a": {"rate_pps": 3}}, 1, Recorder(), seed=0, progress=None)
    stat: dict[str, Any] = res.records[0]["statistics"][0]
    assert stat == {"name": "achieved_pps", "value": 3.0, "n": 100, "unit": "pkt/s",
                    "definition": "packets received / seconds of the run"}
    assert isinstance(json.loads((tmp_path / "raw/a/rep1" / RECORD_FILE).read_text())["statistics"][0]["n"], int)


def test_the_runners_lock_file_is_not_an_output_of_the_run(tmp_path: Path) -> None:
    """The runner's lock stays behind as an empty hidden file; a run record's outputs (and the site, which offers
    them) list the data, not the lock; hidden temporary files likewise."""
    run_repetitions(tmp_path, ARMS, 1, Recorder(), seed=1, progress=None)
    assert (tmp_path / LOCK_FILE).is_file()
    (tmp_path / ".repetitions.json.tmp").write_text("half")
    listed = {e["path"] for e in hash_tree(tmp_path)}
    assert LOCK_FILE not in listed and ".repetitions.json.tmp" not in listed
    assert {SUMMARY_FILE, TABLE_FILE} <= listed and "raw/a/rep1/raw.txt" in listed
