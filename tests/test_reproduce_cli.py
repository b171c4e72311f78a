"""`benchbook reproduce` end to end (papermill): Table III 8/8 with the repeats named; a wrong
published value in a test registry gives a mismatch and a non-zero exit; --list and --all say
what cannot run here and why."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.paths import REPO_ROOT
from benchbook.reproduce.registry import DEFAULT_FIGURES_DIR


def run_cli(args, tmp_path, **env_extra):
    env = dict(os.environ, BENCHBOOK_RUNS=str(tmp_path / "runs"), COLUMNS="300", **env_extra)
    proc = subprocess.run([sys.executable, "-m", "benchbook.cli", "reproduce", *args], capture_output=True,
                          text=True, env=env, cwd=REPO_ROOT, timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def only_run_dir(tmp_path: Path, figure_id: str) -> Path:
    dirs = list((tmp_path / "runs" / figure_id).iterdir())
    assert len(dirs) == 1
    return dirs[0]


def test_table3_reproduces_with_repeats_named(tmp_path):
    code, out = run_cli(["wiedner-itc23-table3"], tmp_path)
    assert code == 0, out
    assert "8/8 published values matched" in out
    run_dir = only_run_dir(tmp_path, "wiedner-itc23-table3")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["ok"] and verdict["counts"]["match"] == 8
    assert all(" repeat " in r["runs"] for r in verdict["rows"])
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "complete" and record["metrics"]["verdict"]["match"] == 8
    assert (run_dir / "wiedner-itc23.ipynb").is_file()
    # figures: HTML always; PNG/SVG exported, or the run record says why not
    exports = verdict["figures"]["table3-max-latency-by-repeat"]
    assert Path(exports["html"]).is_file()
    for fmt in ("png", "svg"):
        if exports[fmt].startswith("unavailable"):
            assert any(c["capability"] == f"figure export {fmt}" for c in record["capabilities"])
        else:
            assert Path(exports[fmt]).stat().st_size > 1000


def test_wrong_value_mismatch_list_and_all(tmp_path):
    figs = tmp_path / "figures"
    figs.mkdir()
    src = (DEFAULT_FIGURES_DIR / "scheerer-iitm23-return-level.toml").read_text()
    assert 'value = 505\n' in src
    (figs / "scheerer-iitm23-return-level.toml").write_text(src.replace("value = 505\n", "value = 520\n"))
    (figs / "needs-a-testbed.toml").write_text(
        'id = "needs-a-testbed"\ntitle = "t"\ncitation = "c"\nnotebook = "notebooks/scheerer-iitm23-evt.ipynb"\n'
        'mode = "testbed-measurement"\nrequires = ["no-such-program-xyz", "testbed"]\n')
    code, out = run_cli(["--list"], tmp_path, BENCHBOOK_FIGURES=str(figs))
    assert code == 0, out
    assert "needs-a-testbed" in out and "program no-such-program-xyz not found" in out
    assert "scheerer-iitm23-return-level" in out
    code, out = run_cli(["--all"], tmp_path, BENCHBOOK_FIGURES=str(figs))
    assert code == 1, out
    assert "mismatch" in out and "skipped" in out and "BENCHBOOK_TESTBED" in out
    verdict = json.loads((only_run_dir(tmp_path, "scheerer-iitm23-return-level") / "verdict.json").read_text())
    rows = {r["name"]: r for r in verdict["rows"]}
    assert rows["10000-observation return level"]["status"] == "mismatch"
    assert rows["10000-observation return level"]["published"] == 520
    assert rows["return level 95% CI lower (delta method)"]["status"] == "match"
    assert not verdict["ok"]
    assert not (tmp_path / "runs" / "needs-a-testbed").exists()
    code, out = run_cli(["needs-a-testbed"], tmp_path, BENCHBOOK_FIGURES=str(figs))
    assert code == 3 and "skipped" in out
    code, out = run_cli(["no-such-entry"], tmp_path, BENCHBOOK_FIGURES=str(figs))
    assert code == 2 and "no registry entry 'no-such-entry'" in out
