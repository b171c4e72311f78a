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
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from benchbook.atomic_write import write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.experiment.record import write_record
from benchbook.experiment.runner import RunResult, copy_environment_files, new_run_id, now_iso
from benchbook.paths import RUNS_DIR
from benchbook.provenance.checksums import file_entry, hash_tree, sha256_file
from benchbook.provenance.cwl_crate import CrateConversionError, convert
from benchbook.provenance.environment import ANALYSIS_MANIFEST, environment_description
from benchbook.testbed.inventory import Inventory
from benchbook.testbed.ssh_host import SshHost
from benchbook.tools.host import CommandError, CommandLog, CommandResult, LocalHost, run_logged

CWLTOOL_TIMEOUT_S = 6 * 3600.0
READY_TIMEOUT_S = 30.0


class RemoteError(BenchbookError):
    """The remote host was not ready or the workflow could not be staged there (names host and step)."""


@dataclass
class RemoteTarget:
    """Where cwltool runs over ssh: an inventory host (per-run key, host key pinned by the inventory's
    known_hosts), its work directory, and the folder holding cwltool and benchbook there."""

    inventory: Path
    role: str
    bin_dir: str  # prepended to PATH on the host: cwltool, benchbook and papermill live there
    ready_timeout_s: float = READY_TIMEOUT_S

    def host(self, log: CommandLog) -> SshHost:
        return Inventory.from_toml(self.inventory).ssh_host(self.role, log=log)

    def workdir(self) -> str:
        return Inventory.from_toml(self.inventory).role(self.role).workdir

    def describe(self) -> dict[str, Any]:
        inv = Inventory.from_toml(self.inventory)
        h = inv.role(self.role)
        return {"inventory": str(self.inventory), "role": self.role, "name": h.name, "address": h.address,
                "known_hosts": inv.known_hosts, "bin_dir": self.bin_dir}


