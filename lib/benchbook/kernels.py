"""numba kernels that start without numba: compiled ahead of time where that build is current, else JIT.

Every kernel module decorates its hot loops with ``benchbook.kernels.njit`` (same options as numba's). The
decorator returns a :class:`Kernel`; nothing imports numba at that point. On the first call a kernel looks for
its ahead-of-time (AOT) build, an extension module that ``benchbook kernels build`` (run by ``make``) compiles
with numba's pycc from the same Python source, for the argument types a warm-up run used. That build is used
only when the SHA-256 of every kernel source it was compiled from and the CPU it was compiled for still match
(``build/kernels/manifest.json``); a call whose argument types it was not compiled for, a stale or missing build
and ``BENCHBOOK_KERNELS=jit`` all take numba's JIT path (with its on-disk cache), whose results are the same:
the tests compare the two. The command line then skips numba's import and target initialisation (0.6-0.7 s of
CPU per command on the development machine).

numba checks a cached kernel against its own source file only, yet the compiled code also holds what it
inlined or called from other modules (helpers, intrinsics, constants): after an edit there numba would load the
old code. So the cache of every kernel is keyed, besides numba's own key, on the SHA-256 of its module and of
every benchbook module that module imports, directly or through others (:func:`dependency_sources`, the same
list the AOT build's manifest checks): a changed helper compiles afresh, without clearing any cache.

On the first JIT use numba is imported, every Kernel (and every :func:`numba_global` placeholder for an object
that only exists under numba, such as an intrinsic) in the loaded ``benchbook`` modules is replaced by the real
object in its module's namespace, so that kernels calling kernels compile as plain numba code; modules loaded
later get the real objects straight away.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchbook.paths import BUILD_DIR

MODE_ENV = "BENCHBOOK_KERNELS"  # auto (default): the AOT build where current, else JIT; jit: always JIT
KERNELS_DIR = Path(os.environ.get("BENCHBOOK_KERNELS_DIR", BUILD_DIR / "kernels"))
MANIFEST = "manifest.json"
EXTENSION = "benchbook_aot_kernels"

_lock = threading.RLock()
_jit_active = False
_registry: list[Kernel] = []
_aot: dict[str, list[tuple[tuple, Callable]]] | None = None
_aot_loaded = False
_aot_status = "not loaded yet"


class NumbaGlobal:
    """Stands for ``module.name`` (an object that needs numba, e.g. an intrinsic) until the JIT path needs it."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def resolve(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def __repr__(self) -> str:
        return f"<numba global {self.module}.{self.name}>"


def numba_global(module: str, name: str) -> Any:
    """``module.name`` if the JIT path is active, else a placeholder that the JIT activation resolves."""
    g = NumbaGlobal(module, name)
    return g.resolve() if _jit_active else g


