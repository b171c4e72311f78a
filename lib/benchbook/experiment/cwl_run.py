"""Run a CWL workflow with cwltool into a run directory and leave a run record linking its provenance.

``<runs_dir>/<experiment>/<run_id>/`` holds ``outputs/`` (cwltool --outdir), ``outputs.json`` (the
output object cwltool printed), ``provenance/`` (the CWLProv research object of cwltool --provenance),
``crate/`` (that research object as a Workflow Run RO-Crate, see benchbook.provenance.cwl_crate),
``raw/commands.jsonl`` with the cwltool command line and its output, copies of channels.scm and the
analysis manifest, and ``run.json`` whose ``cwl_provenance`` names those directories. cwltool runs
with ``--no-container``: every step runs benchbook from PATH, in this environment, without network.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from benchbook.experiment.record import write_json_atomic, write_record
from benchbook.experiment.runner import RunResult, _copy_environment_files, new_run_id, now_iso
from benchbook.paths import RUNS_DIR

CWLTOOL_TIMEOUT_S = 6 * 3600.0


def _load_job(job: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(Path(job).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{job}: cannot read the job (expected a CWL input object in YAML or JSON): {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{job}: expected a CWL input object (a mapping of input names to values)")
    return data


def run_workflow(workflow: Path, job: Path, *, runs_dir: Path | None = None, experiment: str = "cwl",
                 run_id: str | None = None, cwltool: str = "cwltool", extra_args: tuple[str, ...] = ()) -> RunResult:
    """Run ``cwltool --no-container --provenance`` on ``workflow`` with the input object ``job``, convert the
    research object into an RO-Crate and write run.json (status complete only when both succeeded)."""
    from benchbook.provenance.checksums import file_entry, hash_tree, sha256_file
    from benchbook.provenance.cwl_crate import CrateConversionError, convert
    from benchbook.provenance.environment import ANALYSIS_MANIFEST, environment_description
    from benchbook.tools.host import CommandLog, LocalHost

    workflow, job = Path(workflow).resolve(), Path(job).resolve()
    for what, p in (("workflow", workflow), ("job", job)):
        if not p.is_file():
            raise FileNotFoundError(f"{p}: {what} not found")
    parameters = _load_job(job)
    runs_dir = (Path(runs_dir) if runs_dir is not None else RUNS_DIR).resolve()
    run_id = run_id or new_run_id("cwl")
    run_dir = runs_dir / experiment / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    (run_dir / "raw").mkdir()
    started = time.monotonic()
    record: dict[str, Any] = {
        "schema_version": 1,
        "id": run_id,
        "experiment": experiment,
        "notebook": str(workflow),
        "notebook_sha256": sha256_file(workflow),
        "executed_notebook": None,
        "parameters": parameters,
        "repetition": 0,
        "sweep": None,
        "status": "running",
        "start": now_iso(),
        "end": None,
        "duration_s": None,
        "error": None,
        "environment": environment_description(),
        "inputs": [file_entry(workflow, role="workflow"), file_entry(job, role="job")],
        "outputs": [],
        "environment_files": _copy_environment_files(run_dir, ANALYSIS_MANIFEST),
        "cwl_provenance": {"workflow": str(workflow), "job": str(job), "research_object": None, "crate": None},
        "warnings": [],
    }
    write_record(run_dir, record)
    host = LocalHost(log=CommandLog(run_dir / "raw"))
    argv = [cwltool, "--no-container", "--provenance", str(run_dir / "provenance"), "--outdir",
            str(run_dir / "outputs"), *extra_args, str(workflow), str(job)]
    error: str | None = None
    try:
        result = host.run(argv, check=False, timeout_s=CWLTOOL_TIMEOUT_S, what="cwltool", cwd=str(run_dir))
    except KeyboardInterrupt:
        record.update(status="interrupted", end=now_iso(), error="interrupted (KeyboardInterrupt/SIGINT/SIGTERM)")
        write_record(run_dir, record)
        raise
    if result.returncode == 0:
        try:
            write_json_atomic(run_dir / "outputs.json", json.loads(result.stdout))
        except ValueError:
            record["warnings"].append("cwltool printed no JSON output object")
    else:
        tail = [line for line in result.stderr.splitlines() if line.strip()][-3:]
        error = f"cwltool exited with {result.returncode}: " + " | ".join(tail)
    if (run_dir / "provenance" / "metadata" / "manifest.json").is_file():
        record["cwl_provenance"]["research_object"] = "provenance"
        try:
            notes = convert(run_dir / "provenance", run_dir / "crate", workflow_name=workflow.name)
            record["cwl_provenance"]["crate"] = "crate"
            record["warnings"].extend(f"runcrate: {n}" for n in notes)
        except CrateConversionError as exc:
            error = error or str(exc)
    elif error is None:
        error = "cwltool wrote no provenance research object"
    record["outputs"] = hash_tree(run_dir, skip=("run.json",))
    record["status"] = "failed" if error else "complete"
    record["error"] = error
    record["end"] = now_iso()
    record["duration_s"] = round(time.monotonic() - started, 3)
    write_record(run_dir, record)
    return RunResult(run_dir=run_dir, status=record["status"], record=record, error=error)
