"""One Jupyter kernel kept alive across the points of a sweep.

Starting a kernel, importing numpy/plotly/benchbook in it and starting a headless browser for
static figures costs seconds per point; a sweep pays them once through a JupyterSession. Before
each point the kernel is put back into the state of a fresh kernel: an empty user namespace
(IPython's reset, execution count 1), the working directory set to the point's run directory,
and sys.path, os.environ, warning filters and logging handlers as they were when the kernel
started; modules the previous point imported from outside the installed libraries (a paper's own
``*.py`` beside its notebook) are forgotten so they are imported afresh. Imported library modules
stay loaded: that is the saving. Static figure export keeps one browser for the whole session
(benchbook.figures.export.keep_browser_open).

The kernel side of that protocol is the ``kernel_*`` functions below, called inside the kernel by
code the session sends (they must stay importable without papermill).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import sysconfig
import warnings
from pathlib import Path
from typing import Any

# What a fresh kernel had when the session started it (kernel side; set by kernel_snapshot).
_SNAPSHOT: dict[str, Any] = {}


def _library_roots() -> tuple[str, ...]:
    """Directories whose modules stay loaded between points: the interpreter's and the installed
    packages' (including an editable benchbook)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(__file__).resolve().parents[1])}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    return tuple(sorted({str(Path(r).resolve()) for r in roots}))


def kernel_snapshot() -> None:
    """Kernel side: remember the fresh kernel's process state, once, right after it started."""
    _SNAPSHOT.update(
        cwd=os.getcwd(),
        path=list(sys.path),
        environ=dict(os.environ),
        warnings=list(warnings.filters),
        modules=set(sys.modules),
        root_handlers=list(logging.getLogger().handlers),
        root_level=logging.getLogger().level,
        roots=_library_roots(),
    )
    from benchbook.figures.export import keep_browser_open  # noqa: PLC0415 kernel side: the session needs no plotly

    keep_browser_open()


def _restore_process_state() -> None:
    sys.path[:] = _SNAPSHOT["path"]
    if dict(os.environ) != _SNAPSHOT["environ"]:
        os.environ.clear()
        os.environ.update(_SNAPSHOT["environ"])
    warnings.filters[:] = _SNAPSHOT["warnings"]
    warnings._filters_mutated()  # type: ignore[attr-defined]  # invalidate the warning registries' caches
    root = logging.getLogger()
    root.handlers[:] = _SNAPSHOT["root_handlers"]
    root.setLevel(_SNAPSHOT["root_level"])
    roots = _SNAPSHOT["roots"]
    for name in set(sys.modules) - _SNAPSHOT["modules"]:
        module = sys.modules.get(name)
        where = getattr(module, "__file__", None)
        if where and not str(Path(where).resolve()).startswith(roots):
            del sys.modules[name]
        else:
            _SNAPSHOT["modules"].add(name)  # a library module: kept, and not looked at again


def kernel_begin_point(run_dir: str) -> None:
    """Kernel side: a fresh kernel's state, working in ``run_dir``."""
    shell = get_ipython()  # type: ignore[name-defined]  # noqa: F821 (an IPython builtin in the kernel)
    _restore_process_state()
    shell.reset(new_session=True)
    shell.execution_count = 1
    # What survives the reset is library state (modules, caches): keep it out of later collections,
    # which would otherwise walk every object numpy, pandas and plotly made at import.
    gc.freeze()
    os.chdir(run_dir)


def kernel_end_point() -> None:
    """Kernel side: leave the point's run directory with the process state restored (the next
    kernel_begin_point clears the namespace:
    IPython's reset collects garbage, which takes a tenth of a second with plotly and pandas loaded)."""
    _restore_process_state()
    os.chdir(_SNAPSHOT["cwd"])


def _call(function: str, *args: Any) -> str:
    """Code that calls a kernel_* function of this module without leaving a name in the namespace."""
    return f"__import__({__name__!r}, fromlist=['_']).{function}(*{args!r})"


class JupyterSessionError(RuntimeError):
    pass


