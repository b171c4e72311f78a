"""A paper notebook run as JupyterLab runs it with "Run All": nbclient executes every cell in a kernel started
in the notebook's own folder, with the parameters cell's defaults and no papermill (so no output_dir), and
JPY_SESSION_NAME naming the notebook as jupyter_server sets it. Nothing appears or changes under notebooks/
(git status), and a fresh run directory under <runs>/<entry>/ holds what the notebook wrote with a valid run
record marked interactive, whose verdict rows are those `benchbook reproduce` gives."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from benchbook.experiment.record import read_record
from benchbook.paths import NOTEBOOKS_DIR, REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
SNAPSHOT = json.loads((Path(__file__).resolve().parents[1] / "data" / "reproduce-verdicts.json").read_text())


def git_status_notebooks() -> str:
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "notebooks/"], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True)
    return proc.stdout


def run_all(notebook: Path, runs: Path, monkeypatch) -> nbformat.NotebookNode:
    """Every cell of ``notebook`` in a fresh kernel whose working directory is the notebook's folder; raises
    CellExecutionError at the first cell that raises, as "Run All" stops there."""
    monkeypatch.setenv("BENCHBOOK_RUNS", str(runs))
    monkeypatch.setenv("JPY_SESSION_NAME", str(notebook))
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, timeout=540, kernel_name="python3",
                            resources={"metadata": {"path": str(notebook.parent)}},
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    client.execute()
    return nb


@pytest.mark.parametrize(("notebook", "figure_id"), [
    ("reusable/evaluator-table.ipynb", "wiedner-itc23-table3"),  # a reusable notebook opened directly
    ("scheerer-iitm23/scheerer-iitm23-evt.ipynb", "scheerer-iitm23-return-level"),  # with its paper's module
])
def test_run_all_in_jupyterlab_writes_a_run_not_into_notebooks(notebook, figure_id, tmp_path, monkeypatch):
    path = NOTEBOOKS_DIR / notebook
    before = git_status_notebooks()
    files_before = sorted(p.name for p in path.parent.iterdir())
    run_all(path, tmp_path / "runs", monkeypatch)
    assert git_status_notebooks() == before, "running the notebook by hand changed notebooks/"
    assert sorted(p.name for p in path.parent.iterdir()) == files_before
    (run_dir,) = (tmp_path / "runs" / figure_id).iterdir()
    record = read_record(run_dir)  # valid against run.schema.json
    assert record["interactive"] is True and record["status"] == "complete", record.get("error")
    assert record["experiment"] == figure_id and record["notebook"] == str(path)
    assert record["executed_notebook"] is None
    assert record["parameters"] == {"figure_id": figure_id}  # as papermill would pass: only what the defaults lack
    outputs = {o["path"] for o in record["outputs"]}
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert "verdict.json" in outputs and record["metrics"]["verdict"]["ok"] == verdict["ok"]
    for exports in verdict["figures"].values():  # every figure file inside the run directory
        assert Path(exports["html"]).parent == run_dir and Path(exports["html"]).name in outputs
    before_rows = SNAPSHOT["entries"][figure_id]["rows"]
    assert [(r["name"], r["status"]) for r in verdict["rows"]] == [(r["name"], r["status"]) for r in before_rows]
    for now, then in zip(verdict["rows"], before_rows, strict=True):  # as test_regression: floats to 1e-12 relative
        if isinstance(then["computed"], float):  # (the EVT delta interval's digits moved in the 15th: expm1 near xi 0)
            assert math.isclose(now["computed"], then["computed"], rel_tol=1e-12, abs_tol=0.0), now
        else:
            assert now["computed"] == then["computed"], now
    if figure_id == "wiedner-itc23-table3":  # the notebook's default figure_stem is not the entry's
        assert any("figure_stem" in w and "benchbook reproduce wiedner-itc23-table3" in w for w in record["warnings"])


def _tiny_paper(folder: Path, cells: list[str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "paper.toml").write_text('id = "tiny"\ntitle = "t"\ncitation = "c"\n')
    (folder / "tiny-fig.toml").write_text('id = "tiny-fig"\ntitle = "t"\nnotebook = "tiny.ipynb"\n'
                                          'mode = "published-data"\n')
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    params = nbformat.v4.new_code_cell('figure_id = "tiny-fig"  # the entry\npaper_dir = None  # its folder\n'
                                       'output_dir = None  # the run directory')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "from benchbook.reproduce.notebook_entry import open_entry\n\n"
        "entry, verdict, _, output_dir = open_entry(figure_id, paper_dir, output_dir)"),
        *(nbformat.v4.new_code_cell(c) for c in cells)]
    nbformat.write(nb, folder / "tiny.ipynb")
    return folder / "tiny.ipynb"


def test_a_failing_cell_and_an_unfinished_session_are_recorded(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    failing = _tiny_paper(tmp_path / "a" / "tiny", ["from pathlib import Path\n"
                                                     "Path(output_dir, 'part.txt').write_text('written')",
                                                     "1 / 0"])
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        run_all(failing, runs, monkeypatch)
    (run_dir,) = (runs / "tiny-fig").iterdir()
    record = read_record(run_dir)
    assert record["status"] == "failed", record
    assert record["error"] == "cell In [4] raised ZeroDivisionError: division by zero"
    assert "part.txt" in {o["path"] for o in record["outputs"]} and not (failing.parent / "part.txt").exists()
    unfinished = _tiny_paper(tmp_path / "b" / "tiny", ["x = 1"])  # no verdict: the kernel ends before it is done
    run_all(unfinished, runs, monkeypatch)
    (second,) = set((runs / "tiny-fig").iterdir()) - {run_dir}
    record = read_record(second)
    assert record["status"] == "interrupted" and "ended before the notebook was done" in record["error"]