class Kernel:
    """A numba kernel called from Python: its AOT build when one fits the arguments, else its JIT dispatcher."""

    def __init__(self, py_func: Callable, options: dict[str, Any]) -> None:
        self.py_func = py_func
        self.options = options
        self.dispatcher: Any = None
        self.__name__ = py_func.__name__
        self.__qualname__ = py_func.__qualname__
        self.__module__ = py_func.__module__
        self.__doc__ = py_func.__doc__
        self.__wrapped__ = py_func
        self._aot_overloads: list[tuple[tuple, Callable]] | None = None

    @property
    def key(self) -> str:
        return f"{self.__module__}.{self.__qualname__}"

    @property
    def inline(self) -> bool:
        return self.options.get("inline", "never") == "always"

    def __call__(self, *args: Any) -> Any:
        overloads = self._aot_overloads
        if overloads is None:
            table = aot_table()
            overloads = self._aot_overloads = table.get(self.key, []) if table else []
        for pattern, fn in overloads:
            if _fits(pattern, args):
                return fn(*args)
        return self.jit()(*args)

    def jit(self) -> Any:
        """The numba dispatcher (activates the JIT path)."""
        if self.dispatcher is None:
            activate_jit()
            with _lock:
                if self.dispatcher is None:  # registered while another thread activated the JIT
                    self.dispatcher = _dispatcher(self.py_func, self.options)
        return self.dispatcher

    def __repr__(self) -> str:
        return f"<benchbook kernel {self.key}>"


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit`` that defers numba: ``@njit`` and ``@njit(cache=True, nogil=True, ...)`` alike."""
    def wrap(fn: Callable) -> Any:
        with _lock:
            if not _jit_active:
                k = Kernel(fn, options)
                _registry.append(k)
                return k
        return _dispatcher(fn, options)

    if args and callable(args[0]) and len(args) == 1 and not options:
        return wrap(args[0])
    if args:
        raise TypeError("benchbook.kernels.njit takes options by keyword, not signatures")
    return wrap


def before_threads() -> None:
    """Call before starting threads that run kernels. Loads the AOT build here, in this thread, and without a
    current one activates the JIT here too: numba imported by a worker thread while another thread imports
    modules can end in importlib's _DeadlockError (a JIT run of `benchbook latency` did, its two capture readers
    and the main thread importing at once)."""
    if aot_table() is None:
        activate_jit()


def activate_jit() -> None:
    """Import numba and put real dispatchers (and resolved numba globals) in place of every Kernel."""
    global _jit_active
    with _lock:
        if _jit_active:
            return
        _import_numba()
        for k in _registry:
            k.dispatcher = _dispatcher(k.py_func, k.options)
        _jit_active = True
        for name, mod in list(sys.modules.items()):
            if not (name == "benchbook" or name.startswith("benchbook.")) or mod is None:
                continue
            ns = vars(mod)
            for attr, value in list(ns.items()):
                if isinstance(value, Kernel):
                    ns[attr] = value.dispatcher
                elif isinstance(value, NumbaGlobal):
                    ns[attr] = value.resolve()


def _dispatcher(py_func: Callable, options: dict[str, Any]) -> Any:
    """numba's dispatcher of ``py_func``; with ``cache=True`` its cache is keyed on its dependencies too."""
    import numba  # noqa: PLC0415 numba only under the JIT; the AOT build runs without it

    d = numba.njit(**options)(py_func)
    if options.get("cache") and getattr(d, "_cache", None) is not None:
        d._cache = _dependency_cache()(py_func, module_digest(py_func.__module__))
    return d


@functools.cache
def _dependency_cache() -> type:
    """numba's FunctionCache with the digest of the kernel's module sources in the index key (defined on the
    first JIT use: it needs numba)."""
    from numba.core.caching import FunctionCache  # noqa: PLC0415 numba only under the JIT; the AOT build runs without it

    class DependencyCache(FunctionCache):
        def __init__(self, py_func: Callable, digest: str) -> None:
            super().__init__(py_func)
            self._dependencies_sha256 = digest

        def _index_key(self, sig: Any, codegen: Any) -> tuple:
            return (*super()._index_key(sig, codegen), self._dependencies_sha256)

    return DependencyCache


def _import_numba() -> None:
    """Import numba and initialise its CPU target with SciPy and cffi hidden, when neither is loaded yet: the
    target imports SciPy (0.2-0.3 s, for BLAS) and cffi (0.05 s), which the kernels do not use. A later
    `import scipy` in the same process (a notebook, a test runner) works as usual."""
    if "numba" in sys.modules:
        return
    hidden = [m for m in ("scipy", "cffi") if m not in sys.modules]
    for m in hidden:
        sys.modules[m] = None  # type: ignore[assignment]
    try:
        from numba.core.registry import cpu_target  # noqa: PLC0415 numba only under the JIT (not AOT)

        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()
    finally:
        for m in hidden:
            if m in sys.modules and sys.modules[m] is None:
                del sys.modules[m]


def kernels() -> list[Kernel]:
    """Every kernel registered so far (modules imported so far)."""
    with _lock:
        return list(_registry)


