"""Sweeps: kill -9 mid-sweep then --resume gives the same complete records as an uninterrupted
sweep; failed points are redone with their raw data kept; the experiment lock keeps a second sweep out."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchbook.experiment.lock import ExperimentLock, ExperimentLocked
from benchbook.experiment.record import read_record
from benchbook.experiment.sweep import SweepError, expand, parse_grid, run_sweep

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"
BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


def _cli(*args: str, runs: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*BENCHBOOK, *args, "--runs-dir", str(runs), "--no-progress"],
                          capture_output=True, text=True, timeout=240, **kw)


def _all_records(exp_dir: Path) -> list[dict]:
    return [read_record(p) for p in sorted(exp_dir.rglob("run.json"))]  # read_record validates each


def _complete_set(exp_dir: Path) -> set[tuple[str, int]]:
    out = set()
    for d in sorted(exp_dir.iterdir()):
        if d.is_dir() and not d.name.startswith("."):
            rec = read_record(d)
            if rec["status"] == "complete":
                out.add((json.dumps(rec["parameters"], sort_keys=True), rec["repetition"]))
    return out


def test_parse_grid_and_expand():
    grid = parse_grid(["rate=10000,100000", "mode=a,b", "on=true", "x=0.5"])
    assert grid == {"rate": [10000, 100000], "mode": ["a", "b"], "on": [True], "x": [0.5]}
    pts = expand(grid, repeat=3)
    assert len(pts) == 2 * 2 * 3
    assert len({p["key"] for p in pts}) == len(pts)
    assert {(p["parameters"]["rate"], p["parameters"]["mode"], p["repetition"]) for p in pts} == {
        (r, m, k) for r in (10000, 100000) for m in ("a", "b") for k in range(3)}
    with pytest.raises(SweepError, match="NAME=VALUE"):
        parse_grid(["rate"])
    with pytest.raises(SweepError, match="given twice"):
        parse_grid(["a=1", "a=2"])


@pytest.mark.slow
@pytest.mark.timeout(900)  # three sweeps: uninterrupted, killed, resumed
def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    (tmp_path / "input.txt").write_text("a relative input path\n")
    grid_args = ["-p", "rate=1,2", "-p", "sleep_s=1.0", "-p", "note=input.txt", "--repeat", "1"]
    # 1. uninterrupted sweep, shuffled with a recorded seed
    ref = tmp_path / "ref"
    r = _cli("run", str(NOTEBOOK), *grid_args, "--experiment", "exp", "--shuffle", "--seed", "7", runs=ref,
             cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((ref / "exp" / "sweep.json").read_text())
    keys = [p["key"] for p in manifest["points"]]
    expected_order = list(keys)
    random.Random(7).shuffle(expected_order)
    assert manifest["seed"] == 7 and manifest["order"] == expected_order
    ran_in = sorted(_all_records(ref / "exp"), key=lambda rec: rec["start"])
    assert [rec["sweep"]["order"] for rec in ran_in] == [0, 1]
    want = _complete_set(ref / "exp")
    assert len(want) == 2
    # a relative path that exists is recorded (and passed to the notebook) as an absolute one
    assert all(rec["parameters"]["note"] == str(tmp_path / "input.txt") for rec in ran_in)
    assert all(any(i["role"] == "parameter:note" for i in rec["inputs"]) for rec in ran_in)

    # 2. the same sweep killed with SIGKILL while its second point is running (raw data written)
    runs = tmp_path / "killed"
    proc = subprocess.Popen([*BENCHBOOK, "run", str(NOTEBOOK), *grid_args, "--experiment", "exp",
                             "--runs-dir", str(runs), "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            cwd=tmp_path)
    victim = None
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline and victim is None:
            time.sleep(0.1)
            try:
                m = json.loads((runs / "exp" / "sweep.json").read_text())
            except (FileNotFoundError, json.JSONDecodeError):
                continue
            done = [p for p in m["points"] if p["status"] == "complete"]
            running = [p for p in m["points"] if p["status"] == "running"]
            if done and running and (runs / "exp" / running[0]["run_id"] / "raw" / "samples.txt").exists():
                victim = running[0]
        assert victim is not None, "sweep never reached its second point"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its notebook kernel
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    killed_rec = read_record(runs / "exp" / victim["run_id"])
    assert killed_rec["status"] == "running"  # recognisably incomplete, and still a valid record
    assert len(_complete_set(runs / "exp")) == 1

    # 3. resume: skips the complete point, redoes the killed one, keeps its raw data aside
    r = _cli("run", str(NOTEBOOK), *grid_args, "--experiment", "exp", "--resume", runs=runs, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "stale lock" in r.stderr and "moved" in r.stderr
    assert _complete_set(runs / "exp") == want
    m = json.loads((runs / "exp" / "sweep.json").read_text())
    assert all(p["status"] == "complete" for p in m["points"])
    redone = next(p for p in m["points"] if p["key"] == victim["key"])
    assert redone["attempts"][0]["run_id"] == victim["run_id"] and redone["run_id"] != victim["run_id"]
    aside = runs / "exp" / redone["attempts"][0]["moved_to"]
    assert (aside / "raw" / "samples.txt").exists()
    assert read_record(aside)["status"] == "interrupted"
    # no record half-written: every run.json (aside ones included) validates; no temporary files left
    recs = _all_records(runs / "exp")
    assert len(recs) == 3
    assert not list((runs / "exp").rglob("*.tmp"))


def test_failed_point_is_redone_on_resume(tmp_path):
    flag = tmp_path / "fail-flag"
    flag.write_text("fail")
    grid = {"rate": [5], "fail_flag": [str(flag)]}
    out = run_sweep(NOTEBOOK, grid, experiment="f", runs_dir=tmp_path, progress=False)
    assert out.count("failed") == 1
    first = out.manifest["points"][0]["run_id"]
    assert read_record(tmp_path / "f" / first)["sweep"] == {"experiment": "f", "point": 0, "repetition": 0,
                                                            "order": 0, "attempt": 1}
    with pytest.raises(SweepError, match="--resume"):
        run_sweep(NOTEBOOK, grid, experiment="f", runs_dir=tmp_path, progress=False)
    with pytest.raises(SweepError, match="differs"):
        run_sweep(NOTEBOOK, {"rate": [6], "fail_flag": [str(flag)]}, experiment="f", runs_dir=tmp_path,
                  resume=True, progress=False)
    flag.unlink()
    out = run_sweep(NOTEBOOK, grid, experiment="f", runs_dir=tmp_path, resume=True, progress=False)
    assert out.count("complete") == 1 and out.moved_aside == [first]
    redone = out.manifest["points"][0]["run_id"]
    assert read_record(tmp_path / "f" / redone)["sweep"]["attempt"] == 2  # the second attempt at the point
    aside = tmp_path / "f" / ".attempts" / first
    assert read_record(aside)["status"] == "failed"
    assert (aside / "raw" / "samples.txt").read_text() == "5 a\n"


def test_lock_conflict_names_holder(tmp_path):
    with ExperimentLock(tmp_path / "busy") as held:
        assert held.stale_holder is None
        with pytest.raises(ExperimentLocked, match=f"pid {os.getpid()}"):
            ExperimentLock(tmp_path / "busy").acquire()
        r = _cli("run", str(NOTEBOOK), "-p", "rate=1", "--experiment", "busy", runs=tmp_path)
        assert r.returncode == 2
        assert "locked by another sweep" in r.stderr and str(os.getpid()) in r.stderr
    assert not (tmp_path / "busy" / "sweep.json").exists()  # the refused sweep wrote nothing


def test_stale_lock_is_taken_over(tmp_path):
    exp = tmp_path / "stale"
    exp.mkdir()
    (exp / ".lock").write_text(json.dumps({"pid": 999999999, "host": "h", "command": "benchbook run old"}))
    with ExperimentLock(exp) as lock:
        assert lock.stale_holder["pid"] == 999999999
        assert json.loads((exp / ".lock").read_text())["pid"] == os.getpid()
    assert (exp / ".lock").read_text() == ""  # released cleanly


def _processes_under(path: Path) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if str(Path(os.readlink(proc / "cwd"))).startswith(str(path)):
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


def test_sigterm_records_interrupted_run_and_leaves_no_kernel(tmp_path):
    runs = tmp_path / "runs"
    proc = subprocess.Popen([*BENCHBOOK, "run", str(NOTEBOOK), "-p", "sleep_s=60", "--experiment", "t",
                             "--runs-dir", str(runs), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(runs.glob("t/*/raw/samples.txt")):
            time.sleep(0.1)
        assert list(runs.glob("t/*/raw/samples.txt")), "the notebook never started"
        proc.send_signal(signal.SIGTERM)  # the sweep process only, as a service manager would
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    (rec,) = _all_records(runs / "t")
    assert rec["status"] == "interrupted" and rec["end"] and rec["error"]
    assert any(o["path"] == "raw/samples.txt" for o in rec["outputs"])
    assert json.loads((runs / "t" / "sweep.json").read_text())["points"][0]["status"] == "interrupted"
    deadline = time.monotonic() + 20
    while _processes_under(runs) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _processes_under(runs), "a notebook kernel outlived the interrupted sweep"
