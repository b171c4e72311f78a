"""run_notebook with a relative runs directory: the notebook runs inside its run directory, so the output_dir
it is given must be absolute (a relative one would point below the run directory)."""

from __future__ import annotations

from pathlib import Path

from benchbook.experiment.runner import run_notebook

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"


def test_relative_runs_dir_is_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_notebook(NOTEBOOK, {"rate": 7}, experiment="rel", runs_dir=Path("runs"))
    assert result.status == "complete", result.error
    assert result.run_dir == tmp_path / "runs" / "rel" / result.run_dir.name
    assert (result.run_dir / "raw" / "samples.txt").read_text() == "7 a\n"
    assert result.record["parameters"] == {"rate": 7}
