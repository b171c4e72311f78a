"""The `benchbook` command. Thin: each sub-command lives in benchbook.commands.<name> and
registers itself on the app; command modules import heavy libraries inside the command body so
that `benchbook --help` and short commands start fast."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="benchbook",
    help="Measurement and reproducibility workbench: rerun paper figures, measure, record, publish.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One module per command group; each defines register(app).
COMMAND_MODULES = ("latency", "hist", "reproduce", "run", "env", "export", "synth")

for _name in COMMAND_MODULES:
    importlib.import_module(f"benchbook.commands.{_name}").register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