# -- argument patterns: which AOT overload fits a call ------------------------------------------------------------

def _fits(pattern: tuple, args: Sequence[Any]) -> bool:
    if len(pattern) != len(args):
        return False
    for p, a in zip(pattern, args, strict=True):
        kind = p[0]
        if kind == "a":
            if not isinstance(a, np.ndarray):
                return False
            dt, nd, flags = a.dtype.str, a.ndim, a.flags
            if dt != p[1] or nd != p[2] or not flags.aligned:
                return False
            if p[3] == "C" and not flags.c_contiguous or p[3] == "F" and not flags.f_contiguous:
                return False
            if not flags.writeable and not p[4]:
                return False
        elif kind == "s":
            if type(a) not in p[1]:
                return False
        else:
            return False
    return True


def arg_pattern(numba_type: Any) -> tuple | None:
    """The :func:`_fits` pattern of one numba argument type, or None where calls cannot be checked cheaply."""
    from numba.core import types  # noqa: PLC0415 numba only under the JIT; the AOT build runs without it
    from numba.np.numpy_support import as_dtype  # noqa: PLC0415 numba only under the JIT; the AOT build runs without it

    if isinstance(numba_type, types.Literal):  # a constant passed between kernels, never from Python
        return None
    if isinstance(numba_type, types.Array) and type(numba_type) is types.Array:
        if not numba_type.aligned:
            return None
        return ("a", as_dtype(numba_type.dtype).str, numba_type.ndim, numba_type.layout,
                bool(not numba_type.mutable))
    if isinstance(numba_type, types.Boolean):
        return ("s", "bool")
    if isinstance(numba_type, types.Integer):
        # a Python int types as int64 under the JIT; numpy scalars as their own type
        return ("s", "int" if numba_type == types.int64 else np.dtype(str(numba_type)).type.__name__)
    if isinstance(numba_type, types.Float):
        return ("s", "float" if numba_type == types.float64 else np.dtype(str(numba_type)).type.__name__)
    return None


# the Python types the JIT types as int64 / float64 / boolean, as the numpy scalar types do
_SCALARS = {"int": (int, np.int64), "float": (float, np.float64), "bool": (bool, np.bool_)}


def _pattern_types(pattern: Sequence) -> tuple:
    """Manifest form (type names) -> the form _fits compares (tuples of Python and numpy types)."""
    out = []
    for p in pattern:
        if p[0] == "s":
            out.append(("s", _SCALARS.get(p[1]) or (getattr(np, p[1]),)))
        else:
            out.append(tuple(p))
    return tuple(out)


# -- the AOT build ----------------------------------------------------------------------------------------------

