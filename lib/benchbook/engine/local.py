"""The local engine: every task in this process, one after the other, in the order given (today's
behaviour of every command)."""

from __future__ import annotations

import platform
from collections.abc import Iterator, Sequence
from typing import Any

from benchbook import __version__
from benchbook.engine.tasks import Outcome, Task, run_task


def environment_versions() -> dict[str, str]:
    """Versions that must agree between the client and every worker: Python, benchbook, dask, distributed
    (the last two "absent" where not installed)."""
    out = {"python": platform.python_version(), "benchbook": __version__}
    for name in ("dask", "distributed"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    return out


def error_text(exc: BaseException) -> str:
    """One line naming the exception type and its first message line."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


class LocalEngine:
    name = "local"

    @classmethod
    def from_spec(cls, spec: Any, **options: Any) -> LocalEngine:
        """The engine registered as "local" (benchbook.engine.options.ENGINES); ``options`` are the Dask
        engine's, a local engine has none."""
        return cls()

    def run(self, tasks: Sequence[Task]) -> Iterator[Outcome]:
        """Run each task here; a task's exception becomes a failed Outcome (KeyboardInterrupt stops)."""
        for t in tasks:
            try:
                value = run_task(t)
            except Exception as exc:
                yield Outcome(t.key, False, error=error_text(exc), worker="local")
                continue
            yield Outcome(t.key, True, value=value, worker="local")

    def describe(self) -> dict[str, Any]:
        return {"engine": "local", "versions": {"client": environment_versions()}}

    def close(self) -> None:
        pass
