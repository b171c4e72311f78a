"""The dask engine: tasks on a Dask distributed cluster.

Three ways to get a cluster:

- a local one (default): ``LocalCluster`` with one worker process per core, one thread each;
- a running one: ``scheduler="tcp://HOST:PORT"`` (or ``tls://``) joins it;
- one on a testbed inventory's hosts: ``ssh_inventory=PATH`` starts ``SSHCluster`` over ssh, the
  scheduler on the first host, one single-threaded worker on every host (ssh_cluster_arguments).

Rules kept here: futures of finished tasks are released at once (Dask would otherwise recompute a finished
task after a worker loss); a task is never retried on an exception (``retries=0``), only rescheduled by Dask
when its worker is lost, and measurement tasks refuse a second start (benchbook.engine.tasks); the client,
scheduler and every worker must run the same Python, benchbook, dask and distributed, else EngineError.
Workers are not daemonic (``distributed.worker.daemon: False``) so tasks may start processes.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import uuid
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import dask
from distributed import Client, LocalCluster, as_completed, get_worker
from distributed.deploy.ssh import SSHCluster
from distributed.scheduler import KilledWorker

from benchbook.engine.local import environment_versions, error_text
from benchbook.engine.options import EngineSpec, security_from_env
from benchbook.engine.tasks import EngineError, Outcome, Task, run_task
from benchbook.testbed.inventory import Inventory

DEFAULT_ALLOWED_FAILURES = 3      # worker losses a task may see before it ends as KilledWorker
DEFAULT_CONNECT_TIMEOUT_S = 60.0


def run_on_worker(task: Task) -> tuple[Any, str]:
    """What a worker runs: the task, and the worker's address (recorded in the Outcome)."""
    try:
        where = get_worker().address
    except ValueError:
        where = "unknown"
    return run_task(task), where


class DaskEngine:
    name = "dask"

    @classmethod
    def from_spec(cls, spec: EngineSpec, **options: Any) -> DaskEngine:
        """The engine registered as "dask" (benchbook.engine.options.ENGINES): the spec's scheduler or ssh
        inventory (else a local cluster), TLS from BENCHBOOK_TLS_* unless ``security`` is given."""
        options.setdefault("security", security_from_env())
        return cls(scheduler=spec.scheduler, ssh_inventory=spec.ssh_inventory, **options)

    def __init__(self, *, scheduler: str | None = None, ssh_inventory: str | os.PathLike | None = None,
                 n_workers: int | None = None, security: Any = None,
                 allowed_failures: int = DEFAULT_ALLOWED_FAILURES, worker_ttl_s: float | None = None,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S, remote_python: str | None = None) -> None:
        if scheduler and ssh_inventory:
            raise EngineError("give either a scheduler address or an ssh inventory, not both")
        if scheduler and not re.match(r"^(tcp|tls|inproc)://\S+$", scheduler):
            raise EngineError(f"scheduler {scheduler!r}: expected tcp://HOST:PORT or tls://HOST:PORT")

        self._stack = ExitStack()
        self.allowed_failures = int(allowed_failures)
        settings: dict[str, Any] = {"distributed.worker.daemon": False,
                                    "distributed.scheduler.allowed-failures": int(allowed_failures)}
        if worker_ttl_s is not None:
            settings["distributed.scheduler.worker-ttl"] = f"{worker_ttl_s}s"
        self._stack.enter_context(dask.config.set(settings))
        self.kind = "scheduler" if scheduler else "ssh" if ssh_inventory else "local"
        try:
            if scheduler:
                self.cluster = None
                address: Any = scheduler
            elif ssh_inventory:
                args = ssh_cluster_arguments(ssh_inventory, remote_python=remote_python)
                self.cluster = self._stack.enter_context(SSHCluster(**args, security=security))
                address = self.cluster
            else:
                self.cluster = self._stack.enter_context(LocalCluster(
                    n_workers=n_workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                    host="127.0.0.1", scheduler_port=0, dashboard_address=None, security=security,
                    silence_logs=logging.CRITICAL,
                    # no dashboard; the scheduler's HTTP endpoints (health, metrics) on a free port, not 8787
                    scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                    protocol="tls://" if security is not None and getattr(security, "require_encryption", False)
                    else None))
                address = self.cluster
            self.client = self._stack.enter_context(Client(address, security=security,
                                                           timeout=connect_timeout_s, set_as_default=False))
            self.versions = self._check_versions()
        except EngineError:
            self._stack.close()
            raise
        except (OSError, TimeoutError) as exc:
            self._stack.close()
            where = scheduler or ssh_inventory or "a local cluster"
            raise EngineError(f"dask engine: cannot reach {where}: {error_text(exc)}") from None
        except BaseException:
            self._stack.close()
            raise

    def _check_versions(self) -> dict[str, Any]:
        client = environment_versions()
        scheduler = self.client.run_on_scheduler(environment_versions)
        workers = self.client.run(environment_versions)
        if not workers:
            raise EngineError(f"dask engine: the cluster at {self.client.scheduler.address} has no workers")
        bad = [f"scheduler {scheduler}"] if scheduler != client else []
        bad += [f"worker {addr} {v}" for addr, v in sorted(workers.items()) if v != client]
        if bad:
            raise EngineError(f"dask engine: mismatched environments (client {client}): {'; '.join(bad)}; "
                              "every worker must run the same Python, benchbook, dask and distributed")
        return {"client": client, "scheduler": scheduler, "workers": workers}

    @property
    def scheduler_address(self) -> str:
        return str(self.client.scheduler.address)

    def run(self, tasks: Sequence[Task]) -> Iterator[Outcome]:
        """Submit every task, yield Outcomes as tasks finish (any order). A finished task's future is
        released before its Outcome is yielded."""
        keys = [t.key for t in tasks]
        if len(set(keys)) != len(keys):
            raise EngineError("dask engine: task keys must be unique")
        token = uuid.uuid4().hex[:8]
        by_key: dict[str, Task] = {}
        futures = []
        for t in tasks:
            fut = self.client.submit(run_on_worker, t, key=f"bb-{token}-{t.key}", pure=False, retries=0)
            by_key[fut.key] = t
            futures.append(fut)
        pending = as_completed(futures, loop=self.client.loop)
        del futures, fut
        for done in pending:
            t = by_key.pop(done.key)
            try:
                value, where = done.result()
                outcome = Outcome(t.key, True, value=value, worker=where)
            except KilledWorker as exc:
                last = getattr(exc, "last_worker", None)
                outcome = Outcome(t.key, False, worker=getattr(last, "address", None), error=(
                    f"KilledWorker: {t.key}: the worker running it died, {self.allowed_failures + 1} time(s) "
                    f"(the last: {getattr(last, 'address', last)}); not started again"))
            except Exception as exc:
                outcome = Outcome(t.key, False, error=error_text(exc))
            finally:
                done.release()
            del done
            yield outcome

    def describe(self) -> dict[str, Any]:
        return {"engine": "dask", "cluster": self.kind, "scheduler": self.scheduler_address,
                "workers": len(self.versions["workers"]), "versions": self.versions}

    def close(self) -> None:
        self._stack.close()