def cpu_fingerprint() -> str:
    """The CPU model and flags the build was compiled for (it uses the host's instruction set)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    model = flags = ""
    for line in text.splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        elif line.startswith("flags") and not flags:
            flags = line.split(":", 1)[1].strip()
        if model and flags:
            break
    return hashlib.sha256(f"{model}\n{flags}".encode()).hexdigest()[:16]


def sources_digest(files: Iterable[str | os.PathLike]) -> str:
    """SHA-256 over the contents of ``files`` in the order given (each prefixed by its length)."""
    h = hashlib.sha256()
    for f in files:
        data = Path(f).read_bytes()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def _package_root() -> Path:
    return Path(__file__).resolve().parent


# `from benchbook.a import b`, `import benchbook.a.b`, numba_global("benchbook.a.b", ...), at any indentation
_BENCHBOOK_IMPORT = re.compile(
    r"^\s*(?:from (benchbook(?:\.\w+)*) import (?:\(([^)]*)\)|([\w, ]+))|import (benchbook(?:\.\w+)+))"
    r"|numba_global\(\"(benchbook(?:\.\w+)+)\"", re.M)


def dependency_sources(files: Iterable[Path]) -> list[Path]:
    """``files`` and the source of every benchbook module they import, directly or through other benchbook
    modules (import statements anywhere in a module, and numba_global placeholders), in a stable order: all a
    kernel defined in ``files`` may compile in. ``from benchbook.a import b`` counts both ``a`` and ``a.b``."""
    root = _package_root()
    seen: dict[Path, None] = {}
    todo = [Path(f).resolve() for f in files]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen[path] = None
        for m in _BENCHBOOK_IMPORT.finditer(path.read_text(encoding="utf-8")):
            base = m.group(1) or m.group(4) or m.group(5)
            names = [n.split()[0] for n in (m.group(2) or m.group(3) or "").split(",") if n.strip()]
            for dotted in (base, *(f"{base}.{n}" for n in names)):
                rel = dotted.removeprefix("benchbook").lstrip(".").replace(".", "/")
                for cand in ((root / f"{rel}.py",) if rel else ()) + (root / rel / "__init__.py",):
                    if cand.is_file() and cand not in seen:
                        todo.append(cand)
    return sorted(seen)


@functools.cache
def module_digest(module: str) -> str:
    """SHA-256 over the sources :func:`dependency_sources` lists for ``module`` ("" without a source file)."""
    mod = sys.modules.get(module)
    origin = getattr(mod, "__file__", None)
    if origin is None:
        spec = importlib.util.find_spec(module) if module != "__main__" else None
        origin = spec.origin if spec is not None else None
    if not origin or not Path(origin).is_file():
        return ""
    return sources_digest(dependency_sources([Path(origin)]))


def aot_status() -> str:
    """Why the AOT build is (not) in use, in words."""
    aot_table()
    return _aot_status


def aot_table() -> dict[str, list[tuple[tuple, Callable]]] | None:
    """kernel key -> [(argument pattern, compiled function)] of a current AOT build, or None."""
    global _aot, _aot_loaded, _aot_status
    if _aot_loaded:
        return _aot
    with _lock:
        if _aot_loaded:
            return _aot
        _aot, _aot_status = _load_aot()
        _aot_loaded = True
        return _aot


def _load_aot() -> tuple[dict[str, list[tuple[tuple, Callable]]] | None, str]:
    mode = os.environ.get(MODE_ENV, "auto")
    if mode == "jit":
        return None, f"{MODE_ENV}=jit"
    if mode != "auto":
        return None, f"{MODE_ENV}={mode!r} is not one of auto, jit: using the JIT"
    manifest_path = KERNELS_DIR / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        return None, f"no AOT build ({manifest_path} missing; `benchbook kernels build` makes it)"
    root = _package_root()
    try:
        digest = sources_digest([root / f for f in manifest["sources"]])
    except (OSError, KeyError, TypeError):
        return None, "the AOT build's source list no longer matches the package: using the JIT"
    if digest != manifest.get("sources_sha256"):
        return None, "kernel sources changed since the AOT build: using the JIT until it is rebuilt"
    if manifest.get("cpu") != cpu_fingerprint():
        return None, "the AOT build was compiled for another CPU: using the JIT"
    if manifest.get("python") != list(sys.version_info[:2]):
        return None, "the AOT build was compiled for another Python: using the JIT"
    table: dict[str, list[tuple[tuple, Callable]]] = {}
    try:
        for i, entry in enumerate(manifest["exports"]):
            so = KERNELS_DIR / entry["extension"]
            spec = importlib.util.spec_from_file_location(entry.get("module", f"{EXTENSION}_{i}"), so)
            if spec is None or spec.loader is None or not so.is_file():
                return None, f"the AOT extension {so} is missing: using the JIT"
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            table.setdefault(entry["kernel"], []).append((_pattern_types(entry["pattern"]),
                                                          getattr(module, entry["symbol"])))
    except (ImportError, AttributeError, KeyError, TypeError) as e:
        return None, f"the AOT build does not load ({e}): using the JIT"
    return table, f"AOT build of {len(manifest['exports'])} overloads ({manifest_path})"
