"""Tasks an engine runs, what comes back, and the file rules every task follows.

A task is a module-level function and its arguments (so a Dask worker can import it by name). Two kinds:

``analysis``     may run again: Dask reruns it on another worker when its worker is lost.
``measurement``  never runs twice: the task first creates a claim file (``O_EXCL``); a second start of the
                 same task (after a worker loss) finds the claim and fails with MeasurementAlreadyStarted.
An analysis task given a claim file starts at most once as well (a notebook run writing its own run directory).

Outputs: a task writes into a fresh attempt directory beside its final place (``attempt_dir``) and returns
it; only the client moves it into place (``install``) and writes run records, sweep files and locks. Attempt
directories left by lost workers are removed by the client (``remove_attempts``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchbook.errors import BenchbookError
from benchbook.report_dir import install_dir

TaskKind = Literal["analysis", "measurement"]
ATTEMPT_INFIX = ".attempt-"


class EngineError(BenchbookError, RuntimeError):
    """The engine cannot run tasks: no cluster, a mismatched worker environment, bad engine options."""


class MeasurementAlreadyStarted(BenchbookError, RuntimeError):
    """A measurement task was started a second time; it refuses so a measurement never repeats silently."""


@dataclass(frozen=True)
class Task:
    key: str                              # unique within one run of tasks; names the task in messages
    fn: Callable[..., Any]                # a module-level function (imported by name on a worker)
    args: tuple[Any, ...] = ()
    kind: TaskKind = "analysis"
    claim: Path | None = None             # the claim file created before the work starts (measurement: required)

    def __post_init__(self) -> None:
        if self.kind not in ("analysis", "measurement"):
            raise ValueError(f"task {self.key}: kind {self.kind!r} is not 'analysis' or 'measurement'")
        if self.kind == "measurement" and self.claim is None:
            raise ValueError(f"task {self.key}: a measurement task needs a claim file")


@dataclass
class Outcome:
    key: str
    ok: bool
    value: Any = None
    error: str | None = None              # "<ExceptionType>: <message>" when not ok
    worker: str | None = None             # where it ran ("local" for the local engine), when known
    extra: dict[str, Any] = field(default_factory=dict)


def run_task(task: Task) -> Any:
    """Run one task here (the local engine, or inside a Dask worker): a task with a claim file claims first."""
    if task.claim is not None:
        return claimed_call(task.claim, task.key, task.fn, *task.args)  # type: ignore[arg-type]
    return task.fn(*task.args)


def claimed_call(claim: Path, key: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Create ``claim`` (exclusively), then call fn(*args). A claim that exists means this measurement
    started before (on a worker that may have been lost): refuse rather than measure again."""
    claim = Path(claim)
    claim.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        try:
            before = claim.read_text(encoding="utf-8").strip()
        except OSError:
            before = "(unreadable)"
        raise MeasurementAlreadyStarted(
            f"{key}: started before ({claim}: {before}), on a worker since lost or by another run; never "
            "started twice automatically (rerun it yourself, e.g. resume the sweep)") from None
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started_s": time.time()}) + "\n")
    return fn(*args)


def attempt_dir(final: str | os.PathLike) -> Path:
    """Where one attempt of a task writes what becomes ``final``: ``<root>/<final name>`` inside a fresh
    directory ``<root>`` beside ``final`` (the returned path itself does not exist yet)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix=f".{final.name}{ATTEMPT_INFIX}", dir=final.parent))
    os.chmod(root, 0o755)
    return root / final.name


def install(attempt: str | os.PathLike, final: str | os.PathLike, names: Iterable[str] = ()) -> None:
    """Client side: move a finished attempt (a path attempt_dir gave) into ``final`` (a rename when ``final``
    is new, else file by file, removing files of ``names`` this attempt did not write), then remove the
    attempt's directory."""
    attempt, final = Path(attempt), Path(final)
    root = attempt.parent
    if (attempt.name != final.name or root.parent != final.parent
            or not root.name.startswith(f".{final.name}{ATTEMPT_INFIX}")):
        raise EngineError(f"{attempt}: not an attempt of {final}")
    if not attempt.is_dir():
        raise EngineError(f"{attempt}: the attempt wrote nothing")
    install_dir(attempt, final, tuple(names))
    shutil.rmtree(root, ignore_errors=True)


def remove_attempts(final: str | os.PathLike) -> list[Path]:
    """Client side: remove every attempt directory of ``final`` still lying beside it (left by a lost
    worker or a failed attempt); the paths removed."""
    final = Path(final)
    if not final.parent.is_dir():
        return []
    gone = []
    for p in sorted(final.parent.glob(f".{final.name}{ATTEMPT_INFIX}*")):
        shutil.rmtree(p, ignore_errors=True)
        gone.append(p)
    return gone


def run_installing(engine: Any, tasks: list[Task], finals: dict[str, Path],
                   names: Iterable[str] = ()) -> Iterator[Outcome]:
    """Run tasks whose value is a dict with ``"attempt"`` (a path attempt_dir gave): each finished attempt is
    installed into ``finals[task.key]`` before its Outcome is yielded; attempt directories left beside a
    final (by earlier runs, lost workers or failed attempts) are removed before, during and after."""
    names = tuple(names)
    for final in finals.values():
        remove_attempts(final)
    try:
        for o in engine.run(tasks):
            if o.ok:
                try:
                    install(o.value["attempt"], finals[o.key], names)
                except (OSError, EngineError) as exc:
                    o.ok, o.error = False, f"{type(exc).__name__}: {exc}"
            remove_attempts(finals[o.key])
            yield o
    finally:
        for final in finals.values():
            remove_attempts(final)


def installed_values(engine: Any, tasks: list[Task], finals: dict[str, Path],
                     names: Iterable[str] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """run_installing to the end: the values of the tasks whose output is in place, and the error of every
    other task, both by task key."""
    done: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for o in run_installing(engine, tasks, finals, names):
        if o.ok:
            done[o.key] = o.value
        else:
            failed[o.key] = o.error or "failed"
    return done, failed

