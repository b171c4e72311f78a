"""`benchbook export` and `benchbook env rebuild` on a run whose run.json is a directory: one line
naming it, no traceback."""

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
    assert "Traceback" not in r.stderr and "unexpected error" not in r.stderr
    assert f"{run / 'run.json'}: is a directory" in r.stderr, r.stderr
    assert not (tmp_path / "crate").exists()
