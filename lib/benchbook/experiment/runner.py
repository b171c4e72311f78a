"""Execute one parameterised notebook into a run directory and leave a run record.

A run directory is ``<runs_dir>/<experiment>/<run_id>/`` holding ``raw/`` (measured data),
``analysis/`` (derived data), the executed notebook, whatever else the notebook writes into
``output_dir`` (it receives that parameter), copies of channels.scm and the Guix manifest, and
``run.json`` (schema: run.schema.json). The record is written before execution (status "running",
with its "owner": host, boot, pid) and rewritten atomically when the run ends, so a run killed midway
is recognisable as incomplete and keeps whatever raw data it had written; the next run of the same
experiment rewrites such a record as "interrupted" once its owner is gone (record.mark_abandoned).

A notebook may leave two files for the record: ``metrics.json`` (an object of named results, folded
into "metrics") and ``capabilities.json`` (a list of {"capability", "status", "detail"}: what was
missing or substituted, folded into "capabilities"). Run with ``dry_run=True`` a notebook measures nothing and
writes ``dry-run.txt`` (DRY_RUN_FILE): every command each host would run.
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import secrets
import shutil
import sys
import time
import traceback
import types
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.experiment.record import mark_abandoned, record_owner, write_record
from benchbook.paths import REPO_ROOT, RUNS_DIR
from benchbook.provenance.checksums import file_entry, hash_tree, sha256_file, tree_entry
from benchbook.provenance.environment import (
    ANALYSIS_MANIFEST,
    CHANNELS_FILE,
    TESTBED_MANIFEST,
    environment_description,
    git_state,
)
from benchbook.provenance.fingerprint import host_fingerprint

if TYPE_CHECKING:
    from benchbook.experiment.jupyter_session import JupyterSession

CAPABILITY_STATUSES = ("present", "missing", "substituted", "unknown")
DRY_RUN_FILE = "dry-run.txt"


@dataclass
class RunResult:
    run_dir: Path
    status: str  # "complete" | "failed" | "interrupted"
    record: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def _defer_iri_grammar() -> None:
    """Let jsonschema (imported by papermill through nbformat, and by run-record validation) load
    without building rfc3987_syntax's Earley parser for RFC 3987 (seconds at import; run records use
    no IRI format): the module is stood in for by one that builds the parser on first use."""
    if "rfc3987_syntax" in sys.modules or "jsonschema" in sys.modules:
        return
    if importlib.util.find_spec("rfc3987_syntax") is None:
        return
    stand_in = types.ModuleType("rfc3987_syntax")
    real: list[types.ModuleType] = []

    def load() -> types.ModuleType:
        if not real:
            del sys.modules["rfc3987_syntax"]
            try:
                real.append(importlib.import_module("rfc3987_syntax"))
            except BaseException:
                sys.modules["rfc3987_syntax"] = stand_in
                raise
        return real[0]

    def is_valid_syntax(term: str, value: str) -> bool:
        return load().is_valid_syntax(term, value)

    def attribute(name: str) -> Any:
        if name.startswith("__"):  # the import system probes __path__ and others: not a reason to load
            raise AttributeError(name)
        return getattr(load(), name)

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    stand_in.__getattr__ = attribute  # type: ignore[method-assign]
    sys.modules["rfc3987_syntax"] = stand_in


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def new_run_id(tag: str | None = None) -> str:
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    middle = f"-{tag}" if tag else ""
    return f"{stamp}{middle}-{secrets.token_hex(3)}"


def _input_entries(notebook: Path, parameters: dict[str, Any], extra: Iterable[Path]) -> tuple[list[dict], list[str]]:
    """The notebook, every parameter that names an existing file or directory, and ``extra`` paths
    (a directory is one entry whose SHA-256 covers every file in it, see checksums.tree_entry)."""
    entries = [file_entry(notebook, role="notebook")]
    warnings: list[str] = []
    candidates: list[tuple[str, Path]] = []
    for name, value in parameters.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if isinstance(v, str) and v and len(v) < 4096 and ("/" in v or "." in v):
                p = Path(v)
                if p.exists():
                    candidates.append((f"parameter:{name}", p))
    candidates += [("input", Path(p)) for p in extra]

    too_wide = {Path("/"), Path.home().resolve(), REPO_ROOT.resolve(), Path.cwd().resolve()}
    for role, p in candidates:
        if p.is_file():
            entries.append(file_entry(p.resolve(), role=role))
        elif p.is_dir():
            if p.resolve() in too_wide:
                warnings.append(f"{role}: {p} is the root, home, repository or working directory; not hashed "
                                f"as an input")
                continue
            entries.append(tree_entry(p.resolve(), role=role))
    return entries, warnings


def _fold_notebook_files(run_dir: Path, record: dict[str, Any]) -> None:
    """metrics.json and capabilities.json written by the notebook go into the record."""
    warnings = record.setdefault("warnings", [])
    mpath = run_dir / "metrics.json"
    if mpath.exists():
        try:
            metrics = json.loads(mpath.read_text(encoding="utf-8"))
            if isinstance(metrics, dict):
                record["metrics"].update(metrics)
            else:
                warnings.append(f"{mpath}: expected a JSON object of metrics, got {type(metrics).__name__}; ignored")
        except json.JSONDecodeError as exc:
            warnings.append(f"{mpath}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg}); ignored")
    cpath = run_dir / "capabilities.json"
    if cpath.exists():
        try:
            caps = json.loads(cpath.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            warnings.append(f"{cpath}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg}); ignored")
            caps = []
        if not isinstance(caps, list):
            warnings.append(f"{cpath}: expected a list of capability objects; ignored")
            caps = []
        for i, c in enumerate(caps):
            if not (isinstance(c, dict) and isinstance(c.get("capability"), str)):
                warnings.append(f"{cpath}: item {i}: expected {{\"capability\", \"status\", \"detail\"}}; ignored")
                continue
            status = c.get("status", "unknown")
            if status not in CAPABILITY_STATUSES:
                warnings.append(f"{cpath}: item {i}: status {status!r} is not one of {CAPABILITY_STATUSES}; "
                                f"recorded as unknown")
                status = "unknown"
            detail = c.get("detail")
            record["capabilities"].append({"capability": c["capability"], "status": status,
                                           "detail": None if detail is None else str(detail)})


def copy_environment_files(run_dir: Path, manifest: Path | None) -> dict[str, str]:
    copied: dict[str, str] = {}
    if CHANNELS_FILE.is_file():
        shutil.copyfile(CHANNELS_FILE, run_dir / "channels.scm")
        copied["channels"] = "channels.scm"
    if manifest is not None and Path(manifest).is_file():
        shutil.copyfile(manifest, run_dir / "manifest.scm")
        copied["manifest"] = "manifest.scm"
        copied["manifest_source"] = Path(manifest).name
    return copied


def default_manifest(parameters: dict[str, Any]) -> Path:
    """The testbed manifest for measuring notebooks (a ``backend`` of local/testbed/ssh), else analysis."""
    backend = str(parameters.get("backend", "")).lower()
    return TESTBED_MANIFEST if backend in {"local", "testbed", "ssh"} else ANALYSIS_MANIFEST


def notebook_error(exc: BaseException) -> str:
    """One line saying where and why a notebook failed: the cell (execution count and index) and
    the exception raised in it (papermill's PapermillExecutionError carries them); for any other
    failure its type and first line."""
    ename = getattr(exc, "ename", None)
    if ename is not None:
        count = getattr(exc, "exec_count", None)
        index = getattr(exc, "cell_index", None)
        where = f"cell In [{count}]" if count is not None else "a cell"
        if index is not None:
            where += f" (code cell index {index})"
        evalue = str(getattr(exc, "evalue", "")).strip().splitlines()
        return f"{where} raised {ename}: {evalue[0] if evalue else ''}".rstrip(": ")
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def begin_record(run_dir: Path, notebook: Path, parameters: dict[str, Any], experiment: str, run_id: str, *,
                 repetition: int = 0, sweep: dict[str, Any] | None = None,
                 capabilities: Iterable[dict[str, Any]] = (), abandoned: Iterable[Path] = (),
                 inputs: Iterable[Path] = (), manifest: Path | None = None,
                 fingerprint: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """The record of a run starting in ``run_dir``: written first as it stands (status "running", with its
    owner), so that a kill while the provenance is gathered is still visible; then again with the host
    fingerprint, the environment files, the inputs and the git state. ``extra`` are further record fields."""
    user_params = dict(parameters)
    record: dict[str, Any] = {
        "schema_version": 1,
        "id": run_id,
        "experiment": experiment,
        "notebook": str(notebook),
        "notebook_sha256": sha256_file(notebook),
        "executed_notebook": notebook.name,
        "parameters": user_params,
        "repetition": int(repetition),
        "sweep": sweep,
        "status": "running",
        "owner": record_owner(),
        "start": now_iso(),
        "end": None,
        "duration_s": None,
        "error": None,
        "environment": environment_description(),
        "inputs": [],
        "outputs": [],
        "metrics": {},
        "capabilities": [dict(c) for c in capabilities],
        "environment_files": {},
        "warnings": [f"run {d.name} of this experiment was left running by a process that is gone: recorded as "
                     f"interrupted" for d in abandoned],
        **extra,
    }
    write_record(run_dir, record)
    record["host"] = fingerprint if fingerprint is not None else host_fingerprint()
    record["environment_files"] = copy_environment_files(run_dir, manifest or default_manifest(user_params))
    record["inputs"], input_warnings = _input_entries(notebook, user_params, inputs)
    record["warnings"].extend(input_warnings)
    record["environment"].update(git_state(read_paths=[e["path"] for e in record["inputs"]]))
    write_record(run_dir, record)
    return record


def end_record(run_dir: Path, record: dict[str, Any], status: str, error: str | None, started_s: float,
               outputs: list[dict[str, Any]] | None = None) -> None:
    """Finish ``record`` (from begin_record) and write it: the notebook's metrics.json and capabilities.json
    folded in, every output hashed (unless ``outputs`` gives them), the status and error, and unless the status
    is still "running" the end and the duration (from ``started_s``, time.monotonic)."""
    _fold_notebook_files(run_dir, record)
    record["outputs"] = outputs if outputs is not None else hash_tree(run_dir, skip=("run.json",))
    record["status"] = status
    if status != "running":
        record["end"] = now_iso()
        record["duration_s"] = round(time.monotonic() - started_s, 3)
    record["error"] = error
    write_record(run_dir, record)


def run_notebook(
    notebook: Path,
    parameters: dict[str, Any],
    experiment: str,
    runs_dir: Path | None = None,
    run_id: str | None = None,
    kernel_name: str = "python3",
    *,
    repetition: int = 0,
    sweep: dict[str, Any] | None = None,
    inputs: Iterable[Path] = (),
    manifest: Path | None = None,
    fingerprint: dict[str, Any] | None = None,
    capabilities: Iterable[dict[str, Any]] = (),
    kernel: JupyterSession | None = None,
    run_dir: Path | None = None,
) -> RunResult:
    """Execute ``notebook`` with papermill, injecting ``parameters`` plus ``output_dir``.

    With ``kernel`` (a JupyterSession, as a sweep passes) the notebook runs in that session's
    kernel, reset to a fresh kernel's state for it, instead of a kernel started for this run.

    The run record holds the host fingerprint (computed once per process unless given), the
    environment (lock hash, Guix channel commit, git commit and dirty flag), inputs and outputs
    with SHA-256, metrics and capabilities. KeyboardInterrupt marks the run "interrupted" and is
    re-raised; any other failure marks it "failed" and keeps everything the notebook wrote.

    With ``run_dir`` (a task on an engine, benchbook.engine) the run goes into that new directory and no
    other record is touched (the client looks for abandoned runs itself and rewrites this run's record).
    """
    _defer_iri_grammar()
    import papermill as pm  # noqa: PLC0415 after _defer_iri_grammar; notebooks import this module

    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise FileNotFoundError(f"{notebook}: notebook not found")
    # absolute: the notebook runs inside its run directory and gets output_dir from it
    runs_dir = (Path(runs_dir) if runs_dir is not None else RUNS_DIR).resolve()
    run_id = run_id or new_run_id()
    if run_dir is None:
        abandoned = mark_abandoned(runs_dir / experiment, noticed_by=f"run {run_id}")
        run_dir = runs_dir / experiment / run_id
    else:
        abandoned, run_dir = [], Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=False)
    (run_dir / "raw").mkdir()
    (run_dir / "analysis").mkdir()
    params = dict(parameters)
    params["output_dir"] = str(run_dir)
    started = time.monotonic()
    record = begin_record(run_dir, notebook, parameters, experiment, run_id, repetition=repetition, sweep=sweep,
                          capabilities=capabilities, abandoned=abandoned, inputs=inputs, manifest=manifest,
                          fingerprint=fingerprint)
    executed = run_dir / notebook.name
    error: str | None = None
    interrupted: BaseException | None = None
    try:
        if kernel is not None:
            kernel.begin_point(run_dir)
        pm.execute_notebook(
            str(notebook),
            str(executed),
            parameters=params,
            kernel_name=kernel_name,
            progress_bar=False,
            cwd=str(run_dir),
            # ipykernel warns on every start that loopback TCP is unencrypted; errors still show.
            # (IPC transport would avoid the warning but hangs nbclient's cleanup on SIGTERM.)
            extra_arguments=["--IPKernelApp.log_level=ERROR"],
            **(kernel.papermill_arguments() if kernel is not None else {}),
        )
        status = "complete"
    except KeyboardInterrupt as exc:
        status, error, interrupted = "interrupted", "interrupted (KeyboardInterrupt/SIGINT/SIGTERM)", exc
    except Exception as exc:  # the notebook failed: keep everything it wrote, record why
        status = "failed"
        error = notebook_error(exc)
        record["traceback"] = traceback.format_exc(limit=5)
    if kernel is not None and interrupted is None:
        kernel.end_point()
    end_record(run_dir, record, status, error, started)
    if interrupted is not None:
        raise interrupted
    return RunResult(run_dir=run_dir, status=status, record=record, error=error)
