"""What a paper notebook opens first (benchbook.reproduce.notebook_entry) and the interactive run it starts
without an output directory (benchbook.experiment.interactive), in this process (no kernel: the record is
refreshed by hand where a kernel would after each cell). The notebook run in a kernel as JupyterLab runs it:
tests/reproduce/test_interactive_notebook.py."""

from __future__ import annotations

import json
import sys

import nbformat
import pytest

from benchbook.experiment import interactive
from benchbook.experiment.interactive import end_interactive_run, start_interactive_run
from benchbook.experiment.record import read_record
from benchbook.paths import NOTEBOOKS_DIR
from benchbook.reproduce.notebook_entry import find_entry, import_paper_module, open_entry
from benchbook.reproduce.registry import RegistryError

NOTEBOOK = NOTEBOOKS_DIR / "reusable" / "evaluator-table.ipynb"


@pytest.fixture
def paper(tmp_path):
    """A paper folder outside the registry's search path with one entry and a module beside its notebook that
    imports a second module beside it."""
    folder = tmp_path / "papers" / "mine"
    folder.mkdir(parents=True)
    (folder / "paper.toml").write_text('id = "mine"\ntitle = "t"\ncitation = "c"\n')
    (folder / "mine-fig.toml").write_text('id = "mine-fig"\ntitle = "t"\nnotebook = "mine.ipynb"\n'
                                          'mode = "published-data"\n[parameters]\nsize = 3\n')
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('figure_id = "mine-fig"  # the entry\nsize = 4  # a size\noutput_dir = None')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params]
    nbformat.write(nb, folder / "mine.ipynb")
    (folder / "helper.py").write_text("FACTOR = 2\n")
    (folder / "mymod.py").write_text("from helper import FACTOR\nVALUE = 21 * FACTOR\n")
    yield folder
    for name in ("mymod", "helper"):
        sys.modules.pop(name, None)
    if str(folder) in sys.path:
        sys.path.remove(str(folder))


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Interactive runs go under tmp_path/runs; whatever run a test leaves open is ended with it."""
    monkeypatch.setattr(interactive, "RUNS_DIR", tmp_path / "runs")
    yield tmp_path / "runs"
    end_interactive_run("the test ended")


def test_the_entry_is_found_beside_the_notebook_then_on_the_search_path(paper, tmp_path, monkeypatch):
    monkeypatch.chdir(paper)  # JupyterLab starts a notebook's kernel in the notebook's folder
    assert find_entry("mine-fig").folder == paper
    monkeypatch.chdir(tmp_path)
    with pytest.raises(RegistryError, match="no registry entry 'mine-fig' on the search path"):
        find_entry("mine-fig")
    assert find_entry("mine-fig", paper).folder == paper
    assert find_entry("wiedner-itc23-table3").folder == NOTEBOOKS_DIR / "wiedner-itc23"
    with pytest.raises(RegistryError, match="figure_id is empty: set it in the notebook's parameters cell"):
        find_entry("")


def test_the_paper_module_is_executed_afresh_without_bytecode_in_the_paper_folder(paper):
    module = import_paper_module(paper, "mymod")
    assert module.VALUE == 42 and sys.modules["mymod"] is module
    (paper / "mymod.py").write_text("from helper import FACTOR\nVALUE = 50 * FACTOR\n")
    assert import_paper_module(paper, "mymod").VALUE == 100
    assert not list(paper.rglob("__pycache__")), "a paper module wrote bytecode into its paper folder"
    with pytest.raises(RegistryError, match=r"mine/absent\.py: the paper folder has no module 'absent'"):
        import_paper_module(paper, "absent")
    (paper / "broken.py").write_text("raise ValueError('broken on purpose')\n")
    with pytest.raises(ValueError, match="broken on purpose"):
        import_paper_module(paper, "broken")
    assert "broken" not in sys.modules


def test_an_output_dir_given_is_used_and_no_run_is_started(paper, runs, tmp_path):
    entry, verdict, module, output_dir = open_entry("mine-fig", paper, tmp_path / "out", module="mymod")
    assert entry.id == verdict.figure_id == "mine-fig" and module.VALUE == 42
    assert output_dir == str(tmp_path / "out") and not runs.exists()


def test_without_an_output_dir_a_fresh_run_holds_the_record(paper, runs, monkeypatch):
    monkeypatch.chdir(paper)
    entry, _, _, output_dir = open_entry("mine-fig")
    first = runs / "mine-fig"
    (run_dir,) = first.iterdir()
    assert output_dir == str(run_dir) and "-interactive-" in run_dir.name
    assert (run_dir / "raw").is_dir() and (run_dir / "analysis").is_dir()
    record = read_record(run_dir)  # valid against run.schema.json
    assert record["interactive"] is True and record["status"] == "running" and record["experiment"] == "mine-fig"
    assert record["executed_notebook"] is None and "not by papermill" in record["note"]
    assert record["parameters"] == {"figure_id": "mine-fig"}  # no kernel: only what open_entry was given
    assert record["owner"]["pid"] > 0 and any(i["role"] == "input" for i in record["inputs"])
    _, _, _, again = open_entry("mine-fig")  # "Run All" a second time: another fresh run
    assert again != output_dir and len(list(first.iterdir())) == 2
    left = read_record(run_dir)
    assert left["status"] == "interrupted" and "newer interactive run" in left["error"]
    assert not [p for p in paper.iterdir() if p.name not in {"paper.toml", "mine-fig.toml", "mine.ipynb", "helper.py",
                                                          "mymod.py"}]


def test_the_record_follows_the_cells(runs, tmp_path):
    run = start_interactive_run(NOTEBOOK, {"figure_id": "x", "size": 3}, "x", done_when=("verdict.json",),
                                warnings=["the notebook's values differ"])
    assert run.run_dir.parent == runs / "x"
    record = read_record(run.run_dir)
    assert record["status"] == "running" and record["end"] is None and record["duration_s"] is None
    assert "the notebook's values differ" in record["warnings"]
    assert run.refresh(error="cell In [3] raised ZeroDivisionError: division by zero") == "failed"
    record = read_record(run.run_dir)
    assert record["status"] == "failed" and record["error"] == "cell In [3] raised ZeroDivisionError: division by zero"
    assert record["end"] is not None and record["duration_s"] >= 0
    (run.run_dir / "metrics.json").write_text(json.dumps({"rows": 2}))
    (run.run_dir / "capabilities.json").write_text(json.dumps([{"capability": "png", "status": "missing"}]))
    assert run.refresh() == "running"  # the cell ran again without error; no verdict yet
    record = read_record(run.run_dir)
    assert record["error"] is None and "cell In [3] raised ZeroDivisionError: division by zero" in record["warnings"]
    assert record["metrics"] == {"rows": 2} and len(record["capabilities"]) == 1
    (run.run_dir / "verdict.json").write_text("{}")
    assert run.refresh() == "complete"
    assert run.refresh() == "complete"  # refreshed again: capabilities folded once, not once per refresh
    record = read_record(run.run_dir)
    assert len(record["capabilities"]) == 1
    outputs = {o["path"]: o["sha256"] for o in record["outputs"]}
    assert set(outputs) == {"verdict.json", "metrics.json", "capabilities.json", "channels.scm", "manifest.scm"}
    (run.run_dir / "verdict.json").write_text('{"changed": true}')
    run.refresh()
    assert {o["path"]: o["sha256"] for o in read_record(run.run_dir)["outputs"]}["verdict.json"] != \
        outputs["verdict.json"]
    end_interactive_run("the kernel (or process) ended")
    assert read_record(run.run_dir)["status"] == "complete"  # a run that is done stays complete


def test_a_run_not_done_when_the_process_ends_is_interrupted(runs):
    run = start_interactive_run(NOTEBOOK, {"figure_id": "x"}, "x", done_when=("verdict.json",))
    run.refresh(interrupted="cell In [4] was interrupted (KeyboardInterrupt)")
    assert read_record(run.run_dir)["status"] == "interrupted"
    run.refresh()  # the user ran the cell again
    assert read_record(run.run_dir)["status"] == "running"
    end_interactive_run("the kernel (or process) ended before the notebook was done")
    record = read_record(run.run_dir)
    assert record["status"] == "interrupted"
    assert record["error"] == "interrupted: the kernel (or process) ended before the notebook was done"
