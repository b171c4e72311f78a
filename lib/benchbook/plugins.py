"""The one shape of benchbook's plug-in points: a registry of names, each bound to a ``"module:attribute"``
reference, imported when first asked for (so registering costs nothing and importing benchbook touches no host),
or to the object itself.

The registries: testbed backends (:data:`benchbook.testbed.backends.BACKENDS`), DuT kinds
(:data:`benchbook.testbed.dut.DUT_KINDS`), engines (:data:`benchbook.engine.options.ENGINES`) and isolation
modes (:data:`benchbook.testbed.isolation.ISOLATION_MODES`); docs/extending.md adds one of each::

    BACKENDS.register("mine", "my_package.backend:MyBackend")   # or the class itself
    BACKENDS.get("mine")                                          # the class, imported now
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Names of one plug-in point (``what``, e.g. "testbed backend") and what each stands for."""

    def __init__(self, what: str, entries: Mapping[str, str | T] | None = None) -> None:
        self.what = what
        self._entries: dict[str, str | T] = dict(entries or {})

    def register(self, name: str, ref: str | T) -> None:
        """Bind ``name`` to ``ref``: the object, or "module:attribute" (attribute may be dotted) to import later.
        A name registered again is replaced."""
        if isinstance(ref, str) and ":" not in ref:
            raise ValueError(f"{self.what} {name!r}: {ref!r} is not a 'module:attribute' reference")
        self._entries[name] = ref

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def unknown(self, name: str) -> str:
        """The message for a name nobody registered (lists the known ones)."""
        return f"unknown {self.what} {name!r}; known: {', '.join(self.names())}"

    def get(self, name: str) -> T:
        """What ``name`` stands for (imported now if registered by reference).

        KeyError for a name nobody registered; RuntimeError when its module or attribute cannot be imported."""
        try:
            ref = self._entries[name]
        except KeyError:
            raise KeyError(self.unknown(name)) from None
        if not isinstance(ref, str):
            return ref
        module, _, attr = ref.partition(":")
        try:
            return functools.reduce(getattr, attr.split("."), importlib.import_module(module))
        except (ImportError, AttributeError) as exc:
            raise RuntimeError(f"{self.what} {name!r} ({ref}) is not available: {exc}") from exc
