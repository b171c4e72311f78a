"""Testbed backends registered by name, like papermill's engines.

``local`` is the emulated testbed on this machine (network namespaces and veth pairs);
``testbed`` (alias ``ssh``) drives the real hosts of an inventory (``inventory=PATH``). Backends are imported lazily
when first asked for, so importing benchbook never touches the host.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# name -> "module:attribute" (lazy) or a factory callable
_REGISTRY: dict[str, str | Callable[..., Any]] = {
    "local": "benchbook.testbed.local:LocalBackend",
    "testbed": "benchbook.testbed.ssh:SshBackend",
    "ssh": "benchbook.testbed.ssh:SshBackend",
}


def register_backend(name: str, factory: str | Callable[..., Any]) -> None:
    """Register a backend factory (or a lazy "module:attribute" reference) under name."""
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def get_backend(name: str, **options: Any) -> Any:
    """Instantiate the backend called name with options."""
    try:
        ref = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown testbed backend {name!r}; known: {', '.join(backend_names())}") from None
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise RuntimeError(f"testbed backend {name!r} ({ref}) is not available: {exc}") from exc
    else:
        factory = ref
    return factory(**options)
