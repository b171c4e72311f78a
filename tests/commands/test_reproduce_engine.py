"""`benchbook reproduce --all --engine dask`: entries from published data run on a local Dask cluster; the
client writes their run records (with the engine) and judges their verdicts as the local engine does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from benchbook.experiment.record import iter_run_dirs, read_record

BENCHBOOK = [sys.executable, "-m", "benchbook.cli"]


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_reproduce_all_from_published_data_on_dask(tmp_path):
    r = subprocess.run(BENCHBOOK + ["reproduce", "--all", "--paper", "scheerer-iitm23", "--engine", "dask",
                                    "--runs-dir", str(tmp_path)], capture_output=True, text=True,
                       env={"COLUMNS": "250", **os.environ})
    assert r.returncode == 4, r.stdout + r.stderr  # partial: the outcome the local engine gives this entry
    assert "1 entries from published data there; 0 measuring entries here" in r.stdout
    assert "9/9 published values matched" in r.stdout
    exp = tmp_path / "scheerer-iitm23-return-level"
    (run_dir,) = list(iter_run_dirs(exp))
    rec = read_record(run_dir)
    assert rec["status"] == "complete" and rec["engine"]["engine"] == "dask"
    assert rec["engine"]["worker"] in rec["engine"]["versions"]["workers"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["outcome"] == "partial"
    assert str(run_dir) in json.dumps(verdict)  # figure paths name the run directory the run lives in
    assert [p.name for p in (exp / ".claims").iterdir()] == [run_dir.name]


def test_engine_options_apply_to_all_only(tmp_path):
    r = subprocess.run(BENCHBOOK + ["reproduce", "scheerer-iitm23-return-level", "--engine", "dask"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "apply to --all" in r.stdout + r.stderr