class JupyterSession:
    """A kernel for many notebook executions (papermill through benchbook.experiment.runner).

    Use as a context manager; the kernel starts at the first point and is shut down (killed if it
    does not stop within ``shutdown_wait_s``) on leaving, also on KeyboardInterrupt.
    """

    def __init__(self, kernel_name: str = "python3", startup_timeout_s: float = 60.0, shutdown_wait_s: float = 5.0):
        self.kernel_name = kernel_name
        self.startup_timeout_s = startup_timeout_s
        self.shutdown_wait_s = shutdown_wait_s
        self.km: Any = None
        self.kc: Any = None
        self.starts = 0

    def __enter__(self) -> JupyterSession:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(now=exc_type is not None and issubclass(exc_type, KeyboardInterrupt))

    def _run(self, coroutine_function, *args, **kwargs):
        from jupyter_core.utils import run_sync  # noqa: PLC0415 session side only (docstring)

        return run_sync(coroutine_function)(*args, **kwargs)

    def alive(self) -> bool:
        return self.km is not None and bool(self._run(self.km.is_alive))

    def launch(self) -> None:
        """Start the kernel process without waiting for it to be ready, so that it boots while the
        caller does other work; ensure_started connects to it. (A kernel whose parent dies exits:
        jupyter_client gives it JPY_PARENT_PID, which ipykernel watches.)"""
        if self.km is not None:
            return
        from jupyter_client.manager import AsyncKernelManager  # noqa: PLC0415 session side only (docstring)

        self.km = AsyncKernelManager(kernel_name=self.kernel_name)
        # as nbclient starts kernels: in-memory history, and ipykernel's unencrypted-TCP warning silenced
        self._run(self.km.start_kernel, extra_arguments=["--IPKernelApp.log_level=ERROR",
                                                         "--HistoryManager.hist_file=:memory:"])

    def ensure_started(self) -> None:
        """Connect to the launched kernel, or start one (again, if it died: a point may crash it)."""
        if self.km is not None and self.alive():
            if self.kc is not None:
                return
        else:
            self.close(now=True)
            self.launch()
        self.kc = self.km.client()
        self.kc.start_channels()
        self._run(self.kc.wait_for_ready, timeout=self.startup_timeout_s)
        self.kc.allow_stdin = False
        self.starts += 1
        self.execute(_call("kernel_snapshot"))

    def execute(self, code: str, timeout_s: float = 120.0) -> None:
        """Run ``code`` silently in the kernel; raise JupyterSessionError if it fails."""
        reply = self._run(self.kc.execute_interactive, code, silent=True, store_history=False,
                          allow_stdin=False, timeout=timeout_s, output_hook=lambda msg: None)
        content = reply.get("content", {})
        if content.get("status") != "ok":
            raise JupyterSessionError(f"the shared kernel refused {code!r}: {content.get('ename')}: "
                                     f"{content.get('evalue')}")

    def begin_point(self, run_dir: Path) -> None:
        self.ensure_started()
        self.execute(_call("kernel_begin_point", str(run_dir)))

    def end_point(self) -> None:
        """Release the point's namespace and directory; a kernel that died meanwhile is left for
        the next begin_point to restart."""
        if self.km is None or not self.alive():
            return
        try:
            self.execute(_call("kernel_end_point"))
        except Exception:  # a kernel that cannot be reset is replaced at the next point
            self.close(now=True)

    def close(self, now: bool = False) -> None:
        """Shut the kernel down (at once with ``now``); kill its process group if that fails."""
        km, kc = self.km, self.kc
        self.km = self.kc = None
        if km is None:
            return
        pid = getattr(getattr(km, "provisioner", None), "pid", None)
        try:
            if kc is not None:
                kc.stop_channels()
            km.shutdown_wait_time = self.shutdown_wait_s
            self._run(km.shutdown_kernel, now=now)
        except Exception:  # the loop or the kernel is in a bad state: make sure the process is gone
            if pid:
                try:
                    os.killpg(os.getpgid(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def papermill_arguments(self) -> dict[str, Any]:
        """Keyword arguments that make papermill.execute_notebook run in this session's kernel."""
        _register_engine()
        return {"engine_name": _ENGINE_NAME, "jupyter_session": self}


_ENGINE_NAME = "benchbook-kernel-session"


def _register_engine() -> None:
    """A papermill engine that executes in a JupyterSession's kernel instead of starting one: papermill
    still parameterises the notebook, records cell timings and errors and writes the executed copy."""
    from papermill.clientwrap import PapermillNotebookClient  # noqa: PLC0415 session side only (docstring)
    from papermill.engines import NBClientEngine, papermill_engines  # noqa: PLC0415 session side only (docstring)
    from papermill.utils import merge_kwargs, remove_args  # noqa: PLC0415 session side only (docstring)

    if _ENGINE_NAME in papermill_engines._engines:
        return

    class SessionClient(PapermillNotebookClient):
        def __init__(self, nb_man, session: JupyterSession, **kw):
            super().__init__(nb_man, km=session.km, **kw)
            self.kc = session.kc  # not owned: the session keeps kernel and channels after the notebook

    class SessionEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     jupyter_session: JupyterSession | None = None, **kwargs):
            if jupyter_session is None:
                raise JupyterSessionError(f"papermill engine {_ENGINE_NAME} needs jupyter_session=")
            timeout = execution_timeout or kwargs.get("timeout")
            kwargs = remove_args(["input_path", "timeout", "startup_timeout"], **kwargs)
            final_kwargs = merge_kwargs(kwargs, timeout=timeout, startup_timeout=start_timeout,
                                        kernel_name=kernel_name, log=logging.getLogger("papermill"),
                                        log_output=log_output, stdout_file=stdout_file, stderr_file=stderr_file)
            return SessionClient(nb_man, jupyter_session, **final_kwargs).execute()

    papermill_engines.register(_ENGINE_NAME, SessionEngine)
