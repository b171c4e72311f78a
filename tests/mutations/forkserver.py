"""A pytest fork server for the mutation runs (tests/mutations/score.py, run_tests.py).

Starting pytest with numpy, pandas, SciPy, numba and hypothesis costs seconds of CPU per mutant, most of it
importing the same third-party modules again. The server imports them once (never benchbook nor a test module)
and forks a child per request: the child imports benchbook from the (mutated) source in the tree, points numba's
cache at the request's fresh directory and runs ``pytest.main`` there, so every mutant still runs in a process
that has seen nothing of another mutant.

    python forkserver.py SOCKET          # serve until SIGTERM (score.py starts it in the tree, with its env)

A request is one JSON line {"args": [...], "env": {...}, "cache": DIR, "timeout_s": N, "drop_pyc": [FILE...]}
(the bytecode of the mutated module, deleted before it is imported: a mutant written in the same second as the
last one, with the same size, would pass Python's timestamp check of a cached .pyc); the answer one JSON line
{"rc": exit status or null when the timeout ended the child, "output": what pytest printed}.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import importlib.metadata
import json
import os
import signal
import socket
import sys
import tempfile
import time

PR_SET_PDEATHSIG = 1   # prctl(2)
PRELOAD = (
    "numpy", "pandas", "pyarrow", "pyarrow.parquet", "pyarrow.compute", "scipy", "scipy.stats", "scipy.optimize",
    "scipy.special", "numba", "llvmlite.ir", "numba.core.caching", "numba.extending", "hypothesis",
    "hypothesis.strategies", "hypothesis.extra.numpy", "pytest", "_pytest.python", "pytest_timeout", "jsonschema",
    "zstandard", "hdrh.histogram", "dpkt", "typer", "typer.testing", "click", "rich.console", "rich.progress",
    "plotly.graph_objects", "nbformat", "nbclient", "papermill", "jupyter_client", "ipykernel", "yaml", "jinja2",
)


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(Exception):
            importlib.import_module(name)
    for ep in importlib.metadata.entry_points(group="pytest11"):  # pytest's plugins (anyio's takes 1.3 s)
        with contextlib.suppress(Exception):
            ep.load()
    with contextlib.suppress(Exception):  # numba's CPU target, as benchbook.kernels initialises it
        from numba.core.registry import cpu_target  # noqa: PLC0415 preloaded inside suppress: numba may be absent

        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()
    gc.collect()
    gc.freeze()  # the children's collections (pytest runs two at exit) skip what the server loaded
    leaked = sorted(m for m in sys.modules if m == "benchbook" or m.startswith("benchbook."))
    if leaked:
        raise RuntimeError(f"the fork server imported {leaked}: a mutant would run stale code")


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when its parent (the server) ends: a server stopped, or killed with its
    score.py, leaves no pytest run behind (an orphan was found busy with a mutant nine minutes after its chain had
    been stopped). Exits at once when the parent is gone already."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(3)


def child(req: dict, out_fd: int, server: int) -> None:
    """In the forked child: run pytest as asked, its output to out_fd; never returns."""
    try:
        os.setsid()
        die_with_parent(server)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.environ.update(req.get("env", {}))
        for pyc in req.get("drop_pyc", []):  # the mutated module's bytecode: always compiled from its source
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pyc)
        sys.dont_write_bytecode = False  # the other modules' bytecode is reused (they do not change)
        from numba.core import config as numba_config  # noqa: PLC0415 in the forked child, after its environment is set

        numba_config.CACHE_DIR = req["cache"]
        import pytest  # noqa: PLC0415 in the forked child, after its environment is set

        rc = int(pytest.main(req["args"]))
    except BaseException as exc:  # the child reports everything as a failed run
        print(f"fork server child: {type(exc).__name__}: {exc}", flush=True)
        rc = 3
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(rc)


def serve(path: str) -> None:
    preload()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    srv.bind(path)
    srv.listen(4)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # score.py stops this server when a module is done; a score.py killed on the way cannot, so the server also
    # ends once its parent is gone (one was found still running an hour after its score.py had been killed)
    parent = os.getppid()
    srv.settimeout(5.0)
    print("ready", flush=True)
    while True:
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            if os.getppid() != parent:
                sys.exit(0)
            continue
        conn.settimeout(None)
        with conn:
            # one request that goes wrong (a client killed while it waits, a line that is not JSON) ends that
            # request, never the server: a dead server once made every later mutant's run fail, counted as kills
            try:
                serve_one(srv, conn)
            except (OSError, ValueError) as exc:
                print(f"fork server: request dropped: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)


def serve_one(srv: socket.socket, conn: socket.socket) -> None:
    req = json.loads(conn.makefile("r").readline())
    with tempfile.TemporaryFile() as out:
        server = os.getpid()
        pid = os.fork()
        if pid == 0:
            srv.close()
            child(req, out.fileno(), server)
        rc = _wait(pid, float(req.get("timeout_s", 600)), conn)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    conn.sendall((json.dumps({"rc": rc, "output": text[-20000:]}) + "\n").encode())


def _wait(pid: int, timeout_s: float, conn: socket.socket) -> int | None:
    """The child's exit status; None when the timeout ended it, or when the client hung up meanwhile (nobody is
    left to read the answer: the child is ended so that the next request does not wait for it)."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline or _hung_up(conn):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.02)


def _hung_up(conn: socket.socket) -> bool:
    """Whether the client closed its end (a client sends its one request line, then only reads)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def request(path: str, req: dict) -> dict:
    """Send one request to the server at path and wait for its answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        s.sendall((json.dumps(req) + "\n").encode())
        return json.loads(s.makefile("r").readline())


if __name__ == "__main__":
    serve(sys.argv[1])
