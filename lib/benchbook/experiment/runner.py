"""Execute one parameterised notebook into a run directory and leave a run record.

A run directory is ``<runs_dir>/<experiment>/<run_id>/`` holding the executed notebook, whatever the
notebook writes into ``output_dir`` (it receives that parameter), and ``run.json``. The record is
written before execution (status "running") and rewritten atomically when the run ends, so a run
killed midway is recognisable as incomplete and keeps whatever raw data it had written.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import secrets
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.paths import RUNS_DIR


@dataclass
class RunResult:
    run_dir: Path
    status: str  # "complete" | "failed"
    record: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON via a temporary file in the same directory and rename it into place."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run_notebook(
    notebook: Path,
    parameters: dict[str, Any],
    experiment: str,
    runs_dir: Path | None = None,
    run_id: str | None = None,
    kernel_name: str = "python3",
) -> RunResult:
    """Execute ``notebook`` with papermill, injecting ``parameters`` plus ``output_dir``."""
    import papermill as pm

    notebook = Path(notebook)
    runs_dir = Path(runs_dir) if runs_dir is not None else RUNS_DIR
    run_id = run_id or new_run_id()
    run_dir = runs_dir / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    params = dict(parameters)
    params["output_dir"] = str(run_dir)
    record: dict[str, Any] = {
        "id": run_id,
        "experiment": experiment,
        "notebook": str(notebook),
        "parameters": params,
        "status": "running",
        "start": now_iso(),
        "end": None,
    }
    write_json_atomic(run_dir / "run.json", record)
    executed = run_dir / notebook.name
    error: str | None = None
    try:
        pm.execute_notebook(
            str(notebook),
            str(executed),
            parameters=params,
            kernel_name=kernel_name,
            progress_bar=False,
            cwd=str(run_dir),
        )
        status = "complete"
    except Exception as exc:  # the notebook failed: keep everything it wrote, record why
        status = "failed"
        error = f"{type(exc).__name__}: {exc}"
        record["traceback"] = traceback.format_exc(limit=5)
    record["status"] = status
    record["end"] = now_iso()
    if error:
        record["error"] = error
    write_json_atomic(run_dir / "run.json", record)
    return RunResult(run_dir=run_dir, status=status, record=record, error=error)
