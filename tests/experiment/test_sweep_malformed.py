"""`benchbook run -p` syntax and validation, experiment names, and what a failed notebook prints."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.atomic_write import write_json_atomic
from benchbook.experiment.sweep import SweepError, check_experiment_name, parse_grid

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]
NOTEBOOK = Path(__file__).resolve().parent.parent / "data" / "sweep_point.ipynb"


def test_p_values_do_not_split_inside_brackets_or_quotes():
    assert parse_grid(["x=[1,2]"]) == {"x": [[1, 2]]}
    assert parse_grid(["x=[1,2],[3]", 'm="a,b",c', "o={\"k\": [1, 2]}"]) == {
        "x": [[1, 2], [3]], "m": ["a,b", "c"], "o": [{"k": [1, 2]}]}
    assert parse_grid(["r=1,0.5,true,null,none,text"]) == {"r": [1, 0.5, True, None, None, "text"]}


@pytest.mark.parametrize("spec", ["x=nan", "x=inf", "x=-Infinity", "x=[1,NaN]", "x=1e400"])
def test_nonfinite_values_refused(spec):
    with pytest.raises(SweepError, match="NaN|infinity|finite"):
        parse_grid([spec])


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ".", "", ".hidden", "a\\b", "x..y"])
def test_bad_experiment_names_refused(name):
    with pytest.raises(SweepError, match="experiment name"):
        check_experiment_name(name)


def test_run_json_never_holds_invalid_json(tmp_path):
    p = tmp_path / "run.json"
    write_json_atomic(p, {"parameters": {"a": math.nan, "b": [math.inf, -math.inf], "c": 1.5}})
    doc = json.loads(p.read_text(), parse_constant=lambda c: pytest.fail(f"invalid JSON constant {c}"))
    assert doc["parameters"] == {"a": "NaN", "b": ["Infinity", "-Infinity"], "c": 1.5}


def run(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(BENCHBOOK + ["run", str(NOTEBOOK), *args, "--no-progress"], capture_output=True,
                          text=True, cwd=cwd, timeout=280)


def test_unknown_parameter_refused_listing_the_notebooks(tmp_path):
    r = run("-p", "rat=1", "--runs-dir", str(tmp_path))
    assert r.returncode == 2, r.stderr
    assert "no parameter named 'rat'" in r.stderr and "rate, mode, sleep_s, fail, fail_flag" in r.stderr
    assert not any(tmp_path.iterdir())


def test_experiment_outside_runs_dir_refused(tmp_path):
    runs = tmp_path / "runs"
    r = run("-e", "../x", "--runs-dir", str(runs))
    assert r.returncode == 2 and "experiment name '../x'" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_nan_parameter_refused(tmp_path):
    r = run("-p", "rate=nan", "--runs-dir", str(tmp_path))
    assert r.returncode == 2 and "NaN" in r.stderr, r.stderr


def test_non_path_parameter_stays_relative_and_failed_cell_printed(tmp_path):
    """mode is no path parameter: a value naming an existing file is passed as written. The point
    fails (fail=true): the cell and the exception are printed, not only the run id."""
    (tmp_path / "README.md").write_text("x")
    r = run("-p", "mode=README.md", "-p", "fail=true", "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    rec = next((tmp_path / "runs").glob("*/*/run.json"))
    doc = json.loads(rec.read_text())
    assert doc["parameters"]["mode"] == "README.md"
    assert doc["error"].startswith("cell In [") and "raised" in doc["error"]
    assert doc["error"] in r.stderr
