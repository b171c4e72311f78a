"""Run records (run.json): the schema, validation on write and on read, atomic writes (by
:func:`benchbook.atomic_write.write_json_atomic`), discovery, and runs whose process is gone while their
record still says "running" (`mark_abandoned`)."""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchbook.atomic_write import json_safe, write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.provenance.checksums import hash_tree
from benchbook.testbed.state import process_alive, process_start_ticks

SCHEMA_PATH = Path(__file__).with_name("run.schema.json")
SCHEMA_VERSION = 1
RECORD_NAME = "run.json"


class RunRecordError(BenchbookError, ValueError):
    """A run.json that is not valid JSON or does not follow the schema (message names file and place)."""


@functools.lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema  # noqa: PLC0415 heavy; notebooks import this module

    cls = jsonschema.validators.validator_for(schema())
    cls.check_schema(schema())
    return cls(schema(), format_checker=cls.FORMAT_CHECKER)


def validation_errors(record: dict[str, Any]) -> list[str]:
    """Human-readable schema violations ("at parameters.rate: ... "), empty when valid."""
    errors = []
    # a path mixes keys and list indices (and a record built in Python may have non-string keys): sort on
    # (is-a-key, value) pairs, which always compare
    for err in sorted(_validator().iter_errors(record),
                      key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in e.absolute_path]):
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        errors.append(f"at {where}: {err.message}")
    return errors


def validate_record(record: dict[str, Any], source: str = "run record") -> None:
    errors = validation_errors(record)
    if errors:
        raise RunRecordError(f"{source}: does not follow {SCHEMA_PATH.name} (schema version "
                             f"{SCHEMA_VERSION}): " + "; ".join(errors[:5]))


def write_record(run_dir: Path, record: dict[str, Any]) -> None:
    """Validate, then atomically write ``run_dir/run.json``. An invalid record is never written."""
    # what will be on disk is what we validate (a NaN becomes the text "NaN", which no number field accepts)
    record = json.loads(json.dumps(json_safe(record), default=str))
    validate_record(record, source=str(Path(run_dir) / RECORD_NAME))
    write_json_atomic(Path(run_dir) / RECORD_NAME, record)


def update_record(run_dir: Path, **fields: Any) -> dict[str, Any]:
    """Set top-level ``fields`` of a finished run's record (validated, written atomically); returns the record.
    For what a caller learns about a run after its notebook ended, e.g. the looks of
    ``benchbook reproduce --until-decisive`` ("sequential")."""
    record = read_record(run_dir)
    record.update(fields)
    write_record(run_dir, record)
    return record


def read_record(path: Path) -> dict[str, Any]:
    """Read and validate a run.json (``path`` may be the run directory)."""
    path = Path(path)
    if "\0" in str(path):   # os.stat would raise a bare ValueError
        raise RunRecordError(f"{str(path)!r}: a path with a NUL byte names no run record")
    if path.is_dir():
        path = path / RECORD_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunRecordError(f"{path}: no run record (expected a run.json written by benchbook)") from None
    except IsADirectoryError:
        raise RunRecordError(f"{path}: is a directory, expected a run.json file written by benchbook") from None
    except UnicodeDecodeError as exc:
        raise RunRecordError(f"{path}: byte {exc.start}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise RunRecordError(f"{path}: cannot be read: {exc.strerror}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunRecordError(f"{path}: line {exc.lineno} column {exc.colno} (byte {exc.pos}): "
                             f"not valid JSON: {exc.msg}") from None
    if not isinstance(record, dict):
        raise RunRecordError(f"{path}: expected a JSON object at byte 0")
    validate_record(record, source=str(path))
    return record


def iter_run_dirs(experiment_dir: Path) -> Iterator[Path]:
    """Run directories directly under an experiment directory (skipping hidden ones such as .attempts)."""
    experiment_dir = Path(experiment_dir)
    if not experiment_dir.is_dir():
        return
    for d in sorted(experiment_dir.iterdir()):
        if d.is_dir() and not d.name.startswith(".") and (d / RECORD_NAME).exists():
            yield d


def find_run(ref: str | Path, runs_dir: Path) -> Path:
    """A run directory from a path, "<experiment>/<run-id>", or a bare run id under ``runs_dir``."""
    p = Path(ref)
    if "\0" in str(ref):
        raise RunRecordError(f"{str(ref)!r}: a run reference with a NUL byte names no run")
    # a run.json that is there but not a readable file is still that run's: read_record names what is wrong
    if (p / RECORD_NAME).exists():
        return p
    if (runs_dir / p / RECORD_NAME).exists():
        return runs_dir / p
    # a bare run id is looked for in every experiment; "<experiment>/<run-id>" and a path only where they say
    matches = sorted(m for m in runs_dir.glob(f"*/{p.name}/{RECORD_NAME}") if m.is_file()) \
        if len(p.parts) == 1 else []
    if len(matches) == 1:
        return matches[0].parent
    if len(matches) > 1:
        raise RunRecordError(f"run id {ref} is ambiguous under {runs_dir}: "
                             + ", ".join(str(m.parent) for m in matches))
    raise RunRecordError(f"{ref}: no run record found (looked for {p}/run.json and under {runs_dir})")


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def record_owner() -> dict[str, Any]:
    """The process writing a run record ("owner" in run.json): host, boot, pid and the pid's start time,
    so that a record left "running" by a process that is gone can be told from one still in progress."""
    return {"host": socket.gethostname(), "boot_id": _boot_id(), "pid": os.getpid(),
            "start_ticks": process_start_ticks(os.getpid())}


def owner_gone(record: dict[str, Any]) -> bool:
    """True when the record's owner was a process on this host that no longer runs (another boot, or
    the pid is gone or belongs to a later process). Records of other hosts or without an owner: False."""
    owner = record.get("owner")
    if not isinstance(owner, dict) or owner.get("host") != socket.gethostname():
        return False
    if owner.get("boot_id") and _boot_id() and owner["boot_id"] != _boot_id():
        return True
    return not process_alive(int(owner["pid"]), owner.get("start_ticks"))


def mark_abandoned(experiment_dir: Path, noticed_by: str = "") -> list[Path]:
    """Rewrite every record under ``experiment_dir`` left "running" by a process that is gone (killed,
    e.g. by SIGKILL, or the machine stopped) as "interrupted", with that reason and the outputs it left
    (SHA-256 of every file; nothing is deleted). Returns the run directories rewritten."""
    marked = []
    for run_dir in iter_run_dirs(experiment_dir):
        try:  # a cheap look first: only records still "running" are read and validated in full
            if '"running"' not in (run_dir / RECORD_NAME).read_text(encoding="utf-8"):
                continue
            record = read_record(run_dir)
        except (RunRecordError, OSError, UnicodeDecodeError):
            continue
        if record["status"] != "running" or not owner_gone(record):
            continue
        owner = record["owner"]
        record["status"] = "interrupted"
        record["error"] = (f"interrupted: the process running it (pid {owner['pid']} on {owner['host']}) ended "
                           f"without finishing the record (killed, e.g. by SIGKILL, or the machine stopped); "
                           f"its raw data are as that process left them")
        record["note"] = f"found abandoned and marked interrupted{' by ' + noticed_by if noticed_by else ''}"
        record["outputs"] = hash_tree(run_dir, skip=(RECORD_NAME,))
        write_record(run_dir, record)
        marked.append(run_dir)
    return marked
