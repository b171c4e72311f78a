"""Sweeps: a Cartesian parameter grid x repetitions, one run record per point, resumable.

``<runs>/<experiment>/sweep.json`` lists every point (parameters, repetition), its run id and
status, the run order (shuffled with a recorded seed when asked) and earlier attempts. Resuming
skips complete points and redoes the others; the directory of an incomplete attempt is moved to
``<experiment>/.attempts/`` (never deleted: it may hold raw data). An ExperimentLock keeps a second
sweep out of the same experiment.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import math
import random
import secrets
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from benchbook.atomic_write import write_json_atomic
from benchbook.errors import BenchbookError
from benchbook.experiment.engine_runs import run_points_on_engine
from benchbook.experiment.jupyter_session import JupyterSession
from benchbook.experiment.lock import ExperimentLock
from benchbook.experiment.record import RunRecordError, read_record, write_record
from benchbook.experiment.runner import new_run_id, run_notebook
from benchbook.paths import RUNS_DIR
from benchbook.provenance.checksums import sha256_file
from benchbook.provenance.fingerprint import host_fingerprint

SWEEP_NAME = "sweep.json"
ATTEMPTS_DIR = ".attempts"
SWEEP_VERSION = 1


class SweepError(BenchbookError, RuntimeError):
    pass


def parse_value(text: str) -> Any:
    """One -p value: a JSON literal where it is one ('10000' -> 10000, '0.5' -> 0.5, 'true' -> True,
    'null' -> None, '"a,b"' -> 'a,b', '[1,2]' -> [1, 2], '{"k": 1}'), 'none'/'True'/'False' as
    Python spells them, anything else the string itself. NaN and infinities are refused (JSON
    cannot hold them)."""
    stripped = text.strip()
    low = stripped.lower()
    if low.lstrip("+-") in ("nan", "inf", "infinity"):
        raise SweepError(f"-p value {text!r}: NaN and infinity cannot be recorded in run.json (JSON has no "
                         "such numbers); give a finite number")
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none"):
        return None
    try:
        value = json.loads(stripped, parse_constant=_refuse_constant)
    except json.JSONDecodeError:
        return text
    except ValueError as exc:
        raise SweepError(f"-p value {text!r}: {exc}") from None
    if _has_nonfinite(value):
        raise SweepError(f"-p value {text!r}: {value!r} is not a finite number; run.json is JSON and holds only "
                         "finite numbers")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} cannot be recorded in run.json (JSON has no such number); give a finite number")


def _has_nonfinite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_has_nonfinite(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nonfinite(v) for v in value.values())
    return False


def split_values(text: str) -> list[str]:
    """Split a -p value list at the commas outside brackets, braces and double quotes:
    '1,2' -> ['1', '2'], '[1,2],[3]' -> ['[1,2]', '[3]'], '"a,b",c' -> ['"a,b"', 'c']."""
    parts: list[str] = []
    depth = 0
    quoted = False
    escaped = False
    start = 0
    for i, ch in enumerate(text):
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def parse_grid(specs: Sequence[str]) -> dict[str, list[Any]]:
    """['rate=1,2', 'mode=a,b', 'sizes=[64,1500]'] -> {'rate': [1, 2], 'mode': ['a', 'b'],
    'sizes': [[64, 1500]]} (order kept; each value as parse_value reads it)."""
    grid: dict[str, list[Any]] = {}
    for i, spec in enumerate(specs):
        name, sep, values = spec.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise SweepError(f"-p argument {i + 1} {spec!r}: expected NAME=VALUE[,VALUE...] with NAME a "
                             f"Python identifier")
        if name in grid:
            raise SweepError(f"-p argument {i + 1}: parameter {name!r} given twice")
        items = [parse_value(v) for v in split_values(values)] if values != "" else [""]
        grid[name] = items
    return grid


def check_experiment_name(name: str) -> str:
    """An experiment name is one directory under the runs directory: no separators, no '..', not
    hidden, printable."""
    if (not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith(".")
            or ".." in name or any(not ch.isprintable() for ch in name) or len(name) > 200):
        raise SweepError(f"experiment name {name!r}: expected one folder name (letters, digits, '-', '_', '.'; "
                         "no '/', no '..', not starting with '.')")
    return name


def expand(grid: dict[str, list[Any]], repeat: int) -> list[dict[str, Any]]:
    """Points in grid order: {"key", "point", "repetition", "parameters"}."""
    if repeat < 1:
        raise SweepError(f"--repeat must be at least 1 (got {repeat})")
    names = list(grid)
    combos = list(itertools.product(*(grid[n] for n in names))) if names else [()]
    points = []
    for ci, combo in enumerate(combos):
        for rep in range(repeat):
            points.append({
                "key": f"p{ci:04d}r{rep:03d}",
                "point": ci,
                "repetition": rep,
                "parameters": dict(zip(names, combo, strict=True)),
                "run_id": None,
                "status": "pending",
                "attempts": [],
            })
    return points


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@dataclass
class SweepOutcome:
    experiment_dir: Path
    manifest: dict[str, Any]
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    moved_aside: list[str] = field(default_factory=list)
    stale_lock: dict[str, Any] | None = None

    def count(self, status: str) -> int:
        return sum(1 for p in self.manifest["points"] if p["status"] == status)


def _move_aside(exp_dir: Path, run_id: str, why: str) -> Path:
    """Move an incomplete run directory into .attempts/ (keeping its raw data) and note why."""
    src = exp_dir / run_id
    dest_root = exp_dir / ATTEMPTS_DIR
    dest_root.mkdir(exist_ok=True)
    dest = dest_root / run_id
    n = 1
    while dest.exists():
        n += 1
        dest = dest_root / f"{run_id}.{n}"
    try:
        rec = read_record(src)
        if rec["status"] == "running":
            rec["status"] = "interrupted"
            rec["error"] = rec.get("error") or "the sweep process ended while this run was in progress"
        rec["note"] = why
        write_record(src, rec)
    except RunRecordError:
        pass  # no or unreadable record (killed before its first write): move it as it is
    shutil.move(str(src), str(dest))
    return dest


def _reconcile(exp_dir: Path, manifest: dict[str, Any], outcome: SweepOutcome) -> None:
    """Bring the manifest in line with the run directories on disk."""
    for p in manifest["points"]:
        rid = p.get("run_id")
        if not rid:
            p["status"] = "pending"
            continue
        run_dir = exp_dir / rid
        if not run_dir.exists():
            p["attempts"].append({"run_id": rid, "status": "vanished", "moved_to": None})
            p["run_id"], p["status"] = None, "pending"
            continue
        try:
            status = read_record(run_dir)["status"]
        except RunRecordError as exc:
            status = f"unreadable ({exc})"
        if status == "complete":
            p["status"] = "complete"
            continue
        dest = _move_aside(exp_dir, rid, f"moved aside by sweep resume at {_now()} (status was {status}); "
                                         f"the point is run again")
        p["attempts"].append({"run_id": rid, "status": status, "moved_to": str(dest.relative_to(exp_dir))})
        outcome.moved_aside.append(rid)
        p["run_id"], p["status"] = None, "pending"


def run_sweep(
    notebook: Path,
    grid: dict[str, list[Any]],
    repeat: int = 1,
    experiment: str | None = None,
    runs_dir: Path | None = None,
    resume: bool = False,
    shuffle: bool = False,
    seed: int | None = None,
    progress: bool = True,
    on_point: Callable[[dict[str, Any], Any], None] | None = None,
    shared_kernel: bool = True,
    engine: Any = None,
) -> SweepOutcome:
    """Run (or resume) a sweep; returns what ran, what was skipped and the final manifest.

    With ``shared_kernel`` the points run one after another in one kernel, reset to a fresh
    kernel's state before each (benchbook.experiment.jupyter_session); without it each point
    starts its own kernel."""
    notebook = Path(notebook).resolve()
    if not notebook.is_file():
        raise SweepError(f"{notebook}: notebook not found")
    runs_dir = Path(runs_dir) if runs_dir is not None else RUNS_DIR
    experiment = check_experiment_name(experiment or notebook.stem)
    exp_dir = runs_dir / experiment
    lock = ExperimentLock(exp_dir)
    lock.acquire()
    try:
        outcome = SweepOutcome(exp_dir, {}, stale_lock=lock.stale_holder)
        mpath = exp_dir / SWEEP_NAME
        points = expand(grid, repeat)
        if mpath.exists():
            if not resume:
                raise SweepError(f"{mpath}: experiment {experiment!r} already has a sweep; add --resume to "
                                 f"continue it or choose another --experiment")
            try:
                manifest = json.loads(mpath.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise SweepError(f"{mpath}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})") from None
            want = [(q["point"], q["repetition"], q["parameters"]) for q in points]
            have = [(q["point"], q["repetition"], q["parameters"]) for q in manifest.get("points", [])]
            if want != have or manifest.get("notebook") != str(notebook):
                raise SweepError(
                    f"{mpath}: the recorded sweep differs from this command (notebook "
                    f"{manifest.get('notebook')}, grid {manifest.get('grid')}, repeat {manifest.get('repeat')}); "
                    f"resume with the same notebook, -p and --repeat, or use another --experiment")
            _reconcile(exp_dir, manifest, outcome)
        else:
            seed = seed if seed is not None else (secrets.randbits(32) if shuffle else None)
            order = [p["key"] for p in points]
            if shuffle:
                random.Random(seed).shuffle(order)
            manifest = {
                "sweep_version": SWEEP_VERSION,
                "experiment": experiment,
                "notebook": str(notebook),
                "notebook_sha256": sha256_file(notebook),
                "grid": grid,
                "repeat": repeat,
                "shuffle": shuffle,
                "seed": seed,
                "order": order,
                "created": _now(),
                "updated": _now(),
                "points": points,
            }
        outcome.manifest = manifest
        manifest["updated"] = _now()
        manifest.setdefault("resumed", [])
        if resume:
            manifest["resumed"].append(_now())
        write_json_atomic(mpath, manifest)
        by_key = {p["key"]: p for p in manifest["points"]}
        todo = [by_key[k] for k in manifest["order"] if by_key[k]["status"] != "complete"]
        outcome.skipped = [p["key"] for p in manifest["points"] if p["status"] == "complete"]
        kernel = JupyterSession() if shared_kernel and todo and engine is None else None
        if kernel is not None:
            kernel.launch()  # the kernel boots while the host is fingerprinted
        fingerprint = host_fingerprint() if todo else None
        bar = _Bar(len(manifest["points"]), len(outcome.skipped), enabled=progress)
        if engine is not None:  # points as measurement tasks on an engine (benchbook.experiment.engine_runs)
            def save() -> None:
                manifest["updated"] = _now()
                write_json_atomic(mpath, manifest)

            def done(p: dict[str, Any], result: Any) -> None:
                outcome.ran.append(p["key"])
                bar.advance()
                if on_point:
                    on_point(p, result)

            try:
                run_points_on_engine(engine, notebook, experiment, runs_dir, manifest, todo, save, done)
            finally:
                bar.close()
            return outcome
        try:
            for p in todo:
                order_index = manifest["order"].index(p["key"])
                run_id = new_run_id(tag=p["key"])
                p["run_id"], p["status"] = run_id, "running"
                manifest["updated"] = _now()
                write_json_atomic(mpath, manifest)
                bar.describe(f"{p['key']} {p['parameters']}")
                try:
                    result = run_notebook(
                        notebook, p["parameters"], experiment, runs_dir=runs_dir, run_id=run_id,
                        repetition=p["repetition"], fingerprint=fingerprint, kernel=kernel,
                        sweep={"experiment": experiment, "point": p["point"], "repetition": p["repetition"],
                               "order": order_index, "attempt": len(p["attempts"]) + 1},
                    )
                except KeyboardInterrupt:
                    p["status"] = "interrupted"
                    manifest["updated"] = _now()
                    write_json_atomic(mpath, manifest)
                    raise
                p["status"] = result.status
                manifest["updated"] = _now()
                write_json_atomic(mpath, manifest)
                outcome.ran.append(p["key"])
                bar.advance()
                if on_point:
                    on_point(p, result)
        finally:
            bar.close()
            if kernel is not None:
                kernel.close(now=sys.exc_info()[0] is not None)
        return outcome
    finally:
        lock.release()


class _Bar:
    """A rich progress bar with ETA (or nothing when disabled)."""

    def __init__(self, total: int, done: int, enabled: bool) -> None:
        self.progress = None
        if enabled and total:

            self.progress = Progress(TextColumn("[bold]sweep[/]"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                     TextColumn("{task.description}"), console=Console(stderr=True))
            self.progress.start()
            self.task = self.progress.add_task("", total=total, completed=done)

    def describe(self, text: str) -> None:
        if self.progress:
            self.progress.update(self.task, description=text[:60])

    def advance(self) -> None:
        if self.progress:
            self.progress.advance(self.task)

    def close(self) -> None:
        if self.progress:
            self.progress.stop()

