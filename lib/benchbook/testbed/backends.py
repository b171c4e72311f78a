"""Testbed backends registered by name, like papermill's engines, and the `Backend` protocol they implement.

``local`` is the emulated testbed on this machine (network namespaces and veth pairs);
``testbed`` (alias ``ssh``) drives the real hosts of an inventory (``inventory=PATH``). :data:`BACKENDS` is a
:class:`benchbook.plugins.Registry`: backends are imported lazily when first asked for, so importing benchbook
never touches the host, and ``BACKENDS.register(name, "module:Class")`` adds one (docs/extending.md).

A backend plans one latency point as data and executes that plan (:mod:`benchbook.testbed.plan`)::

    backend = get_backend("local", log=log, dry_run=False)      # testbed: also inventory=PATH, probe=True
    plan = backend.plan(Measurement(run_id="v1-rate10000-rep0", cgroup_mode="v1", token=new_token(), ...))
    backend.render(plan)            # per host, its command lines: what a dry run prints
    record = backend.execute(plan, log)   # the same steps, every command into the one CommandLog

A factory takes the keyword options ``log``, ``dry_run``, ``inventory`` and ``probe`` (a backend that has no use
for one refuses it with the reason).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from benchbook.plugins import Registry
from benchbook.testbed.plan import Measurement, Plan
from benchbook.tools.host import CommandLog

# name -> a backend factory (a class, called with the options) or "module:attribute" of one
BACKENDS: Registry[Callable[..., Any]] = Registry("testbed backend", {
    "local": "benchbook.testbed.local:LocalBackend",
    "testbed": "benchbook.testbed.ssh:SshBackend",
    "ssh": "benchbook.testbed.ssh:SshBackend",
})


class Backend(Protocol):
    """What the cgroup-latency experiment needs of a backend."""

    name: str

    def mode_status(self, modes: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Per isolation mode: {"runnable": bool, "reason": str} on the DuT host."""
        ...

    def plan(self, m: Measurement) -> Plan:
        """Every step of one point, in order (setup, measurement, collection, teardown)."""
        ...

    def render(self, plan: Plan) -> dict[str, list[str]]:
        """Per host, the plan's command lines as run from this machine (what a dry run prints)."""
        ...

    def execute(self, plan: Plan, log: CommandLog) -> dict[str, Any]:
        """Run the plan's steps on their hosts through ``log``, cleaning up also on failure and Ctrl-C; the
        record has status, error, steps and what was measured (``results``)."""
        ...

    def capability_lines(self, m: Measurement | None = None) -> list[dict[str, str]]:
        """What this backend substitutes for the paper's set-up (for ``m``, else for its last plan)."""
        ...

    def leftovers(self, tokens: set[str]) -> dict[str, list[str]] | None:
        """What of these runs is left where it can be checked from here (None: not checked)."""
        ...


def backend_names() -> list[str]:
    return BACKENDS.names()


def get_backend(name: str, **options: Any) -> Any:
    """Instantiate the backend called name with options."""
    return BACKENDS.get(name)(**options)