def _load_job(job: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(job).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{job}: cannot read the job (expected a CWL input object in YAML or JSON): {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{job}: expected a CWL input object (a mapping of input names to values)")
    return data


def run_workflow(workflow: Path, job: Path, *, runs_dir: Path | None = None, experiment: str = "cwl",
                 run_id: str | None = None, cwltool: str = "cwltool", extra_args: tuple[str, ...] = (),
                 remote: RemoteTarget | None = None) -> RunResult:
    """Run ``cwltool --no-container --provenance`` on ``workflow`` with the input object ``job``, convert the
    research object into an RO-Crate and write run.json (status complete only when both succeeded).

    With ``remote`` cwltool runs on that host over ssh (see :class:`RemoteTarget`): the workflow's folder, the
    job and every file it names are copied into a fresh work directory there, and outputs/ and provenance/
    are copied back before the crate is made here."""
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
        "environment_files": copy_environment_files(run_dir, ANALYSIS_MANIFEST),
        "cwl_provenance": {"workflow": str(workflow), "job": str(job), "research_object": None, "crate": None},
        "warnings": [],
    }
    write_record(run_dir, record)
    log = CommandLog(run_dir / "raw")
    error: str | None = None
    try:
        if remote is None:
            argv = [cwltool, "--no-container", "--provenance", str(run_dir / "provenance"), "--outdir",
                    str(run_dir / "outputs"), *extra_args, str(workflow), str(job)]
            result = LocalHost(log=log).run(argv, check=False, timeout_s=CWLTOOL_TIMEOUT_S, what="cwltool",
                                            cwd=str(run_dir))
        else:
            record["cwl_provenance"]["host"] = remote.describe()
            write_record(run_dir, record)
            result = _run_remote(remote, log, run_dir, run_id, workflow, parameters, extra_args)
    except KeyboardInterrupt:
        record.update(status="interrupted", end=now_iso(), error="interrupted (KeyboardInterrupt/SIGINT/SIGTERM)")
        write_record(run_dir, record)
        raise
    except (RemoteError, CommandError) as exc:
        record.update(status="failed", end=now_iso(), error=str(exc), duration_s=round(time.monotonic() - started, 3))
        write_record(run_dir, record)
        raise RemoteError(f"{exc} (run record: {run_dir / 'run.json'})") from exc
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


def wait_ready(host: SshHost, timeout_s: float = READY_TIMEOUT_S, *, clock: Callable[[], float] = time.monotonic,
               pause: Callable[[float], None] = time.sleep) -> float:
    """Seconds until a real login (``ssh HOST true``, host key checked against the pinned file) succeeds;
    retried with a short back-off while the host refuses; RemoteError with ssh's last words at the deadline."""
    t0 = clock()
    delay = 0.1
    while True:
        r = host.run(["true"], check=False, timeout_s=max(5.0, timeout_s), what="ready")
        if r.returncode == 0:
            return clock() - t0
        if clock() - t0 + delay > timeout_s:
            last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RemoteError(f"{host.name} ({host.target}): no ssh login within {timeout_s:g} s: {last}")
        pause(delay)
        delay = min(delay * 2, 2.0)


def _stage_job(value: Any, put: Callable[[Path], str]) -> Any:
    """The job with every File/Directory location replaced by the remote path ``put`` copied it to."""
    if isinstance(value, dict):
        if value.get("class") in ("File", "Directory") and ("location" in value or "path" in value):
            ref = str(value.get("location") or value.get("path"))
            local = Path(ref[len("file://"):]) if ref.startswith("file://") else Path(ref)
            if value["class"] == "Directory":
                raise RemoteError(f"{local}: Directory inputs are not staged to remote hosts; give Files")
            staged = {k: v for k, v in value.items() if k not in ("location", "path")}
            staged["location"] = put(local)
            return staged
        return {k: _stage_job(v, put) for k, v in value.items()}
    if isinstance(value, list):
        return [_stage_job(v, put) for v in value]
    return value


def _run_remote(remote: RemoteTarget, log: CommandLog, run_dir: Path, run_id: str, workflow: Path,
                parameters: dict[str, Any], extra_args: tuple[str, ...]) -> CommandResult:
    """Stage, run cwltool on the remote host, fetch outputs/ and provenance/ into run_dir."""
    host = remote.host(log)
    wait_ready(host, remote.ready_timeout_s)
    work = f"{remote.workdir().rstrip('/')}/cwl-{run_id}"
    path_env = f"PATH={shlex.quote(remote.bin_dir)}:$PATH"
    check = host.run(["sh", "-c", f"{path_env} command -v cwltool benchbook && umask 077 && "
                      f"mkdir -p {shlex.quote(work)}/workflow {shlex.quote(work)}/inputs"],
                     check=False, what="prepare")
    if check.returncode != 0:
        raise RemoteError(f"{host.name}: cwltool and benchbook not found in {remote.bin_dir} (or $PATH), or "
                          f"{work} cannot be made: {check.stderr.strip()[-300:]}")
    try:
        sources = [str(f) for f in sorted(workflow.parent.iterdir())
                   if f.is_file() and f.suffix in (".cwl", ".ttl", ".yml", ".yaml")]
        scp = host.put_argv(sources[0], f"{work}/workflow/")
        run_logged(host.name, log, [*scp[:-2], *sources, scp[-1]], check=True, timeout_s=None, input_text=None,
                   what="put")
        inputs: list[Path] = []

        def put(local: Path) -> str:
            if not local.is_file():
                raise RemoteError(f"{local}: input file not found")
            inputs.append(local)
            return f"{work}/inputs/{len(inputs) - 1}/{local.name}"

        staged = _stage_job(parameters, put)
        if inputs:  # one directory per input: two inputs may share a name (pre.pcap of every pair)
            host.run(["mkdir", *(f"{work}/inputs/{n}" for n in range(len(inputs)))], what="stage")
        for n, local in enumerate(inputs):
            host.put(local, f"{work}/inputs/{n}/{local.name}")
        job_path = run_dir / "remote-job.json"
        job_path.write_text(json.dumps(staged, indent=2) + "\n", encoding="utf-8")
        host.put(job_path, f"{work}/job.json")
        argv = ["cwltool", "--no-container", "--provenance", f"{work}/provenance", "--outdir", f"{work}/outputs",
                *extra_args, f"{work}/workflow/{workflow.name}", f"{work}/job.json"]
        result = host.run(["sh", "-c", f"cd {shlex.quote(work)} && {path_env} {shlex.join(argv)}"], check=False,
                          timeout_s=CWLTOOL_TIMEOUT_S, what="cwltool")
        for sub in ("outputs", "provenance"):
            host.fetch(f"{work}/{sub}", run_dir / sub, check=False)
    finally:
        host.run(["rm", "-rf", work], check=False, what="cleanup")
    return result
