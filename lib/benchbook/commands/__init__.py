"""Sub-commands of the `benchbook` CLI, one module per command group (see benchbook.cli)."""
