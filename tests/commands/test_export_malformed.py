"""`benchbook export` and `benchbook env rebuild` on a run whose run.json is a directory or not JSON: one
line naming it, no traceback; `export` exits 1 (data problem), and 2 for a run that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


@pytest.mark.parametrize("command", [["export", "{run}", "-o", "{out}"], ["env", "rebuild", "{run}"]])
def test_run_json_that_is_a_directory(tmp_path, command):
    run = tmp_path / "runs" / "e1" / "r1"
    (run / "run.json").mkdir(parents=True)
    args = [a.format(run=run, out=tmp_path / "crate") for a in command]
    r = subprocess.run(BENCHBOOK + args, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs")))
    assert r.returncode in (1, 2), r.stderr
    if command[0] == "export":
        assert r.returncode == 1, "an unreadable run record is a data problem"
    assert "Traceback" not in r.stderr and "unexpected error" not in r.stderr
    assert f"{run / 'run.json'}: is a directory" in r.stderr, r.stderr
    assert not (tmp_path / "crate").exists()


def _export(tmp_path, ref):
    return subprocess.run(BENCHBOOK + ["export", str(ref), "-o", str(tmp_path / "crate")], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs")))


def test_export_of_a_run_json_that_is_not_json_is_a_data_problem(tmp_path):
    run = tmp_path / "runs" / "e1" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text('{"id": "r1",\n  oops}')
    r = _export(tmp_path, run)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith(f"benchbook export: {run / 'run.json'}: line 2 column 3 (byte 15): not valid JSON")
    assert not (tmp_path / "crate").exists()


def test_export_of_no_such_run_is_a_usage_error(tmp_path):
    (tmp_path / "runs").mkdir()
    r = _export(tmp_path, "nope")
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.startswith("benchbook export: ")
