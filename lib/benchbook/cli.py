"""The `benchbook` command. Thin: each sub-command lives in benchbook.commands.<name> and
registers itself on the app; command modules import heavy libraries inside the command body so
that `benchbook --help` and short commands start fast. A BenchbookError a command does not handle
itself is printed as `benchbook: <message>` (no traceback) with exit status 1; any other exception
is reported in one line naming a log file that holds the full traceback (exit status 1), and
Ctrl-C ends with status 130.

Exit status of every command: 0 ok, 1 a data or verdict problem (bad input file, failed run,
unexpected error), 2 a usage error (bad option or argument); `benchbook reproduce` adds its
outcome codes (README, "Exit codes")."""

from __future__ import annotations

import datetime as _dt
import importlib
import os
import sys
import tempfile
import traceback
from collections.abc import Sequence
from pathlib import Path

import typer

from benchbook.errors import BenchbookError

app = typer.Typer(
    name="benchbook",
    help="Measurement and reproducibility workbench: rerun paper figures, measure, record, publish.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One module per command group; each defines register(app).
COMMAND_MODULES = (
    "latency", "hist", "reproduce", "run", "env", "export", "synth", "dataset", "publish", "serve", "tcp",
    "fairness", "perf", "testbed", "cwl", "kernels",
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"benchbook.commands.{_name}").register(app)


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
    try:
        app(args=None if argv is None else list(argv), prog_name="benchbook")
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


if __name__ == "__main__":
    main()
