"""The engine options every distributing command shares, and opening the engine they name.

    --engine local|dask     local (default): in this process, serially; dask: a Dask cluster
    --scheduler ADDRESS     join a running Dask scheduler (tcp://HOST:PORT, tls://...); env BENCHBOOK_SCHEDULER
    --ssh-cluster INVENTORY start a Dask cluster over ssh on a testbed inventory's hosts

Either of the last two implies ``--engine dask``; BENCHBOOK_SCHEDULER is read only for ``--engine dask``.
TLS: when BENCHBOOK_TLS_CA_FILE, BENCHBOOK_TLS_CERT and BENCHBOOK_TLS_KEY name PEM files, every connection
(client, scheduler, workers) uses TLS with them and refuses unencrypted peers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from benchbook.engine.tasks import EngineError, Task, installed_values
from benchbook.plugins import Registry

# name -> a factory (spec, **options) -> engine, or "module:attribute" of one; an engine loads only when chosen
ENGINES: Registry[Callable[..., Any]] = Registry("engine", {
    "local": "benchbook.engine.local:LocalEngine.from_spec",
    "dask": "benchbook.engine.cluster:DaskEngine.from_spec",
})
TLS_ENV = ("BENCHBOOK_TLS_CA_FILE", "BENCHBOOK_TLS_CERT", "BENCHBOOK_TLS_KEY")

ENGINE_OPTION: Any = typer.Option(None, "--engine", help="where tasks run: local (this process, serially; "
                                  "default) or dask (a local Dask cluster, one worker per core)")
SCHEDULER_OPTION: Any = typer.Option(None, "--scheduler", help="join a running Dask scheduler tcp://HOST:PORT "
                                     "(implies --engine dask; env BENCHBOOK_SCHEDULER)")
SSH_CLUSTER_OPTION: Any = typer.Option(None, "--ssh-cluster", help="start a Dask cluster over ssh on the hosts "
                                       "of this testbed inventory (implies --engine dask)")


@dataclass(frozen=True)
class EngineSpec:
    engine: str = "local"
    scheduler: str | None = None
    ssh_inventory: Path | None = None

    def describe(self) -> str:
        if self.engine == "local":
            return "local"
        return f"dask ({self.scheduler or self.ssh_inventory or 'local cluster'})"


def engine_spec(engine: str | None, scheduler: str | None, ssh_cluster: Path | None,
                environ: dict[str, str] | None = None) -> EngineSpec:
    """The engine the options name; EngineError (a usage error) when they contradict each other."""
    env = os.environ if environ is None else environ
    if engine is not None and engine not in ENGINES:
        raise EngineError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")
    if scheduler and ssh_cluster:
        raise EngineError("give --scheduler or --ssh-cluster, not both")
    if engine == "local" and (scheduler or ssh_cluster):
        raise EngineError("--scheduler and --ssh-cluster run on Dask: use them with --engine dask (or alone)")
    name = engine or ("dask" if scheduler or ssh_cluster else "local")
    if name == "dask" and not scheduler and not ssh_cluster:
        scheduler = env.get("BENCHBOOK_SCHEDULER") or None
    if ssh_cluster is not None and not Path(ssh_cluster).is_file():
        raise EngineError(f"--ssh-cluster {ssh_cluster}: no such inventory file")
    return EngineSpec(name, scheduler, Path(ssh_cluster) if ssh_cluster else None)


def security_from_env(environ: dict[str, str] | None = None) -> Any:
    """distributed's Security for TLS when the three BENCHBOOK_TLS_* variables name files, else None."""
    env = os.environ if environ is None else environ
    given = {k: env.get(k) for k in TLS_ENV if env.get(k)}
    if not given:
        return None
    if len(given) != len(TLS_ENV):
        missing = [k for k in TLS_ENV if k not in given]
        raise EngineError(f"TLS: {', '.join(sorted(given))} given but {', '.join(missing)} missing; set all three")
    for k, v in given.items():
        if not Path(v).is_file():
            raise EngineError(f"TLS: {k}={v}: no such file")
    from distributed.security import Security  # noqa: PLC0415 heavy; the CLI imports options

    ca, cert, key = (given[k] for k in TLS_ENV)
    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


@contextmanager
def open_engine(spec: EngineSpec, **dask_options: Any) -> Iterator[Any]:
    """The engine of ``spec``, closed (its local or ssh cluster stopped) when the block ends."""
    engine = ENGINES.get(spec.engine)(spec, **dask_options)
    try:
        yield engine
    finally:
        engine.close()


def run_installed_or_exit(spec: EngineSpec, tasks: list[Task], finals: dict[str, Path], names: Iterable[str],
                          what: str, error_prefix: str = "error") -> tuple[dict[str, Any], dict[str, str]]:
    """A command's tasks on the engine of ``spec``, each output installed (installed_values); says on stderr which
    engine runs how many ``what``. An engine that fails as a whole prints ``<error_prefix>: <why>`` and exits 1."""
    try:
        with open_engine(spec) as eng:
            typer.echo(f"engine: {spec.describe()}, {len(tasks)} {what}", err=True)
            return installed_values(eng, tasks, finals, names)
    except EngineError as exc:
        typer.echo(f"{error_prefix}: {exc}", err=True)
        raise typer.Exit(1) from None
