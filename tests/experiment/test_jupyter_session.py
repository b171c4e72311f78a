"""A sweep's shared kernel: every point finds what a freshly started kernel would give it (empty
namespace, its run directory as working directory, sys.path, environment, warning filters and
logging as at start, a paper's own module imported afresh), the executed notebooks and run records
match those of one-kernel-per-point sweeps, and a point that kills the kernel fails alone."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from benchbook.experiment.record import read_record
from benchbook.experiment.sweep import run_sweep

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "kernel_state_point.ipynb"


def _points(outcome) -> list[Path]:
    return [outcome.experiment_dir / p["run_id"] for p in outcome.manifest["points"]]


def _cells(run_dir: Path) -> list[tuple]:
    """(execution count, source with the run directory blanked, outputs) of each code cell."""
    nb = nbformat.read(run_dir / NOTEBOOK.name, as_version=4)
    return [(c.execution_count, c.source.replace(str(run_dir), "RUN"),
             [(o.get("output_type"), o.get("data", {}).get("text/plain"), o.get("text")) for o in c.outputs])
            for c in nb.cells if c.cell_type == "code"]


@pytest.mark.slow
def test_shared_kernel_points_see_a_fresh_kernel(tmp_path):
    (tmp_path / "helper-a").mkdir()
    grid = {"value": [1, 2], "helper_dir": [str(tmp_path / "helper-a")]}
    shared = run_sweep(NOTEBOOK, grid, experiment="shared", runs_dir=tmp_path, progress=False)
    fresh = run_sweep(NOTEBOOK, grid, experiment="fresh", runs_dir=tmp_path, progress=False, shared_kernel=False)
    assert shared.count("complete") == 2 and fresh.count("complete") == 2
    for s_dir, f_dir, value in zip(_points(shared), _points(fresh), (1, 2), strict=True):
        s_seen = json.loads((s_dir / "seen.json").read_text())
        f_seen = json.loads((f_dir / "seen.json").read_text())
        assert s_seen["cwd"] == str(s_dir) and f_seen["cwd"] == str(f_dir)
        s_seen.pop("cwd"), f_seen.pop("cwd")
        assert s_seen == f_seen
        assert s_seen["helper_value"] == value  # the paper's module of this point, not the previous one's
        assert s_seen["leak_env"] is None and not s_seen["polluted_path"] and not s_seen["helper_loaded"]
        assert "leak" not in s_seen["names"]
        assert _cells(s_dir) == _cells(f_dir)  # same execution counts and outputs
        s_rec, f_rec = read_record(s_dir), read_record(f_dir)
        assert s_rec.keys() == f_rec.keys()
        assert s_rec["parameters"] == f_rec["parameters"] and s_rec["metrics"] == f_rec["metrics"]
        assert [o["path"] for o in s_rec["outputs"]] == [o["path"] for o in f_rec["outputs"]]


def test_point_that_kills_the_kernel_fails_alone(tmp_path):
    (tmp_path / "h").mkdir()
    grid = {"crash": [True, False], "helper_dir": [str(tmp_path / "h")]}
    out = run_sweep(NOTEBOOK, grid, experiment="crash", runs_dir=tmp_path, progress=False)
    crashed, after = _points(out)
    assert read_record(crashed)["status"] == "failed"
    assert "Dead" in read_record(crashed)["error"] or "died" in read_record(crashed)["error"]
    assert read_record(after)["status"] == "complete"
    assert json.loads((after / "seen.json").read_text())["cwd"] == str(after)
