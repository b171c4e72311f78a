"""The `benchbook` command. Thin: each sub-command lives in benchbook.commands.<name> and
registers itself on the app; command modules import heavy libraries inside the command body so
that `benchbook --help` and short commands start fast. A BenchbookError a command does not handle
itself is printed as `benchbook: <message>` (no traceback) with exit status 1; any other exception
is reported in one line naming a log file that holds the full traceback (exit status 1), and
Ctrl-C ends with status 130.

Exit status of every command: 0 ok, 1 a data or verdict problem (bad input file, failed run,
unexpected error), 2 a usage error (bad option or argument); `benchbook reproduce` adds its
outcome codes (docs/reproducing.md; every command: docs/runs.md, "Exit codes and errors").

Start-up: a command line naming one command builds an app holding only that command's module (building all
27 commands costs typer about 30 ms); `benchbook`, `--help` and unknown names get the whole app, which is also
what `benchbook.cli.app` is. The console script (:func:`run`) leaves without tearing the interpreter's modules
down once the command has finished (25-35 ms of a `benchbook tcp` run): atexit handlers run and stdout/stderr
are flushed first, and a non-daemon thread still running gets Python's normal exit."""

from __future__ import annotations

import atexit
import datetime as _dt
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import typer

from benchbook.errors import BenchbookError

HELP = "Measurement and reproducibility workbench: rerun paper figures, measure, record, publish."

# One module per top-level command (or command group) of the same name; each defines register(app).
COMMAND_MODULES = (
    "latency", "hist", "reproduce", "run", "env", "export", "synth", "dataset", "publish", "serve", "tcp",
    "fairness", "perf", "testbed", "cwl", "kernels", "compare",
)


def build_app(modules: Sequence[str] = COMMAND_MODULES) -> typer.Typer:
    """A benchbook app with the commands of ``modules`` (names from COMMAND_MODULES)."""
    new = typer.Typer(name="benchbook", help=HELP, no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False)
    if len(modules) == 1:
        # typer runs a lone command without its name; a callback keeps `benchbook NAME ...` a group
        new.callback()(lambda: None)
    for name in modules:
        importlib.import_module(f"benchbook.commands.{name}").register(new)
    return new


_app: typer.Typer | None = None


def __getattr__(name: str) -> typer.Typer:
    """``benchbook.cli.app``: the whole app, built on first use (commands added to it reach :func:`main`)."""
    global _app
    if name == "app":
        if _app is None:
            _app = build_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def app_for(args: Sequence[str]) -> typer.Typer:
    """The app that runs ``args``: the whole app once built or when no command is named, else one command's."""
    if _app is None and args and args[0] in COMMAND_MODULES:
        return build_app((args[0],))
    return __getattr__("app")


EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def crash_log_dir() -> Path:
    """Where full tracebacks of unexpected errors go: $BENCHBOOK_LOG_DIR, else
    $XDG_STATE_HOME/benchbook (default ~/.local/state/benchbook)."""
    env = os.environ.get("BENCHBOOK_LOG_DIR")
    if env:
        return Path(env)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "benchbook"


def write_crash_log(exc: BaseException, argv: Sequence[str] | None) -> Path | None:
    """Write the traceback of `exc` with the command line to a new log file; its path, or None
    when no log file could be written."""
    import tempfile  # noqa: PLC0415 only a crash report needs it; every command starts here
    import traceback  # noqa: PLC0415 only a crash report needs it; every command starts here

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    text = (f"benchbook {' '.join(argv) if argv is not None else ' '.join(sys.argv[1:])}\n"
            + "".join(traceback.format_exception(exc)))
    for folder in (crash_log_dir(), Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"crash-{stamp}-", suffix=".log", dir=folder)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            return Path(name)
        except OSError:
            continue
    return None


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line `argv` (default: sys.argv[1:])."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        app_for(args)(args=args, prog_name="benchbook")
    except BenchbookError as exc:
        typer.echo(f"benchbook: {exc}", err=True)
        raise SystemExit(EXIT_ERROR) from None
    except KeyboardInterrupt:
        typer.echo("benchbook: interrupted", err=True)
        raise SystemExit(EXIT_INTERRUPTED) from None
    except Exception as exc:  # anything a command did not expect: one line, the traceback in a log
        log = write_crash_log(exc, argv)
        first = str(exc).splitlines()[0] if str(exc) else ""
        where = f"full traceback in {log}" if log is not None else "no log file could be written"
        typer.echo(f"benchbook: unexpected error: {type(exc).__name__}: {first[:300]} ({where})", err=True)
        raise SystemExit(EXIT_ERROR) from None


def run() -> NoReturn:
    """The console script: :func:`main`, then leave the process at once (see the module's doc)."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if others:
        raise SystemExit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let Python report it as it normally does
        raise SystemExit(code) from None
    os._exit(code)


if __name__ == "__main__":
    run()
