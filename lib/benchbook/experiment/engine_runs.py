"""Notebook runs as tasks on an engine (benchbook.engine): sweep points (``benchbook run --engine dask``) and
reproductions from published data (``benchbook reproduce --all --engine dask``).

``notebook_task`` runs one notebook on a worker straight into its run directory ``<runs>/<experiment>/<run
id>``: a notebook writes its output_dir into what it makes (figure paths in verdict.json, the executed
notebook's parameters), so its directory is not renamed afterwards. Every such task carries a claim file
``<experiment>/.claims/<run id>``: it starts at most once, so no two workers ever write one run directory
(a task whose worker was lost fails instead of starting again). The client writes the run record
(``finish_record``: the worker's record plus the engine, its scheduler and worker versions under "engine";
for a failed task, a failed record naming the cause beside whatever the run had written) and sweep.json.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.engine import Task
from benchbook.experiment.record import RunRecordError, mark_abandoned, read_record, write_record
from benchbook.experiment.runner import RunResult, new_run_id, now_iso, run_notebook
from benchbook.provenance.checksums import hash_tree, sha256_file

CLAIMS_DIR = ".claims"


def notebook_task(notebook: str, parameters: dict[str, Any], experiment: str, runs_dir: str, run_id: str,
                  repetition: int = 0, sweep: dict[str, Any] | None = None, inputs: tuple[str, ...] = ()
                  ) -> dict[str, Any]:
    """What a worker runs: the notebook into ``<runs>/<experiment>/<run id>``."""
    run_dir = Path(runs_dir) / experiment / run_id
    result = run_notebook(Path(notebook), parameters, experiment, runs_dir=Path(runs_dir), run_id=run_id,
                          repetition=repetition, sweep=sweep, run_dir=run_dir, inputs=[Path(p) for p in inputs])
    return {"status": result.status, "error": result.error}


def notebook_run_task(key: str, notebook: Path, parameters: dict[str, Any], experiment: str, runs_dir: Path,
                      run_id: str, kind: str, repetition: int = 0, sweep: dict[str, Any] | None = None,
                      inputs: tuple[str, ...] = ()) -> Any:
    """The engine Task of one notebook run (``kind``: "measurement" for sweep points, "analysis" for runs
    over published data; both start at most once)."""
    return Task(key, notebook_task, (str(notebook), parameters, experiment, str(runs_dir), run_id, repetition,
                                     sweep, inputs), kind=kind,  # type: ignore[arg-type]
                claim=runs_dir / experiment / CLAIMS_DIR / run_id)


def run_points_on_engine(engine: Any, notebook: Path, experiment: str, runs_dir: Path, manifest: dict[str, Any],
                         todo: list[dict[str, Any]], save: Callable[[], None],
                         on_done: Callable[[dict[str, Any], Any], None]) -> None:
    """Run the ``todo`` points of ``manifest`` on ``engine``; ``save()`` writes sweep.json, ``on_done(point,
    RunResult)`` is called as each point ends (any order)."""
    runs_dir = Path(runs_dir).resolve()
    mark_abandoned(runs_dir / experiment, noticed_by=f"sweep on engine {engine.name}")
    described = engine.describe()
    tasks, by_key = [], {}
    for p in todo:
        run_id = new_run_id(tag=p["key"])
        p["run_id"], p["status"] = run_id, "running"
        sweep = {"experiment": experiment, "point": p["point"], "repetition": p["repetition"],
                 "order": manifest["order"].index(p["key"]), "attempt": len(p["attempts"]) + 1}
        by_key[p["key"]] = (p, sweep)
        tasks.append(notebook_run_task(p["key"], notebook, p["parameters"], experiment, runs_dir, run_id,
                                       "measurement", p["repetition"], sweep))
    save()
    try:
        for o in engine.run(tasks):
            p, sweep = by_key.pop(o.key)
            result = finish_record(runs_dir / experiment / p["run_id"], o, notebook, experiment, p["parameters"],
                                   p["repetition"], sweep, described)
            p["status"] = result.status
            save()
            on_done(p, result)
    except KeyboardInterrupt:
        for p, _sweep in by_key.values():
            p["status"] = "interrupted"
        save()
        raise


def finish_record(run_dir: Path, o: Any, notebook: Path, experiment: str, parameters: dict[str, Any],
                  repetition: int, sweep: dict[str, Any] | None, described: dict[str, Any]) -> Any:
    """The client's run record of a finished task: the worker's record with the engine that ran it; for a
    failed task, a failed record (the worker's, or a new one when it left none) naming the cause."""
    engine = dict(described, worker=o.worker)
    try:
        record = read_record(run_dir)
    except RunRecordError:
        record = None
    if o.ok and record is not None:
        record["engine"] = engine
        write_record(run_dir, record)
        return RunResult(run_dir=run_dir, status=record["status"], record=record, error=record.get("error"))
    left_files = run_dir.is_dir()
    run_dir.mkdir(parents=True, exist_ok=True)
    if record is None:
        record = {
            "schema_version": 1, "id": run_dir.name, "experiment": experiment, "notebook": str(notebook),
            "notebook_sha256": sha256_file(notebook), "executed_notebook": None,
            "parameters": parameters, "repetition": int(repetition), "sweep": sweep,
            "start": now_iso(), "duration_s": None, "metrics": {}, "capabilities": [], "warnings": [],
        }
    record.update({
        "status": "failed", "end": now_iso(), "engine": engine,
        "error": o.error or "the task failed without an error message",
        "note": ("the run directory is kept as the worker left it" if left_files
                 else "the worker left no files"),
        "outputs": hash_tree(run_dir, skip=("run.json",)),
    })
    write_record(run_dir, record)
    return RunResult(run_dir=run_dir, status="failed", record=record, error=record["error"])
