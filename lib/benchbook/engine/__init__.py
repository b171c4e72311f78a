"""Engines: where a command's independent tasks run (benchbook.engine.options for the shared options).

``local`` runs them in this process one after the other; ``dask`` on a Dask distributed cluster (a local
one, a running scheduler, or one started over ssh on a testbed inventory's hosts). Both run the same task
functions with the same file rules (benchbook.engine.tasks), so their outputs are the same bytes.
"""

from benchbook.engine.options import EngineSpec, engine_spec, open_engine, run_installed_or_exit
from benchbook.engine.tasks import (
    EngineError,
    MeasurementAlreadyStarted,
    Outcome,
    Task,
    attempt_dir,
    install,
    installed_values,
    remove_attempts,
    run_installing,
)

__all__ = [
    "EngineError", "EngineSpec", "MeasurementAlreadyStarted", "Outcome", "Task", "attempt_dir", "engine_spec",
    "install", "installed_values", "open_engine", "remove_attempts", "run_installed_or_exit", "run_installing",
]
