"""`benchbook testbed emulate -o INVENTORY` / `benchbook testbed down INVENTORY`: testbed hosts
emulated on this machine (network namespaces, one sshd each) for trying the testbed mode without
hardware; the logic is benchbook.testbed.emulate's."""

from __future__ import annotations

from pathlib import Path

import typer

testbed_app = typer.Typer(help="Emulated testbed hosts on this machine (for trying the ssh backend).",
                          no_args_is_help=True)


@testbed_app.command("emulate")
def emulate_cmd(
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the inventory TOML."),
    ready_timeout_s: float = typer.Option(30.0, "--ready-timeout", help="Seconds to wait for every sshd to "
                                          "accept a login with the pinned host key."),
) -> None:
    """Start loadgen, dut and timestamper hosts (root): a namespace and an sshd each; write the inventory."""
    from benchbook.testbed.emulate import emulate

    tb = emulate(output, ready_timeout_s=ready_timeout_s)
    for role, h in tb.hosts.items():
        typer.echo(f"{role:12s} {h.netns:16s} root@{h.address} (sshd ready)")
    typer.echo(f"inventory {tb.inventory}; host keys pinned in {tb.known_hosts}; all sshds answered in "
               f"{tb.ready_s:g} s")
    typer.echo(f"remove with: benchbook testbed down {tb.inventory}")


@testbed_app.command("down")
def down_cmd(
    inventory: Path | None = typer.Argument(None, help="The inventory `testbed emulate` wrote."),
    stale: bool = typer.Option(False, "--stale", help="Also remove every emulation whose sshds are gone "
                               "(left by a crash)."),
) -> None:
    """Stop the emulated hosts and remove their namespaces, links, keys and the inventory (idempotent)."""
    from benchbook.testbed.emulate import down, down_stale

    if inventory is None and not stale:
        typer.echo("benchbook testbed down: error: give the INVENTORY or --stale", err=True)
        raise typer.Exit(2)
    removed = down(inventory) if inventory is not None else []
    if stale:
        removed += down_stale()
    for what in removed:
        typer.echo(f"removed {what}")
    if not removed:
        typer.echo("nothing to remove")


def register(app: typer.Typer) -> None:
    """Add this module's command group to the benchbook app."""
    app.add_typer(testbed_app, name="testbed")