def known_hosts_file(ssh_options: Sequence[str]) -> str | None:
    """The UserKnownHostsFile named in ssh options (``-o UserKnownHostsFile=F`` or ``-oUserKnownHostsFile=F``)."""
    opts = list(ssh_options)
    for i, o in enumerate(opts):
        text = opts[i + 1] if o == "-o" and i + 1 < len(opts) else o[2:] if o.startswith("-o") else ""
        key, _, value = text.partition("=")
        if key.strip().lower() == "userknownhostsfile" and value.strip():
            return os.path.expanduser(value.strip().split()[0])
    return None


def ssh_cluster_arguments(inventory: str | os.PathLike, remote_python: str | None = None) -> dict[str, Any]:
    """SSHCluster's arguments for a testbed inventory: the scheduler on the first host, a single-threaded
    worker on every host; asyncssh logs in with each host's user, port and identity_file and checks host
    keys against the inventory's UserKnownHostsFile (else ~/.ssh/known_hosts; never trust-on-first-use).
    Every host must run this Python (``remote_python``, default this interpreter's path) with benchbook."""
    inv = Inventory.from_toml(Path(inventory))
    known = inv.known_hosts or known_hosts_file(inv.ssh_options) or os.path.expanduser("~/.ssh/known_hosts")
    if not Path(known).is_file():
        raise EngineError(f"{inventory}: known hosts file {known} not found; host keys are always checked "
                          "(give -o UserKnownHostsFile=FILE in [testbed] ssh_options)")
    hosts, options = [], []
    for h in inv.hosts:
        if h.proxy_jump:
            raise EngineError(f"{inventory}: host {h.name}: proxy_jump is not supported by --ssh-cluster")
        opt: dict[str, Any] = {"username": h.user, "port": h.port, "known_hosts": known}
        if h.identity_file:
            opt["client_keys"] = [os.path.expanduser(h.identity_file)]
        hosts.append(h.address)
        options.append(opt)
    return {
        "hosts": [hosts[0], *hosts],
        "connect_options": [options[0], *options],
        "worker_options": {"nthreads": 1, "n_workers": 1},
        "scheduler_options": {"port": 0, "dashboard_address": None},
        "remote_python": remote_python or sys.executable,
    }
