"""Sweep points as tasks on an engine (benchbook.engine): ``benchbook run --engine dask``.

Each point is a measurement task: never retried, guarded by a claim file ``<experiment>/.claims/<run id>``
so a second start refuses. The notebook runs on a worker into a fresh attempt directory beside the point's
run directory; the client (this process, holding the experiment lock) moves it into place, writes the run
record (with the engine, scheduler and worker versions under "engine") and sweep.json. A point whose worker
died (KilledWorker) or whose task failed gets a failed run record naming the cause, next to whatever the
attempt had collected.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

CLAIMS_DIR = ".claims"


def sweep_point_task(notebook: str, parameters: dict[str, Any], experiment: str, runs_dir: str, run_id: str,
                     repetition: int, sweep: dict[str, Any]) -> dict[str, Any]:
    """What a worker runs for one point: the notebook into an attempt directory of ``<runs>/<exp>/<run id>``."""
    from benchbook.engine.tasks import attempt_dir
    from benchbook.experiment.runner import run_notebook

    work = attempt_dir(Path(runs_dir) / experiment / run_id)
    result = run_notebook(Path(notebook), parameters, experiment, runs_dir=Path(runs_dir), run_id=run_id,
                          repetition=repetition, sweep=sweep, attempt_dir=work)
    return {"attempt": str(work), "status": result.status, "error": result.error}


def run_points_on_engine(engine: Any, notebook: Path, experiment: str, runs_dir: Path, manifest: dict[str, Any],
                         todo: list[dict[str, Any]], save: Callable[[], None],
                         on_done: Callable[[dict[str, Any], Any], None]) -> None:
    """Run the ``todo`` points of ``manifest`` on ``engine``; ``save()`` writes sweep.json, ``on_done(point,
    RunResult)`` is called as each point ends (any order)."""
    from benchbook.engine import Task, run_installing
    from benchbook.experiment.record import mark_abandoned
    from benchbook.experiment.runner import new_run_id

    runs_dir = Path(runs_dir).resolve()
    exp_dir = runs_dir / experiment
    mark_abandoned(exp_dir, noticed_by=f"sweep on engine {engine.name}")
    described = engine.describe()
    tasks, finals, by_key = [], {}, {}
    for p in todo:
        run_id = new_run_id(tag=p["key"])
        p["run_id"], p["status"] = run_id, "running"
        sweep = {"experiment": experiment, "point": p["point"], "repetition": p["repetition"],
                 "order": manifest["order"].index(p["key"]), "attempt": len(p["attempts"]) + 1}
        finals[p["key"]] = exp_dir / run_id
        by_key[p["key"]] = (p, sweep)
        tasks.append(Task(p["key"], sweep_point_task, (str(notebook), p["parameters"], experiment, str(runs_dir),
                                                        run_id, p["repetition"], sweep),
                          kind="measurement", claim=exp_dir / CLAIMS_DIR / run_id))
    save()
    try:
        for o in run_installing(engine, tasks, finals, salvage=True):
            p, sweep = by_key.pop(o.key)
            result = _finish_record(finals[o.key], o, p, sweep, notebook, experiment, described)
            p["status"] = result.status
            save()
            on_done(p, result)
    except KeyboardInterrupt:
        for p, _sweep in by_key.values():
            p["status"] = "interrupted"
        save()
        raise


def _finish_record(run_dir: Path, o: Any, point: dict[str, Any], sweep: dict[str, Any], notebook: Path,
                   experiment: str, described: dict[str, Any]) -> Any:
    """The client's run record of a finished point: the attempt's record (or a new one when the attempt
    left none) with the engine that ran it; a failed task's error as the record's error."""
    from benchbook.experiment.record import RunRecordError, read_record, write_record
    from benchbook.experiment.runner import RunResult, now_iso
    from benchbook.provenance.checksums import hash_tree, sha256_file

    engine = dict(described, worker=o.worker)
    try:
        record = read_record(run_dir)
    except RunRecordError:
        record = None
    if o.ok and record is not None:
        record["engine"] = engine
        write_record(run_dir, record)
        return RunResult(run_dir=run_dir, status=record["status"], record=record, error=record.get("error"))
    run_dir.mkdir(parents=True, exist_ok=True)
    if record is None:
        record = {
            "schema_version": 1, "id": run_dir.name, "experiment": experiment, "notebook": str(notebook),
            "notebook_sha256": sha256_file(notebook), "executed_notebook": None,
            "parameters": point["parameters"], "repetition": int(point["repetition"]), "sweep": sweep,
            "start": now_iso(), "duration_s": None, "metrics": {}, "capabilities": [], "warnings": [],
        }
    record.update({
        "status": "failed", "end": now_iso(), "engine": engine,
        "error": o.error or "the task failed without an error message",
        "note": ("the attempt's files are kept here as its worker left them" if o.extra.get("salvaged")
                 else "the attempt left no files"),
        "outputs": hash_tree(run_dir, skip=("run.json",)),
    })
    write_record(run_dir, record)
    return RunResult(run_dir=run_dir, status="failed", record=record, error=record["error"])
