"""`benchbook run` sweeps on the dask engine (a real LocalCluster): points run as measurement tasks (claimed,
started at most once); the client writes run records with the engine's versions; a point whose notebook
kills its worker ends as a failed run record naming KilledWorker, and is not run again."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from benchbook.engine.cluster import DaskEngine
from benchbook.engine.local import environment_versions
from benchbook.experiment.record import read_record
from benchbook.experiment.sweep import run_sweep

DATA = Path(__file__).resolve().parents[1] / "data"


def killer_notebook(path: Path) -> Path:
    """A point notebook that, with kill=True, SIGKILLs the process that started its kernel (the worker)."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("kill = False\noutput_dir = '.'")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "import os, pathlib, signal, time\n"
        "(pathlib.Path(output_dir) / 'raw' / 'before.txt').write_text('collected before the kill')\n"
        "if kill:\n    os.kill(os.getppid(), signal.SIGKILL)\n    time.sleep(30)  # the orphaned kernel ends itself\n"
        "(pathlib.Path(output_dir) / 'raw' / 'after.txt').write_text('done')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sweep_on_dask_records_engine_and_kills_end_as_failed_records(tmp_path):
    eng = DaskEngine(n_workers=2, allowed_failures=0)
    try:
        out = run_sweep(DATA / "sweep_point.ipynb", {"rate": [10, 20]}, experiment="e", runs_dir=tmp_path,
                        progress=False, engine=eng)
        assert out.count("complete") == 2 and sorted(out.ran) == ["p0000r000", "p0001r000"]
        exp = tmp_path / "e"
        for p in out.manifest["points"]:
            run_dir = exp / p["run_id"]
            rec = read_record(run_dir)
            assert rec["status"] == "complete" and rec["parameters"] == {"rate": p["parameters"]["rate"]}
            assert rec["engine"]["engine"] == "dask" and rec["engine"]["workers"] == 2
            assert rec["engine"]["worker"] in rec["engine"]["versions"]["workers"]
            assert rec["engine"]["versions"]["client"] == environment_versions()
            assert (run_dir / "raw" / "samples.txt").read_text() == f"{p['parameters']['rate']} a\n"
            assert (exp / ".claims" / p["run_id"]).is_file()
        assert sorted(json.loads((exp / "sweep.json").read_text())["order"]) == ["p0000r000", "p0001r000"]
        assert not [d for d in exp.iterdir() if ".attempt-" in d.name]

        nb = killer_notebook(tmp_path / "killer.ipynb")
        out = run_sweep(nb, {"kill": [False, True]}, experiment="k", runs_dir=tmp_path, progress=False, engine=eng)
        exp = tmp_path / "k"
        by = {p["parameters"]["kill"]: p for p in out.manifest["points"]}
        assert by[False]["status"] == "complete" and by[True]["status"] == "failed"
        rec = read_record(exp / by[True]["run_id"])
        assert rec["status"] == "failed"
        assert rec["error"].startswith("KilledWorker: p0001r000: the worker running it died, 1 time(s)"), rec["error"]
        assert rec["note"] == "the run directory is kept as the worker left it"
        assert (exp / by[True]["run_id"] / "raw" / "before.txt").is_file()
        assert not (exp / by[True]["run_id"] / "raw" / "after.txt").exists()
        assert not [d for d in exp.iterdir() if ".attempt-" in d.name]
    finally:
        eng.close()
