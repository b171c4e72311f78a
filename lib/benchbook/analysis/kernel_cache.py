"""Keeping numba's on-disk cache of a kernel true to the modules it inlines.

numba (``cache=True``) revalidates a cached kernel against its own source file only. A kernel that
inlines ``@njit`` helpers from other modules would keep running its old compiled code after one of
those modules changed: wrong results at worst. ``drop_stale_cache(dispatchers, dependencies)`` at
the end of the kernel's module empties the cache index of each dispatcher (numba's own
``Cache.flush``) whenever the dependency sources differ from those the cache was built from (a
SHA-256 stamp in the cache directory), before numba loads anything: the next call compiles afresh.
Where the cache directory cannot be written numba does not cache either, and nothing is done.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchbook.kernels import sources_digest


def module_dispatchers(namespace: dict[str, Any], module_name: str) -> list[Any]:
    """The cached numba dispatchers defined in a module (its ``globals()``)."""
    return [v for v in namespace.values()
            if getattr(v, "_cache", None) is not None and hasattr(v, "py_func")
            and v.py_func.__module__ == module_name]


def drop_stale_cache(dispatchers: Sequence[Any], dependencies: Iterable[str | os.PathLike]) -> bool:
    """Flush the caches of ``dispatchers`` if ``dependencies`` changed since they were cached; returns
    True when they were flushed."""
    caching = [d for d in dispatchers if getattr(getattr(d, "_cache", None), "_cache_path", None)]
    if not caching:
        return False
    first = caching[0]
    stamp = Path(first._cache._cache_path) / f"{first.py_func.__module__.rsplit('.', 1)[-1]}.deps.sha256"
    digest = sources_digest(dependencies)
    try:
        if stamp.is_file() and stamp.read_text(encoding="ascii").strip() == digest:
            return False
        for d in caching:
            d._cache.flush()
        tmp = stamp.with_name(f".{stamp.name}.{os.getpid()}")
        tmp.write_text(digest + "\n", encoding="ascii")
        tmp.replace(stamp)
        return True
    except OSError:
        return False
