"""`benchbook export`: a run record as a Workflow Run RO-Crate that the rocrate package reads back."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rocrate.rocrate import ROCrate

from benchbook.experiment.runner import run_notebook

NOTEBOOK = Path(__file__).resolve().parents[1] / "data" / "sweep_point.ipynb"
WRROC = "https://w3id.org/ro/wfrun/workflow/0.5"
PROCESS = "https://w3id.org/ro/wfrun/process/0.5"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    data = runs / "capture-metadata.txt"
    data.write_text("input data for the crate\n")
    result = run_notebook(NOTEBOOK, {"rate": 11, "mode": "x", "fail_flag": str(data) + ".absent",
                                     "source": str(data)}, "figure-like", runs_dir=runs)
    assert result.status == "complete", result.error
    return runs, result


def _export(ref: str, out: Path, runs: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, BENCHBOOK_RUNS=str(runs))
    return subprocess.run([sys.executable, "-m", "benchbook.cli", "export", ref, "-o", str(out)],
                          capture_output=True, text=True, timeout=120, env=env)


def test_export_reads_back_as_workflow_run_crate(runs, tmp_path):
    runs_dir, result = runs
    out = tmp_path / "crate"
    r = _export(str(result.run_dir), out, runs_dir)
    assert r.returncode == 0, r.stderr
    crate = ROCrate(str(out))  # the rocrate package parses it back
    root_profiles = {c.id for c in crate.root_dataset["conformsTo"]}
    assert {WRROC, PROCESS} <= root_profiles
    wf = crate.mainEntity
    assert "ComputationalWorkflow" in wf.type and wf.id.endswith("sweep_point.ipynb")
    actions = crate.get_by_type("CreateAction")
    assert len(actions) == 1
    action = actions[0]
    assert action["instrument"].id == wf.id
    status = action["actionStatus"]
    assert (status if isinstance(status, str) else status.id).endswith("CompletedActionStatus")
    # parameters: FormalParameter on the workflow, PropertyValue (exampleOfWork) in the action's object
    formal = {fp["name"]: fp for fp in wf["input"]}
    assert set(formal) == {"rate", "mode", "fail_flag", "source"}
    assert formal["rate"]["additionalType"] == "Integer"
    values = {o["name"]: o for o in action["object"] if "PropertyValue" in o.type}
    assert values["rate"]["value"] == 11 and values["rate"]["exampleOfWork"].id == formal["rate"].id
    # inputs and outputs carry their SHA-256, which matches the bytes in the crate
    files = [o for o in action["object"] if "File" in o.type] + list(action["result"])
    assert any(f.id.endswith("capture-metadata.txt") for f in files)
    assert any(f.id == "outputs/raw/samples.txt" for f in files)
    for f in files:
        data = (out / f.id).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"], f.id
        assert f["contentSize"] == len(data)
    # host fingerprint and the run record ride along, about the action
    fp = crate.dereference("host-fingerprint.json")
    assert fp["about"].id == action.id
    host = json.loads((out / "host-fingerprint.json").read_text())
    assert host["kernel"]["release"] == os.uname().release
    assert json.loads((out / "run.json").read_text())["id"] == result.record["id"]


def test_export_by_experiment_picks_newest_and_refuses_non_empty(runs, tmp_path):
    runs_dir, result = runs
    out = tmp_path / "by-name"
    r = _export("figure-like", out, runs_dir)
    assert r.returncode == 0, r.stderr
    assert ROCrate(str(out)).get_by_type("CreateAction")[0].id == f"#run-{result.record['id']}"
    r = _export("figure-like", out, runs_dir)
    assert r.returncode == 2 and "not empty" in r.stderr
    r = _export("no-such-run", tmp_path / "x", runs_dir)
    assert r.returncode == 2 and "no-such-run" in r.stderr
