"""The `benchbook` command. Thin: each sub-command lives in benchbook.commands.<name> and
registers itself on the app; command modules import heavy libraries inside the command body so
that `benchbook --help` and short commands start fast. A BenchbookError a command does not handle
itself is printed as `benchbook: <message>` (no traceback) with exit status 1."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

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
COMMAND_MODULES = ("latency", "hist", "reproduce", "run", "env", "export", "synth", "dataset")

for _name in COMMAND_MODULES:
    importlib.import_module(f"benchbook.commands.{_name}").register(app)


EXIT_ERROR = 1


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line `argv` (default: sys.argv[1:])."""
    try:
        app(args=None if argv is None else list(argv), prog_name="benchbook")
    except BenchbookError as exc:
        typer.echo(f"benchbook: {exc}", err=True)
        raise SystemExit(EXIT_ERROR) from None


if __name__ == "__main__":
    main()
